"""Run dlscale's benchmarks: ``python benchmarks/run.py [NAME ...] [--quick]``.

Each ``benchmarks/bench_NAME.py`` has a ``main(argv)`` that prints a table with the
measured figures next to the target. With no NAME, every benchmark runs in turn, each
in a process of its own, so one benchmark's memory peak is not charged to the next.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available() -> dict[str, Path]:
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    names = [a for a in argv if not a.startswith("-")]
    flags = [a for a in argv if a.startswith("-")]
    benches = available()
    unknown = [n for n in names if n not in benches]
    if unknown:
        print(f"run.py: unknown benchmark(s) {', '.join(unknown)}; valid: {', '.join(benches)}",
              file=sys.stderr)
        return 2
    status = 0
    for name in names or list(benches):
        print(f"\n=== {name} ===", flush=True)
        status |= subprocess.call([sys.executable, str(benches[name]), *flags])
    return status


if __name__ == "__main__":
    raise SystemExit(main())
