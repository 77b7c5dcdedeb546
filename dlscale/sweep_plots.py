"""Plots of a sweep: scaling curves per configuration, a heatmap over two parameters,
and the Pareto front of time to train against hardware cost.

Which plots a sweep draws follows its axes unless the study lists them
(``plots = [...]``): scaling curves when it has several node counts, a heatmap when
it varies at least two parameters, and the Pareto front always (cost is the
currency cost where the cluster has a price per node-hour, node-hours otherwise).
Files are PNG, written atomically.

Examples
--------
>>> pareto_front([(1.0, 10.0), (2.0, 5.0), (3.0, 6.0), (4.0, 1.0)])
[0, 1, 3]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dlscale.output import atomic_write_with
from dlscale.study import METRICS, Study, short_names
from dlscale.sweep_select import best_row
from dlscale.sweep_table import hidden_params, rank_metric, show_value

__all__ = ["choose_plots", "pareto_front", "plot_heatmap", "plot_pareto", "plot_scaling_groups",
           "plot_study"]

#: At most this many curves on a scaling plot; beyond it, curves are grouped by the
#: first varied parameter, each the best over the others.
MAX_CURVES = 10


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats in both coordinates (both minimized).

    Ties keep the first. Sorted by the first coordinate.

    Examples
    --------
    >>> pareto_front([(1, 1), (1, 1), (0, 2)])
    [2, 0]
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1], i))
    front, best_y = [], math.inf
    for i in order:
        x, y = points[i]
        if math.isfinite(x) and math.isfinite(y) and y < best_y:
            front.append(i)
            best_y = y
    return front


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    atomic_write_with(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    _plt().close(fig)
    return path


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _label(keys: Sequence[str], values: Sequence[Any]) -> str:
    """A curve's legend entry: ``name=value`` pairs; a zipped ``name`` stands for the
    table-valued parameters zipped with it (a topology table is no label)."""
    named = "name" in {k.rsplit(".", 1)[-1] for k in keys}
    parts = []
    for k, v in zip(keys, values, strict=True):
        if named and (isinstance(v, (dict, list)) or str(v)[:1] in ("{", "[")):
            continue
        text = show_value(v, 32)
        parts.append(f"{k.rsplit('.', 1)[-1] if k.endswith('.name') else k}="
                     f"{text if len(text) <= 32 else text[:29] + '...'}")
    return ", ".join(parts) or "all"


def plot_scaling_groups(path: str | Path, rows: Sequence[Mapping[str, Any]],
                        group_by: Sequence[str], title: str) -> Path:
    """Throughput and scaling efficiency against devices, one curve per value of ``group_by``.

    With more than :data:`MAX_CURVES` groups, curves are grouped by ``group_by[0]``
    alone, each point the highest throughput over the other parameters. Where the
    rows say which topology level limits the allreduce (``network_limit``), each curve's
    legend entry names the algorithm and that level at its largest node count.
    """
    plt = _plt()
    keys = list(group_by)
    groups = {tuple(r.get(k) for k in keys) for r in rows}
    if len(groups) > MAX_CURVES and keys:
        keys = keys[:1]
    curves: dict[tuple[Any, ...], dict[int, Mapping[str, Any]]] = {}
    for r in rows:
        g = tuple(r.get(k) for k in keys)
        cur = curves.setdefault(g, {}).get(r["devices"])
        if cur is None or _num(r["samples_per_s"]) > _num(cur["samples_per_s"]):
            curves[g][r["devices"]] = r
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5.2), constrained_layout=True)
    for g, pts in list(curves.items())[:MAX_CURVES]:
        devs = sorted(pts)
        name = _label(keys, g)
        last = pts[devs[-1]]
        if last.get("network_limit"):   # which level's links limit the allreduce there
            name += (f" | {last['nodes']} nodes: {last.get('allreduce', '')}, "
                     f"{last['network_limit']} links limit")
        for ax, key in ((ax1, "samples_per_s"), (ax2, "efficiency")):
            line, = (ax.loglog if ax is ax1 else ax.semilogx)(
                devs, [_num(pts[d][key]) for d in devs], "o-", label=name)
            lows = [_num(pts[d].get(f"{key}_low")) for d in devs]   # its band, where given
            highs = [_num(pts[d].get(f"{key}_high")) for d in devs]
            xs = [_num(d) for d in devs]
            if all(math.isfinite(v) for v in (*xs, *lows, *highs)):
                ax.fill_between(xs, lows, highs,
                                color=line.get_color(), alpha=0.2)
    ax1.set_xlabel("devices")
    ax1.set_ylabel("samples / s")
    ax2.set_xlabel("devices")
    ax2.set_ylabel("scaling efficiency")
    ax2.set_ylim(0, 1.05)
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    fig.legend(*ax2.get_legend_handles_labels(), loc="outside lower center", fontsize=7)
    fig.suptitle(title, fontsize=9 if "\n" in title else None)
    return _save(fig, Path(path))


def plot_heatmap(path: str | Path, rows: Sequence[Mapping[str, Any]], x: str, y: str,
                 metric: str, title: str, subtitle: str = "") -> Path:
    """``metric`` over two parameters, the best over everything else, at the node
    count of the best row (:func:`~dlscale.sweep_select.best_row`; the largest present
    when no row can be best), whose cell is outlined: the point the sweep's ``best:``
    line and the Pareto plot name."""
    plt = _plt()
    top_row = best_row(rows, metric)
    top = top_row["nodes"] if top_row else max(r["nodes"] for r in rows)
    rows = [r for r in rows if r["nodes"] == top] if x != "nodes" and y != "nodes" else rows
    smaller = METRICS.get(metric, True)
    xs = list(dict.fromkeys(r[x] for r in rows))
    ys = list(dict.fromkeys(r[y] for r in rows))
    grid = [[math.nan] * len(xs) for _ in ys]
    for r in rows:
        v = _num(r.get(metric))
        i, j = ys.index(r[y]), xs.index(r[x])
        old = grid[i][j]
        if math.isnan(old) or (v < old if smaller else v > old):
            grid[i][j] = v
    fig, ax = plt.subplots(figsize=(1.2 * len(xs) + 3, 0.6 * len(ys) + 2.5),
                           constrained_layout=True)
    im = ax.imshow(grid, aspect="auto", origin="lower", cmap="viridis_r" if smaller else "viridis")
    ax.set_xticks(range(len(xs)), [show_value(v, 24) for v in xs], rotation=30, fontsize=8)
    ax.set_yticks(range(len(ys)), [show_value(v, 24) for v in ys], fontsize=8)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    for i, line in enumerate(grid):
        for j, v in enumerate(line):
            if math.isfinite(v):
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7, color="w")
    fig.colorbar(im, ax=ax, label=metric)
    if top_row is not None:  # the best point's cell
        j, i = xs.index(top_row[x]), ys.index(top_row[y])
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="red", lw=2.5,
                                   label=f"best: point {top_row['point']}"))
        ax.legend(loc="upper left", bbox_to_anchor=(0, -0.25), fontsize=7, frameon=False)
    where = f" ({top} nodes{', the best point' if top_row else ''})"
    ax.set_title((title + where if x != "nodes" and y != "nodes" else title)
                 + (f"\n{subtitle}" if subtitle else ""), fontsize=8 if subtitle else None)
    return _save(fig, Path(path))


def plot_pareto(path: str | Path, rows: Sequence[Mapping[str, Any]], cost: str,
                label: Callable[[Mapping[str, Any]], str], title: str, metric: str = "",
                subtitle: str = "") -> Path:
    """Time to train against ``cost`` for every point, the Pareto front drawn and
    labelled, and the best row by ``metric`` (:func:`~dlscale.sweep_select.best_row`)
    starred."""
    plt = _plt()
    pts = [(_num(r[cost]), _num(r["time_to_train_s"]) / 3600.0) for r in rows]
    front = pareto_front(pts)
    fig, ax = plt.subplots(figsize=(7, 5), constrained_layout=True)
    ax.loglog([p[0] for p in pts], [p[1] for p in pts], ".", color="0.7", label="points")
    ax.loglog([pts[i][0] for i in front], [pts[i][1] for i in front], "o-", color="C3",
              label="Pareto front")
    for i in front[:12]:
        ax.annotate(label(rows[i]), pts[i], fontsize=6, xytext=(3, 3), textcoords="offset points")
    top = best_row(rows, metric) if metric else None
    if top is not None:
        k = next(i for i, r in enumerate(rows) if r is top)
        ax.loglog([pts[k][0]], [pts[k][1]], "*", color="gold", mec="black", ms=14,
                  label=f"best by {metric}: point {top['point']} ({label(top)})")
    ax.set_xlabel("cost" if cost == "cost" else "node-hours")
    ax.set_ylabel("time to train (h)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=8 if subtitle else None)
    return _save(fig, Path(path))


def choose_plots(study: Study) -> list[str]:
    """The plots a study asks for, or those its axes suit."""
    if study.plots:
        return list(study.plots)
    out = []
    if len(study.nodes) > 1:
        out.append("scaling")
    if len(study.axes) >= 2 or study.heatmap:
        out.append("heatmap")
    out.append("pareto")
    return out


def plot_study(study: Study, rows: Sequence[Mapping[str, Any]], out_dir: str | Path,
               subtitle: str = "") -> list[Path]:
    """Draw the study's plots from its result rows (first fidelity, ``ok`` rows);
    ``subtitle`` (what produced them) goes under each title."""
    out_dir = Path(out_dir)
    fidelity = "analytical" if study.fidelity == "hybrid" else study.fidelity
    rows = [r for r in rows if r["status"] == "ok" and r["fidelity"] == fidelity]
    if not rows:
        return []
    hidden = hidden_params(study)
    metric = rank_metric(study, rows)[0]   # the sweep table's ranking, so all agree
    params = list(short_names(study.param_names).values())
    paths = []
    for kind in choose_plots(study):
        if kind == "scaling":
            stacks = ", ".join(sorted({str(r["runtime"]) for r in rows if r.get("runtime")}))
            paths.append(plot_scaling_groups(out_dir / "scaling.png", rows, params,
                                             f"{study.name}: scaling"
                                             + (f" (runtime {stacks})" if stacks else "")
                                             + (f"\n{subtitle}" if subtitle else "")))
        elif kind == "heatmap":
            names = study.heatmap or (study.param_names[:2] if len(study.param_names) >= 2
                                      else [*study.param_names[:1], "nodes"])
            if len(names) < 2:
                continue
            shorts = short_names(study.param_names)
            x, y = (shorts.get(n, n) for n in names)
            paths.append(plot_heatmap(out_dir / "heatmap.png", rows, x, y, metric,
                                      f"{study.name}: {metric}", subtitle))
        elif kind == "pareto":
            cost = "cost" if any(_num(r.get("cost")) > 0 for r in rows) else "node_hours"
            shown = [p for p in params if p not in hidden][:2]

            def name(r: Mapping[str, Any], shown: list[str] = shown) -> str:
                return ",".join(show_value(r[p], 24) for p in shown) + f",{r['nodes']}n"

            paths.append(plot_pareto(out_dir / "pareto.png", rows, cost, name,
                                     f"{study.name}: time to train vs {cost}",
                                     metric, subtitle))
    return paths
