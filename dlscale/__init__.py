"""dlscale: performance model and simulator of distributed deep-learning training.

The public API gathers here: load a cluster and a workload (preset name or TOML
file), predict with the analytical model, simulate with the discrete-event model.
"""

from __future__ import annotations

import importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING, Any

from dlscale.version import __version__

if TYPE_CHECKING:
    from dlscale.api import (
        CalibrateResult,
        PlanResult,
        PredictResult,
        ResultTable,
        SimulateResult,
        SweepResult,
        ValidateResult,
        calibrate,
        load_cluster,
        load_workload,
        plan,
        predict,
        simulate,
        sweep,
        validate,
    )
    from dlscale.perfmodel.errors import ConfigError, DlscaleError, OutOfMemoryError

#: Public name -> the module it comes from, imported on first use (so that the
#: ``dlscale`` command starts, and takes its Ctrl-C handling, before numpy loads).
_LAZY = {**dict.fromkeys(("CalibrateResult", "PlanResult", "PredictResult", "ResultTable",
                          "SimulateResult", "SweepResult", "ValidateResult", "calibrate",
                          "load_cluster", "load_workload", "plan", "predict", "simulate",
                          "sweep", "validate"), "dlscale.api"),
         **dict.fromkeys(("ConfigError", "DlscaleError", "OutOfMemoryError"),
                         "dlscale.perfmodel.errors")}


def __getattr__(name: str) -> Any:
    """The public names (:data:`_LAZY`) and the subpackages, imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f"dlscale.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"dlscale.{name}":
            raise
        raise AttributeError(f"module 'dlscale' has no attribute {name!r}") from None


class _Package(_types.ModuleType):
    """This package's module type: ``dlscale.plan`` and ``dlscale.sweep`` are the API's
    functions, as when this file imported the API eagerly, even once the submodules of
    the same names are loaded (which sets the package attribute to the module)."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("plan", "sweep"):
            return getattr(importlib.import_module("dlscale.api"), name)
        return super().__getattribute__(name)


_sys.modules[__name__].__class__ = _Package

__all__ = [
    "CalibrateResult",
    "ConfigError",
    "DlscaleError",
    "OutOfMemoryError",
    "PlanResult",
    "PredictResult",
    "ResultTable",
    "SimulateResult",
    "SweepResult",
    "ValidateResult",
    "__version__",
    "calibrate",
    "load_cluster",
    "load_workload",
    "plan",
    "predict",
    "simulate",
    "sweep",
    "validate",
]
