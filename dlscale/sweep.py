"""Run a study's grid: chunks of points on a process pool or MPI, results appended as they come.

Points that differ only in node count form a *group* and are evaluated by one call
of the evaluator, which is vectorized over node counts (the analytical model is);
groups are sent to workers in *chunks*, not one point per task. Each finished chunk
is appended at once to ``results.jsonl`` and ``results.csv`` in the output folder,
so an interrupted sweep loses nothing finished, and ``resume=True`` skips every point
already recorded as ``ok`` (points are matched by a stable key of their values, see
:func:`dlscale.study.point_key`). A point that fails is recorded with its error, and
the sweep goes on. At the end the table is rewritten sorted by point index
(``results.csv``, ``results.json``), so the same study and seed give the same files
bit for bit, and plots are drawn (:mod:`dlscale.sweep_plots`).

Executors (:data:`EXECUTORS`): ``process`` (``concurrent.futures.ProcessPoolExecutor``,
the default), ``mpi`` (``mpi4py.futures.MPIPoolExecutor``; start it as
``mpiexec -n N python -m mpi4py.futures -m dlscale sweep STUDY.toml --executor mpi``,
which gives N-1 workers), and ``serial`` (in this process, for debugging).

Safety (:mod:`dlscale.sweep_guard`): the output folder is locked while a sweep writes
there (a second sweep into it is an error naming the holder), and remembers the study
that wrote it (another study's folder is refused unless ``force``); the resume key of
a point covers the whole study (base cluster and workload, seed, profile, the
point's values, node count and fidelity; not the evaluator's code, so a fixed
evaluator can retry the failed points). Ctrl-C (SIGINT), or SIGTERM (a batch
system's end of wall time), stops the sweep at once: the points already finished are
written, pending chunks are cancelled, the workers are stopped (SIGTERM, then SIGKILL
a second later or at a second signal), and :class:`SweepInterrupted` is raised (the
CLI prints one line and exits with status 128 + the signal: 130, 143); ``resume=True``
then runs only what is missing. A worker that dies (``BrokenProcessPool``: killed,
out of memory) or a result file that cannot be written (a full disk) stops the sweep
the same way with :class:`SweepAborted` (one line, exit status 2); see
:mod:`dlscale.sweep_loop`.

Evaluators (:data:`EVALUATORS`, in :mod:`dlscale.sweep_points`) are functions ``f(cluster, workload, nodes, seeds) ->
list of row dicts``, one row per node count, with at least ``samples_per_s`` (``seeds``:
one per node count, derived from the study seed and the point; zeros for the
analytical fidelity); a
``"module:function"`` string names one to import (it must be importable by the
workers).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlscale import provenance
from dlscale.output import atomic_write_text, rows_to_csv, to_jsonable
from dlscale.perfmodel.errors import ConfigError, DlscaleError, unknown_name
from dlscale.perfmodel.machine.config import load_cluster, load_workload
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload
from dlscale.results import ResultTable
from dlscale.study import Study, label, short_names
from dlscale.sweep_guard import FolderLock, StopSignals, check_stamp, stop_pool, write_stamp
from dlscale.sweep_loop import Results, SweepAborted, SweepInterrupted, run_phases
from dlscale.sweep_points import (
    COLUMNS,
    EVALUATORS,
    EXECUTORS,
    Evaluator,
    add_training_metrics,
    analytical,
    materialize,
    mpi_preflight,
    resolve_evaluator,
    simulated,
)
from dlscale.sweep_records import Record, clean, read_log, record
from dlscale.sweep_select import all_keys, keyer, ranked
from dlscale.sweep_select import key as resume_key

__all__ = ["COLUMNS", "EVALUATORS", "EXECUTORS", "SweepAborted", "SweepInterrupted", "SweepResult",
           "add_training_metrics", "analytical", "check_study", "resolve_evaluator", "run_sweep",
           "simulated"]


def _seed(study_seed: int, key: str) -> int:
    ss = np.random.SeedSequence([study_seed, int(key, 16)])
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def _network_of(fidelity: str) -> str:
    """The network model a fidelity's rows come from (simulated: the API's default)."""
    from dlscale.simulator.training.net import DEFAULT_NETWORK

    return {"analytical": "analytical", "simulated": DEFAULT_NETWORK,
            "hybrid": f"analytical + {DEFAULT_NETWORK}"}.get(fidelity, fidelity)


def _run_chunk(evaluator: Evaluator | str, base_cluster: Cluster, base_workload: Workload,
               tasks: list[tuple[dict[str, Any], list[tuple[int, int, str | None]]]],
               fidelity: str, study_seed: int, base: Mapping[str, Any],
               shorts: Mapping[str, str], header: Sequence[str]) -> list[Record]:
    """Evaluate groups; each task is ``(params, [(index, nodes, key or None), ...])``.

    Never raises for a point's failure: the point's row carries ``status = "error"``.
    Rows come back with their JSON and CSV lines, made here to spare the parent.
    """
    fn = resolve_evaluator(evaluator)
    out: list[Record] = []
    cache: dict[tuple[int, str], Any] = {}
    for params, pts0 in tasks:
        make_key = keyer(base, params)
        pts = [(i, n, k or make_key(n, fidelity)) for i, n, k in pts0]
        head = {shorts[k]: clean(label(v)) for k, v in params.items()}

        def fail(i: int, n: int, key: str, exc: BaseException, head: dict[str, Any] = head) -> None:
            row = {"point": i, "key": key, "fidelity": fidelity, "status": "error", **head,
                   "nodes": n, "error": f"{type(exc).__name__}: {exc}"}
            out.append(record(row, header))

        try:
            cluster, workload = materialize(base_cluster, base_workload, params, cache)
        except Exception as exc:
            for i, n, key in pts:
                fail(i, n, key, exc)
            continue
        good = []
        for i, n, key in pts:
            try:
                cluster.check_nodes(n)
                good.append((i, n, key))
            except Exception as exc:
                fail(i, n, key, exc)
        if not good:
            continue
        try:
            seeds = ([0] * len(good) if fidelity == "analytical"
                     else [_seed(study_seed, key) for _, _, key in good])
            rows = fn(cluster, workload, [n for _, n, _ in good], seeds)
            if len(rows) != len(good):
                raise DlscaleError(f"evaluator returned {len(rows)} rows for {len(good)} "
                                   "node counts")
        except Exception as exc:
            for i, n, key in good:
                fail(i, n, key, exc)
            continue
        for (i, n, key), got in zip(good, rows, strict=True):
            row = {"point": i, "key": key, "fidelity": fidelity, "status": "ok", **head,
                   **{c: None for c in COLUMNS}}
            row.update((k, clean(v)) for k, v in got.items())
            row["nodes"] = n
            add_training_metrics(row, cluster, workload)
            for k in ("time_to_train_s", "node_hours", "cost"):
                row[k] = clean(row[k])
            row["error"] = ""
            out.append(record(row, header))
    return out


class SweepResult(ResultTable):
    """The rows of a sweep, sorted by point index (then fidelity), and where they went.

    Each row has ``point`` (index in grid order), ``key`` (stable identity),
    ``fidelity``, ``status`` (``ok`` or ``error``), one column per varied parameter
    (dotted path without the ``cluster.``/``workload.`` prefix), then :data:`COLUMNS`
    (``error`` is empty for ``ok`` rows). ``meta`` holds the study's name, base
    cluster and workload, fidelity, seed, point count, failures and ``out_dir``.
    """

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The rows whose point failed."""
        return [r for r in self.rows if r["status"] != "ok"]

    @property
    def ok(self) -> list[dict[str, Any]]:
        """The rows whose point succeeded."""
        return [r for r in self.rows if r["status"] == "ok"]


def check_study(study: Study) -> tuple[Cluster, Workload]:
    """Load the base cluster and workload and try every parameter value on them.

    Raises :class:`ConfigError` (unknown dotted path, bad value) before any point runs.
    """
    cluster, workload = load_cluster(study.cluster), load_workload(study.workload)
    for names, values in study.axes:
        for combo in values:
            materialize(cluster, workload, dict(zip(names, combo, strict=True)))
    return cluster, workload


#: Extra result columns of the ``cosim`` fidelity (time to the study's target accuracy).
TARGET_COLUMNS = ("time_to_target_s", "samples_to_target", "reached", "final_accuracy")


def _cosim_evaluator(study: Study) -> Evaluator:
    """The ``cosim`` fidelity's evaluator with the study's target and cap."""
    from dlscale.simulator.training.target import study_evaluator

    return functools.partial(study_evaluator, target_accuracy=study.target_accuracy,
                             max_iterations=study.max_iterations)


def run_sweep(study: Study, out_dir: str | Path | None = None, *, executor: str = "process",
              jobs: int | None = None, resume: bool = False, quiet: bool = False,
              evaluators: Mapping[str, Evaluator | str] | None = None,
              chunk_groups: int | None = None, plots: bool = True,
              profile: str | Path | None = None, force: bool = False,
              baseline: str = "node") -> SweepResult:
    """Run every point of ``study``; return the sorted rows.

    Parameters
    ----------
    study : Study
        From :func:`dlscale.study.load_study`.
    out_dir : path, optional
        Output folder (default ``STUDY.toml.out`` next to the study file). Without
        ``resume``, earlier results there are replaced. It is locked while the sweep
        runs; a folder holding another study's results is refused unless ``force``.
    executor : {"process", "mpi", "serial"}
        Where the chunks run (:data:`EXECUTORS`).
    jobs : int, optional
        Workers of the process pool (default: all cores).
    resume : bool
        Keep the results already in ``out_dir`` and run only points not yet ``ok``.
    quiet : bool
        No progress bar (it is also off when stderr is not a terminal).
    evaluators : mapping, optional
        ``{"analytical": f, "simulated": g}`` to replace the default evaluators.
    chunk_groups : int, optional
        Groups (points differing only in node count) per task; default aims at
        about 8 tasks per worker.
    plots : bool
        Draw the plots the study asks for (or that suit its axes).
    profile : path, optional
        A machine profile from ``dlscale calibrate``; its network and kernel figures
        replace the base cluster's (a varied ``cluster`` is not changed).
    force : bool
        Use ``out_dir`` even if it holds the results of another study (without
        ``resume`` they are replaced; with it, only points whose keys match are kept,
        which, the key covering the whole study, are points of this study).
    baseline : {"node", "device"}
        What the analytical efficiency is measured against (one device alone:
        :func:`~dlscale.sweep_points.analytical_one_device`); part of the folder's
        identity and the points' keys, so results of the two are never mixed.

    Raises
    ------
    SweepInterrupted
        On Ctrl-C (SIGINT) or SIGTERM, after writing every finished point.
    SweepAborted
        A pool worker died or a result file cannot be written, after writing every
        finished point that can be.
    """
    from tqdm import tqdm

    evals = _evaluators(study, executor, jobs, baseline, evaluators)
    cluster, workload = check_study(study)
    if not evaluators:   # the built-in model's reading of each field (another may read any)
        from dlscale.sweep_reads import check_axes_read

        check_axes_read(study, cluster, workload, materialize)
    cluster, prov = provenance.load_cluster(cluster, profile)
    prov = prov.with_baseline(provenance.NO_BASELINE if study.fidelity == "cosim" else
                              provenance.baseline_phrase(baseline, workload.scaling, "point"))
    prov.warn()
    out = _out_folder(study, out_dir)
    base, ident = _identity(study, profile, baseline)
    with FolderLock(out):
        check_stamp(out, ident, force)
        write_stamp(out, ident)
        return _run_locked(study, out, base, evals, cluster, workload, executor, jobs, resume,
                           quiet, chunk_groups, plots, tqdm, prov)


def _evaluators(study: Study, executor: str, jobs: int | None, baseline: str,
                evaluators: Mapping[str, Evaluator | str] | None) -> dict[str, Evaluator | str]:
    """Check the executor, jobs and baseline; the evaluator of each fidelity, resolved once."""
    if executor not in EXECUTORS:
        raise unknown_name("executor", executor, EXECUTORS)
    if jobs is not None and jobs < 1:
        raise ConfigError(f"jobs: must be >= 1, got {jobs!r}")
    if executor == "mpi" and (note := mpi_preflight()):
        print(f"dlscale sweep: {note}", file=sys.stderr)
    if baseline not in ("node", "device"):
        raise unknown_name("baseline", baseline, ("node", "device"))
    if baseline == "device":
        if study.fidelity != "analytical" or (evaluators or {}).get("analytical"):
            raise ConfigError(f"baseline: 'device' applies to the built-in analytical model "
                              f"only, got fidelity {study.fidelity!r}"
                              + (" with another evaluator" if evaluators else ""))
        evaluators = {"analytical": "dlscale.sweep_points:analytical_one_device"}
    evals: dict[str, Evaluator | str] = {**EVALUATORS, **(evaluators or {})}
    if study.fidelity == "cosim" and "cosim" not in evals:
        evals["cosim"] = _cosim_evaluator(study)
    for name in evals.values():
        resolve_evaluator(name)
    return evals


def _out_folder(study: Study, out_dir: str | Path | None) -> Path:
    """The output folder (default ``STUDY.toml.out``), created."""
    out = Path(out_dir) if out_dir is not None else study.path.with_name(study.path.name + ".out")
    if str(out_dir) == "" or (out.exists() and not out.is_dir()):
        raise ConfigError(f"-o: {str(out_dir)!r} is not a folder; a sweep writes a folder "
                          "of results (give a new or existing folder)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"-o: cannot create the folder {str(out)!r}: {exc.strerror}") from None
    return out


def _identity(study: Study, profile: str | Path | None,
              baseline: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The base of every resume key, and the folder's identity stamp."""
    base = {"@cluster": study.cluster, "@workload": study.workload, "@seed": study.seed}
    if study.fidelity == "cosim":  # another target or cap is another result: resume keys differ
        base["@target"] = f"{study.target_accuracy}/{study.max_iterations}"
    if profile is not None:  # another profile is another machine: resume keys differ
        base["@profile"] = str(Path(profile).resolve())
    ident = {"study": study.name, "cluster": study.cluster, "workload": study.workload,
             "seed": study.seed, "fidelity": study.fidelity, "network": _network_of(study.fidelity),
             "target": base.get("@target"), "profile": base.get("@profile")}
    if baseline == "device":  # another efficiency: resume keys and stamp differ
        base["@baseline"] = ident["baseline"] = "device"
    return base, ident


def _run_locked(study: Study, out: Path, base: dict[str, Any],
                evals: Mapping[str, Evaluator | str], cluster: Cluster, workload: Workload,
                executor: str, jobs: int | None, resume: bool, quiet: bool,
                chunk_groups: int | None, plots: bool, tqdm: Any,
                prov: provenance.Provenance) -> SweepResult:
    log_path, csv_path = out / "results.jsonl", out / "results.csv"
    shorts = short_names(study.param_names)
    header = ["point", "key", "fidelity", "status", *shorts.values(), *COLUMNS,
              *(TARGET_COLUMNS if study.fidelity == "cosim" else ())]
    done = _start_files(study, base, log_path, csv_path, header, resume)
    total = len(study) + (study.simulate_best if study.fidelity == "hybrid" else 0)
    bar = tqdm(total=total, unit="pt", desc=study.name, file=sys.stderr, dynamic_ncols=True,
               disable=quiet or not sys.stderr.isatty())
    pool = EXECUTORS[executor](jobs)

    def submit(fidelity: str, chunk: list[Any]) -> cf.Future[list[Record]]:
        return pool.submit(_run_chunk, evals[fidelity], cluster, workload, chunk, fidelity,
                           study.seed, base, shorts, header)

    try:
        with StopSignals() as signals, Results(log_path, csv_path, done, bar, signals) as res:
            run_phases(study, pool, jobs, chunk_groups, submit, base, res)
    except BaseException:
        stop_pool(pool, abort=True)  # a stop before the loop ran (run_phases stops its own)
        raise
    finally:
        bar.close()
    return _finish(study, out, base, done, header, shorts, plots, prov)


def _start_files(study: Study, base: Mapping[str, Any], log_path: Path, csv_path: Path,
                 header: list[str], resume: bool) -> dict[str, Record]:
    """Start the log and the CSV: empty, or (``resume``) with the study's earlier records."""
    done: dict[str, Record] = {}
    if resume:
        done = read_log(log_path, header)
        wanted = set(all_keys(study, base))
        done = {k: v for k, v in done.items() if k in wanted}
        atomic_write_text(log_path, "".join(rec[1] for rec in done.values()))
    else:
        log_path.unlink(missing_ok=True)
    atomic_write_text(csv_path, ",".join(header) + "\n"
                      + "".join(rec[2] for rec in done.values()))
    return done


def _finish(study: Study, out: Path, base: Mapping[str, Any], done: dict[str, Record],
            header: list[str], shorts: Mapping[str, str], plots: bool,
            prov: provenance.Provenance) -> SweepResult:
    """Rewrite the CSV and write the JSON sorted by point, draw the plots; the result.

    ``prov`` goes into the JSON ``meta``, the CSV's last columns and the plots."""
    csv_path = out / "results.csv"
    if study.fidelity == "hybrid":  # only the current best N simulated points
        best_keys = {resume_key(base, p, n, "simulated") for p, _i, n in ranked(study, base, done)}
        done = {k: v for k, v in done.items()
                if v[0]["fidelity"] != "simulated" or k in best_keys}
    order = {"analytical": 0, "simulated": 1}
    recs = sorted(done.values(), key=lambda r: (r[0]["point"], order.get(r[0]["fidelity"], 2)))
    rows = [r[0] for r in recs]
    meta = {"study": study.name, "cluster": study.cluster, "workload": study.workload,
            "fidelity": study.fidelity, "network": _network_of(study.fidelity),
            "seed": study.seed, "points": len(study),
            "failures": sum(r["status"] != "ok" for r in rows), "out_dir": str(out),
            "parameters": list(shorts.values()), **prov.meta()}
    extra = prov.csv_columns()
    cells = rows_to_csv([extra]).split("\n")  # the columns' header, then their cells
    atomic_write_text(csv_path, ",".join(header) + f",{cells[0]}\n"
                      + "".join(f"{r[2].rstrip()},{cells[1]}\n" for r in recs))
    atomic_write_text(out / "results.json", '{"meta": ' + json.dumps(to_jsonable(meta))
                      + ',\n "rows": [\n' + ",\n".join(r[1].rstrip("\n") for r in recs)
                      + "\n]}\n")
    result = SweepResult(rows, meta)
    if plots and result.ok:
        from dlscale.sweep_plots import plot_study

        meta["plots"] = [str(p) for p in plot_study(study, rows, out, prov.subtitle())]
    return result
