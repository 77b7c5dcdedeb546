"""``dlscale plan WORKLOAD``: which cluster, node count and algorithm meet a target.

A transformer of the catalog (``dlscale catalog transformers``) is planned by its
parallel layouts instead (:mod:`dlscale.commands.plan_llm`), e.g.
``dlscale plan gpt-1.7b --cluster dgx1-v100 --global-batch 16 --nodes 1``.

Prints the ranked feasible plans (time, efficiency, cost, bottleneck), the best of them,
and what produced them (:mod:`dlscale.provenance`); ``-o FILE`` writes them as JSON
(nothing is written without it). When nothing is feasible, prints which limit makes
the request infeasible and by how much, and exits with status 1. Ranked by cost,
the plans of clusters without a price come after the priced ones (by node-hours),
their cost shown as ``unpriced``, with a line naming them and how to price them.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.commands.measured_args import add_measured_args, apply_measured
from dlscale.commands.noise_arg import add_noise_arg, with_noise
from dlscale.commands.runtime_args import add_runtime_arg
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES
from dlscale.provenance import Provenance, baseline_phrase

__all__ = ["add_parser", "run"]

COLUMNS = ("rank", "cluster", "topology", "runtime", "algorithm", "collective", "allreduce",
           "nodes", "devices",
           "time_h", "samples_per_s", "efficiency", "node_hours", "cost", "bottleneck")


def _names(text: str, valid: tuple[str, ...], where: str) -> list[str]:
    from dlscale.perfmodel.errors import unknown_name

    out = [t.strip() for t in text.split(",") if t.strip()]
    for t in out:
        if t not in valid:
            raise unknown_name(where, t, valid)
    return out


def _prices(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if sep and not (math.isfinite(out[name]) and out[name] >= 0):
            raise ConfigError(f"--price: price per node-hour must be a finite number >= 0, "
                              f"got {item!r}")
        if not sep or not name:
            raise ConfigError(f"--price: expected NAME=PRICE_PER_NODE_HOUR, got {item!r}")
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help=SUMMARIES["plan"],
        description="Search the clusters on offer over node counts, training and allreduce\n"
                    "algorithms; print the plans that meet every limit, best first. For a\n"
                    "transformer (dlscale catalog transformers), search its parallel layouts\n"
                    "and the machine size instead.",
        epilog="example (a transformer):\n"
               "  dlscale plan gpt-1.7b --cluster dgx1-v100 --global-batch 16 --nodes 1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("workload", help="workload preset name or TOML file")
    p.add_argument("--cluster", action="append", metavar="NAME|FILE",
                   help="a cluster on offer (repeat; default: every catalog cluster)")
    g = p.add_argument_group("target")
    g.add_argument("--epochs", type=float, help="epochs to train (default: the workload's)")
    g.add_argument("--samples", type=float, help="samples to train, instead of --epochs")
    g.add_argument("--deadline-h", type=float, metavar="H", help="train within H hours")
    g.add_argument("--throughput", type=float, metavar="SAMPLES_PER_S",
                   help="reach at least this many samples per second")
    g = p.add_argument_group("limits")
    g.add_argument("--min-efficiency", type=float, metavar="F", help="scaling efficiency >= F")
    g.add_argument("--max-nodes", type=int, metavar="N", help="at most N nodes")
    g.add_argument("--budget-node-hours", type=float, metavar="NH")
    g.add_argument("--budget", type=float, metavar="AMOUNT", help="budget in currency")
    g.add_argument("--price", action="append", default=[], metavar="CLUSTER=PRICE",
                   help="price per node-hour of a cluster (repeat)")
    g.add_argument("--max-power-kw", type=float, metavar="KW")
    g = p.add_argument_group("search")
    g.add_argument("--algorithms", help=f"training algorithms, comma-separated ({', '.join(ALGORITHMS)})")
    g.add_argument("--collectives", help=f"allreduce algorithms to try, comma-separated "
                                         f"({', '.join(COLLECTIVES)}; default: the workload's, "
                                         f"auto = each cluster's software stack's choice)")
    g.add_argument("--nodes", help="node counts, as in predict (default: doubling to each size)")
    g.add_argument("--batch", type=int, metavar="N", help="samples per device per iteration")
    g.add_argument("--global-batch", type=int, metavar="N",
                   help="strong scaling: N samples per iteration over all devices")
    g.add_argument("--baseline", choices=("node", "device"), default=None,
                   help="efficiency (and --min-efficiency) against one node (default) or one "
                        "device alone")
    g.add_argument("--rank-by", default=None,
                   choices=("cost", "node_hours", "time", "nodes", "efficiency"),
                   help="what orders the plans (default: cost)")
    g.add_argument("--plan-on", choices=("low", "central", "high"), default="central",
                   help="which value of each answer's range the limits and the ranking read: "
                        "low (the pessimistic end: low rate and efficiency, high time and "
                        "cost), central (default) or high")
    add_runtime_arg(p)
    add_noise_arg(p)
    add_measured_args(p)
    from dlscale.commands.plan_llm import add_llm_args

    add_llm_args(p)
    p.add_argument("--top", type=int, default=10, metavar="N", help="plans to print (default 10)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="also write the plans, the request and the provenance as JSON to FILE")
    p.set_defaults(run=run)


def check_json_output(output: str | None) -> None:
    """Refuse a ``-o`` that names a CSV file before any work: plan writes JSON (the
    plans, the request and the provenance), and writing it under another name than
    the one asked would be an answer the user did not ask for.

    Examples
    --------
    >>> check_json_output("plans.json")
    >>> check_json_output("plans.csv")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: -o: plan writes JSON (the plans, the request and the provenance); got 'plans.csv': name a .json file
    """
    if output is not None and Path(output).suffix.lower() == ".csv":
        raise ConfigError(f"-o: plan writes JSON (the plans, the request and the provenance); "
                          f"got {output!r}: name a .json file")


def run(args: argparse.Namespace) -> int:
    from dlscale.api import plan
    from dlscale.commands.common import parse_nodes
    from dlscale.commands.plan_llm import refuse_llm_flags, run_llm
    from dlscale.commands.predict import workload_overrides
    from dlscale.commands.predict_llm import is_transformer
    from dlscale.sweep_points import analytical_one_device

    check_json_output(args.output)
    if is_transformer(args.workload):
        return run_llm(args)
    refuse_llm_flags(args)
    args.baseline = args.baseline or "node"
    args.rank_by = args.rank_by or "cost"
    if args.top < 0:
        raise ConfigError(f"--top: must be an integer >= 0, got {args.top}")

    if args.cluster:
        clusters = list(args.cluster)
    else:
        from dlscale.perfmodel.catalog import CLUSTERS

        clusters = list(CLUSTERS.values())
    clusters = with_noise(clusters, args.noise)
    from dlscale.perfmodel.machine.config import load_workload

    workload, measured_lines, _ = apply_measured(args, load_workload(args.workload))
    res = plan(
        workload, clusters, epochs=args.epochs, samples=args.samples,
        deadline_s=args.deadline_h * 3600.0 if args.deadline_h is not None else None,
        throughput=args.throughput, min_efficiency=args.min_efficiency,
        max_nodes=args.max_nodes, budget_node_hours=args.budget_node_hours,
        budget_cost=args.budget, prices=_prices(args.price),
        max_power_w=args.max_power_kw * 1e3 if args.max_power_kw is not None else None,
        algorithms=_names(args.algorithms, ALGORITHMS, "--algorithms") if args.algorithms else None,
        collectives=_names(args.collectives, COLLECTIVES, "--collectives") if args.collectives else None,
        nodes=parse_nodes(args.nodes) if args.nodes is not None else None, rank_by=args.rank_by,
        overrides=workload_overrides(args) or None,
        evaluator="analytical" if args.baseline == "node" else analytical_one_device,
        runtime=args.runtime, plan_on=args.plan_on)
    prov = Provenance(baseline=baseline_phrase(args.baseline, res.meta["scaling"], "plan"))
    res.meta.update(prov.meta())
    if args.output:
        res.to_json(args.output)
    for line in _report(res, args.top, args.output, measured_lines, prov, args.rank_by):
        print(line)
    return 0 if res.feasible else 1


def _report(res: Any, top: int, output: str | None, measured_lines: list[str],
            prov: Provenance, asked: str) -> list[str]:
    """The lines ``plan`` prints: request, provenance, the ranked plans, the best, files."""
    from dlscale.output import format_table
    from dlscale.plan import unpriced_line

    m = res.meta
    lines = [f"plan for {m['workload']}: {m['samples']:.4g} samples, {m['candidates']} "
             f"candidates on {len(m['clusters'])} cluster(s), ranked by {m['rank_by']}",
             *prov.header_lines(), *measured_lines]
    if m["unpriced"]:
        lines.append(unpriced_line(m["unpriced"], m["rank_by"], asked))
    written = [f"written: {output}"] if output else []
    if not res.feasible:
        return [*lines, "infeasible:", *(f"  {ln}" for ln in res.infeasible), *written]
    if m.get("plan_on", "central") != "central":
        lines.append(f"planned on the {m['plan_on']} end of each range "
                     f"({'pessimistic' if m['plan_on'] == 'low' else 'optimistic'}: "
                     f"{m['plan_on']} rate and efficiency, "
                     f"{'high' if m['plan_on'] == 'low' else 'low'} time and cost)")
    shown = [{**r, "time_h": r["time_s"] / 3600.0, "time_h_low": r["time_s_low"] / 3600.0,
              "time_h_high": r["time_s_high"] / 3600.0,
              **({"cost": "unpriced", "cost_low": None, "cost_high": None}
                 if r["cost"] is None else {})} for r in res.rows[:top]]
    cols = [c for c in COLUMNS if any(r.get(c) not in (None, "", 0, 0.0, "unpriced")
                                      for r in shown)]
    lines.append(format_table(shown, cols) if top else "(--top 0: no plans shown)")
    if len(res.rows) > top:
        lines.append(f"... {len(res.rows) - top} more feasible plans"
                     + (f" in {output}" if output else " (-o FILE writes them all)"))
    lines.append(_best_line(res.rows[0], m["rank_by"]))
    return [*lines, *written]


def _best_line(b: dict[str, Any], rank_by: str) -> str:
    """``best (by cost): summit, 16 nodes, sync-sgd/auto (ring): cost 67.8, 1.41 h, ...``."""
    from dlscale.output import format_value

    fld = {"time": "time_s"}.get(rank_by, rank_by)
    how = f"by {rank_by}"
    if b[fld] is None:  # ranked by cost, and no priced cluster has a feasible plan
        fld, how = "node_hours", "by node-hours: no priced cluster has a feasible plan"
    what = {"time_s": f"{b['time_s'] / 3600.0:.3g} h", "efficiency":
            f"efficiency {format_value(b['efficiency'])}",
            "node_hours": f"{format_value(b['node_hours'])} node-hours"}
    head = what.pop(fld, f"{fld} {format_value(b[fld])}")
    alg = f"{b['algorithm']}/{b['collective']}" + (
        f" ({b['allreduce']})" if b.get("allreduce") not in (None, "", b["collective"]) else "")
    return (f"best ({how}): {b['cluster']}, {b['nodes']} nodes, {alg}: "
            + ", ".join([head, *what.values()]))
