"""Analytical performance model: configuration, catalogs and closed-form costs.

The public names below are bound on first use (:func:`__getattr__`), so that
importing one module of the package (``dlscale.perfmodel.errors``, as the command
line does before it parses) does not import the hardware description and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlscale.perfmodel.errors import ConfigError, DlscaleError, OutOfMemoryError
    from dlscale.perfmodel.machine.hardware import Cluster, Device, Link, NetworkSpec, NodeSpec
    from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES, Layer, Model, Workload

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "Cluster",
    "ConfigError",
    "Device",
    "DlscaleError",
    "Layer",
    "Link",
    "Model",
    "NetworkSpec",
    "NodeSpec",
    "OutOfMemoryError",
    "Workload",
]


def __getattr__(name: str) -> Any:
    """The names of :data:`__all__`, imported from their modules on first use, and the
    submodules."""
    if name in ("ConfigError", "DlscaleError", "OutOfMemoryError"):
        from dlscale.perfmodel import errors as module
    elif name in ("Cluster", "Device", "Link", "NetworkSpec", "NodeSpec"):
        from dlscale.perfmodel.machine import hardware as module  # type: ignore[no-redef]
    elif name in ("ALGORITHMS", "COLLECTIVES", "Layer", "Model", "Workload"):
        from dlscale.perfmodel.training import workload as module  # type: ignore[no-redef]
    else:   # a submodule, as when this file imported hardware and workload eagerly
        try:
            return importlib.import_module(f"dlscale.perfmodel.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dlscale.perfmodel.{name}":
                raise
            raise AttributeError(f"module 'dlscale.perfmodel' has no attribute {name!r}") \
                from None
    value = getattr(module, name)
    globals()[name] = value
    return value
