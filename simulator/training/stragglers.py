"""Per-rank compute-time noise (stragglers): multiplicative factors with mean 1.

Each rank draws, per iteration, a factor ``f`` by which its compute time (forward,
backward and update) is multiplied. The models:

``none``
    ``f = 1`` for every rank (the analytical model's assumption).
``lognormal:SIGMA``
    ``f = exp(sigma z - sigma^2 / 2)``, ``z ~ N(0, 1)``: mean 1, log-standard
    deviation ``sigma`` (the usual shape of measured step-time distributions; the
    calibration step fits ``sigma``), ``0 <= sigma <=`` :data:`MAX_SIGMA`.
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

import math
import os
from dataclasses import dataclass, field

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = ["MAX_SIGMA", "NOISE_MODELS", "Empirical", "Lognormal", "NoNoise", "Noise",
           "make_noise"]

#: Largest lognormal ``sigma`` accepted. At ``sigma = 2`` the median factor is already
#: ``exp(-2) = 0.14`` and the variance ``exp(4) - 1 = 54``: the mean of one is carried
#: by rare draws, so the mean of the few thousand draws of a run is far from one (at
#: ``sigma = 50`` every draw underflows to a 0 s compute step, and above ~38 the
#: factors overflow): the run's times would no longer mean anything.
MAX_SIGMA = 2.0


@dataclass(frozen=True)
class NoNoise:
    """Every rank computes for exactly the modelled time."""

    name: str = "none"

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Factors of ones (consumes no random numbers)."""
        return np.ones(shape)


@dataclass(frozen=True)
class Lognormal:
    """Mean-one lognormal factors with log-standard deviation ``sigma``."""

    sigma: float
    name: str = "lognormal"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sigma) and 0 <= self.sigma <= MAX_SIGMA):
            raise ConfigError(f"noise: lognormal sigma must be a number in [0, {MAX_SIGMA:g}] "
                              f"(log-standard deviation of the compute-time factors), "
                              f"got {self.sigma!r}")

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """``exp(sigma z - sigma^2 / 2)`` of shape ``shape``."""
        z = rng.standard_normal(shape)
        return np.exp(self.sigma * z - 0.5 * self.sigma ** 2)


@dataclass(frozen=True)
class Empirical:
    """Factors resampled from measured step times, normalised to mean one."""

    sample: np.ndarray = field(repr=False)
    source: str = ""
    name: str = "empirical"

    def __post_init__(self) -> None:
        s = np.asarray(self.sample, dtype=float).ravel()
        if s.size == 0 or np.any(~np.isfinite(s)) or np.any(s <= 0):
            raise ConfigError(f"noise sample {self.source!r}: must hold positive finite "
                              f"step times, got {s.size} values")
        object.__setattr__(self, "sample", s / s.mean())

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Empirical:
        """Read a sample: ``.npy`` array or text with one number per line."""
        p = os.fspath(path)
        if not os.path.exists(p):
            raise ConfigError(f"noise file: {p!r} does not exist")
        if os.path.isdir(p):
            raise ConfigError(f"noise file: {p!r} is a folder; give a text file of step "
                              "times (one per line) or a .npy array")
        try:
            if p.endswith(".npy"):
                data = np.load(p, allow_pickle=False)
            else:
                from dlscale.perfmodel.config import read_utf8

                text = read_utf8(p, "noise sample (text)")
                data = np.loadtxt(text.splitlines(), ndmin=1, dtype=float)
            sample = np.asarray(data, dtype=float)
        except ConfigError as exc:
            raise ConfigError(f"noise file: {exc}") from None
        except OSError as exc:
            raise ConfigError(f"noise file: cannot read {p!r}: "
                              f"{exc.strerror or exc}") from None
        except (ValueError, TypeError) as exc:
            reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            raise ConfigError(f"noise file: {p!r} is not a list of step times in seconds "
                              f"(one number per line, or a .npy array): {reason}") from None
        return cls(sample, p)

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Resample with replacement."""
        return self.sample[rng.integers(0, self.sample.size, size=shape)]


Noise = NoNoise | Lognormal | Empirical

#: Noise model names accepted by :func:`make_noise` (``NAME`` or ``NAME:ARG``).
NOISE_MODELS = ("none", "lognormal", "empirical")


def make_noise(spec: str | Noise | None) -> Noise:
    """A noise model from ``"none"``, ``"lognormal:SIGMA"`` or ``"empirical:FILE"``.

    Examples
    --------
    >>> make_noise("lognormal:0.05").sigma
    0.05
    >>> make_noise("gaussian")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: noise: unknown name 'gaussian'; valid: empirical, lognormal, none
    """
    if spec is None:
        return NoNoise()
    if isinstance(spec, (NoNoise, Lognormal, Empirical)):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(f"noise: must be a string such as 'lognormal:0.1', got {spec!r}")
    name, _, arg = spec.partition(":")
    if name not in NOISE_MODELS:
        raise unknown_name("noise", name, NOISE_MODELS)
    if name == "none":
        return NoNoise()
    if name == "lognormal":
        try:
            sigma = float(arg)
        except ValueError:
            raise ConfigError(f"noise: 'lognormal:SIGMA' needs a number, got {spec!r}") from None
        return Lognormal(sigma)
    if not arg:
        raise ConfigError(f"noise: 'empirical:FILE' needs a file, got {spec!r}")
    return Empirical.from_file(arg)
