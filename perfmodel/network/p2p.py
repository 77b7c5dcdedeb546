"""Point-to-point message costs: Hockney, piecewise Hockney and LogGP.

Every function and ``time_s`` method is vectorized over ``n_bytes`` (scalar or
array) and returns seconds.

- Hockney (1994): ``T(n) = alpha + n beta``; ``alpha`` is the zero-byte latency
  (s), ``beta`` the inverse bandwidth (s/B).
- Piecewise Hockney: one ``(alpha, beta)`` pair per message-size range, the usual
  way an MPI library's eager / rendezvous protocols show up in a ping-pong curve.
  Calibration fits the pieces; the breaks are byte sizes where the protocol
  changes.
- LogGP (Alexandrov et al., SPAA 1995): ``L`` wire latency, ``o`` CPU overhead per
  message at each end, ``g`` gap between messages, ``G`` gap per byte. One
  message of ``n`` bytes costs ``o + (n - 1) G + L + o``; ``k`` back-to-back
  messages from one sender cost ``o + (k - 1) max(g, o) + (n - 1) G + L + o`` when
  ``G`` is small next to ``g`` (short messages).

Examples
--------
>>> hockney_s(1e6, alpha_s=1e-6, beta_s_per_B=1e-9)
0.001001
>>> LogGP(L_s=1e-6, o_s=0.5e-6, g_s=1e-6, G_s_per_B=1e-9).time_s(1001)
3e-06
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError

__all__ = ["LogGP", "PiecewiseHockney", "hockney_s"]


def _scalar_or_array(x: np.ndarray) -> float | np.ndarray:
    return float(x) if np.ndim(x) == 0 else x


def _check_sizes(n_bytes: ArrayLike) -> np.ndarray:
    n = np.asarray(n_bytes, dtype=float)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ConfigError(f"n_bytes: must be finite and >= 0, got {n_bytes!r}")
    return n


def hockney_s(n_bytes: ArrayLike, alpha_s: float, beta_s_per_B: float) -> float | np.ndarray:
    """Hockney time ``alpha + n beta`` of one message of ``n_bytes``.

    A zero-byte message still costs ``alpha``.

    Parameters
    ----------
    n_bytes : array_like
        Message sizes.
    alpha_s, beta_s_per_B : float
        Latency and inverse bandwidth.

    Returns
    -------
    float or ndarray
        Seconds.

    Examples
    --------
    >>> hockney_s([0, 1000], 2e-6, 1e-9)
    array([2.e-06, 3.e-06])
    """
    n = _check_sizes(n_bytes)
    return _scalar_or_array(alpha_s + n * beta_s_per_B)


@dataclass(frozen=True)
class PiecewiseHockney:
    """Hockney costs with one ``(alpha, beta)`` per message-size regime.

    Parameters
    ----------
    breaks_bytes : tuple of float
        Increasing sizes where the regime changes (e.g. the eager limit). ``k``
        breaks make ``k + 1`` regimes: ``n < breaks[0]``, ``breaks[0] <= n <
        breaks[1]``, ..., ``n >= breaks[-1]``.
    alphas_s, betas_s_per_B : tuple of float
        Latency and inverse bandwidth of each regime (``len(breaks) + 1`` each).

    Examples
    --------
    >>> eager = PiecewiseHockney((8192,), (1e-6, 4e-6), (2e-10, 1e-10))
    >>> eager.time_s([1000, 8192, 1e6]).round(9).tolist()
    [1.2e-06, 4.819e-06, 0.000104]
    >>> eager.regime([0, 8191, 8192]).tolist()
    [0, 0, 1]
    """

    breaks_bytes: tuple[float, ...]
    alphas_s: tuple[float, ...]
    betas_s_per_B: tuple[float, ...]

    def __post_init__(self) -> None:
        breaks = np.asarray(self.breaks_bytes, dtype=float)
        if breaks.ndim != 1 or np.any(np.diff(breaks) <= 0) or np.any(breaks <= 0):
            raise ConfigError(
                f"breaks_bytes: must be positive and strictly increasing, got {self.breaks_bytes!r}"
            )
        need = len(self.breaks_bytes) + 1
        for name in ("alphas_s", "betas_s_per_B"):
            values = getattr(self, name)
            if len(values) != need:
                raise ConfigError(
                    f"{name}: needs {need} values for {need - 1} breaks, got {len(values)}"
                )
            if any(not np.isfinite(v) or v < 0 for v in values):
                raise ConfigError(f"{name}: must be finite and >= 0, got {values!r}")
        object.__setattr__(self, "breaks_bytes", tuple(float(b) for b in breaks))

    @classmethod
    def single(cls, alpha_s: float, beta_s_per_B: float) -> PiecewiseHockney:
        """One regime: plain Hockney.

        Examples
        --------
        >>> round(PiecewiseHockney.single(1e-6, 1e-9).time_s(1000), 12)
        2e-06
        """
        return cls((), (alpha_s,), (beta_s_per_B,))

    def regime(self, n_bytes: ArrayLike) -> np.ndarray:
        """Index of the regime each size falls in."""
        n = _check_sizes(n_bytes)
        return np.searchsorted(np.asarray(self.breaks_bytes), n, side="right")

    def alpha_beta(self, n_bytes: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(alpha, beta)`` arrays for each size."""
        idx = self.regime(n_bytes)
        return np.asarray(self.alphas_s)[idx], np.asarray(self.betas_s_per_B)[idx]

    def time_s(self, n_bytes: ArrayLike) -> float | np.ndarray:
        """Time of one message of each size, in its regime."""
        n = _check_sizes(n_bytes)
        alpha, beta = self.alpha_beta(n)
        return _scalar_or_array(alpha + n * beta)


@dataclass(frozen=True)
class LogGP:
    """LogGP parameters (Alexandrov, Ionescu, Schauser, Scheiman 1995).

    Parameters
    ----------
    L_s : float
        Wire latency of a small message.
    o_s : float
        CPU overhead of sending (and of receiving) one message.
    g_s : float
        Minimum gap between consecutive message injections.
    G_s_per_B : float
        Gap per byte of a long message (inverse bandwidth).
    """

    L_s: float
    o_s: float
    g_s: float
    G_s_per_B: float

    def __post_init__(self) -> None:
        for name in ("L_s", "o_s", "g_s", "G_s_per_B"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ConfigError(f"LogGP.{name}: must be finite and >= 0, got {value!r}")

    def time_s(self, n_bytes: ArrayLike) -> float | np.ndarray:
        """One message: ``o + (n - 1) G + L + o`` (a zero-byte message costs ``2o + L``)."""
        n = _check_sizes(n_bytes)
        return _scalar_or_array(2 * self.o_s + self.L_s + np.maximum(n - 1, 0) * self.G_s_per_B)

    def train_s(self, n_bytes: ArrayLike, messages: ArrayLike) -> float | np.ndarray:
        """``messages`` back-to-back messages of ``n_bytes`` each from one sender.

        The sender injects one message every ``max(g, o + (n - 1) G)``; the last one
        then needs ``L + o`` to land.

        Examples
        --------
        >>> LogGP(1e-6, 0.5e-6, 2e-6, 0.0).train_s(1, 3)
        6e-06
        """
        n = _check_sizes(n_bytes)
        k = np.asarray(messages, dtype=float)
        if np.any(k < 1):
            raise ConfigError(f"messages: must be >= 1, got {messages!r}")
        per = np.maximum(self.g_s, self.o_s + np.maximum(n - 1, 0) * self.G_s_per_B)
        return _scalar_or_array(self.time_s(n) + (k - 1) * per)

    def hockney(self) -> tuple[float, float]:
        """Equivalent Hockney ``(alpha, beta)`` for one long message: ``(L + 2o, G)``.

        Examples
        --------
        >>> LogGP(1e-6, 0.5e-6, 2e-6, 1e-9).hockney()
        (2e-06, 1e-09)
        """
        return self.L_s + 2 * self.o_s, self.G_s_per_B
