"""dlscale: performance model and simulator of distributed deep-learning training.

The public API gathers here: load a cluster and a workload (preset name or TOML
file), predict with the analytical model, simulate with the discrete-event model.
"""

from __future__ import annotations

__version__ = "0.1.0"

from dlscale.api import (
    PlanResult,
    PredictResult,
    ResultTable,
    SimulateResult,
    SweepResult,
    load_cluster,
    load_workload,
    plan,
    predict,
    simulate,
    sweep,
)
from dlscale.perfmodel.errors import ConfigError, DlscaleError, OutOfMemoryError

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
