"""Fit measured allreduce times to the closed forms; predict from the stored fit.

The MPI library's algorithm is unknown (MPICH and Open MPI switch algorithm with
size and rank count), so the measurements are fitted against every flat closed form
of :data:`dlscale.perfmodel.collectives.ALLREDUCE` with per-size-segment efficiency
factors (:func:`dlscale.perfmodel.fitting_collectives.fit_collective_piecewise`), using the
intra-node point-to-point ``alpha`` and ``beta`` -- those of the piecewise Hockney
segment of the size of the messages the algorithm sends (:func:`piecewise_form`),
as SimGrid drives its collectives with its piecewise point-to-point model, where
the profile has the segments -- and the reduction kernel's ``gamma``; the form
with the smallest RMS relative error is kept. The result is a plain JSON
dictionary (it is stored in the profile) and :func:`predict_allreduce` evaluates
it.

Examples
--------
>>> import numpy as np
>>> from dlscale.perfmodel.collectives import ring_allreduce_s
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

from dlscale.perfmodel.collectives import ALLREDUCE
from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.fitting_collectives import (
    CollectiveSegment,
    PiecewiseCollectiveFit,
    fit_collective_piecewise,
)

__all__ = ["fit_allreduce", "piecewise_form", "predict_allreduce"]


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
_CHUNKED = ("ring", "rabenseifner")


def _p2p_at(segments: list[dict[str, Any]], m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.array([s["min_bytes"] for s in segments[1:]], dtype=np.float64)
    idx = np.searchsorted(starts, m, side="right")
    alpha = np.array([s["alpha_s"] for s in segments])[idx]
    beta = np.array([s["beta_s_per_B"] for s in segments])[idx]
    return alpha, beta


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
        alpha, beta = _p2p_at(segments, np.maximum(m, 1.0))
        return (np.asarray(form(n_arr, p_arr, 1.0, 0.0, 0.0)) * a * alpha
                + np.asarray(form(n_arr, p_arr, 0.0, 1.0, 0.0)) * b * beta
                + np.asarray(form(n_arr, p_arr, 0.0, 0.0, 1.0)) * g)

    return f


def _fit_forms(runs: list[dict[str, Any]], alpha: float, beta: float, gamma: float,
               algorithms: list[str], segments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    n, p, t = _flatten(runs)
    fits: dict[str, PiecewiseCollectiveFit] = {}
    for name in algorithms:
        if name not in ALLREDUCE:
            raise unknown_name("algorithm", name, ALLREDUCE)
        if segments:
            fits[name] = fit_collective_piecewise(name, piecewise_form(name, segments), n, p, t,
                                                  1.0, 1.0, gamma, min_sizes=2)
        else:
            fits[name] = fit_collective_piecewise(name, ALLREDUCE[name], n, p, t, alpha, beta,
                                                  gamma, min_sizes=2)
    best = min(fits.values(), key=lambda f: f.rms_rel_error)
    return {
        "algorithm": best.algorithm,
        "alpha_s": best.alpha_s,
        "beta_s_per_B": best.beta_s_per_B,
        "gamma_s_per_B": gamma,
        **({"p2p_segments": segments} if segments else {}),
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
                  cores: int | None = None) -> dict[str, Any]:
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
    """
    alpha = float(intra["latency_s"])
    beta = 1.0 / float(intra["bandwidth_Bps"])
    gamma = 1.0 / float(reduce_Bps) if reduce_Bps else 0.0
    names = algorithms or list(ALLREDUCE)
    segs = intra.get("segments") or None
    if cores:
        over = [r for r in runs if int(r["ranks"]) > cores]
        ded = [r for r in runs if int(r["ranks"]) <= cores]
        if over and ded:
            regimes = {"dedicated": _fit_forms(ded, alpha, beta, gamma, names, segs),
                       "oversubscribed": _fit_forms(over, alpha, beta, gamma, names, segs)}
            return {**regimes["dedicated"], "cores": int(cores), "regimes": regimes,
                    "oversubscribed_ranks": max(int(r["ranks"]) for r in over)}
    return _fit_forms(runs, alpha, beta, gamma, names, segs)


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
    out = pf.predict_s(n_bytes, p, form)
    return float(out[0]) if np.ndim(n_bytes) == 0 and np.ndim(p) == 0 else out
