"""Per-rank compute-time noise (stragglers) the simulator draws: multiplicative factors
with mean 1, one per rank and iteration.

The models (``none``, ``lognormal:SIGMA``, ``empirical:FILE``), their parameters and
their documentation live in :mod:`dlscale.perfmodel.machine.noise`, which also gives the
analytical model's expected largest factor over the ranks (``expected_max``), so
that ``predict`` and ``simulate`` use one distribution; this module re-exports them
for the simulator's training API. All draws come from the ``numpy.random.Generator``
the caller passes, so a seed gives the same draws bit for bit.

Examples
--------
>>> import numpy as np
>>> make_noise("lognormal:0.1").draw(np.random.default_rng(0), (4096,)).shape
(4096,)
"""

from __future__ import annotations

from dlscale.perfmodel.machine.noise import (
    MAX_SIGMA,
    NOISE_MODELS,
    Empirical,
    Lognormal,
    Noise,
    NoNoise,
    make_noise,
)

__all__ = ["MAX_SIGMA", "NOISE_MODELS", "Empirical", "Lognormal", "NoNoise", "Noise",
           "make_noise"]
