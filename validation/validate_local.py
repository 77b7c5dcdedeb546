"""``dlscale validate local``: calibrate on part of the measurements, predict the rest.

Run under ``mpiexec -n N`` (``N >= 2``). Message sizes are the powers of two from
``min_bytes`` (1 KiB) to ``max_bytes`` (64 MiB); rank counts are ``2..N``.

1. Calibrate (:func:`~dlscale.validation.calibrate_run.calibrate`) point-to-point
   over 1 B .. ``max_bytes`` and the kernels.
2. Measure ``MPI_Allreduce`` at every size on every rank count ``2..N``, fit and
   held-out sizes in one sweep (so that a change of load on a shared host between
   phases does not show up as model error), the rank counts taking turns over
   :data:`ALLREDUCE_ROUNDS` rounds (median per case; on the development VM the
   same 1 MiB allreduce takes 170 us in some minutes and 650 us in others). Fit
   (:func:`~dlscale.validation.collective_fit.fit_allreduce`) on every *other*
   size (1 KiB, 4 KiB, ...) on the rank counts ``{2, N}`` only; hold out the sizes
   between them (:data:`HELD_OUT_FACTOR` times each: 3 KiB, 12 KiB, ...) and every
   size on the rank counts strictly between.
3. Run the real training runs (:mod:`~dlscale.validation.mpi_training`) on all
   ``N`` ranks, each between two snapshots of the compute figures
   (:mod:`~dlscale.validation.compute_snapshot`: the model's forward+backward
   alone, no communication).
4. Predict every held-out case: allreduce with the fitted closed form
   (:mod:`~dlscale.validation.collective_fit`), training iterations with
   :mod:`~dlscale.validation.local_model`, twice: from the calibration's profile
   alone (``predicted_profile_s``, ``error_profile``) and with its compute
   figures replaced by the snapshots taken around the run (``predicted_s``,
   ``error``; ``compute_drift`` says how far the compute figure moved since the
   calibration). The first is what a user gets from a profile taken earlier;
   the second is the model's own error, with the shared host's drift taken out.
   The targets are judged on the first (the user's figure); the second stays
   in the report as a diagnostic.
5. Predict every training run with the simulator too
   (:func:`~dlscale.validation.local_rows.add_simulated`,
   :mod:`~dlscale.validation.local_sim`: ``simulate_training`` on the cluster
   description the same profile gives through ``apply_profile``, the same model,
   batch, ranks and iterations): ``simulated_s`` and ``error_simulated`` per
   training row (or ``simulated_note`` saying why a run could not be simulated),
   and ``summary_simulated`` (median |error| of the simulated figure). It is
   reported next to the judged figure, not judged.

Measured figures are medians (of calls, of iterations): the model predicts the
typical call and iteration, and on a shared host the mean also holds the calls
that other users' processes interrupted. The training rows carry the mean
(``measured_mean_s``) too.

The report: one row per case (measured, predicted, relative error), the median and
worst absolute error per kind against the targets (allreduce 10 %, training 15 %),
written as JSON and drawn as a predicted-versus-measured plot.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation import microbench as mb
from dlscale.validation.calibrate_run import _on_first, _say, calibrate
from dlscale.validation.collective_fit import fit_allreduce, library_allreduce_algorithms
from dlscale.validation.compute_snapshot import compute_snapshot
from dlscale.validation.kernelbench import model_step
from dlscale.validation.local_rows import (
    add_simulated,
    allreduce_rows,
    plot_validation,
    relative_spread,
    training_rows,
    write_report,
)
from dlscale.validation.mpi_env import _cores, one_blas_thread
from dlscale.validation.mpi_training import TRAINING_ALGORITHMS, train

__all__ = ["ALLREDUCE_ROUNDS", "HELD_OUT_FACTOR", "TARGETS", "add_simulated", "allreduce_rows",
           "judged_error", "merge_rounds", "plot_validation", "relative_spread", "split_runs",
           "split_sizes", "summarize", "training_rows", "validate_local", "verdict",
           "write_report"]

#: Rounds of the allreduce sweep (interleaved over the rank counts): every held-out
#: case is measured this many times, and its spread over the rounds is its noise floor.
ALLREDUCE_ROUNDS = 3

#: Held-out allreduce sizes are the fitted ones times this factor (3 KiB, 12 KiB, ...:
#: a grid between the fitted powers of four, offset from the powers of two the local
#: model was developed on). Fixed on 2026-12-01 before any further change to the
#: local model (issue 16); validation/README.md records the commit.
HELD_OUT_FACTOR = 3

#: Median absolute relative error allowed per kind of case.
TARGETS = {"allreduce": 0.10, "training": 0.15}


def split_sizes(min_bytes: int, max_bytes: int) -> tuple[list[int], list[int]]:
    """Fit sizes (every other power of two from ``min_bytes``) and held-out sizes
    (:data:`HELD_OUT_FACTOR` times each fit size that stays below the next one).

    Examples
    --------
    >>> split_sizes(1024, 16384)
    ([1024, 4096, 16384], [3072, 12288])
    """
    fit = mb.message_sizes(min_bytes, max_bytes)[0::2]
    held = [HELD_OUT_FACTOR * n for n in fit[:-1]]
    return fit, held


def verdict(error: float, spread: float, target: float) -> str:
    """``"unsettled"`` where the case's own spread exceeds the target (its measurement
    does not repeat well enough to judge the model at the target), else ``"pass"`` or
    ``"miss"`` against ``max(target, spread)``.

    Examples
    --------
    >>> verdict(0.05, 0.02, 0.10), verdict(-0.2, 0.02, 0.10), verdict(0.05, 0.3, 0.10)
    ('pass', 'miss', 'unsettled')
    """
    if spread > target:
        return "unsettled"
    return "pass" if abs(error) <= max(target, spread) else "miss"


def split_runs(runs: list[dict[str, Any]], fit_sizes: list[int],
               fit_counts: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split collective runs into the fitted part and the held-out part.

    A measurement is fitted where its rank count is in ``fit_counts`` and its size
    in ``fit_sizes``; every other one is held out.

    Examples
    --------
    >>> runs = [{"ranks": 2, "sizes_bytes": [1, 2, 4], "times_s": [1.0, 2.0, 3.0]},
    ...         {"ranks": 3, "sizes_bytes": [1, 2], "times_s": [5.0, 6.0]}]
    >>> fit, held = split_runs(runs, [1, 4], [2])
    >>> fit[0]["times_s"], [(h["ranks"], h["sizes_bytes"]) for h in held]
    ([1.0, 3.0], [(2, [2]), (3, [1, 2])])
    """
    fit: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []
    for run in runs:
        for target, keep in ((fit, True), (held, False)):
            idx = [i for i, n in enumerate(run["sizes_bytes"])
                   if ((run["ranks"] in fit_counts) and (n in fit_sizes)) == keep]
            if idx:
                target.append({"ranks": run["ranks"],
                               **{k: [run[k][i] for i in idx]
                                  for k in ("sizes_bytes", "times_s", "spread", "reps",
                                            "round_spread") if k in run}})
    return fit, held


def merge_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One collective measurement from several rounds of the same sizes and ranks:
    per size the median of the rounds' times, the largest spread, the sum of reps.

    Examples
    --------
    >>> a = {"ranks": 2, "sizes_bytes": [8], "times_s": [1.0], "spread": [0.1], "reps": [5]}
    >>> b = {**a, "times_s": [3.0], "spread": [0.2]}
    >>> c = {**a, "times_s": [2.5]}
    >>> m = merge_rounds([a, b, c])
    >>> m["times_s"], m["spread"], m["reps"], m["round_spread"]
    ([2.5], [0.2], [15], [0.2])
    """
    first = rounds[0]
    per = np.array([r["times_s"] for r in rounds], dtype=float)          # (rounds, sizes)
    out = {"ranks": first["ranks"], "sizes_bytes": list(first["sizes_bytes"]),
           "times_s": [float(v) for v in np.median(per, axis=0)],
           "round_spread": [relative_spread(per[:, j]) for j in range(per.shape[1])]}
    if all("spread" in r for r in rounds):
        out["spread"] = [float(v) for v in np.max([r["spread"] for r in rounds], axis=0)]
    if all("reps" in r for r in rounds):
        out["reps"] = [int(v) for v in np.sum([r["reps"] for r in rounds], axis=0)]
    return out


def judged_error(row: dict[str, Any]) -> float:
    """The error a user's prediction has: from the calibration's profile alone
    (``error_profile`` of training rows; an allreduce row's ``error`` already is)."""
    return float(row.get("error_profile", row["error"]))


def summarize(rows: list[dict[str, Any]], key: str | None = None) -> dict[str, Any]:
    """Per kind: median and worst absolute error against :data:`TARGETS`, over the
    cases whose measurement repeats (``spread`` at most the target; the others are
    counted as unsettled).

    ``key`` names the error to judge (default: :func:`judged_error`, the
    profile-only prediction); rows without it are left out.

    Examples
    --------
    >>> rows = [{"kind": "training", "case": "a", "error": 0.1, "spread": 0.01},
    ...         {"kind": "training", "case": "b", "error": -0.3, "spread": 0.02},
    ...         {"kind": "training", "case": "c", "error": 0.9, "spread": 0.5}]
    >>> s = summarize(rows)["training"]
    >>> s["median_abs_error"], s["worst_case"], s["meets_target"], s["unsettled"]
    (0.2, 'b', False, 1)
    """
    def err(r: dict[str, Any]) -> float:
        return judged_error(r) if key is None else float(r[key])

    out: dict[str, Any] = {}
    rows = [r for r in rows if key is None or key in r]
    for kind in sorted({r["kind"] for r in rows}):
        target = TARGETS.get(kind, 1.0)
        every = [r for r in rows if r["kind"] == kind]
        sel = [r for r in every if r.get("spread", 0.0) <= target]
        entry: dict[str, Any] = {"cases": len(sel), "unsettled": len(every) - len(sel),
                                 "target": TARGETS.get(kind)}
        if not sel:
            out[kind] = {**entry, "median_abs_error": None, "worst_abs_error": None,
                         "worst_case": None, "meets_target": None}
            continue
        errs = np.abs([err(r) for r in sel])
        worst = sel[int(np.argmax(errs))]
        med = float(np.median(errs))
        out[kind] = {**entry, "median_abs_error": round(med, 6),
                     "worst_abs_error": round(float(errs.max()), 6),
                     "worst_case": worst["case"], "meets_target": bool(med <= target)}
    return out


def validate_local(comm: Any, min_bytes: int = 1024, max_bytes: int = 64 << 20,
                   budget_s: float = 60.0, iterations: int = 500,
                   algorithms: tuple[str, ...] = TRAINING_ALGORITHMS, progress: bool = True,
                   argv: list[str] | None = None, rounds: int = 8,
                   oversubscribe: bool = False,
                   timeline: str | None = None) -> dict[str, Any] | None:
    """Run the whole validation; the report on rank 0, ``None`` on the other ranks.

    ``timeline`` (an algorithm among ``algorithms``): its first run is recorded, and
    the report's ``"timeline"`` holds the clock readings
    (:attr:`~dlscale.validation.mpi_training.TrainingResult.spans`, for
    :func:`dlscale.validation.timeline.horovod_timeline`).

    Every training algorithm runs ``rounds`` times (``iterations`` each), the
    algorithms taking turns, so that all see the same stretches of a shared host.
    More ranks than this host's cores is refused unless ``oversubscribe`` (the
    report then says so): an oversubscribed rank waits for a time slice, which
    measures the scheduler, not the model.
    """
    fit_sizes, held_sizes = _checked_launch(comm, min_bytes, max_bytes, rounds, oversubscribe)
    if timeline is not None and timeline not in algorithms:
        raise ConfigError(f"timeline: records a run of {timeline!r}, which is not among the "
                          f"algorithms run ({', '.join(algorithms)})")
    p = comm.Get_size()
    fit_counts = sorted({2, p})
    counts = list(range(2, p + 1))
    start = time.perf_counter()
    ring = ("ring_allreduce",) if "sgd-ring" in algorithms else ()
    profile = calibrate(comm, fit_sizes, 0.4 * budget_s, ring, fit_counts, argv=argv,
                        progress=progress, p2p_sizes=mb.message_sizes(1, max_bytes))
    measured = _allreduce_rounds(comm, counts, sorted(fit_sizes + held_sizes), budget_s,
                                 progress)
    cores = comm.bcast(profile.provenance.get("cores") if profile is not None else None, root=0)
    runs, snaps = _training_rounds(comm, algorithms, rounds, iterations, budget_s, cores,
                                   progress, timeline)
    if comm.Get_rank() != 0:
        return None
    assert profile is not None
    profile, held = _fit_profile(profile, measured, fit_sizes, fit_counts)
    rows = allreduce_rows(profile, held) + training_rows(profile, runs, snaps)
    for row in rows:
        row["verdict"] = verdict(judged_error(row), row.get("spread", 0.0),
                                 TARGETS.get(row["kind"], 1.0))
        if cores and row["ranks"] > cores:
            row["oversubscribed"] = True
    add_simulated(profile, rows, progress)
    return {
        "rows": rows,
        "summary": summarize(rows),
        "summary_refreshed": summarize(rows, "error"),
        "summary_simulated": summarize(rows, "error_simulated"),
        "judged_on": "the calibration-time profile alone (error_profile for training rows)",
        "oversubscribed": bool(cores and p > cores),
        "fit_sizes_bytes": fit_sizes,
        "held_out_sizes_bytes": held_sizes,
        "fit_rank_counts": fit_counts,
        "held_out_rank_counts": [k for k in counts if k not in fit_counts],
        "training": [r.to_dict() for r in runs if r is not None],
        "rounds": rounds,
        "profile": profile.to_dict(),
        "notes": profile.notes,
        "elapsed_s": round(time.perf_counter() - start, 3),
        **({"timeline": next(r.spans for r in runs if r is not None and r.spans)}
           if timeline is not None else {}),
    }


def _checked_launch(comm: Any, min_bytes: int, max_bytes: int, rounds: int,
                    oversubscribe: bool) -> tuple[list[int], list[int]]:
    """Refuse a launch that cannot answer (before any work); the fit and held-out sizes."""
    p = comm.Get_size()
    cores = _cores()
    if p > cores and not oversubscribe:
        raise ConfigError(f"validate local: {p} ranks on {cores} cores would oversubscribe "
                          f"them; run `mpiexec -n {cores}` (or fewer), or pass --oversubscribe "
                          f"to measure anyway (the report marks it)")
    if not (isinstance(rounds, int) and rounds >= 1):
        raise ConfigError(f"rounds: must be an integer >= 1, got {rounds!r}")
    if p < 2:
        raise ConfigError("validate local: needs at least 2 ranks; run under `mpiexec -n 2` or more")
    fit_sizes, held_sizes = split_sizes(min_bytes, max_bytes)
    if len(fit_sizes) < 3:
        raise ConfigError(f"sizes: {min_bytes}..{max_bytes} B gives {len(fit_sizes)} fit sizes; "
                          "need at least 3 (widen the range)")
    return fit_sizes, held_sizes


def _allreduce_rounds(comm: Any, counts: list[int], all_sizes: list[int], budget_s: float,
                      progress: bool) -> list[dict[str, Any]]:
    """Fit and held-out sizes in one sweep, the rank counts taking turns over
    :data:`ALLREDUCE_ROUNDS` rounds (a change of the host's state between phases
    spoils one round of every rank count, not every round of one); merged per count."""
    sweeps = ALLREDUCE_ROUNDS
    share = 0.6 * budget_s / len(counts) / sweeps
    by_count: dict[int, list[dict[str, Any]]] = {k: [] for k in counts}
    with one_blas_thread():
        for r in range(sweeps):
            for k in counts:
                _say(comm, progress, f"allreduce on {k} ranks, {len(all_sizes)} sizes "
                                     f"(round {r + 1} of {sweeps})")
                res = _on_first(comm, k,
                                lambda sub: mb.collective(sub, "allreduce", all_sizes, share))
                by_count[k].append(comm.bcast(res, root=0))
    return [merge_rounds(by_count[k]) for k in counts]


def _training_rounds(comm: Any, algorithms: tuple[str, ...], rounds: int, iterations: int,
                     budget_s: float, cores: int | None, progress: bool,
                     record: str | None = None) -> tuple[list[Any], list[dict[str, Any] | None]]:
    """Rounds of every algorithm in turn, each run between two snapshots of the
    compute figures (see :mod:`.compute_snapshot`); the first run of ``record`` (an
    algorithm) keeps its clock readings (``spans``)."""
    p = comm.Get_size()
    snap_s = min(0.25, max(0.05, 0.002 * budget_s))  # about as long as one run
    with one_blas_thread():
        step = model_step()
        snaps = [compute_snapshot(comm, step, snap_s, cores)]
        runs = []
        for r in range(rounds):
            for algo in algorithms:
                _say(comm, progress, f"training {algo} on {p} ranks, {iterations} iterations "
                                     f"(round {r + 1} of {rounds})")
                runs.append(train(comm, algo, iterations=iterations,
                                  record=r == 0 and algo == record))
                snaps.append(compute_snapshot(comm, step, snap_s, cores))
    return runs, snaps


def _fit_profile(profile: MachineProfile, measured: list[dict[str, Any]], fit_sizes: list[int],
                 fit_counts: list[int]) -> tuple[MachineProfile, list[dict[str, Any]]]:
    """The allreduce fitted on the fit part of ``measured`` into ``profile``; the
    held-out part."""
    fit_runs, held = split_runs(measured, fit_sizes, fit_counts)
    algos = library_allreduce_algorithms(profile.provenance.get("mpi_library", ""),
                                         fit_sizes, fit_counts)
    fit = fit_allreduce(fit_runs, profile.p2p["intra-node"], profile.kernels.get("reduce_Bps"),
                        algorithms=algos, cores=profile.provenance.get("cores"),
                        page_fault_s_per_B=profile.kernels.get("x_page_fault_s_per_B"))
    profile = replace(profile, collectives={**profile.collectives, "allreduce": {
        "algorithm": "library-default", "measurements": fit_runs, "fit": fit}})
    return profile, held
