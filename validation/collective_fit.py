"""Fit measured allreduce times to the closed forms; predict from the stored fit.

Measured allreduce times are fitted against flat closed forms of
:data:`dlscale.perfmodel.network.collectives.ALLREDUCE` with per-size-segment efficiency
factors (:func:`dlscale.perfmodel.fitting.collectives.fit_collective_piecewise`),
using the intra-node point-to-point ``alpha`` and ``beta`` and the reduction
kernel's ``gamma``. Which forms: the one the launch forced, else those the
library's default selection runs (:func:`library_allreduce_algorithms`; MPICH:
Rabenseifner above a few elements), else every form, the one with the smallest
RMS relative error kept -- but a fit on one rank count cannot tell the forms
apart (they differ in how the time grows with ``p``), which is why the library's
choice matters: at ``p = 3`` MPICH's fold makes Rabenseifner cost about twice its
``p = 4`` time, where a ring costs less than at ``p = 4``.

Two measured effects outside the closed form: page faults of MPICH's per-call
temporary buffer from glibc's mmap threshold up (:func:`temp_fault_bytes`,
priced by the measured first-touch cost), and sizes between two fitted segments,
interpolated between them (:func:`predict_allreduce`). The result is a plain JSON
dictionary (it is stored in the profile) and :func:`predict_allreduce` evaluates it.

Examples
--------
>>> import numpy as np
>>> from dlscale.perfmodel.network.collectives import ring_allreduce_s
>>> n = 2.0 ** np.arange(10, 24)
>>> runs = [{"ranks": p, "sizes_bytes": n.tolist(),
...          "times_s": (2 * ring_allreduce_s(n, p, 1e-6, 1e-10)).tolist()} for p in (2, 4)]
>>> fit = fit_allreduce(runs, {"latency_s": 1e-6, "bandwidth_Bps": 1e10})
>>> fit["algorithm"], round(fit["rms_rel_error"], 9)
('ring', 0.0)
>>> round(float(predict_allreduce(fit, 1 << 20, 3) / ring_allreduce_s(1 << 20, 3, 1e-6, 1e-10)), 6)
2.0
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.fitting import hockney_segment_at
from dlscale.perfmodel.fitting.collectives import (
    CollectiveSegment,
    PiecewiseCollectiveFit,
    fit_collective_piecewise,
)
from dlscale.perfmodel.machine.runtime import mpich_short
from dlscale.perfmodel.network.collectives import ALLREDUCE
from dlscale.perfmodel.network.registry import CHUNKED, FOLDING

__all__ = ["MMAP_THRESHOLD_MAX_BYTES", "fit_allreduce", "library_allreduce_algorithms",
           "piecewise_form", "predict_allreduce", "temp_fault_bytes"]


def library_allreduce_algorithms(library: str, sizes_bytes: Any, ranks: Any,
                                 itemsize: int = 4) -> list[str] | None:
    """Closed forms of the allreduce algorithms the MPI library picks by default.

    MPICH (3.3 up to 5.0, the built-in selection table
    ``src/mpi/coll/coll_selection.json``, allreduce ``comm_type=intra``): recursive
    doubling where each rank's vector is at most 8 bytes or has fewer elements than
    ``p'`` (the largest power of two ``<= p``), otherwise reduce-scatter plus
    allgather (Rabenseifner), both with MPICH's fold for non-power-of-two ``p``.
    ``None`` for other libraries (the fit then tries every form). Needed because
    a fit on one rank count per regime cannot tell the forms apart: they differ
    only in how the time grows with ``p``.

    Examples
    --------
    >>> library_allreduce_algorithms("MPICH Version:      5.0.2", [4, 1 << 20], [2, 3])
    ['rabenseifner', 'recursive-doubling']
    >>> library_allreduce_algorithms("Open MPI v5.0.3", [1024], [4]) is None
    True
    """
    if not library.upper().startswith("MPICH"):
        return None
    n, p = np.broadcast_arrays(np.asarray(sizes_bytes, float)[:, None],
                               np.asarray(ranks, float)[None, :])
    short = mpich_short(n, p, itemsize, 8)   # coll_selection.json: 8-byte short bound
    return sorted({"recursive-doubling" if s else "rabenseifner" for s in short.ravel()})


def _flatten(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, p, t = [], [], []
    for run in runs:
        k = len(run["sizes_bytes"])
        n += list(run["sizes_bytes"])
        p += [int(run["ranks"])] * k
        t += list(run["times_s"])
    return np.asarray(n, float), np.asarray(p, float), np.asarray(t, float)


#: Bytes of each message an algorithm sends for an ``n``-byte vector on ``p`` ranks:
#: ``n/p`` chunks for ring and Rabenseifner (whose halving steps start at ``n/2``;
#: the chunk is its last and most frequent size), the whole vector for the others.
_CHUNKED = CHUNKED


#: glibc ``malloc``: requests from ``DEFAULT_MMAP_THRESHOLD_MAX`` up (``4 * 1024 *
#: 1024 * sizeof(long)``, 32 MiB on 64-bit Linux; glibc ``malloc/malloc.c``) are
#: always served by a fresh ``mmap`` and unmapped on ``free``; below it the dynamic
#: threshold rises to the freed size and the buffer is reused from the heap.
MMAP_THRESHOLD_MAX_BYTES = 32 << 20


def temp_fault_bytes(algorithm: str, n_bytes: Any, p: Any,
                     threshold_bytes: float = MMAP_THRESHOLD_MAX_BYTES) -> np.ndarray:
    """Bytes of MPICH's per-call temporary buffer that page-fault on the critical path.

    MPICH's recursive doubling and Rabenseifner allreduce allocate a temporary
    buffer of the whole ``n``-byte vector on every call; from ``threshold_bytes``
    up it is a fresh mapping each call, and every page written into it faults.
    Rabenseifner on a power-of-two ``p`` receives ``n/2`` into it in its first
    halving step (later steps reuse that half); with MPICH's fold for other ``p``
    (and in recursive doubling) a rank receives the whole vector into it. Other
    algorithms: 0.

    Examples
    --------
    >>> temp_fault_bytes("rabenseifner", [16 << 20, 64 << 20, 64 << 20], [2, 2, 3]).tolist()
    [0.0, 33554432.0, 67108864.0]
    """
    n, pp = np.broadcast_arrays(np.asarray(n_bytes, float), np.asarray(p, float))
    if algorithm not in FOLDING:
        return np.zeros(n.shape)
    pow2 = 2.0 ** np.floor(np.log2(np.maximum(pp, 1))) == pp
    frac = np.where(pow2 & (algorithm == "rabenseifner"), 0.5, 1.0)
    return np.where((n >= threshold_bytes) & (pp > 1), frac * n, 0.0)


def piecewise_form(name: str, segments: list[dict[str, Any]]) -> Any:
    """Closed form ``name`` whose ``alpha`` and ``beta`` are those of the piecewise
    point-to-point fit at the size of the messages the algorithm sends.

    The returned ``f(n, p, a, b, g)`` scales them by ``a`` and ``b`` (pass 1.0).

    Examples
    --------
    >>> segs = [{"min_bytes": 1, "alpha_s": 1e-6, "beta_s_per_B": 1e-9},
    ...         {"min_bytes": 1024, "alpha_s": 5e-6, "beta_s_per_B": 1e-10}]
    >>> f = piecewise_form("ring", segs)
    >>> round(float(f(4096.0, 2, 1.0, 1.0, 0.0)), 12)  # 2 steps of 2048 B in the upper segment
    1.04096e-05
    """
    form = ALLREDUCE[name]

    def f(n: Any, p: Any, a: float, b: float, g: float = 0.0) -> Any:
        n_arr, p_arr = np.broadcast_arrays(np.asarray(n, float), np.asarray(p, float))
        m = n_arr / p_arr if name in _CHUNKED else n_arr
        alpha, beta = hockney_segment_at(segments, np.maximum(m, 1.0))
        return (np.asarray(form(n_arr, p_arr, 1.0, 0.0, 0.0)) * a * alpha
                + np.asarray(form(n_arr, p_arr, 0.0, 1.0, 0.0)) * b * beta
                + np.asarray(form(n_arr, p_arr, 0.0, 0.0, 1.0)) * g)

    return f


def _fault_s(fit: dict[str, Any], algorithm: str, n: Any, p: Any) -> Any:
    pf = fit.get("page_fault")
    if not pf:
        return 0.0
    return temp_fault_bytes(algorithm, n, p, pf["threshold_bytes"]) * pf["s_per_B"]


def _fit_forms(runs: list[dict[str, Any]], alpha: float, beta: float, gamma: float,
               algorithms: list[str], segments: list[dict[str, Any]] | None = None,
               page_fault: dict[str, float] | None = None,
               breaks: list[float] | None = None) -> dict[str, Any]:
    n, p, t = _flatten(runs)
    fits: dict[str, PiecewiseCollectiveFit] = {}
    pf = {"page_fault": page_fault} if page_fault else {}
    for name in algorithms:
        if name not in ALLREDUCE:
            raise unknown_name("algorithm", name, ALLREDUCE)
        off = _fault_s(pf, name, n, p)
        if segments:
            fits[name] = fit_collective_piecewise(name, piecewise_form(name, segments), n, p, t,
                                                  1.0, 1.0, gamma, min_sizes=2, offset_s=off)
        else:
            fits[name] = fit_collective_piecewise(name, ALLREDUCE[name], n, p, t, alpha, beta,
                                                  gamma, min_sizes=2, offset_s=off)
    best = min(fits.values(), key=lambda f: f.rms_rel_error)
    return {
        "algorithm": best.algorithm,
        "alpha_s": best.alpha_s,
        "beta_s_per_B": best.beta_s_per_B,
        "gamma_s_per_B": gamma,
        **({"p2p_segments": segments} if segments else {}),
        **({"p2p_breaks_bytes": list(breaks)} if breaks else {}),
        **pf,
        "segments": [asdict(s) for s in best.segments],
        "rms_rel_error": best.rms_rel_error,
        "sizes_bytes": list(best.sizes_bytes),
        "ranks": list(best.ranks),
        "rel_error": list(best.rel_error),
        "candidates": {k: f.rms_rel_error for k, f in fits.items()},
    }


def fit_allreduce(runs: list[dict[str, Any]], intra: dict[str, Any],
                  reduce_Bps: float | None = None,
                  algorithms: list[str] | None = None,
                  cores: int | None = None,
                  page_fault_s_per_B: float | None = None,
                  p2p_segments: bool = False) -> dict[str, Any]:
    """Fit allreduce runs (``[{"ranks", "sizes_bytes", "times_s"}]``); JSON-ready dict.

    Keys: ``algorithm`` (best closed form), ``alpha_s``, ``beta_s_per_B``,
    ``gamma_s_per_B``, ``segments`` (list of factor dicts), ``rms_rel_error``,
    ``rel_error`` per measurement, and ``candidates`` (algorithm -> RMS relative
    error, every form tried).

    With ``cores`` (the host's cores) and runs on both sides of it, the runs with
    more ranks than cores are fitted on their own, under ``regimes``
    (``"dedicated"``, ``"oversubscribed"``): on an oversubscribed host a waiting
    rank holds a core its partner needs, and the times follow the scheduler, not
    the memory system, so one set of factors cannot serve both.

    With ``page_fault_s_per_B`` (the measured first-touch cost of fresh memory,
    ``kernels.page_fault_s_per_B``), the page faults of MPICH's temporary buffer
    from glibc's mmap threshold up (:func:`temp_fault_bytes`) are a known,
    unfitted part of each time (stored under ``page_fault``).

    The terms use the one-segment Hockney ``alpha, beta`` of ``intra`` and the
    size segments of the allreduce's own factors absorb protocol changes; with
    ``p2p_segments=True`` they use the point-to-point segment of each message
    size instead (:func:`piecewise_form`). That pairing is off by default: where
    a collective segment spans a point-to-point break, its two or three sizes fit
    factors that mix the two protocols' ``alpha`` (the 186 us fitted latency of
    the >= 1 MiB ping-pong segment on the validation host), and a held-out size
    inside it was predicted at twice its time.
    """
    alpha = float(intra["latency_s"])
    beta = 1.0 / float(intra["bandwidth_Bps"])
    gamma = 1.0 / float(reduce_Bps) if reduce_Bps else 0.0
    names = algorithms or list(ALLREDUCE)
    segs = (intra.get("segments") or None) if p2p_segments else None
    breaks = [float(s["min_bytes"]) for s in (intra.get("segments") or [])[1:]]
    pf = ({"s_per_B": float(page_fault_s_per_B), "threshold_bytes": MMAP_THRESHOLD_MAX_BYTES}
          if page_fault_s_per_B else None)
    if cores:
        over = [r for r in runs if int(r["ranks"]) > cores]
        ded = [r for r in runs if int(r["ranks"]) <= cores]
        if over and ded:
            regimes = {"dedicated": _fit_forms(ded, alpha, beta, gamma, names, segs, pf, breaks),
                       "oversubscribed": _fit_forms(over, alpha, beta, gamma, names, segs, pf,
                                                    breaks)}
            return {**regimes["dedicated"], "cores": int(cores), "regimes": regimes,
                    "oversubscribed_ranks": max(int(r["ranks"]) for r in over)}
    return _fit_forms(runs, alpha, beta, gamma, names, segs, pf, breaks)


def predict_allreduce(fit: dict[str, Any], n_bytes: Any, p: Any) -> np.ndarray | float:
    """Allreduce seconds at ``n_bytes`` on ``p`` ranks from a :func:`fit_allreduce` dict.

    Where the fit has ``regimes``, rank counts up to ``cores`` use the dedicated
    fit, those from ``oversubscribed_ranks`` up the oversubscribed one; in between
    the oversubscription overhead is taken to grow linearly with the ranks in
    excess of the cores (first order: each excess rank adds the waits of one
    descheduled rank), interpolating the two.
    """
    if "regimes" in fit:
        n, pb = np.broadcast_arrays(np.asarray(n_bytes, float), np.asarray(p, float))
        ded = np.asarray(predict_allreduce(fit["regimes"]["dedicated"], n.ravel(), pb.ravel()))
        over = np.asarray(predict_allreduce(fit["regimes"]["oversubscribed"], n.ravel(), pb.ravel()))
        cores = fit["cores"]
        w = np.clip(pb.ravel() - cores, 0, None) / max(fit["oversubscribed_ranks"] - cores, 1)
        out = np.where(w >= 1, over, ded + w * (over - ded))
        return float(out[0]) if np.ndim(n_bytes) == 0 and np.ndim(p) == 0 else out.reshape(n.shape)
    try:
        form = ALLREDUCE[fit["algorithm"]]
        if fit.get("p2p_segments"):
            form = piecewise_form(fit["algorithm"], fit["p2p_segments"])
        pf = PiecewiseCollectiveFit(
            fit["algorithm"], fit["alpha_s"], fit["beta_s_per_B"], fit["gamma_s_per_B"],
            tuple(CollectiveSegment(**s) for s in fit["segments"]), 0.0, (), (), (), (), ())
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"profile.collectives.allreduce.fit: malformed ({exc})") from None
    out = (_across_gaps(pf, form, n_bytes, p, fit.get("p2p_breaks_bytes"))
           + _fault_s(fit, fit["algorithm"], n_bytes, p))
    return float(out[0]) if np.ndim(n_bytes) == 0 and np.ndim(p) == 0 else out


def _across_gaps(pf: PiecewiseCollectiveFit, form: Any, n_bytes: Any, p: Any,
                 breaks: list[float] | None = None) -> np.ndarray:
    """The fitted closed form, interpolated log-log between two size segments.

    A size beyond the last fitted size of segment ``k`` and below the first of
    segment ``k + 1`` lies where the fit found a break but the data do not say
    where: neither segment's factors are known to hold there (extending one
    across a point-to-point protocol break pairs its factors with the other
    protocol's ``alpha, beta``). Where exactly one point-to-point protocol break
    (``breaks``, the starts of the ping-pong fit's segments, measured at every
    size) falls between the sizes of the messages the algorithm sends at the two
    fitted ends (``n/p`` for ring and Rabenseifner, ``n`` otherwise), the break
    says where: a size whose messages are below it takes the lower segment's
    form, one whose messages reach it the upper's. Otherwise the time is
    interpolated in ``log n`` between the two segments' predictions at their
    fitted ends, at its own ``p``.
    """
    n, pp = np.broadcast_arrays(np.asarray(n_bytes, float), np.asarray(p, float))
    n, pp = n.ravel(), pp.ravel()
    idx = pf.segment_of(n)
    out = pf.predict_s(n, pp, form, idx)
    segs = pf.segments
    upper = np.minimum(idx + 1, len(segs) - 1)
    lo_n = np.array([segs[i].max_bytes for i in idx])
    hi_n = np.array([segs[i].min_bytes for i in upper])
    gap = (upper > idx) & (n > lo_n) & (n < hi_n)
    if breaks and np.any(gap):
        per_msg = pp if pf.algorithm in _CHUNKED else 1.0  # bytes of a message: n / per_msg
        b = np.asarray(breaks, dtype=np.float64)
        inside = ((lo_n / per_msg)[:, None] < b[None, :]) & (b[None, :] <= (hi_n / per_msg)[:, None])
        one = gap & (inside.sum(axis=1) == 1)
        if np.any(one):
            brk = b[np.argmax(inside[one], axis=1)]
            seg = np.where((n / per_msg)[one] < brk, idx[one], upper[one])
            out[one] = pf.predict_s(n[one], pp[one], form, seg)
            gap &= ~one
    if np.any(gap):
        lo = pf.predict_s(lo_n[gap], pp[gap], form, idx[gap])
        hi = pf.predict_s(hi_n[gap], pp[gap], form, upper[gap])
        w = np.log(n[gap] / lo_n[gap]) / np.log(hi_n[gap] / lo_n[gap])
        out[gap] = np.exp((1.0 - w) * np.log(lo) + w * np.log(hi))
    return out
