"""``dlscale plan WORKLOAD``: which cluster, node count and algorithm meet a target.

Prints the ranked feasible plans (time, efficiency, cost, bottleneck) and writes them
as JSON (``-o``, default ``plan.json``); when nothing is feasible, prints which limit
makes the request infeasible and by how much, and exits with status 1.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from dlscale.commands.measured_args import add_measured_args, apply_measured
from dlscale.commands.runtime_args import add_runtime_arg
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.workload import ALGORITHMS, COLLECTIVES

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
        help="capacity planning: rank cluster/node/algorithm choices that meet a target",
        description="Search the clusters on offer over node counts, training and allreduce "
                    "algorithms; print the plans that meet every limit, best first.",
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
    g.add_argument("--baseline", choices=("node", "device"), default="node",
                   help="efficiency (and --min-efficiency) against one node (default) or one "
                        "device alone")
    g.add_argument("--rank-by", default="cost",
                   choices=("cost", "node_hours", "time", "nodes", "efficiency"))
    add_runtime_arg(p)
    add_measured_args(p)
    p.add_argument("--top", type=int, default=10, metavar="N", help="plans to print (default 10)")
    p.add_argument("-o", "--output", default="plan.json", metavar="FILE",
                   help="JSON file to write (default: plan.json)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dlscale.commands.common import parse_nodes
    from dlscale.commands.predict import workload_overrides
    from dlscale.output import format_table
    from dlscale.plan import plan
    from dlscale.sweep_points import analytical_one_device

    if args.top < 0:
        raise ConfigError(f"--top: must be an integer >= 0, got {args.top}")

    if args.cluster:
        clusters = list(args.cluster)
    else:
        from dlscale.perfmodel.catalog import CLUSTERS

        clusters = list(CLUSTERS.values())
    from dlscale.perfmodel.config import load_workload

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
        runtime=args.runtime)
    res.to_json(args.output)
    m = res.meta
    print(f"plan for {m['workload']}: {m['samples']:.4g} samples, {m['candidates']} candidates "
          f"on {len(m['clusters'])} cluster(s), ranked by {m['rank_by']}")
    from dlscale.commands.common import baseline_rule

    print(baseline_rule(args.baseline, "plan"))
    for line in measured_lines:
        print(line)
    if not res.feasible:
        print("infeasible:")
        for line in res.infeasible:
            print(f"  {line}")
        print(f"written: {args.output}")
        return 1
    shown = [{**r, "time_h": r["time_s"] / 3600.0} for r in res.rows[:args.top]]
    print(format_table(shown, COLUMNS))
    if len(res.rows) > args.top:
        print(f"... {len(res.rows) - args.top} more feasible plans in {args.output}")
    print(f"written: {args.output}")
    return 0
