"""Per-rank compute-time noise (stragglers) the simulator draws: multiplicative factors
with mean 1, one per rank and iteration.

The models and their parameters live in :mod:`dlscale.perfmodel.noise`, which also
gives the analytical model's expected largest factor over the ranks
(``expected_max``), so that ``predict`` and ``simulate`` use one distribution:

``none``
    ``f = 1`` for every rank.
``lognormal:SIGMA``
    ``f = exp(sigma z - sigma^2 / 2)``, ``z ~ N(0, 1)``: mean 1, log-standard
    deviation ``sigma`` (the calibration step fits ``sigma``), ``0 <= sigma <=``
    :data:`MAX_SIGMA`.
``empirical:FILE``
    Factors resampled with replacement from a measured sample of step times (a text
    file, one number per line, or a ``.npy`` array), normalised to mean 1.

All draws come from the ``numpy.random.Generator`` the caller passes, so a seed
gives the same draws bit for bit.

Examples
--------
>>> import numpy as np
>>> noise = make_noise("lognormal:0.1")
>>> f = noise.draw(np.random.default_rng(0), (4096,))
>>> round(float(f.mean()), 2), f.shape
(1.0, (4096,))
>>> make_noise("none").draw(np.random.default_rng(0), (3,)).tolist()
[1.0, 1.0, 1.0]
"""

from __future__ import annotations

from dlscale.perfmodel.noise import (
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
