"""What ``dlscale sweep`` prints at the end: the rows ranked by the study's ``rank_by``,
the best point, and what produced them.

The rows are ordered by :func:`dlscale.sweep_select.rank_rows` (best first; points that
failed or do not fit last) and the ``best:`` line names :func:`~dlscale.sweep_select.best_row`,
the point the heatmap and the Pareto plot mark too. Axis values are shown by their
names (:func:`show_value`): a table-valued parameter zipped with a name (a topology
with ``cluster.name``) is shown by that name alone. A column with nothing to say
(every shown value empty or zero: ``cost`` where no cluster has a price) is left out,
with a line saying why.

Examples
--------
>>> show_value('{"dims":[4,4],"family":"torus"}')
'torus(dims=[4, 4])'
>>> show_value("{}"), show_value(25.0), show_value("ring")
('(base)', '25.0', 'ring')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dlscale.output import format_table
from dlscale.study import METRICS, Study, short_names
from dlscale.sweep_select import best_row, metric_of, rank_rows

__all__ = ["MAX_SHOWN", "describe_point", "hidden_params", "rank_metric", "show_value",
           "summary_lines"]

#: Rows the summary table shows (the best first); every row is in results.csv.
MAX_SHOWN = 20

#: Result columns of the summary, after the parameters and ``nodes``.
_RESULT_COLUMNS = ("ranks", "iteration_s", "backward_s", "exposed_comm_s", "samples_per_s",
                   "efficiency", "allreduce", "time_to_train_s", "cost", "status")


def show_value(value: Any, width: int = 40) -> str:
    """A parameter value as a reader names it: a table by its ``name`` (else its
    ``family`` and fields), ``(base)`` for an empty table (the base's own), a
    scalar as it is; at most ``width`` characters."""
    v = value
    if isinstance(v, str) and v[:1] in ("{", "["):
        try:
            v = json.loads(v)
        except ValueError:
            return v
    if isinstance(v, dict):
        if not v:
            return "(base)"
        if "name" in v:
            return str(v["name"])
        rest = ", ".join(f"{k}={x}" for k, x in v.items() if k != "family")
        text = f"{v['family']}({rest})" if "family" in v else rest
    else:
        text = str(v)
    return text if len(text) <= width else text[:width - 3] + "..."


def hidden_params(study: Study) -> set[str]:
    """Short names of table-valued parameters zipped with a ``name`` (shown by it)."""
    shorts = short_names(study.param_names)
    out = set()
    for names, values in study.axes:
        if not any(n == "name" or n.endswith(".name") for n in names):
            continue
        for j, n in enumerate(names):
            if any(isinstance(combo[j], (dict, list, tuple)) for combo in values):
                out.add(shorts[n])
    return out


def describe_point(row: Mapping[str, Any], params: Sequence[str]) -> str:
    """``point 11: collective=hierarchical, name=fat-tree, 4608 nodes``."""
    parts = [f"{p}={show_value(row.get(p))}" for p in params]
    return f"point {row['point']}: " + ", ".join([*parts, f"{row['nodes']} nodes"])


def rank_metric(study: Study, rows: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """The metric rows are ranked by (the study's ``rank_by``; ``node_hours`` where it is
    ``cost`` and no row has a price), and a line saying why when it is not ``rank_by``."""
    if study.rank_by == "cost" and _empty(rows, "cost"):
        return "node_hours", "rank_by cost: every cost is 0 (no price), so ranked by node_hours"
    return study.rank_by, ""


def _empty(rows: Sequence[Mapping[str, Any]], col: str) -> bool:
    vals = [r.get(col) for r in rows]
    return all(v is None or v == "" or (isinstance(v, (int, float)) and v == 0) for v in vals)


def summary_lines(study: Study, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any],
                  header_lines: Sequence[str]) -> list[str]:
    """The lines ``dlscale sweep`` prints: header, ranked table, best point, files."""
    params = [p for p in meta["parameters"] if p not in hidden_params(study)]
    cols = ["point", *(["fidelity"] if study.fidelity == "hybrid" else []), *params, "nodes",
            *_RESULT_COLUMNS]
    if study.fidelity == "cosim":  # time to the study's target accuracy
        cols[cols.index("time_to_train_s")] = "time_to_target_s"
    notes = []
    if _empty(rows, "cost"):
        cols[cols.index("cost")] = "node_hours"
        notes.append("cost: no cluster in this study has a price per node-hour "
                     "(price_per_node_hour in the cluster file, or vary "
                     "\"cluster.price_per_node_hour\"); node_hours shown instead")
    metric, why = rank_metric(study, rows)
    notes += [why] if why else []
    if metric not in cols:
        cols.insert(cols.index("status"), metric)
    ordered = rank_rows(rows, metric)
    shown = ordered[:MAX_SHOWN]
    if all(r.get("status") == "ok" for r in rows):
        cols.remove("status")
    cols = [c for c in cols if c in ("point", "nodes") or not _empty(shown, c)
            or c in params]
    runtimes = ", ".join(sorted({str(r["runtime"]) for r in rows if r.get("runtime")}))
    which = "lowest" if METRICS.get(metric, True) else "highest"
    lines = [f"study {study.name}: {len(study)} points, {meta['failures']} failed, "
             f"fidelity {study.fidelity}" + (f", runtime {runtimes}" if runtimes else ""),
             *header_lines, *notes,
             f"ranked by {metric} ({which} first)"
             + (f"; the best {len(shown)} of {len(rows)} rows" if len(rows) > len(shown) else "")]
    cells = [{**{c: ("-" if r.get(c) is None else show_value(r[c]) if c in params else r[c])
                 for c in cols},
              **{f"{c}_{end}": r[f"{c}_{end}"] for c in cols for end in ("low", "high")
                 if c not in params and r.get(f"{c}_low") is not None
                 and r.get(f"{c}_high") is not None}} for r in shown]
    lines.append(format_table(cells, cols))
    if len(rows) > len(shown):
        lines.append(f"... {len(rows) - len(shown)} more rows in {meta['out_dir']}/results.csv")
    lines.append(_best_line(study, rows, metric, params))
    lines.append(f"results: {meta['out_dir']}/results.csv, results.json"
                 + "".join(f", {p.rsplit('/', 1)[-1]}" for p in meta.get("plots", [])))
    return lines


def _best_line(study: Study, rows: Sequence[Mapping[str, Any]], metric: str,
               params: Sequence[str]) -> str:
    """``best (lowest time_to_train_s): point ...: time_to_train_s 22.95``."""
    fid = "simulated" if study.fidelity == "hybrid" and best_row(rows, metric, "simulated") \
        else None
    top = best_row(rows, metric, fid)
    which = "lowest" if METRICS.get(metric, True) else "highest"
    if top is None:
        return f"best: none (no point finished with a finite {metric} and fitting in memory)"
    from dlscale.output import format_value

    ties = [r["point"] for r in rows if r is not top and r.get("fidelity") == top.get("fidelity")
            and metric_of(r, metric) == metric_of(top, metric)]
    tied = f" (tied with point{'s' if len(ties) > 1 else ''} {', '.join(map(str, ties[:5]))}" \
        + (", ..." if len(ties) > 5 else "") + ")" if ties else ""
    return (f"best ({which} {metric}{', simulated' if fid else ''}): "
            f"{describe_point(top, params)}: {metric} {format_value(top[metric])}{tied}")
