"""Benchmark: wall time and peak memory of one simulated transformer iteration.

``python benchmarks/bench_pipeline.py [--quick]`` (or ``python benchmarks/run.py
pipeline``) runs each case in a fresh process on one core (``NUMBA_NUM_THREADS=1``,
one BLAS thread) and prints wall seconds (the simulation: network build, routes,
events; not the imports), its CPU seconds (what the machine's load does not
inflate) and the process's peak resident memory next to the target of issue 29:

- one iteration of the 1 T-parameter GPT of Narayanan et al. SC'21 Table 1 (t 8,
  p 64, d 6, batch 3,072, microbatch 1, 1F1B, full recomputation) on 3,072 GPUs of
  Selene (384 DGX A100 nodes, rail-optimised HDR fat tree), rank-resolved: at most
  60 s and 8 GB;
- the same with lognormal:0.05 per-rank compute noise;
- Table 1's 530 B row (t 8, p 35, d 9, interleaved v 3): no target, for scale.

``--quick`` runs the 39.1 B row instead (smoke runs); the targets then do not apply.
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
    # name: (Table 1 row, noise, target s)
    "gpt-1t-3072": ("gpt-1t", "none", 60.0),
    "gpt-1t-3072-noise": ("gpt-1t", "lognormal:0.05", 60.0),
    "gpt-530b-2520-interleaved": ("gpt-529.6b", "none", None),
}
MEMORY_TARGET_GB = 8.0


def _child(name: str, quick: bool) -> None:
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.simulator.training.pipeline import simulate_pipeline
    from dlscale.validation.case_megatron_sc21 import layout
    from dlscale.validation.megatron_selene import SELENE

    row, noise, _ = CASES[name]
    if quick:
        row = "gpt-39.1b"
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate_pipeline(SELENE, get_llm(row), layout(row), noise=noise, seed=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9  # Linux: kB
    print(json.dumps({"case": name, "gpus": r.analytical.gpus, "wall_s": wall,
                      "cpu_s": cpu, "peak_gb": peak, "iteration_s": r.iteration_s,
                      "analytical_s": r.analytical.iteration_s,
                      "tflops_per_gpu": r.tflops_per_gpu, "messages": r.groups_sent,
                      "messages_met": r.groups_met}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small case (smoke run)")
    ap.add_argument("--case", choices=tuple(CASES), help=argparse.SUPPRESS)
    ap.add_argument("--only", default=None, help="comma-separated case names")
    args = ap.parse_args(argv)
    if args.case:
        _child(args.case, args.quick)
        return 0
    names = args.only.split(",") if args.only else list(CASES)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    rows, status = [], 0
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
        target = CASES[name][2]
        ok = target is None or (row["wall_s"] <= target and row["peak_gb"] <= MEMORY_TARGET_GB)
        row["target"] = "" if target is None else f"<= {target:g} s, <= {MEMORY_TARGET_GB:g} GB"
        row["ok"] = "yes" if ok or args.quick else "NO"
        if not ok and not args.quick:
            status = 1
        rows.append(row)
    from dlscale.output import format_table

    print(format_table(rows, ["case", "gpus", "wall_s", "cpu_s", "peak_gb", "target", "ok",
                              "iteration_s", "analytical_s", "tflops_per_gpu", "messages",
                              "messages_met"]))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
