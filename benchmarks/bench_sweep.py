"""Sweep throughput: a 100,000-point analytical study on 2 workers (target: < 60 s).

``python benchmarks/bench_sweep.py [--quick] [--jobs N]``. The study is ResNet-50 on
Summit over link bandwidth x collective x fusion threshold x batch x 14 node counts;
``--quick`` runs a tenth of it. The simulated fidelity, where the simulator exists,
is measured on a few points and reported in points per second.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path

from dlscale.output import format_table
from dlscale.study import parse_study
from dlscale.sweep import run_sweep

TARGET_S = 60.0


def study_table(quick: bool) -> dict:
    bw = {"start": 5.0, "stop": 50.0, "num": 2 if quick else 20}
    return {"name": "bench", "cluster": "summit", "workload": "resnet50", "nodes": "1-4608",
            "fidelity": "analytical",
            "vary": {"network.link.bandwidth_GBps": bw,
                     "collective": ["ring", "recursive-doubling", "rabenseifner",
                                    "binomial-tree", "double-binary-tree", "hierarchical"],
                     "fusion_threshold_MiB": {"start": 1, "stop": 512, "factor": 2},
                     "batch_per_device": [16, 32, 48, 64, 96, 128]}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_sweep")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        study = parse_study(study_table(args.quick), Path(tmp) / "bench.toml")
        t0 = time.perf_counter()
        res = run_sweep(study, Path(tmp) / "out", jobs=args.jobs, quiet=True, plots=False)
        dt = time.perf_counter() - t0
        n = len(study)
        target = TARGET_S * n / 100_000
        rows.append({"fidelity": "analytical", "points": n, "failed": len(res.failures),
                     "workers": args.jobs, "seconds": dt, "points_per_s": n / dt,
                     "target_s": target, "met": dt < target})
        if hasattr(importlib.import_module("dlscale.simulator"), "simulate"):
            small = {"name": "bench-sim", "cluster": "summit", "workload": "resnet50",
                     "nodes": [2, 8] if args.quick else [2, 8, 32, 128],
                     "fidelity": "simulated", "vary": {"collective": ["ring", "hierarchical"]}}
            s2 = parse_study(small, Path(tmp) / "sim.toml")
            t0 = time.perf_counter()
            r2 = run_sweep(s2, Path(tmp) / "sim", jobs=args.jobs, quiet=True, plots=False)
            dt = time.perf_counter() - t0
            rows.append({"fidelity": "simulated", "points": len(s2), "failed": len(r2.failures),
                         "workers": args.jobs, "seconds": dt, "points_per_s": len(s2) / dt,
                         "target_s": "", "met": ""})
    print(format_table(rows))
    return 0 if rows[0]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
