"""Sweep interrupt latency: seconds from SIGINT/SIGTERM to exit (target: < 2 s).

``python benchmarks/bench_interrupt.py [--quick] [--jobs N]``. Two cases, each
interrupted by SIGINT and by SIGTERM:

- ``fast``: ``dlscale sweep`` on the 100,800-point analytical study of
  ``bench_sweep.py`` (a tenth with ``--quick``), signalled after ``--after`` seconds
  and once rows are written (a signal during the imports is not a sweep's);
- ``busy N s``: a study of 4 groups whose every chunk keeps its worker's core busy
  for ``--chunk-s`` seconds (15; 3 with ``--quick``) before giving the analytical
  rows, signalled 1 s after the first chunks' rows are written (the others are then
  half-way), the workers loading every core they run on.

Each line gives how long the process takes to exit, how many points were written at
the signal and how many it kept, and whether ``--resume`` then finishes with the same
``results.csv`` as an uninterrupted run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_sweep import study_table

from dlscale.output import format_table

TARGET_S = 2.0
HERE = Path(__file__).resolve().parent
#: Environment variable: seconds of CPU each chunk of :func:`busy_chunk` takes.
CHUNK_ENV = "BENCH_INTERRUPT_CHUNK_S"


def busy_chunk(cluster, workload, nodes, seeds):  # type: ignore[no-untyped-def]
    """The analytical rows after ``$BENCH_INTERRUPT_CHUNK_S`` seconds of a busy core."""
    from dlscale.sweep_points import analytical

    end = time.perf_counter() + float(os.environ[CHUNK_ENV])
    x = 0
    while time.perf_counter() < end:
        x += 1
    return analytical(cluster, workload, nodes, seeds)


def _toml(table: dict) -> str:
    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v)

    lines = [f"{k} = {value(v)}" for k, v in table.items() if k != "vary"]
    lines.append("[vary]")
    lines += [f'"{k}" = {value(v)}' for k, v in table["vary"].items()]
    return "\n".join(lines) + "\n"


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal gives it (a background job ignores it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _rows(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _case(cmd: list[str], out: Path, full: bytes, sig: signal.Signals, ready,  # type: ignore[no-untyped-def]
          env: dict[str, str]) -> dict:
    """Run, signal when ``ready(log)`` says so, time the exit, resume, compare."""
    log = out / "results.jsonl"
    t_start = time.perf_counter()
    proc = subprocess.Popen([*cmd, "-o", str(out)], stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)
    while not ready(log, time.perf_counter() - t_start) and proc.poll() is None:
        time.sleep(0.02)
    written = _rows(log)
    t0 = time.perf_counter()
    proc.send_signal(sig)
    _, err = proc.communicate()
    dt = time.perf_counter() - t0
    kept = _rows(log)
    subprocess.run([*cmd, "-o", str(out), "--resume"], check=True, env=env)
    same = (out / "results.csv").read_bytes() == full
    return {"signal": sig.name, "after_s": t0 - t_start, "exit": proc.returncode, "stop_s": dt,
            "written_at_signal": written, "kept_points": kept,
            "stderr_lines": len(err.splitlines()), "resume_identical": same,
            "target_s": TARGET_S,
            "met": dt < TARGET_S and same and kept >= written and proc.returncode == 128 + sig}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_interrupt")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--after", type=float, default=None, help="seconds before the signal")
    ap.add_argument("--chunk-s", type=float, default=None, help="seconds of a busy chunk")
    args = ap.parse_args(argv)
    after = args.after if args.after is not None else (2.0 if args.quick else 5.0)
    chunk_s = args.chunk_s if args.chunk_s is not None else (3.0 if args.quick else 15.0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]), CHUNK_ENV: str(chunk_s)}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "bench.toml"
        study.write_text(_toml(study_table(args.quick)))
        cmd = [sys.executable, "-m", "dlscale", "sweep", str(study), "-j", str(args.jobs),
               "--quiet", "--no-plots", "--format", "none"]
        subprocess.run([*cmd, "-o", f"{tmp}/full"], check=True)
        full = (Path(tmp) / "full" / "results.csv").read_bytes()
        for sig in (signal.SIGINT, signal.SIGTERM):
            rows.append({"chunks": "fast", **_case(cmd, Path(tmp) / sig.name, full, sig,
                                                   lambda log, t: t >= after and _rows(log) > 0,
                                                   env)})
        busy = Path(tmp) / "busy.toml"  # 4 groups of 6 node counts: one chunk each
        busy.write_text('cluster = "summit"\nworkload = "resnet50"\n'
                        'nodes = [1, 2, 4, 8, 16, 32]\n[vary]\ntau = [1, 2, 3, 4]\n')
        bcmd = [sys.executable, "-m", "dlscale", "sweep", str(busy), "-j", str(args.jobs),
                "--quiet", "--no-plots", "--format", "none"]
        subprocess.run([*bcmd, "-o", f"{tmp}/busyfull"], check=True)
        bfull = (Path(tmp) / "busyfull" / "results.csv").read_bytes()
        bcmd += ["--evaluator", "bench_interrupt:busy_chunk"]
        for sig in (signal.SIGINT, signal.SIGTERM):
            first: list[float] = []

            def ready(log: Path, t: float, first: list[float] = first) -> bool:
                if not first and _rows(log) > 0:
                    first.append(t)
                return bool(first) and t >= first[0] + 1.0

            rows.append({"chunks": f"busy {chunk_s:g} s",
                         **_case(bcmd, Path(tmp) / f"busy-{sig.name}", bfull, sig, ready, env)})
    print(format_table(rows))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
