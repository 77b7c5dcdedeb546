"""A piecewise Hockney fit whose every segment has a bandwidth (``beta > 0``).

:func:`~dlscale.perfmodel.fitting.hockney.fit_piecewise_hockney` bounds each
segment's ``beta`` below by 0; on a shared or oversubscribed host a segment of small
messages often ends at the bound (its times do not grow with the size: the scheduler's
noise hides the copy). Such a segment is no fit of a bandwidth: turned into per-size
message factors (:func:`dlscale.perfmodel.network.msgfactors.from_segments`) it would give an
infinite one. :func:`with_bandwidth` merges it into a neighbour and refits the merged
range as one line, until every segment has ``beta > 0``; where even one line over
every size has none, the fit is refused (``None``). Each merge is reported in words,
so that ``dlscale calibrate`` can say what it changed.

Examples
--------
>>> import numpy as np
>>> n = 2.0 ** np.arange(0, 16)
>>> t = np.where(n < 64, 5e-6, 5e-6 + n / 2e9)      # flat below 64 B
>>> from dlscale.perfmodel.fitting import fit_piecewise_hockney
>>> raw = fit_piecewise_hockney(n, t)
>>> [s.beta_s_per_B > 0 for s in raw.segments]
[False, True]
>>> fit, notes = with_bandwidth(raw)
>>> len(fit.segments), fit.segments[0].beta_s_per_B > 0
(1, True)
>>> notes[0]
'segment 1-32 B: no size dependence (beta 0), merged into 64-32768 B and refitted'
"""

from __future__ import annotations

import math

import numpy as np

from dlscale.perfmodel.fitting.hockney import (
    HockneySegment,
    PiecewiseHockneyFit,
    _result_lists,
    _wls_line,
)

__all__ = ["with_bandwidth"]


def _span(seg: HockneySegment) -> str:
    return f"{seg.min_bytes:.0f}-{seg.max_bytes:.0f} B"


def _merged(n: np.ndarray, t: np.ndarray, a: HockneySegment,
            b: HockneySegment) -> tuple[HockneySegment, float]:
    lo, hi = min(a.min_bytes, b.min_bytes), max(a.max_bytes, b.max_bytes)
    keep = (n >= lo) & (n <= hi)
    alpha, beta, sse = _wls_line(n[keep], t[keep])
    return HockneySegment(lo, hi, alpha, beta), sse


def with_bandwidth(fit: PiecewiseHockneyFit) -> tuple[PiecewiseHockneyFit | None, list[str]]:
    """``fit`` with every ``beta <= 0`` segment merged into a neighbour (module docstring).

    Parameters
    ----------
    fit : PiecewiseHockneyFit
        A fit that holds its data (``sizes_bytes``, ``measured_s``).

    Returns
    -------
    fit : PiecewiseHockneyFit or None
        Every segment with ``beta > 0`` (``fit`` itself where all had one), or None
        where one line over all sizes has ``beta <= 0`` too.
    notes : list of str
        One line per merge, and why the fit was refused where it was.
    """
    n, t = np.asarray(fit.sizes_bytes, dtype=np.float64), np.asarray(fit.measured_s,
                                                                        dtype=np.float64)
    segs, notes = list(fit.segments), []
    while len(segs) > 1 and any(s.beta_s_per_B <= 0 for s in segs):
        i = next(k for k, s in enumerate(segs) if s.beta_s_per_B <= 0)
        options = [(*_merged(n, t, segs[i], segs[j]), j) for j in (i - 1, i + 1)
                   if 0 <= j < len(segs)]
        seg, _sse, j = min(options, key=lambda o: o[1])
        notes.append(f"segment {_span(segs[i])}: no size dependence (beta 0), merged into "
                     f"{_span(segs[j])} and refitted")
        segs[min(i, j)] = seg
        del segs[max(i, j)]
    if segs[0].beta_s_per_B <= 0:
        notes.append(f"one line over {_span(segs[0])} has no size dependence (beta 0): "
                     "no bandwidth fitted")
        return None, notes
    if not notes:
        return fit, notes
    out = PiecewiseHockneyFit(tuple(segs), tuple(s.min_bytes for s in segs[1:]), math.nan,
                              (), (), (), ())
    pred = np.asarray(out.predict_s(n))
    rel = pred / t - 1.0
    m = n.size  # the BIC of fit_piecewise_hockney, for the merged segmentation
    bic = m * math.log(float(np.sum(rel * rel)) / m + 1e-30) + 3 * len(segs) * math.log(m)
    return PiecewiseHockneyFit(out.segments, out.breaks_bytes, bic,
                               **_result_lists(n, t, pred)), notes
