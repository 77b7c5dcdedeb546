"""dlscale: performance model and simulator of distributed deep-learning training.

The public API gathers here: load a cluster and a workload (preset name or TOML
file), predict with the analytical model, simulate with the discrete-event model.
"""

from __future__ import annotations

import sys as _sys
import types as _types

__version__ = "0.1.0"

# The public names load on first use (PEP 562), so that importing a layer below the API
# (``import dlscale.kernels``, ``dlscale.perfmodel``, ...) does not load the API, plan,
# sweep and study modules first (tests/test_layers.py holds it). ``plan`` and ``sweep``
# are also the names of submodules; as when this file imported the API eagerly, the
# attribute is the API's function whether or not the submodule has been imported.
_API = ("PlanResult", "PredictResult", "ResultTable", "SimulateResult", "SweepResult",
        "load_cluster", "load_workload", "plan", "predict", "simulate", "sweep")
_ERRORS = ("ConfigError", "DlscaleError", "OutOfMemoryError")
_SHADOWED = frozenset({"plan", "sweep"})


def __getattr__(name: str) -> object:
    if name in _API:
        from dlscale import api
        return getattr(api, name)
    if name in _ERRORS:
        from dlscale.perfmodel import errors
        return getattr(errors, name)
    raise AttributeError(f"module 'dlscale' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(_types.ModuleType):
    """This package's module type: ``dlscale.plan`` and ``dlscale.sweep`` are the API's
    functions even once the submodules of the same names are loaded."""

    def __getattribute__(self, name: str) -> object:
        if name in _SHADOWED:
            from dlscale import api
            return getattr(api, name)
        return super().__getattribute__(name)


_sys.modules[__name__].__class__ = _Package

__all__ = [
    "ConfigError",
    "DlscaleError",
    "OutOfMemoryError",
    "PlanResult",
    "PredictResult",
    "ResultTable",
    "SimulateResult",
    "SweepResult",
    "__version__",
    "load_cluster",
    "load_workload",
    "plan",
    "predict",
    "simulate",
    "sweep",
]
