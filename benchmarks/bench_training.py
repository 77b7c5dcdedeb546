"""Benchmark: wall time and peak memory of the training simulation at scale.

``python benchmarks/bench_training.py [--quick]`` runs each case in a fresh process
on one core (``NUMBA_NUM_THREADS=1``, one BLAS thread) and prints wall seconds and
peak resident memory next to the targets of the issue:

- one synchronous iteration of ResNet-50 on all 27,648 GPUs of Summit (4,608 nodes),
  rank-resolved lognormal stragglers, fat-tree contention (fast network mode):
  at most 60 s and 8 GB;
- 100 iterations of 4,096 KNL nodes of Cori in timing mode: at most 60 s
  (synchronous SGD, Sync EASGD, Async EASGD and Hogwild EASGD with the master);
- co-simulation of 64 workers for 500 iterations each: under a minute.

``--quick`` shrinks every case (for CI smoke runs); the targets then do not apply.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

CASES = {
    # name: (cluster, workload, nodes, algorithm, iterations, mode, network, target_s)
    "summit-27648-sync-sgd": ("summit", "resnet50", 4608, "sync-sgd", 1, "timing", "fast", 60),
    "knl-4096-sync-sgd": ("cori-knl", "googlenet", 4096, "sync-sgd", 100, "timing", "fast", 60),
    "knl-4096-sync-easgd": ("cori-knl", "googlenet", 4096, "sync-easgd", 100, "timing", "fast",
                            60),
    "knl-4096-async-easgd": ("cori-knl", "googlenet", 4096, "async-easgd", 100, "timing",
                             "fast", 60),
    "knl-4096-hogwild-easgd": ("cori-knl", "googlenet", 4096, "hogwild-easgd", 100, "timing",
                               "fast", 60),
    "cosim-64x500-async-easgd": ("cori-knl", "googlenet", 64, "async-easgd", 500, "cosim",
                                 "analytical", 60),
    "cosim-64x500-hogwild-easgd": ("cori-knl", "googlenet", 64, "hogwild-easgd", 500, "cosim",
                                   "analytical", 60),
}
MEMORY_TARGET_GB = {"summit-27648-sync-sgd": 8.0}


def _child(name: str, quick: bool) -> None:
    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.simulator.training.run import simulate_training

    cluster, workload, nodes, alg, iters, mode, network, _ = CASES[name]
    if quick:
        nodes, iters = min(nodes, 64), min(iters, 20)
    c, w = get_cluster(cluster), get_workload(workload)
    t0 = time.perf_counter()
    r = simulate_training(c, w, nodes, algorithm=alg, iterations=iters, seed=0, mode=mode,
                          network=network, noise="lognormal:0.05", efficiency=False)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux: kB
    out = {"case": name, "ranks": r.ranks, "iterations": iters, "wall_s": wall,
           "peak_gb": peak, "iteration_s": r.iteration_s,
           "analytical_iteration_s": r.analytical_iteration_s,
           "lost_updates": r.counters.get("lost_updates", "")}
    if r.curve:
        out["final_accuracy"] = r.curve[-1]["accuracy"]
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small cases (smoke run)")
    ap.add_argument("--case", choices=tuple(CASES), help=argparse.SUPPRESS)
    ap.add_argument("--only", default=None, help="comma-separated case names")
    args = ap.parse_args(argv)
    if args.case:
        _child(args.case, args.quick)
        return 0
    names = args.only.split(",") if args.only else list(CASES)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rows = []
    status = 0
    for name in names:
        cmd = [sys.executable, os.path.abspath(__file__), "--case", name]
        if args.quick:
            cmd.append("--quick")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            status = 1
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        target = CASES[name][-1]
        mem_target = MEMORY_TARGET_GB.get(name)
        ok = row["wall_s"] <= target and (mem_target is None or row["peak_gb"] <= mem_target)
        row["target"] = f"<= {target} s" + (f", <= {mem_target:g} GB" if mem_target else "")
        row["ok"] = "yes" if ok or args.quick else "NO"
        if not ok and not args.quick:
            status = 1
        rows.append(row)
    from dlscale.output import format_table

    print(format_table(rows, ["case", "ranks", "iterations", "wall_s", "peak_gb", "target",
                              "ok", "iteration_s", "analytical_iteration_s", "lost_updates",
                              "final_accuracy"]))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
