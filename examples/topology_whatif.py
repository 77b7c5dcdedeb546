"""Topology what-if: ResNet-50 on Summit's non-blocking fat tree, the same tree tapered
2:1 at the leaves, and a dragonfly of the same size, with ring, Rabenseifner and hierarchical allreduce
(ring moves data between neighbours only; Rabenseifner, in MPICH's order, sends its
largest halves to the nearest partners, so only its small far steps cross the tapered
uplinks and the global links).

Run: ``python examples/topology_whatif.py [--small] [-o DIR]``. ``--small`` stops at
64 nodes (what CI runs and checks against examples/expected/topology_whatif.txt).
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import dlscale.api as dl
from dlscale.output import format_table

# The dragonfly holds 64 groups x 16 routers x 5 nodes = 5,120 >= 4,608 nodes, with 4
# global links per router (a what-if design, not an installed machine).
DRAGONFLY = {"family": "dragonfly", "groups": 64, "routers_per_group": 16,
             "terminals_per_router": 5, "global_links_per_router": 4, "max_nodes": 4608}
TAPERED = {"family": "fat-tree", "levels": 3, "nodes_per_leaf": 18,
           "down_up": [[18, 9], [18, 18]], "max_nodes": 4608, "rails": 2}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true")
    ap.add_argument("-o", "--output", help="output folder (default: a temporary one)")
    args = ap.parse_args(argv)
    study = {
        "name": "topology-whatif", "cluster": "summit", "workload": "resnet50",
        "nodes": "1-64" if args.small else "1-4608",
        "vary": {"collective": ["ring", "rabenseifner", "hierarchical"]},
        "zip": [{"cluster.name": ["fat-tree", "fat-tree-2to1", "dragonfly"],
                 "cluster.network.topology": [{}, TAPERED, DRAGONFLY]}],
        "plots": ["scaling"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        res = dl.sweep(study, args.output or tmp, executor="serial", plots=bool(args.output))
    rows = res.to_rows()
    top = max(r["nodes"] for r in rows)
    print(f"ResNet-50 on Summit-like networks, {len(rows)} points, {len(res.failures)} failed")
    print(f"at {top} nodes ({top * 6} V100):")
    last = [r for r in rows if r["nodes"] == top]
    print(format_table(last, ["name", "collective", "iteration_s", "comm_s", "exposed_comm_s",
                              "efficiency", "samples_per_s"]))
    best = max(last, key=lambda r: r["samples_per_s"])
    print(f"best: {best['name']} with {best['collective']} allreduce, "
          f"efficiency {best['efficiency']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
