"""Profiler-trace reading time and memory for 5, 50 and 200 MB (target: linear, 200 MB <= 30 s).

``python benchmarks/bench_traces.py [--quick] [--sizes MB,...]``. Writes synthetic
PyTorch traces (``torch.profiler`` layout: ``ProfilerStep#N``, forward ``cpu_op`` and
``autograd::engine::evaluate_function`` backward operators, each with a
``cudaLaunchKernel`` linked to its ``kernel`` by ``args.correlation``, an
``Optimizer.step`` annotation) of the given sizes into a temporary folder, then reads
each with :func:`dlscale.perfmodel.compute.traces.read_trace` in a process of its own and
reports the median wall time of ``--repeats`` reads (and their spread), the median
CPU time (less sensitive to a loaded machine) and per MB, the peak resident memory
and the exponent of CPU time against size from the smallest size (1: linear; the
target applies to the largest). ``--quick``: 1, 5 and 20 MB.
The reader before the sweep (``any()`` over every backward span per kernel) took
2.4 s at 5 MB and 18.9 s at 10 MB of this trace.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dlscale.output import format_table

TARGET_S_200MB = 30.0
MAX_EXPONENT = 1.2


def write_synthetic_trace(path: Path, target_bytes: int, ops_per_step: int = 400) -> int:
    """Write a PyTorch-layout trace of about ``target_bytes``; return its event count."""
    ts, corr, n_events, step = 0.0, 0, 0, 0
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True

        def put(ev: dict) -> None:
            nonlocal first, n_events
            f.write(("" if first else ",\n") + json.dumps(ev))
            first = False
            n_events += 1

        while f.tell() < target_bytes:
            step += 1
            t0 = ts
            events = []
            for k in range(ops_per_step):
                backward = k >= ops_per_step // 3
                name = ("autograd::engine::evaluate_function: ConvolutionBackward0" if backward
                        else "aten::conv2d")
                tid = 2 if backward else 1
                events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid,
                               "ts": ts, "dur": 40.0, "args": {"External id": corr}})
                corr += 1
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                               "pid": 1, "tid": tid, "ts": ts + 5, "dur": 5.0,
                               "args": {"correlation": corr}})
                events.append({"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn",
                               "pid": 0, "tid": 7, "ts": ts + 20, "dur": 30.0,
                               "args": {"correlation": corr, "stream": 7}})
                ts += 50.0
            events.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step",
                           "pid": 1, "tid": 1, "ts": ts, "dur": 100.0})
            ts += 100.0
            put({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1,
                 "tid": 1, "ts": t0, "dur": ts - t0})
            for ev in events:
                put(ev)
        f.write("\n]}\n")
    return n_events


def _child(path: str) -> None:
    from dlscale.perfmodel.compute.traces import read_trace

    t0, c0 = time.perf_counter(), time.process_time()
    t = read_trace(path)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"s": dt, "cpu": cpu, "peak": peak, "iterations": t.iterations}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_traces")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None, help="sizes in MB, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    sizes = ([float(s) for s in args.sizes.split(",")] if args.sizes
             else [1, 5, 20] if args.quick else [5, 50, 200])
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes:
            path = Path(tmp) / f"trace_{mb:g}MB.json"
            events = write_synthetic_trace(path, int(mb * 1e6))
            size = path.stat().st_size
            runs = [json.loads(subprocess.run([sys.executable, __file__, "--child", str(path)],
                                              capture_output=True, text=True,
                                              check=True).stdout)
                    for _ in range(max(1, args.repeats))]
            path.unlink()
            times = sorted(r["s"] for r in runs)
            med = statistics.median(times)
            cpu = statistics.median(r["cpu"] for r in runs)
            row = {"trace_MB": size / 1e6, "events": events, "iterations": runs[0]["iterations"],
                   "read_s": med, "min_s": times[0], "max_s": times[-1], "cpu_s": cpu,
                   "cpu_s_per_MB": cpu / (size / 1e6),
                   "peak_rss_MB": max(r["peak"] for r in runs) / 1e6, "exponent": "-"}
            if rows:
                first = rows[0]
                row["exponent"] = (math.log(cpu / first["cpu_s"])
                                   / math.log(size / 1e6 / first["trace_MB"]))
            rows.append(row)
    big = [r for r in rows if r["trace_MB"] >= 190]
    ok = (len(rows) < 2 or rows[-1]["exponent"] <= MAX_EXPONENT) and \
        all(r["read_s"] <= TARGET_S_200MB for r in big)
    for r in rows:
        r["target"] = f"exponent <= {MAX_EXPONENT}; 200 MB <= {TARGET_S_200MB:g} s wall"
    print(format_table(rows))
    print("met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
