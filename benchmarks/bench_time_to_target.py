"""Benchmark: wall time of the time-to-target co-simulation with tuning and repeats.

``python benchmarks/bench_time_to_target.py [--quick]`` runs, in a fresh process on
one core (``NUMBA_NUM_THREADS=1``, one BLAS thread), the command of issue 18:

    dlscale simulate cori-knl googlenet --nodes 16 --cosim
        --compare async-easgd,async-sgd,async-measgd,async-msgd
        --target-accuracy 0.9 --tune --repeats 3

(117 co-simulated runs of 16 workers, at most 300 steps each) and prints its wall
seconds, CPU seconds and peak resident memory next to the issue's target, "a few
minutes on 2 cores" (taken as 300 s). ``--quick`` runs 4 nodes, two algorithms, the
literature settings and one seed (a smoke run; the target then does not apply).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

FULL = ["cori-knl", "googlenet", "--nodes", "16", "--cosim", "--compare",
        "async-easgd,async-sgd,async-measgd,async-msgd", "--target-accuracy", "0.9", "--tune",
        "--repeats", "3"]
QUICK = ["cori-knl", "googlenet", "--nodes", "4", "--cosim", "--compare",
         "async-easgd,async-sgd", "--target-accuracy", "0.8", "--iterations", "150"]
TARGET_S = 300.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small case (smoke run)")
    args = ap.parse_args(argv)
    cmd = [sys.executable, "-m", "dlscale", "simulate", *(QUICK if args.quick else FULL)]
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return proc.returncode
    table = [line for line in proc.stdout.splitlines() if not line.startswith("#")]
    print(f"{'case':<24}{'wall_s':>9}{'cpu_s':>9}{'peak_gb':>9}{'target_s':>10}  ok")
    name = "quick" if args.quick else "issue-18-command"
    ok = "-" if args.quick else ("yes" if wall <= TARGET_S else "NO")
    print(f"{name:<24}{wall:>9.1f}{use.ru_utime + use.ru_stime:>9.1f}"
          f"{use.ru_maxrss / 1e6:>9.2f}{TARGET_S:>10.0f}  {ok}")
    print("\n".join(table[:1 + (2 if args.quick else 4)]))
    return 0 if ok != "NO" else 1


if __name__ == "__main__":
    raise SystemExit(main())
