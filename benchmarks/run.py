"""Run dlscale's benchmarks: ``python benchmarks/run.py [NAME ...] [--quick]``.

Each ``benchmarks/bench_NAME.py`` has a ``main(argv)`` that prints a table with the
measured figures next to the target. With no NAME, every benchmark runs in turn.
"""

from __future__ import annotations

import importlib.util
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
        spec = importlib.util.spec_from_file_location(f"bench_{name}", benches[name])
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"\n=== {name} ===", flush=True)
        status |= int(module.main(flags) or 0)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
