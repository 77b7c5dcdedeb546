"""dlscale: performance model and simulator of distributed deep-learning training.

The public API gathers here: load a cluster and a workload (preset name or TOML
file), predict with the analytical model, simulate with the discrete-event model.
"""

from __future__ import annotations

__version__ = "0.1.0"

from dlscale.perfmodel.errors import ConfigError, DlscaleError, OutOfMemoryError

__all__ = ["ConfigError", "DlscaleError", "OutOfMemoryError", "__version__"]
