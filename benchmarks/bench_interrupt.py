"""Sweep interrupt latency: seconds from SIGINT/SIGTERM to exit (target: < 5 s).

``python benchmarks/bench_interrupt.py [--quick] [--jobs N]``. Starts ``dlscale sweep``
on the 100,800-point analytical study of ``bench_sweep.py`` (a tenth with
``--quick``), sends the signal after ``--after`` seconds, and measures how long the
process takes to exit, how many points it kept, and that ``--resume`` then finishes
with the same ``results.csv`` as an uninterrupted run.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_sweep import study_table

from dlscale.output import format_table

TARGET_S = 5.0


def _toml(table: dict) -> str:
    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(v)

    lines = [f"{k} = {value(v)}" for k, v in table.items() if k != "vary"]
    lines.append("[vary]")
    lines += [f'"{k}" = {value(v)}' for k, v in table["vary"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_interrupt")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--after", type=float, default=None, help="seconds before the signal")
    args = ap.parse_args(argv)
    after = args.after if args.after is not None else (2.0 if args.quick else 5.0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "bench.toml"
        study.write_text(_toml(study_table(args.quick)))
        cmd = [sys.executable, "-m", "dlscale", "sweep", str(study), "-j", str(args.jobs),
               "--quiet", "--no-plots", "--format", "none"]
        subprocess.run([*cmd, "-o", f"{tmp}/full"], check=True)
        full = (Path(tmp) / "full" / "results.csv").read_bytes()
        for sig in (signal.SIGINT, signal.SIGTERM):
            out = Path(tmp) / sig.name
            proc = subprocess.Popen([*cmd, "-o", str(out)], stderr=subprocess.PIPE, text=True)
            time.sleep(after)
            t0 = time.perf_counter()
            proc.send_signal(sig)
            _, err = proc.communicate()
            dt = time.perf_counter() - t0
            kept = len((out / "results.jsonl").read_text().splitlines())
            subprocess.run([*cmd, "-o", str(out), "--resume"], check=True)
            same = (out / "results.csv").read_bytes() == full
            rows.append({"signal": sig.name, "after_s": after, "exit": proc.returncode,
                         "stop_s": dt, "kept_points": kept, "stderr_lines": len(err.splitlines()),
                         "resume_identical": same, "target_s": TARGET_S,
                         "met": dt < TARGET_S and same})
    print(format_table(rows))
    return 0 if all(r["met"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
