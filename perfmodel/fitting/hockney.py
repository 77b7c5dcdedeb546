"""Fitting network and collective models to measurements (scipy).

Three fits, each returning a documented result object:

- :func:`fit_hockney` -- one ``t(n) = alpha + n * beta`` line, weighted least
  squares on relative error (message sizes span eight decades, so an absolute-error
  fit would ignore every small message).
- :func:`fit_piecewise_hockney` -- one Hockney line per message-size segment, the
  segment breaks found from the data. This is what SimGrid's SMPI calibration does
  (``smpi/os``, ``smpi/or``, ``smpi/bw-factor`` are piecewise in message size, the
  breaks put where MPI changes protocol: eager, rendezvous, pipelined copies):
  every break position between measured sizes is tried by dynamic programming, and
  the number of segments is chosen by the Bayesian information criterion.
- :func:`fit_loggp` -- LogGP (Alexandrov et al., SPAA'95) from a ping-pong, a
  streaming (back-to-back messages) and a send-overhead measurement.

Collective fits (efficiency factors of a closed form, whole-range and per size
segment) are in :mod:`dlscale.perfmodel.fitting.collectives`.

Examples
--------
>>> import numpy as np
>>> n = np.array([1, 64, 1024, 65536, 1 << 20])
>>> fit = fit_hockney(n, 2e-6 + n / 5e9)
>>> round(fit.alpha_s * 1e6, 6), round(1 / fit.beta_s_per_B / 1e9, 6)
(2.0, 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import lsq_linear

from dlscale.perfmodel.errors import ConfigError

__all__ = [
    "HockneyFit",
    "HockneySegment",
    "LogGPFit",
    "PiecewiseHockneyFit",
    "fit_hockney",
    "fit_loggp",
    "fit_piecewise_hockney",
    "hockney_segment_at",
]


def _as_sizes_times(sizes: Any, times: Any, what: str = "times_s") -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(sizes, dtype=np.float64).ravel()
    t = np.asarray(times, dtype=np.float64).ravel()
    if n.shape != t.shape:
        raise ConfigError(f"{what}: needs one time per size, got {t.size} times for {n.size} sizes")
    if n.size < 2:
        raise ConfigError(f"sizes_bytes: need at least 2 measurements to fit, got {n.size}")
    if not (np.all(np.isfinite(n)) and np.all(n >= 0)):
        raise ConfigError(f"sizes_bytes: must be finite and >= 0, got {n.tolist()}")
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ConfigError(f"{what}: must be finite and > 0, got {t.tolist()}")
    order = np.argsort(n, kind="stable")
    return n[order], t[order]


def _wls_line(n: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Weighted (1/t) least-squares ``t = a + b n`` with ``a, b >= 0``; -> (a, b, SSE of rel. err)."""
    w = 1.0 / t
    design = np.column_stack([w, n * w])
    if n.size == 1 or np.ptp(n) == 0:
        a, b = float(np.mean(t)), 0.0
    else:
        sol = lsq_linear(design, np.ones_like(t), bounds=(0.0, np.inf), method="bvls")
        a, b = float(sol.x[0]), float(sol.x[1])
    rel = (a + b * n) / t - 1.0
    return a, b, float(np.sum(rel * rel))


def _segmentation(
    groups: int,
    points: int,
    sse: Callable[[int, int], float],
    max_segments: int,
    min_groups: int,
    params_per_segment: int,
    min_gain: float,
) -> tuple[list[tuple[int, int]], float]:
    """Best split of ``groups`` ordered groups into contiguous segments.

    ``sse(i, j)`` is the squared error of one fit to groups ``i..j-1``; ``points``
    the number of measurements (for the BIC). Dynamic programming finds the best
    split for each segment count; the count is chosen by BIC with the
    ``min_gain`` guard (see :func:`fit_piecewise_hockney`). Returns the
    ``(start, stop)`` group ranges and the BIC.
    """
    best: list[dict[int, tuple[float, tuple[int, ...]]]] = [{0: (0.0, ())}]
    k_max = min(max_segments, groups // min_groups) or 1
    for k in range(1, k_max + 1):
        layer: dict[int, tuple[float, tuple[int, ...]]] = {}
        for j in range(min(k * min_groups, groups), groups + 1):
            cands = [
                (prev + sse(i, j), (*starts, i))
                for i, (prev, starts) in best[k - 1].items()
                if j - i >= min_groups or (k == 1 and j == groups)
            ]
            if cands:
                layer[j] = min(cands)
        best.append(layer)
    eps = 1e-30  # keeps ln(SSE) finite on exact data

    def bic_of(k: int) -> float:
        return points * math.log(best[k][groups][0] / points + eps) + \
            params_per_segment * k * math.log(points)

    k, bic = 1, bic_of(1)
    for kk in range(2, k_max + 1):
        if groups not in best[kk]:
            continue
        prev = best[k][groups][0]
        ratio = math.sqrt(best[kk][groups][0] / prev) if prev > 0 else 1.0
        if bic_of(kk) < bic and ratio <= (1.0 - min_gain) ** (kk - k):
            k, bic = kk, bic_of(kk)
    starts = best[k][groups][1]
    return list(zip(starts, (*starts[1:], groups), strict=True)), float(bic)


@dataclass(frozen=True)
class HockneyFit:
    """A fitted Hockney line ``t(n) = alpha_s + n * beta_s_per_B``.

    Attributes
    ----------
    alpha_s : float
        Latency (time of a zero-byte message), seconds.
    beta_s_per_B : float
        Inverse bandwidth, seconds per byte.
    sizes_bytes, measured_s, predicted_s : tuple of float
        The data fitted and the fit's value at each size.
    rel_error : tuple of float
        ``predicted / measured - 1`` per size (the fit's error per size).
    """

    alpha_s: float
    beta_s_per_B: float
    sizes_bytes: tuple[float, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    rel_error: tuple[float, ...]

    @property
    def bandwidth_Bps(self) -> float:
        """``1 / beta`` (infinite where the fit found no size dependence)."""
        return math.inf if self.beta_s_per_B == 0 else 1.0 / self.beta_s_per_B

    def predict_s(self, n_bytes: Any) -> Any:
        """Time of a message of ``n_bytes``."""
        return self.alpha_s + np.asarray(n_bytes, dtype=np.float64) * self.beta_s_per_B


def _result_lists(n: np.ndarray, t: np.ndarray, pred: np.ndarray) -> dict[str, tuple[float, ...]]:
    return {
        "sizes_bytes": tuple(float(x) for x in n),
        "measured_s": tuple(float(x) for x in t),
        "predicted_s": tuple(float(x) for x in pred),
        "rel_error": tuple(float(x) for x in pred / t - 1.0),
    }


def fit_hockney(sizes_bytes: Any, times_s: Any) -> HockneyFit:
    """Fit one Hockney line to ``(size, time)`` measurements.

    Minimises the sum of squared *relative* errors with ``alpha, beta >= 0``.

    Parameters
    ----------
    sizes_bytes, times_s : array_like
        Measured sizes and one-way times, one time per size.

    Returns
    -------
    HockneyFit
        ``alpha_s``, ``beta_s_per_B`` and the per-size errors.

    Raises
    ------
    ConfigError
        Fewer than 2 measurements, mismatched lengths, or a negative or
        non-finite value.

    Examples
    --------
    >>> round(fit_hockney([0, 1000], [1e-6, 2e-6]).beta_s_per_B, 15)
    1e-09
    """
    n, t = _as_sizes_times(sizes_bytes, times_s)
    a, b, _ = _wls_line(n, t)
    return HockneyFit(a, b, **_result_lists(n, t, a + b * n))


@dataclass(frozen=True)
class HockneySegment:
    """One segment of a piecewise Hockney model: sizes ``[min_bytes, max_bytes]``."""

    min_bytes: float
    max_bytes: float
    alpha_s: float
    beta_s_per_B: float


def hockney_segment_at(segments: Sequence[Mapping[str, Any]],
                       n_bytes: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha_s, beta_s_per_B)`` of the piecewise Hockney segment that models each size.

    A size between two segments belongs to the upper one, a size beyond the last to
    the last, one below the first to the first: the rule of
    :meth:`PiecewiseHockneyFit.segment_index`, for the segments as a calibration
    profile stores them. The local validation model and the collective fits of
    ``dlscale calibrate`` both read point-to-point times through here.

    Parameters
    ----------
    segments : sequence of mapping
        ``{"min_bytes", "alpha_s", "beta_s_per_B", ...}`` in increasing size order.
    n_bytes : float or array_like
        Message sizes.

    Returns
    -------
    alpha_s, beta_s_per_B : ndarray
        One per size (shape of ``n_bytes``).

    Examples
    --------
    >>> segs = [{"min_bytes": 0, "alpha_s": 1e-6, "beta_s_per_B": 0.0},
    ...         {"min_bytes": 1000, "alpha_s": 5e-6, "beta_s_per_B": 1e-9}]
    >>> a, b = hockney_segment_at(segs, [10, 500, 1000, 1e9])
    >>> a.tolist(), b.tolist()
    ([1e-06, 1e-06, 5e-06, 5e-06], [0.0, 0.0, 1e-09, 1e-09])
    """
    starts = np.array([s["min_bytes"] for s in segments[1:]], dtype=np.float64)
    idx = np.searchsorted(starts, np.asarray(n_bytes, dtype=np.float64), side="right")
    alpha = np.array([s["alpha_s"] for s in segments], dtype=np.float64)[idx]
    beta = np.array([s["beta_s_per_B"] for s in segments], dtype=np.float64)[idx]
    return alpha, beta


@dataclass(frozen=True)
class PiecewiseHockneyFit:
    """A piecewise Hockney model fitted with breaks found from the data.

    Attributes
    ----------
    segments : tuple of HockneySegment
        In increasing size order. Segment ``i`` covers measured sizes
        ``min_bytes..max_bytes``; a size between two segments belongs to the upper
        one, a size beyond the last to the last (see :meth:`segment_index`).
    breaks_bytes : tuple of float
        First measured size of every segment but the first.
    bic : float
        Bayesian information criterion of the chosen segmentation.
    sizes_bytes, measured_s, predicted_s, rel_error : tuple of float
        Data, fit and ``predicted / measured - 1`` per size.
    """

    segments: tuple[HockneySegment, ...]
    breaks_bytes: tuple[float, ...]
    bic: float
    sizes_bytes: tuple[float, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    rel_error: tuple[float, ...]

    def segment_index(self, n_bytes: Any) -> np.ndarray:
        """Index of the segment that models each size."""
        starts = np.array([s.min_bytes for s in self.segments[1:]], dtype=np.float64)
        return np.searchsorted(starts, np.asarray(n_bytes, dtype=np.float64), side="right")

    def predict_s(self, n_bytes: Any) -> Any:
        """Time of a message of ``n_bytes`` (scalar or array).

        Examples
        --------
        >>> seg = (HockneySegment(0, 100, 1e-6, 0.0), HockneySegment(1000, 1e6, 5e-6, 1e-9))
        >>> fit = PiecewiseHockneyFit(seg, (1000.0,), 0.0, (), (), (), ())
        >>> fit.predict_s([10, 2000]).round(12).tolist()
        [1e-06, 7e-06]
        """
        n = np.asarray(n_bytes, dtype=np.float64)
        alpha, beta = hockney_segment_at([asdict(s) for s in self.segments], n)
        return alpha + n * beta

    @property
    def latency_s(self) -> float:
        """Zero-byte latency: ``alpha`` of the first segment."""
        return self.segments[0].alpha_s

    @property
    def bandwidth_Bps(self) -> float:
        """Large-message bandwidth: the effective rate at the largest measured size."""
        n = self.sizes_bytes[-1]
        return n / float(self.predict_s(n))


def fit_piecewise_hockney(
    sizes_bytes: Any,
    times_s: Any,
    max_segments: int = 4,
    min_points: int = 3,
    min_gain: float = 0.1,
) -> PiecewiseHockneyFit:
    """Fit Hockney lines per size segment, breaks and segment count from the data.

    Every partition of the sorted sizes into up to ``max_segments`` contiguous
    segments of at least ``min_points`` sizes is scored by dynamic programming on
    the sum of squared relative errors of per-segment weighted fits; the segment
    count minimising ``BIC = m ln(SSE/m) + 3 k ln(m)`` (``m`` measurements, ``k``
    segments, three parameters each: alpha, beta, break) wins, with one more
    guard against fitting noise: a segment is only added where it also cuts the
    root-mean-square relative error by at least ``min_gain`` (0.1: by 10 %) per
    added segment. On measurements from a shared host, where a few sizes carry
    outliers, a stricter guard (0.4) missed the eager/rendezvous switch of MPICH's
    shared-memory path and left -89 % errors; 0.1 finds it, at the price of
    splitting a pure line with 2 % noise in about one case in five (the split
    fit still follows the data).

    Parameters
    ----------
    sizes_bytes, times_s : array_like
        Measured sizes and one-way times.
    max_segments, min_points : int, optional
        At most this many segments, each with at least this many sizes.
    min_gain : float, optional
        Least relative drop of the BIC for one more segment.

    Returns
    -------
    PiecewiseHockneyFit

    Raises
    ------
    ConfigError
        Too few measurements or a bad value.

    Examples
    --------
    >>> import numpy as np
    >>> n = 2.0 ** np.arange(0, 21)
    >>> t = np.where(n < 8192, 1e-6 + n / 2e9, 8e-6 + n / 8e9)   # an eager/rendezvous switch
    >>> fit = fit_piecewise_hockney(n, t)
    >>> fit.breaks_bytes
    (8192.0,)
    >>> float(np.max(np.abs(fit.rel_error))) < 1e-9
    True
    """
    if not (isinstance(max_segments, int) and max_segments >= 1):
        raise ConfigError(f"max_segments: must be an integer >= 1, got {max_segments!r}")
    if not (isinstance(min_points, int) and min_points >= 2):
        raise ConfigError(f"min_points: must be an integer >= 2, got {min_points!r}")
    if not (0.0 <= min_gain < 1.0):
        raise ConfigError(f"min_gain: must be in [0, 1), got {min_gain!r}")
    n, t = _as_sizes_times(sizes_bytes, times_s)
    m = n.size
    cost: dict[tuple[int, int], tuple[float, float, float]] = {}

    def seg(i: int, j: int) -> tuple[float, float, float]:
        if (i, j) not in cost:
            cost[(i, j)] = _wls_line(n[i:j], t[i:j])
        return cost[(i, j)]

    bounds, bic = _segmentation(m, m, lambda i, j: seg(i, j)[2], max_segments, min_points,
                                3, min_gain)
    segments = []
    for i, j in bounds:
        a, b, _ = seg(i, j)
        segments.append(HockneySegment(float(n[i]), float(n[j - 1]), a, b))
    fit = PiecewiseHockneyFit(tuple(segments), tuple(s.min_bytes for s in segments[1:]),
                              float(bic), (), (), (), ())
    pred = np.asarray(fit.predict_s(n))
    return PiecewiseHockneyFit(fit.segments, fit.breaks_bytes, fit.bic, **_result_lists(n, t, pred))


@dataclass(frozen=True)
class LogGPFit:
    """LogGP parameters (Alexandrov, Ionescu, Schauser, Scheiman, SPAA'95).

    Attributes
    ----------
    L_s : float
        Network latency: one-way small-message time minus the two overheads.
    o_s : float
        CPU overhead of sending (or receiving) one message.
    g_s : float
        Gap: minimum time between consecutive small messages (inverse message rate),
        from the streaming test's small-message time per message.
    G_s_per_B : float
        Gap per byte of a long message (inverse bandwidth), from the streaming
        test's largest quarter of sizes.
    rel_error : tuple of float
        ``predicted / measured - 1`` of the one-way ping-pong time
        ``L + 2 o + (n - 1) G`` per size.
    """

    L_s: float
    o_s: float
    g_s: float
    G_s_per_B: float
    sizes_bytes: tuple[float, ...] = field(default=())
    rel_error: tuple[float, ...] = field(default=())

    def one_way_s(self, n_bytes: Any) -> Any:
        """LogGP one-way time of an ``n``-byte message: ``L + 2 o + (n - 1) G``."""
        n = np.maximum(np.asarray(n_bytes, dtype=np.float64), 1.0)
        return self.L_s + 2 * self.o_s + (n - 1) * self.G_s_per_B


def fit_loggp(
    sizes_bytes: Any,
    one_way_s: Any,
    stream_sizes_bytes: Any,
    stream_per_msg_s: Any,
    send_overhead_s: float,
) -> LogGPFit:
    """Fit LogGP from ping-pong, streaming and send-overhead measurements.

    ``G`` is the slope of the streaming time per message against size over the
    largest quarter of the streaming sizes; ``g`` is the streaming time per message of
    the smallest size; ``o`` is the measured send overhead; ``L`` is the
    intercept of the ping-pong one-way time ``L + 2 o + (n-1) G`` fitted over the
    smaller half of the sizes with ``G`` held fixed (``L >= 0``).

    Parameters
    ----------
    sizes_bytes, one_way_s : array_like
        Ping-pong sizes and one-way times.
    stream_sizes_bytes, stream_per_msg_s : array_like
        Streaming sizes and time per message.
    send_overhead_s : float
        Measured send overhead ``o``.

    Returns
    -------
    LogGPFit

    Raises
    ------
    ConfigError
        Too few measurements or a bad value.

    Examples
    --------
    >>> import numpy as np
    >>> n = 2.0 ** np.arange(0, 20)
    >>> fit = fit_loggp(n, 3e-6 + (n - 1) * 1e-10, n, np.maximum(5e-7, n * 1e-10), 5e-7)
    >>> round(fit.L_s * 1e6, 6), round(fit.g_s * 1e6, 6), round(fit.G_s_per_B * 1e10, 6)
    (2.0, 0.5, 1.0)
    """
    n, t = _as_sizes_times(sizes_bytes, one_way_s, "one_way_s")
    sn, st = _as_sizes_times(stream_sizes_bytes, stream_per_msg_s, "stream_per_msg_s")
    if not (math.isfinite(send_overhead_s) and send_overhead_s >= 0):
        raise ConfigError(f"send_overhead_s: must be a number >= 0, got {send_overhead_s!r}")
    upper = sn >= np.quantile(sn, 0.75)
    big = _wls_line(sn[upper], st[upper])
    G = big[1]
    if G == 0.0:
        G = float(sn[-1] / st[-1]) ** -1
    lower = n <= np.median(n)
    resid = t[lower] - (n[lower] - 1) * G
    L = max(float(np.median(resid)) - 2 * send_overhead_s, 0.0)
    fit = LogGPFit(L, float(send_overhead_s), float(st[0]), float(G))
    pred = np.asarray(fit.one_way_s(n))
    return LogGPFit(fit.L_s, fit.o_s, fit.g_s, fit.G_s_per_B,
                    tuple(float(x) for x in n), tuple(float(x) for x in pred / t - 1.0))
