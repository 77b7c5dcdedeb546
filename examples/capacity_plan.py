"""Capacity plan: which machine trains ResNet-50 for 90 epochs within a deadline, at
a minimum scaling efficiency, for the fewest node-hours, and a request that cannot be
met (with the limit that breaks it and by how much).

The catalog carries no prices, so this plan ranks by node-hours; give prices with
``prices={"summit": ...}`` (per node-hour) to rank by currency.

Run: ``python examples/capacity_plan.py [--small]`` (``--small``: three machines,
up to 256 nodes, ring and hierarchical allreduce only).
"""

from __future__ import annotations

import argparse
import sys

import dlscale.api as dl
from dlscale.output import format_table

COLUMNS = ("rank", "cluster", "collective", "nodes", "devices", "time_h", "efficiency",
           "node_hours", "bottleneck")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args(argv)
    if args.small:
        machines = ["summit", "dgx1-v100", "cori-knl"]
        opts = {"collectives": ["ring", "hierarchical"], "max_nodes": 256}
    else:
        from dlscale.perfmodel.catalog import CLUSTERS

        machines, opts = list(CLUSTERS), {}
    res = dl.plan("resnet50", machines, epochs=90, deadline_s=6 * 3600.0, min_efficiency=0.8,
                  rank_by="node_hours", **opts)
    print(f"ResNet-50, 90 epochs in under 6 h at >= 80% efficiency: {len(res.rows)} feasible "
          f"plans of {res.meta['candidates']}")
    print(format_table([{**r, "time_h": r["time_s"] / 3600} for r in res.rows[:5]], COLUMNS))
    hard = dl.plan("resnet50", machines, epochs=90, deadline_s=3 * 60.0,
                   min_efficiency=0.9, **opts)
    print(f"the same in 3 minutes at >= 90% efficiency: "
          f"{'feasible' if hard.feasible else 'infeasible'}")
    for line in hard.infeasible:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
