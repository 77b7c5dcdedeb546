"""Figures: scaling curves (PNG), drawn with matplotlib's Agg backend, saved atomically."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dlscale.output import atomic_write_with
from dlscale.perfmodel.output.atomicio import plot_format

__all__ = ["plot_scaling"]


def _band(ax: Any, x: Sequence[Any], rows: Sequence[Mapping[str, Any]], key: str) -> None:
    """Shade the rows' ``KEY_low``..``KEY_high`` band, where they carry one."""
    if rows and f"{key}_low" in rows[0] and f"{key}_high" in rows[0]:
        ax.fill_between(x, [r[f"{key}_low"] for r in rows], [r[f"{key}_high"] for r in rows],
                        alpha=0.25, label="range")


def plot_scaling(path: str | Path, rows: Sequence[Mapping[str, Any]], title: str,
                 published: Sequence[tuple[float, float, str]] = (), subtitle: str = "") -> None:
    """Throughput and efficiency against devices, on log-x axes.

    Parameters
    ----------
    path : path
        PNG file to write.
    rows : sequence of dict
        Prediction rows with ``devices``, ``samples_per_s``, ``efficiency``,
        ``compute_s`` and ``exposed_comm_s``; with ``samples_per_s_low`` /
        ``_high`` and ``efficiency_low`` / ``_high``, their band is shaded.
    title : str
        Figure title.
    published : sequence of (devices, efficiency, label)
        Published points to draw on the efficiency axis.
    subtitle : str
        A smaller line under the title (what produced the figure:
        :meth:`dlscale.provenance.Provenance.subtitle`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    devices = [r["devices"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    ax1.loglog(devices, [r["samples_per_s"] for r in rows], "o-", label="predicted")
    _band(ax1, devices, rows, "samples_per_s")
    ideal = [rows[0]["samples_per_s"] * d / devices[0] for d in devices]
    ax1.loglog(devices, ideal, "k:", label="linear")
    ax1.set_xlabel("devices")
    ax1.set_ylabel("samples / s")
    ax1.legend()
    ax1.grid(True, which="both", alpha=0.3)
    ax2.semilogx(devices, [r["efficiency"] for r in rows], "o-", label="predicted")
    _band(ax2, devices, rows, "efficiency")
    for d, eff, label in published:
        ax2.plot([d], [eff], "r*", markersize=12, label=label)
    ax2.set_xlabel("devices")
    ax2.set_ylabel("scaling efficiency")
    ax2.set_ylim(0, 1.05)
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend()
    fig.suptitle(title + (f"\n{subtitle}" if subtitle else ""), fontsize=8 if subtitle else None)
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, dpi=120, format=plot_format(path)))
    plt.close(fig)
