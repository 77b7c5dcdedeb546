"""Benchmark: configurations predicted per second by the analytical model.

``python benchmarks/bench_predict.py [--calls N] [--nodes M]`` times ``predict``
for synchronous SGD presets over ``M`` node counts per call (a whole scaling curve
in one vectorized call) and prints a table. One configuration is one (cluster,
workload, node count); the count is node counts x calls. ``cold_s`` is the first
call, which counts every node count's per-step link loads (cached for the calls
after it, and across calls that change only link speeds, sizes or the model);
configurations per second are the cached calls' (the same question again: plans and
the priced critical paths of uneven schedules come from their caches);
``new_speeds/s`` the same calls each on a fabric of another NIC speed (plans reused,
every price computed anew, as in a sweep over link speeds). Target (set before the network
model counted link loads per step): at least 100,000 configurations per second on
one core for synchronous SGD.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.training.predict import predict

CASES = (
    ("summit", "resnet50", {}),
    ("summit", "fcn-summit", {}),
    ("summit", "resnet50", {"collective": "rabenseifner"}),
    ("summit", "resnet50", {"collective": "hierarchical", "grouping": "graph-aware"}),
    ("stampede2-skx", "transformer-base", {}),
    ("stampede2-skx", "resnet50", {"fusion_threshold_bytes": 0.0}),
    ("cori-knl", "alexnet", {"algorithm": "async-easgd"}),
)


def _faster_nic(cluster, factor: float):
    import dataclasses
    nic = dataclasses.replace(cluster.node.nic, bandwidth_Bps=cluster.node.nic.bandwidth_Bps
                              * factor)
    return dataclasses.replace(cluster, node=dataclasses.replace(cluster.node, nic=nic))


def _workload(name: str, overrides: dict):
    import dataclasses

    return dataclasses.replace(get_workload(name), **overrides)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20, help="predict calls per case")
    ap.add_argument("--nodes", type=int, default=256,
                    help="node counts per call, 1..M (at most the cluster's size)")
    args = ap.parse_args(argv)
    print(f"{'cluster':<15} {'workload':<18} {'variant':<44} {'configs':>9} {'cold_s':>8} "
          f"{'warm_s':>8} {'configs/s':>12} {'new_speeds/s':>14}")
    total_n = total_t = 0.0
    for cname, wname, over in CASES:
        cluster = get_cluster(cname)
        workload = _workload(wname, over)
        m = min(args.nodes, cluster.max_nodes)
        nodes = np.arange(1, m + 1)
        t0 = time.perf_counter()
        predict(cluster, workload, nodes)  # cold: counts the link loads of every node count
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(args.calls):
            predict(cluster, workload, nodes)
        dt = time.perf_counter() - t0
        # the same calls, each on a fabric of another speed: the plans' loads are
        # reused, every price is computed anew (a sweep over link speeds)
        t0 = time.perf_counter()
        for i in range(args.calls):
            predict(_faster_nic(cluster, 1.0 + (i + 1) / 1000), workload, nodes)
        dt_new = time.perf_counter() - t0
        n = m * args.calls
        variant = ",".join(f"{k}={v}" for k, v in over.items()) or "preset"
        print(f"{cname:<15} {wname:<18} {variant:<44} {n:>9d} {cold:>8.2f} {dt:>8.3f} "
              f"{n / dt:>12,.0f} {n / dt_new:>14,.0f}")
        if workload.algorithm == "sync-sgd":
            total_n += n
            total_t += dt
    print(f"synchronous SGD overall: {total_n / total_t:,.0f} configurations per second "
          f"(target >= 100,000)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
