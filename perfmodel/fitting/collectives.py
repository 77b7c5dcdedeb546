"""Fitting measured collectives to closed forms: efficiency factors (scipy NNLS).

Where the MPI library's algorithm is unknown, measured times are modelled as
``a * T_alpha + b * T_beta + c * T_gamma``: the latency, bandwidth and reduction
terms of a closed-form algorithm (:mod:`dlscale.perfmodel.network.collectives`) at the
point-to-point parameters, with non-negative factors fitted on relative error. The
efficiencies are ``1/a``, ``1/b``, ``1/c``.

- :func:`fit_collective` -- one set of factors over all sizes;
- :func:`fit_collective_piecewise` -- one set per message-size segment, the breaks
  found from the data as :func:`dlscale.perfmodel.fitting.fit_piecewise_hockney`
  finds them (SimGrid's piecewise ``smpi/bw-factor``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import nnls

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting.hockney import _segmentation

__all__ = [
    "CollectiveFit",
    "CollectiveSegment",
    "PiecewiseCollectiveFit",
    "fit_collective",
    "fit_collective_piecewise",
]


#: A closed-form collective: f(n_bytes, p, alpha_s, beta_s_per_B, gamma_s_per_B).
CollectiveForm = Callable[..., Any]


@dataclass(frozen=True)
class CollectiveFit:
    """Efficiency factors of a measured collective against one closed form.

    The measured times are modelled as ``a * T_alpha + b * T_beta + c * T_gamma``
    where ``T_alpha`` is the closed form's latency term (its value with
    ``alpha = alpha_s, beta = gamma = 0``), ``T_beta`` its bandwidth term and
    ``T_gamma`` its reduction term, each with the point-to-point parameters given.

    Attributes
    ----------
    algorithm : str
        Name of the closed form the factors refer to.
    latency_efficiency, bandwidth_efficiency, reduction_efficiency : float
        ``1/a``, ``1/b``, ``1/c``: 1.0 means the collective runs as the model
        predicts from point-to-point figures; 0.5 means that term takes twice as
        long. ``inf`` where the term is not needed to explain the data.
    rms_rel_error : float
        Root mean square of ``predicted / measured - 1``.
    sizes_bytes, ranks, measured_s, predicted_s, rel_error : tuple
        The data and the fit per measurement.
    """

    algorithm: str
    latency_efficiency: float
    bandwidth_efficiency: float
    reduction_efficiency: float
    rms_rel_error: float
    sizes_bytes: tuple[float, ...]
    ranks: tuple[int, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    rel_error: tuple[float, ...]


def fit_collective(
    algorithm: str,
    form: CollectiveForm,
    sizes_bytes: Any,
    ranks: Any,
    times_s: Any,
    alpha_s: float,
    beta_s_per_B: float,
    gamma_s_per_B: float = 0.0,
) -> CollectiveFit:
    """Fit efficiency factors of a collective against the closed form ``form``.

    Non-negative least squares on relative error; a term whose factor comes out
    0 gets efficiency ``inf``. Where the bandwidth and reduction terms are
    proportional over the data (ring, Rabenseifner: both ``(p-1)/p n``), they cannot
    be told apart and share one factor.

    Examples
    --------
    >>> import numpy as np
    >>> from dlscale.perfmodel.network.collectives import ring_allreduce_s as ring
    >>> n = np.array([8, 1024, 65536, 1 << 20, 8 << 20] * 2)
    >>> p = np.array([2] * 5 + [4] * 5)
    >>> t = ring(n, p, 2e-6, 2e-10, 2e-10)   # twice the p2p alpha, beta and gamma
    >>> fit = fit_collective("ring", ring, n, p, t, 1e-6, 1e-10, 1e-10)
    >>> round(fit.latency_efficiency, 6), round(fit.bandwidth_efficiency, 6)
    (0.5, 0.5)
    """
    n, p, t = _collective_data(sizes_bytes, ranks, times_s)
    terms = _collective_terms(form, n, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    coef, _ = _nnls_terms(terms, t)
    pred = terms @ coef
    rel = pred / t - 1.0

    return CollectiveFit(
        algorithm, _eff(float(coef[0])), _eff(float(coef[1])), _eff(float(coef[2])),
        float(np.sqrt(np.mean(rel * rel))),
        tuple(float(x) for x in n), tuple(int(x) for x in p), tuple(float(x) for x in t),
        tuple(float(x) for x in pred), tuple(float(x) for x in rel),
    )


def _eff(c: float) -> float:
    return math.inf if c <= 0 else 1.0 / c


def _collective_data(sizes_bytes: Any, ranks: Any, times_s: Any) -> tuple[np.ndarray, ...]:
    n = np.asarray(sizes_bytes, dtype=np.float64).ravel()
    p = np.asarray(ranks, dtype=np.float64).ravel()
    t = np.asarray(times_s, dtype=np.float64).ravel()
    if not (n.shape == p.shape == t.shape) or n.size < 2:
        raise ConfigError(
            f"times_s: need matching sizes, ranks and times (>= 2), got {n.size}, {p.size}, {t.size}"
        )
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ConfigError(f"times_s: must be finite and > 0, got {t.tolist()}")
    if np.any(p < 2):
        raise ConfigError(f"ranks: collectives are fitted for p >= 2, got {sorted(set(p.tolist()))}")
    return n, p, t


def _collective_terms(form: CollectiveForm, n: np.ndarray, p: np.ndarray, alpha_s: float,
                      beta_s_per_B: float, gamma_s_per_B: float) -> np.ndarray:
    """Columns: the latency, bandwidth and reduction terms of ``form`` at each point."""
    ones = np.ones_like(n)
    return np.column_stack([
        np.asarray(form(n, p, alpha_s, 0.0, 0.0), dtype=np.float64) * ones,
        np.asarray(form(n, p, 0.0, beta_s_per_B, 0.0), dtype=np.float64) * ones,
        np.asarray(form(n, p, 0.0, 0.0, gamma_s_per_B), dtype=np.float64) * ones,
    ])


def _proportional(u: np.ndarray, v: np.ndarray) -> bool:
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    return bool(nu > 0 and nv > 0 and np.allclose(u / nu, v / nv, rtol=1e-6, atol=1e-9))


def _nnls_terms(terms: np.ndarray, t: np.ndarray,
                offset: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Non-negative factors of the three terms on relative error; -> (factors, SSE).

    Where the bandwidth and reduction columns are proportional they share a factor.
    ``offset`` (seconds per point, known, not fitted) is added to the model.
    """
    off = np.zeros_like(t) if offset is None else offset
    scaled = terms / t[:, None]
    collinear = _proportional(scaled[:, 1], scaled[:, 2])
    if collinear:
        scaled = np.column_stack([scaled[:, 0], scaled[:, 1] + scaled[:, 2]])
    coef = np.zeros(3)
    used = np.any(scaled > 0, axis=0)
    if np.any(used):
        sol, _ = nnls(scaled[:, used], 1.0 - off / t)
        coef[: used.size][used] = sol
    if collinear:
        coef[2] = coef[1]
    rel = (terms @ coef + off) / t - 1.0
    return coef, float(np.sum(rel * rel))


@dataclass(frozen=True)
class CollectiveSegment:
    """Factors ``(a, b, c)`` of the latency, bandwidth and reduction terms for sizes
    from ``min_bytes`` up (see :class:`PiecewiseCollectiveFit`)."""

    min_bytes: float
    max_bytes: float
    latency_factor: float
    bandwidth_factor: float
    reduction_factor: float


@dataclass(frozen=True)
class PiecewiseCollectiveFit:
    """A collective's closed form with efficiency factors per message-size segment.

    Like SimGrid's piecewise ``smpi/bw-factor``: where the MPI library changes
    algorithm or protocol with the message size, each size segment gets its own
    factors; the breaks are found from the data as in
    :func:`fit_piecewise_hockney`. ``predict_s(n, p, form)`` is
    ``a T_alpha + b T_beta + c T_gamma`` with the segment of ``n``.

    Attributes
    ----------
    algorithm : str
        Closed form the factors refer to.
    alpha_s, beta_s_per_B, gamma_s_per_B : float
        Point-to-point parameters the terms were computed with.
    segments : tuple of CollectiveSegment
    rms_rel_error : float
    sizes_bytes, ranks, measured_s, predicted_s, rel_error : tuple
    """

    algorithm: str
    alpha_s: float
    beta_s_per_B: float
    gamma_s_per_B: float
    segments: tuple[CollectiveSegment, ...]
    rms_rel_error: float
    sizes_bytes: tuple[float, ...]
    ranks: tuple[int, ...]
    measured_s: tuple[float, ...]
    predicted_s: tuple[float, ...]
    rel_error: tuple[float, ...]

    def predict_s(self, n_bytes: Any, p: Any, form: CollectiveForm,
                  segment_index: Any = None, offset_s: Any = 0.0) -> np.ndarray:
        """Predicted time of the collective at sizes ``n_bytes`` on ``p`` ranks.

        Each size takes the factors of the last segment starting at or below it,
        unless ``segment_index`` (one index into :attr:`segments` per point) says
        which segment's factors to use. ``offset_s`` (a known, unfitted time per
        point, as passed to :func:`fit_collective_piecewise`) is added.
        """
        n, pp = np.broadcast_arrays(np.asarray(n_bytes, dtype=np.float64),
                                    np.asarray(p, dtype=np.float64))
        n, pp = n.ravel(), pp.ravel()
        terms = _collective_terms(form, n, pp, self.alpha_s, self.beta_s_per_B, self.gamma_s_per_B)
        if segment_index is None:
            idx = self.segment_of(n)
        else:
            idx = np.broadcast_to(np.asarray(segment_index, dtype=np.intp), n.shape)
        f = np.array([[s.latency_factor, s.bandwidth_factor, s.reduction_factor]
                      for s in self.segments])[idx]
        return np.asarray(np.sum(terms * f, axis=1) + np.asarray(offset_s, dtype=np.float64).ravel())

    def segment_of(self, n_bytes: Any) -> np.ndarray:
        """Index of the last segment starting at or below each size."""
        starts = np.array([s.min_bytes for s in self.segments[1:]], dtype=np.float64)
        return np.searchsorted(starts, np.asarray(n_bytes, dtype=np.float64).ravel(), side="right")


def fit_collective_piecewise(
    algorithm: str,
    form: CollectiveForm,
    sizes_bytes: Any,
    ranks: Any,
    times_s: Any,
    alpha_s: float,
    beta_s_per_B: float,
    gamma_s_per_B: float = 0.0,
    max_segments: int = 4,
    min_sizes: int = 3,
    min_gain: float = 0.4,
    offset_s: Any = None,
) -> PiecewiseCollectiveFit:
    """Efficiency factors of ``form`` per size segment, breaks found from the data.

    Measurements of one size (on any rank count) always share a segment; each
    segment needs ``min_sizes`` distinct sizes. Segment count and breaks are
    chosen as in :func:`fit_piecewise_hockney` (four parameters per segment).
    ``offset_s`` (seconds, one per measurement, or ``None``) is a known part of
    each time that the factors do not scale (a measured cost outside the closed
    form, such as page faults on a freshly mapped buffer); it is in the
    prediction.

    Examples
    --------
    >>> import numpy as np
    >>> from dlscale.perfmodel.network.collectives import ring_allreduce_s as ring
    >>> n = np.tile(2.0 ** np.arange(2, 22), 2); p = np.repeat([2, 4], 20)
    >>> t = np.where(n < 4096, ring(n, p, 1e-6, 1e-10), ring(n, p, 3e-6, 3e-10))
    >>> fit = fit_collective_piecewise("ring", ring, n, p, t, 1e-6, 1e-10)
    >>> [s.min_bytes for s in fit.segments], round(fit.segments[1].bandwidth_factor, 6)
    ([4.0, 4096.0], 3.0)
    """
    n, p, t = _collective_data(sizes_bytes, ranks, times_s)
    order = np.lexsort((p, n))
    n, p, t = n[order], p[order], t[order]
    off = np.zeros_like(t) if offset_s is None else \
        np.broadcast_to(np.asarray(offset_s, dtype=np.float64).ravel(), t.shape)[order]
    terms = _collective_terms(form, n, p, alpha_s, beta_s_per_B, gamma_s_per_B)
    uniq, first = np.unique(n, return_index=True)
    edges = [*first.tolist(), n.size]
    cache: dict[tuple[int, int], tuple[np.ndarray, float]] = {}

    def seg(i: int, j: int) -> tuple[np.ndarray, float]:
        if (i, j) not in cache:
            lo, hi = edges[i], edges[j]
            cache[(i, j)] = _nnls_terms(terms[lo:hi], t[lo:hi], off[lo:hi])
        return cache[(i, j)]

    bounds, _ = _segmentation(uniq.size, n.size, lambda i, j: seg(i, j)[1], max_segments,
                              min_sizes, 4, min_gain)
    segments = []
    coef = np.zeros((n.size, 3))
    for i, j in bounds:
        c = seg(i, j)[0]
        coef[edges[i]:edges[j]] = c
        segments.append(CollectiveSegment(float(uniq[i]), float(uniq[j - 1]), *map(float, c)))
    pred = np.sum(terms * coef, axis=1) + off
    rel = pred / t - 1.0
    return PiecewiseCollectiveFit(
        algorithm, float(alpha_s), float(beta_s_per_B), float(gamma_s_per_B), tuple(segments),
        float(np.sqrt(np.mean(rel * rel))),
        tuple(float(x) for x in n), tuple(int(x) for x in p), tuple(float(x) for x in t),
        tuple(float(x) for x in pred), tuple(float(x) for x in rel),
    )
