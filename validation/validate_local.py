"""``dlscale validate local``: calibrate on part of the measurements, predict the rest.

Run under ``mpiexec -n N`` (``N >= 2``). Message sizes are the powers of two from
``min_bytes`` (1 KiB) to ``max_bytes`` (64 MiB); rank counts are ``2..N``.

1. Calibrate (:func:`~dlscale.validation.calibrate_run.calibrate`) with allreduce
   measured at every *other* size (1 KiB, 4 KiB, ...) on the rank counts ``{2, N}``
   only, point-to-point over 1 B .. ``max_bytes``, and the kernels.
2. Measure the held-out allreduce cases: the other sizes (2 KiB, 8 KiB, ...) on
   ``{2, N}``, and every size on the rank counts strictly between 2 and ``N``.
3. Run the real training runs (:mod:`~dlscale.validation.mpi_training`) on all
   ``N`` ranks.
4. Predict every held-out case from the profile alone: allreduce with the fitted
   closed form (:mod:`~dlscale.validation.collective_fit`), training iterations
   with :mod:`~dlscale.validation.local_model`.

The report: one row per case (measured, predicted, relative error), the median and
worst absolute error per kind against the targets (allreduce 10 %, training 15 %),
written as JSON and drawn as a predicted-versus-measured plot.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError

from . import microbench as mb
from .calibrate_run import _on_first, _say, calibrate
from .collective_fit import predict_allreduce
from .local_model import predict_training
from .mpi_env import one_blas_thread
from .mpi_training import TRAINING_ALGORITHMS, train

__all__ = ["TARGETS", "plot_validation", "split_sizes", "summarize", "validate_local"]

#: Median absolute relative error allowed per kind of case.
TARGETS = {"allreduce": 0.10, "training": 0.15}


def split_sizes(min_bytes: int, max_bytes: int) -> tuple[list[int], list[int]]:
    """Fit sizes (every other power of two from ``min_bytes``) and held-out sizes.

    Examples
    --------
    >>> split_sizes(1024, 16384)
    ([1024, 4096, 16384], [2048, 8192])
    """
    sizes = mb.message_sizes(min_bytes, max_bytes)
    return sizes[0::2], sizes[1::2]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and worst absolute error per kind, against :data:`TARGETS`.

    Examples
    --------
    >>> rows = [{"kind": "training", "case": "a", "error": 0.1},
    ...         {"kind": "training", "case": "b", "error": -0.3}]
    >>> s = summarize(rows)["training"]
    >>> s["median_abs_error"], s["worst_case"], s["meets_target"]
    (0.2, 'b', False)
    """
    out: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        sel = [r for r in rows if r["kind"] == kind]
        errs = np.abs([r["error"] for r in sel])
        worst = sel[int(np.argmax(errs))]
        med = float(np.median(errs))
        out[kind] = {"cases": len(sel), "median_abs_error": round(med, 6),
                     "worst_abs_error": round(float(errs.max()), 6), "worst_case": worst["case"],
                     "target": TARGETS.get(kind), "meets_target": bool(med <= TARGETS.get(kind, 1.0))}
    return out


def _fmt_size(n: int) -> str:
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def validate_local(comm: Any, min_bytes: int = 1024, max_bytes: int = 64 << 20,
                   budget_s: float = 60.0, iterations: int = 300,
                   algorithms: tuple[str, ...] = TRAINING_ALGORITHMS, progress: bool = True,
                   argv: list[str] | None = None) -> dict[str, Any] | None:
    """Run the whole validation; the report on rank 0, ``None`` on the other ranks."""
    p = comm.Get_size()
    if p < 2:
        raise ConfigError("validate local: needs at least 2 ranks; run under `mpiexec -n 2` or more")
    fit_sizes, held_sizes = split_sizes(min_bytes, max_bytes)
    if len(fit_sizes) < 3:
        raise ConfigError(f"sizes: {min_bytes}..{max_bytes} B gives {len(fit_sizes)} fit sizes; "
                          "need at least 3 (widen the range)")
    fit_counts = sorted({2, p})
    held_counts = [k for k in range(3, p)]
    start = time.perf_counter()
    profile = calibrate(comm, fit_sizes, 0.5 * budget_s, ("allreduce",), fit_counts,
                        argv=argv, progress=progress, p2p_sizes=mb.message_sizes(1, max_bytes))
    share = 0.3 * budget_s / max(1, len(fit_counts) + len(held_counts))
    held: list[dict[str, Any]] = []
    with one_blas_thread():
        for k in fit_counts + held_counts:
            sizes = held_sizes if k in fit_counts else sorted(fit_sizes + held_sizes)
            _say(comm, progress, f"held-out allreduce on {k} ranks, {len(sizes)} sizes")
            res = _on_first(comm, k, lambda sub, sizes=sizes: mb.collective(
                sub, "allreduce", sizes, share))
            held.append(comm.bcast(res, root=0))
    runs = []
    for algo in algorithms:
        _say(comm, progress, f"training {algo} on {p} ranks, {iterations} iterations")
        runs.append(train(comm, algo, iterations=iterations))
    if comm.Get_rank() != 0:
        return None
    assert profile is not None
    fit = profile.collectives["allreduce"]["fit"]
    rows: list[dict[str, Any]] = []
    for res in held:
        for n, t in zip(res["sizes_bytes"], res["times_s"], strict=True):
            pred = float(predict_allreduce(fit, n, res["ranks"]))
            rows.append({"kind": "allreduce", "case": f"allreduce {_fmt_size(n)} p={res['ranks']}",
                         "ranks": res["ranks"], "size_bytes": n, "measured_s": t,
                         "predicted_s": pred, "error": pred / t - 1.0})
    for run in runs:
        assert run is not None
        pred = predict_training(profile, run.algorithm, run.ranks, run.message_bytes)
        rows.append({"kind": "training", "case": f"{run.algorithm} p={run.ranks}",
                     "ranks": run.ranks, "size_bytes": run.message_bytes,
                     "measured_s": run.iteration_s, "predicted_s": pred["iteration_s"],
                     "error": pred["iteration_s"] / run.iteration_s - 1.0,
                     "accuracy": run.accuracy, "measured_compute_s": run.compute_s,
                     "measured_comm_s": run.comm_s, "predicted_compute_s": pred["compute_s"],
                     "predicted_comm_s": pred["comm_s"], "iteration_cv": run.iteration_cv})
    return {
        "rows": rows,
        "summary": summarize(rows),
        "fit_sizes_bytes": fit_sizes,
        "held_out_sizes_bytes": held_sizes,
        "fit_rank_counts": fit_counts,
        "held_out_rank_counts": held_counts,
        "training": [r.to_dict() for r in runs if r is not None],
        "profile": profile.to_dict(),
        "notes": profile.notes,
        "elapsed_s": round(time.perf_counter() - start, 3),
    }


def write_report(report: dict[str, Any], path: str) -> None:
    """Write the report as JSON, atomically."""
    from dlscale.output import atomic_write_text

    atomic_write_text(path, json.dumps(report, indent=2, allow_nan=False) + "\n")


def plot_validation(report: dict[str, Any], path: str) -> None:
    """Predicted versus measured, log-log, one marker per kind; written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlscale.output import atomic_write_with

    fig, ax = plt.subplots(figsize=(6, 5.5))
    rows = report["rows"]
    for kind, marker in (("allreduce", "o"), ("training", "s")):
        sel = [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        ranks = sorted({r["ranks"] for r in sel})
        for k in ranks:
            pts = [r for r in sel if r["ranks"] == k]
            ax.scatter([r["measured_s"] for r in pts], [r["predicted_s"] for r in pts],
                       marker=marker, label=f"{kind}, {k} ranks", alpha=0.8)
    values = [v for r in rows for v in (r["measured_s"], r["predicted_s"])]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    xs = np.array([lo, hi])
    ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="grey", alpha=0.2, label="±10 %")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="measured time (s)", ylabel="predicted time (s)",
           title="dlscale validate local: held-out cases")
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    plt.close(fig)
