"""Figures of simulated training runs (PNG, matplotlib Agg, written atomically).

- :func:`plot_training_scaling`: throughput and scaling efficiency against ranks,
  next to a stacked bar of the per-rank breakdown (compute, exposed communication,
  waiting for stragglers, master queueing) per node count;
- :func:`plot_accuracy`: accuracy against simulated time for several co-simulated
  runs (algorithms) on one figure, and against iterations;
- :func:`plot_target`: a time-to-target report (:mod:`dlscale.simulator.training.target`): every
  run's accuracy against simulated time and against samples, the target line, and
  each run's crossing (the first evaluation at or above the target) marked.

Examples
--------
>>> import os, tempfile
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training.run import simulate_training
>>> runs = [simulate_training(get_cluster("summit"), get_workload("resnet50"), n,
...                           iterations=2) for n in (1, 2)]
>>> with tempfile.TemporaryDirectory() as d:
...     plot_training_scaling(os.path.join(d, "s.png"), runs, "resnet50 on summit")
...     os.path.getsize(os.path.join(d, "s.png")) > 0
True
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dlscale.perfmodel.output.atomicio import atomic_write_with, plot_format
from dlscale.simulator.training.result import TrainingResult

__all__ = ["plot_accuracy", "plot_target", "plot_training_scaling"]

#: The stacked parts of an iteration; the master's queue is a part of the exposed
#: communication (a wait for the exchange), drawn apart from the rest of it.
_STACK = (("compute_s", "compute"), ("exposed_comm_s", "exposed communication"),
          ("master_queue_s", "master queue (exposed)"),
          ("straggler_wait_s", "waiting for stragglers"))


def _stacked(summary: dict, key: str) -> float:
    """The height of ``key``'s bar: exposed communication less its master queue."""
    value = summary.get(key, 0.0)
    if key == "exposed_comm_s":
        value -= summary.get("master_queue_s", 0.0)
    return max(value, 0.0)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_training_scaling(path: str | Path, runs: Sequence[TrainingResult], title: str) -> None:
    """Throughput, efficiency and stacked per-rank breakdown against node counts."""
    plt = _plt()
    runs = [r for r in runs if r.fits]
    ranks = [r.ranks for r in runs]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    ax1.loglog(ranks, [r.samples_per_s for r in runs], "o-", label="simulated")
    if runs:
        base = runs[0].samples_per_s / runs[0].ranks
        ax1.loglog(ranks, [base * p for p in ranks], "k:", label="linear")
    ax1.set_xlabel("ranks")
    ax1.set_ylabel("samples / s")
    ax1.grid(True, which="both", alpha=0.3)
    eff = [(r.ranks, r.efficiency) for r in runs if r.efficiency is not None]
    if eff:
        ax1b = ax1.twinx()
        ax1b.semilogx([e[0] for e in eff], [e[1] for e in eff], "s--", color="tab:red")
        ax1b.set_ylabel("scaling efficiency", color="tab:red")
        ax1b.set_ylim(0, 1.05)
    ax1.legend(loc="upper left")
    x = list(range(len(runs)))
    bottom = [0.0] * len(runs)
    for key, label in _STACK:
        vals = [_stacked(r.summary(), key) for r in runs]
        ax2.bar(x, vals, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax2.set_xticks(x, [str(r.nodes) for r in runs])
    ax2.set_xlabel("nodes")
    ax2.set_ylabel("seconds per iteration (mean over ranks)")
    ax2.legend(fontsize="small")
    fig.suptitle(title)
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, format=plot_format(path), dpi=110))
    plt.close(fig)


def plot_accuracy(path: str | Path, runs: Sequence[TrainingResult], title: str) -> None:
    """Test accuracy against simulated time and against iterations, one line per run."""
    plt = _plt()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    for r in runs:
        if not r.curve:
            continue
        label = f"{r.algorithm} ({r.ranks} workers)"
        ax1.plot([p["time_s"] for p in r.curve], [p["accuracy"] for p in r.curve], label=label)
        ax2.plot([p["iteration"] for p in r.curve], [p["accuracy"] for p in r.curve],
                 label=label)
    ax1.set_xlabel("simulated time (s)")
    ax2.set_xlabel("iterations (steps per worker)")
    for ax in (ax1, ax2):
        ax.set_ylabel("test accuracy")
        ax.grid(True, alpha=0.3)
    ax1.legend(fontsize="small")
    surrogate = next((r.surrogate for r in runs if r.surrogate), "")
    fig.suptitle(title + (f"\n{surrogate}" if surrogate else ""), fontsize="medium")
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, format=plot_format(path), dpi=110))
    plt.close(fig)


def plot_target(path: str | Path, report: Any, title: str, subtitle: str = "") -> None:
    """Accuracy against simulated time and samples, target line, crossings marked;
    ``subtitle`` (what produced the figure) goes under the title."""
    from dlscale.simulator.training.target import crossing

    plt = _plt()
    target = report.spec.target_accuracy
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    last = {"time_s": [0.0], "samples": [0.0]}   # latest crossing; None: a run missed
    for i, (alg, curves) in enumerate(report.curves.items()):
        color = colors[i % len(colors)]
        for j, curve in enumerate(curves):
            if not curve:
                continue
            label = f"{alg} ({len(curves)} seeds)" if j == 0 else None
            for ax, key in ((ax1, "time_s"), (ax2, "samples")):
                ax.plot([p[key] for p in curve], [p["accuracy"] for p in curve], color=color,
                        lw=1.0, alpha=0.8, label=label)
            x = crossing(curve, target, report.spec.max_sim_time_s)
            if x is not None:
                ax1.plot(x["time_s"], x["accuracy"], "o", color=color, ms=6, mec="black")
                ax2.plot(x["samples"], x["accuracy"], "o", color=color, ms=6, mec="black")
            for key in last:
                last[key].append(x[key] if x is not None else np.inf)
    for ax in (ax1, ax2):
        ax.axhline(target, color="black", ls="--", lw=1.0)
        ax.set_ylabel("test accuracy")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(0, 1.0)
    for ax, key in ((ax1, "time_s"), (ax2, "samples")):  # every run crossed: zoom on it
        if np.isfinite(max(last[key])) and max(last[key]) > 0:
            ax.set_xlim(0, None if not report.curves else min(
                3 * max(last[key]), max(c[-1][key] for cs in report.curves.values()
                                        for c in cs if c)))
    ax1.set_xlabel("simulated time (s)")
    ax2.set_xlabel("samples seen by the model (all workers)")
    ax1.legend(fontsize="small", loc="lower right")
    how = "tuned" if report.tuned else "literature defaults"
    fig.suptitle(f"{title}: time to {target:g} ({how}; dots: first evaluation at or above "
                 f"the target)\n{report.surrogate}" + (f"\n{subtitle}" if subtitle else ""),
                 fontsize="medium")
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)
