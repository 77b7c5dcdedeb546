"""The rows of ``dlscale validate local``'s report, its JSON file and its plot.

One row per held-out case: allreduce rows (:func:`allreduce_rows`, predicted by the
profile's fitted allreduce) and training rows (:func:`training_rows`, predicted by
:mod:`.local_model` from the profile alone and with re-measured compute figures),
to which :func:`add_simulated` adds the simulator's prediction of each training
run from the same profile (:mod:`.local_sim`).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation.collective_fit import predict_allreduce
from dlscale.validation.compute_snapshot import compute_drift, refreshed_profile
from dlscale.validation.local_model import predict_training
from dlscale.validation.local_sim import simulated_fields

__all__ = ["add_simulated", "allreduce_rows", "plot_validation", "relative_spread",
           "training_rows", "write_report"]


def relative_spread(values: Any) -> float:
    """A measurement's own repeatability: the median absolute deviation of repeated
    measurements over their median (0 for fewer than 2).

    Examples
    --------
    >>> relative_spread([1.0, 1.1, 0.9])
    0.1
    >>> relative_spread([2.0])
    0.0
    """
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return 0.0
    med = float(np.median(v))
    return round(float(np.median(np.abs(v - med))) / med, 12) if med > 0 else 0.0


def _fmt_size(n: int) -> str:
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"


def allreduce_rows(profile: MachineProfile, held: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per held-out allreduce case, predicted by the profile's fitted allreduce."""
    fit = profile.collectives["allreduce"]["fit"]
    rows: list[dict[str, Any]] = []
    for res in held:
        spreads = res.get("round_spread", [0.0] * len(res["sizes_bytes"]))
        for n, t, sp in zip(res["sizes_bytes"], res["times_s"], spreads, strict=True):
            pred = float(predict_allreduce(fit, n, res["ranks"]))
            rows.append({"kind": "allreduce", "case": f"allreduce {_fmt_size(n)} p={res['ranks']}",
                         "ranks": res["ranks"], "size_bytes": n, "measured_s": t,
                         "predicted_s": pred, "error": pred / t - 1.0, "spread": sp})
    return rows


def add_simulated(profile: MachineProfile, rows: list[dict[str, Any]],
                  progress: bool = False) -> None:
    """The simulator's prediction of every training row, from the same profile
    (:func:`.local_sim.simulated_fields`: ``simulated_s``, ``error_simulated``,
    ``simulated_as``, or ``simulated_note`` where it cannot simulate the run)."""
    for row in rows:
        if row["kind"] == "training":
            if progress:
                print(f"[validate {time.strftime('%H:%M:%S')}] simulating {row['case']}",
                      file=sys.stderr, flush=True)
            row.update(simulated_fields(profile, row))


def training_rows(profile: MachineProfile, runs: list[Any],
                  snaps: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One row per algorithm from its runs (``runs[i]`` taken between ``snaps[i]``
    and ``snaps[i + 1]``).

    ``measured_s`` is the median over the algorithm's runs of each run's median
    iteration; ``predicted_s`` the median of each run's prediction from the
    profile with that run's snapshots (:func:`.compute_snapshot.refreshed_profile`);
    ``predicted_profile_s`` the prediction from ``profile`` alone (for
    ``async-easgd`` with ``exchange``: ``"measured"``, or why the exchange was
    composed from ping-pong fits); ``compute_drift``
    the median drift of the compute figure. ``runs_s`` lists every run's
    ``[measured, predicted]``.
    """
    by_algo: dict[str, list[tuple[Any, dict[str, float], float]]] = {}
    for i, run in enumerate(runs):
        assert run is not None
        fresh = refreshed_profile(profile, [s for s in snaps[i:i + 2] if s is not None])
        tp = predict_training(fresh, run.algorithm, run.ranks, run.message_bytes)
        by_algo.setdefault(run.algorithm, []).append((run, tp, compute_drift(profile, fresh)))
    rows = []
    for algo, items in by_algo.items():
        last = items[-1][0]
        meas = float(np.median([run.iteration_median_s for run, _, _ in items]))
        pred = float(np.median([tp["iteration_s"] for _, tp, _ in items]))
        t0 = predict_training(profile, algo, last.ranks, last.message_bytes)

        def med(get: Any, items: list[Any] = items) -> float:
            return float(np.median([get(it) for it in items]))

        rows.append({"kind": "training", "case": f"{algo} p={last.ranks}",
                     "algorithm": algo, "iterations": last.iterations,
                     "ranks": last.ranks, "size_bytes": last.message_bytes,
                     "measured_s": meas, "measured_mean_s": med(lambda it: it[0].iteration_s),
                     "predicted_s": pred, "error": pred / meas - 1.0,
                     "predicted_profile_s": t0["iteration_s"],
                     "error_profile": t0["iteration_s"] / meas - 1.0,
                     "compute_drift": med(lambda it: it[2]),
                     "accuracy": last.accuracy,
                     "measured_compute_s": med(lambda it: it[0].compute_s),
                     "measured_comm_s": med(lambda it: it[0].comm_s),
                     "predicted_compute_s": med(lambda it: it[1]["compute_s"]),
                     "predicted_comm_s": med(lambda it: it[1]["comm_s"]),
                     "iteration_cv": med(lambda it: it[0].iteration_cv),
                     "spread": relative_spread([run.iteration_median_s for run, _, _ in items]),
                     "runs_s": [[run.iteration_median_s, tp["iteration_s"]] for run, tp, _ in items],
                     **({"exchange": t0["exchange"]} if "exchange" in t0 else {})})
    return rows


def write_report(report: dict[str, Any], path: str) -> None:
    """Write the report as JSON, atomically."""
    from dlscale.perfmodel.output.atomicio import atomic_write_text

    atomic_write_text(path, json.dumps(report, indent=2, allow_nan=False) + "\n")


def _judged_s(row: dict[str, Any]) -> float:
    return float(row.get("predicted_profile_s", row["predicted_s"]))


def plot_validation(report: dict[str, Any], path: str, subtitle: str = "") -> None:
    """Predicted versus measured, log-log, one marker per kind; written atomically.

    The predicted figure is the judged one (from the profile alone); the
    simulator's prediction of each training run is drawn with its own marker;
    ``subtitle`` (what produced the figure) goes under the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dlscale.perfmodel.output.atomicio import atomic_write_with, plot_format

    fig, ax = plt.subplots(figsize=(6, 5.5))
    rows = report["rows"]
    for kind, marker in (("allreduce", "o"), ("training", "s")):
        sel = [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        ranks = sorted({r["ranks"] for r in sel})
        for k in ranks:
            pts = [r for r in sel if r["ranks"] == k]
            ax.scatter([r["measured_s"] for r in pts], [_judged_s(r) for r in pts],
                       marker=marker, label=f"{kind}, {k} ranks", alpha=0.8)
    sim = [r for r in rows if "simulated_s" in r]
    if sim:
        ax.scatter([r["measured_s"] for r in sim], [r["simulated_s"] for r in sim],
                   marker="x", color="k", label="training, simulator")
    values = [v for r in rows for v in (r["measured_s"], _judged_s(r))]
    values += [r["simulated_s"] for r in sim]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    xs = np.array([lo, hi])
    ax.plot(xs, xs, "k-", lw=1, label="predicted = measured")
    ax.fill_between(xs, xs * 0.9, xs * 1.1, color="grey", alpha=0.2, label="±10 %")
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="measured time (s)", ylabel="predicted time (s)",
           title="dlscale validate local: held-out cases" + (f"\n{subtitle}" if subtitle else ""))
    ax.title.set_fontsize(8 if subtitle else 12)
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, dpi=120, format=plot_format(path)))
    plt.close(fig)
