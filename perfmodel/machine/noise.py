"""Per-rank compute-time noise (stragglers, OS noise): multiplicative factors with mean 1.

Each rank draws, per iteration, a factor ``f`` by which its compute time (forward,
backward and update) is multiplied. The simulator draws them
(:mod:`dlscale.simulator.training.stragglers`); the analytical model charges a synchronous
iteration the expected largest factor over the ``P`` ranks,
``E[max(f_1, ..., f_P)]`` (:meth:`Lognormal.expected_max` and friends), from the same
distribution and parameters. The models:

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

import functools
import math
import os
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = ["MAX_SIGMA", "NOISE_MODELS", "Empirical", "Lognormal", "NoNoise", "Noise",
           "expected_max_factor", "make_noise"]

#: numerical: quadrature grid of the lognormal expected maximum: z from -10 to 10 in steps of
#: 0.01 (the integrand ``P phi(z) Phi(z)^(P-1) exp(sigma z)`` is below 1e-20 of its
#: peak outside it for P <= 10^7 and sigma <= 2; a grid 4 times finer changes the
#: result by less than 1e-15).
_Z = np.linspace(-10.0, 10.0, 2001)

#: numerical: largest lognormal ``sigma`` accepted. At ``sigma = 2`` the median factor is already
#: ``exp(-2) = 0.14`` and the variance ``exp(4) - 1 = 54``: the mean of one is carried
#: by rare draws, so the mean of the few thousand draws of a run is far from one (at
#: ``sigma = 50`` every draw underflows to a 0 s compute step, and above ~38 the
#: factors overflow): the run's times would no longer mean anything.
MAX_SIGMA = 2.0


@functools.cache
def _log_cdf_grid() -> np.ndarray:
    """``log Phi(z)`` on :data:`_Z`, the standard normal's log distribution function,
    from ``math.erfc`` (``Phi(z) = erfc(-z / sqrt 2) / 2``, accurate to a few ulp on the
    grid: ``Phi(-10) = 7.6e-24`` is far from underflow). Computed once; no scipy
    import (the band prices a noise model in every predict, and ``scipy.special``
    takes 0.2 s to import)."""
    # definition: the standard normal distribution function, Phi(z) = erfc(-z / sqrt 2) / 2
    grid: np.ndarray = np.log(np.array([0.5 * math.erfc(-z / math.sqrt(2.0)) for z in _Z.tolist()]))
    return grid


@dataclass(frozen=True)
class NoNoise:
    """Every rank computes for exactly the modelled time."""

    name: str = "none"

    #: Whether the factors depend on the generator (a seed): never.
    draws = False

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Factors of ones (consumes no random numbers)."""
        return np.ones(shape)

    @property
    def spec(self) -> str:
        """The spec that makes this model (a ``Cluster.noise`` value)."""
        return "none"

    def expected_max(self, ranks: ArrayLike) -> np.ndarray:
        """1 for every rank count."""
        return np.ones(np.shape(ranks))


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

    @property
    def draws(self) -> bool:
        """Whether the factors depend on the generator (a seed): ``sigma > 0`` (at 0
        every factor is 1)."""
        return self.sigma > 0

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """``exp(sigma z - sigma^2 / 2)`` of shape ``shape``."""
        z = rng.standard_normal(shape)
        return np.exp(self.sigma * z - 0.5 * self.sigma ** 2)   # definition: mean one

    @property
    def spec(self) -> str:
        """The spec that makes this model (a ``Cluster.noise`` value)."""
        return f"lognormal:{self.sigma!r}"

    def expected_max(self, ranks: ArrayLike) -> np.ndarray:
        """``E[max of P factors]``: ``int exp(sigma z - sigma^2/2) P phi(z) Phi(z)^(P-1)
        dz`` (the density of the largest of ``P`` standard normals), by the trapezoid
        rule on :data:`_Z`.

        Examples
        --------
        >>> Lognormal(0.1).expected_max([1, 2, 1000]).round(4).tolist()
        [1.0, 1.0564, 1.3768]
        """
        p_all = np.maximum(np.asarray(ranks, dtype=float), 1.0)
        p, inverse = np.unique(p_all, return_inverse=True)  # one integral per rank count
        z = _Z
        # definition: the standard normal log density, and the mean-one shift -sigma^2/2
        log_pdf = -0.5 * z ** 2 - 0.5 * math.log(2 * math.pi)
        out = np.ones(p.shape)
        # assumption: 16 rank counts at a time (numerical, not a model figure), so a curve
        # of many node counts holds a few 16 x 2001 grids, not one of its own length
        for lo in range(0, p.size, 16):
            q = p[lo:lo + 16]
            logs = (np.log(q)[:, None] + log_pdf + (q[:, None] - 1) * _log_cdf_grid()
                    # definition: the mean-one shift -sigma^2/2 (as in draw)
                    + self.sigma * z - 0.5 * self.sigma ** 2)
            out[lo:lo + 16] = np.where(q <= 1, 1.0, np.trapezoid(np.exp(logs), z, axis=-1))
        got: np.ndarray = out[inverse].reshape(p_all.shape)
        return got


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
    def from_file(cls, path: str | os.PathLike[str]) -> Empirical:
        """Read a sample: ``.npy`` array or text with one number per line."""
        p = os.fspath(path)
        if not os.path.exists(p):
            raise ConfigError(f"noise file: {p!r} does not exist")
        if os.path.isdir(p):
            raise ConfigError(f"noise file: {p!r} is a folder; give a text file of step "
                              "times (one per line) or a .npy array")
        try:
            data: np.ndarray
            if p.endswith(".npy"):
                data = np.load(p, allow_pickle=False)
            else:
                from dlscale.perfmodel.textfile import read_utf8

                text = read_utf8(p, "noise sample (text)")
                lines = [ln for ln in text.splitlines() if ln.split("#")[0].strip()]
                if not lines:   # np.loadtxt would warn "input contained no data" first
                    raise ConfigError(f"{p!r} holds no step times; give one number per line")
                data = np.loadtxt(lines, ndmin=1, dtype=float)
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

    @property
    def draws(self) -> bool:
        """Whether the factors depend on the generator (a seed): a sample of more than
        one distinct value."""
        return bool(np.any(self.sample != self.sample[0]))

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Resample with replacement."""
        out: np.ndarray = self.sample[rng.integers(0, self.sample.size, size=shape)]
        return out

    @property
    def spec(self) -> str:
        """The spec that makes this model (``""`` for a sample given as an array)."""
        return f"empirical:{self.source}" if self.source else ""

    def expected_max(self, ranks: ArrayLike) -> np.ndarray:
        """``E[max of P draws with replacement]``, exactly: with the sample sorted,
        ``sum_k x_(k) ((k/n)^P - ((k-1)/n)^P)``.

        Examples
        --------
        >>> Empirical(np.array([1.0, 3.0])).expected_max([1, 2]).tolist()
        [1.0, 1.25]
        """
        x = np.sort(self.sample)
        k = np.arange(1, x.size + 1) / x.size
        p = np.maximum(np.asarray(ranks, dtype=float), 1.0)[..., None]
        out: np.ndarray = ((k ** p - (k - 1 / x.size) ** p) * x).sum(axis=-1)
        return out


Noise = NoNoise | Lognormal | Empirical


def expected_max_factor(spec: str | Noise | None, ranks: ArrayLike) -> np.ndarray:
    """Expected largest compute factor over ``ranks`` ranks of the noise ``spec``.

    Examples
    --------
    >>> expected_max_factor("none", [1, 64]).tolist()
    [1.0, 1.0]
    >>> bool(expected_max_factor("lognormal:0.05", 4096) > 1.15)
    True
    """
    return make_noise(spec).expected_max(ranks)

#: Noise model names accepted by :func:`make_noise` (``NAME`` or ``NAME:ARG``).
NOISE_MODELS = ("none", "lognormal", "empirical")


def make_noise(spec: str | Noise | None) -> Noise:
    """A noise model from a spec (see :func:`_parse`); a string spec is parsed once
    (an empirical file read once per run), so a cluster may carry it cheaply.

    Parameters
    ----------
    spec : str, Noise or None
        ``none``, ``lognormal:SIGMA``, ``empirical:FILE``, a Noise, or None.

    Examples
    --------
    >>> make_noise("lognormal:0.05") is make_noise("lognormal:0.05")
    True
    """
    if isinstance(spec, str):
        return _parse_cached(spec)
    return _parse(spec)


@functools.lru_cache(maxsize=64)     # numerical: cache size, no effect on results
def _parse_cached(spec: str) -> Noise:
    return _parse(spec)


def _parse(spec: str | Noise | None) -> Noise:
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
