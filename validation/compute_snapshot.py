"""The profile's compute figures, re-measured on either side of a held-out run.

A shared host drifts. On the 2-core VM this project is developed on, the small
model's forward+backward takes about 81 us per call most of the time and about
120 us for stretches of a second or more on one core but not the other (another
tenant sharing the physical core), and the share of slow stretches changes from
minute to minute. A profile calibrated a minute before a training run can then
be 20 % off in its compute figure for reasons that have nothing to do with the
model that composes the figures into an iteration time.

:func:`compute_snapshot` re-runs the two calibration measurements of computation
(no communication, no update kernels, no training): the model's forward+backward
alone on every rank (:func:`~dlscale.validation.kernelbench.model_step`, as
``model_fwd_bwd_s``), and where the ranks outnumber the cores the synchronous
step (:func:`~dlscale.validation.sync_step.sync_step`). Taken just before and
just after a run (bracketing, as one corrects for drift in metrology),
:func:`refreshed_profile` puts them in place of the calibration's figures;
:func:`compute_drift` says how far they moved. ``dlscale validate local``
reports the prediction from the calibration-time profile and from the refreshed
one, and the drift.

Examples
--------
>>> import numpy as np
>>> from dlscale.perfmodel.machine.profile import MachineProfile
>>> prof = MachineProfile(kernels={"model_fwd_bwd_s": 1e-4})
>>> snap = {"times": [np.full(10, 1.2e-4), np.full(10, 1.0e-4)], "sync": None}
>>> new = refreshed_profile(prof, [snap])
>>> round(new.kernels["model_fwd_bwd_s"] * 1e6, 1), round(compute_drift(prof, new), 3)
(110.0, 0.1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation.calibrate_run import merge_quantiles
from dlscale.validation.kernelbench import quantiles, robust_cv, time_calls
from dlscale.validation.sync_step import sync_step

__all__ = ["compute_drift", "compute_snapshot", "refreshed_profile"]


def compute_snapshot(comm: Any, step: Callable[[], Any], budget_s: float,
                     cores: int | None = None) -> dict[str, Any] | None:
    """Time ``step`` alone on every rank for ``budget_s`` (half of it where the
    ranks outnumber ``cores``: the other half measures the synchronous step).

    Returns on rank 0 ``{"times": [per-rank arrays of seconds], "sync": dict or
    None}``; ``None`` on the other ranks.
    """
    p = comm.Get_size()
    shared = bool(cores) and p > int(cores or 0)
    comm.Barrier()
    mine = time_calls(step, budget_s / 2 if shared else budget_s, min_reps=20)
    sync = sync_step(comm, step, budget_s / 2) if shared else None
    everyone = comm.gather(mine, root=0)
    if comm.Get_rank() != 0:
        return None
    return {"times": everyone, "sync": sync}


def refreshed_profile(profile: MachineProfile, snapshots: list[dict[str, Any]]) -> MachineProfile:
    """``profile`` with its compute figures from ``snapshots`` (pooled per rank).

    ``model_fwd_bwd_s`` becomes the median over ranks of each rank's median call,
    its noise the largest rank's robust coefficient of variation, its quantiles
    :func:`~dlscale.validation.calibrate_run.merge_quantiles` of the ranks'
    (as the calibration merges them); a measured synchronous step is averaged over
    the snapshots. Everything else is the calibration's.
    """
    ranks = len(snapshots[0]["times"])
    pooled = [np.concatenate([np.asarray(s["times"][r]) for s in snapshots]) for r in range(ranks)]
    kern = dict(profile.kernels)
    kern["model_fwd_bwd_s"] = float(np.median([np.median(t) for t in pooled]))
    kern["noise"] = {**kern.get("noise", {}), "model_fwd_bwd_s": max(robust_cv(t) for t in pooled)}
    kern["quantiles"] = {**kern.get("quantiles", {}),
                         "model_fwd_bwd_s": merge_quantiles([quantiles(t) for t in pooled])}
    p2p = profile.p2p
    syncs = [s["sync"] for s in snapshots if s.get("sync")]
    if syncs and "intra-node" in p2p:
        avg = {k: float(np.mean([s[k] for s in syncs]))
               for k in ("step_s", "barrier_s", "compute_s", "sleep_s")}
        sync = {**syncs[0], **avg, "reps": int(sum(s["reps"] for s in syncs))}
        p2p = {**p2p, "intra-node": {**p2p["intra-node"], "sync_step": sync}}
    return replace(profile, kernels=kern, p2p=p2p)


def compute_drift(before: MachineProfile, after: MachineProfile) -> float:
    """Relative change of ``model_fwd_bwd_s`` from ``before`` to ``after``."""
    return float(after.kernels["model_fwd_bwd_s"] / before.kernels["model_fwd_bwd_s"] - 1.0)
