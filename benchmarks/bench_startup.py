"""Benchmark: start-up time of ``dlscale --help`` and ``dlscale predict`` (issue 28).

``python benchmarks/bench_startup.py [--runs N] [--before REV] [--quick]`` runs each
command ``N`` times in fresh processes, for the tree this file is in ("now") and for
the git revision ``REV`` ("before", default :data:`BEFORE_REV`, the tree before the
lazy imports), alternating the two so that a change in the machine's load falls on
both, and prints the median wall time of each, the spread (max - min), and the
speed-up next to the target (issue 28: at least 2x). Both trees run the same way:
the installed layout (``dlscale/`` holding ``perfmodel``, ``simulator``, ...) is
rebuilt as a link tree in a temporary folder (as ``tests/typecheck.py`` does), the
revision's files from ``git archive``; one untimed run of each command first
compiles the bytecode and loads numba's cache. Without git (or ``--before ''``) the
"before" column shows :data:`BEFORE_MEASURED`, the figures measured on that revision
when this benchmark was written. ``--quick``: 3 runs.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("perfmodel", "simulator", "kernels", "validation")

#: The commands timed, by label.
COMMANDS = {
    "dlscale --help": ["--help"],
    "predict summit resnet50 --nodes 8": ["predict", "summit", "resnet50", "--nodes", "8"],
}

#: main before this benchmark's lazy imports (c42b3a6, 1 Dec 2026).
BEFORE_REV = "c42b3a6"

#: Median wall seconds of the commands on BEFORE_REV, measured with the installed
#: ``dlscale`` script when this benchmark was written (5 runs each, 2 shared cores
#: under a load average of 5: spread 0.14 s and 3.3 s); the benchmark measures the
#: revision itself where git has it.
BEFORE_MEASURED = {"dlscale --help": 0.79, "predict summit resnet50 --nodes 8": 3.24}


def _link_tree(src: Path, dest: Path) -> Path:
    """``dest/dlscale``: the installed package's layout over the source tree ``src``."""
    pkg = dest / "dlscale"
    pkg.mkdir(parents=True)
    for entry in sorted((src / "dlscale").iterdir()):
        if entry.name != "__pycache__":
            os.symlink(entry, pkg / entry.name)
    for name in SUBPACKAGES:
        os.symlink(src / name, pkg / name, target_is_directory=True)
    return dest


def _export(rev: str, dest: Path) -> Path:
    """The files of git revision ``rev`` under ``dest/src``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev],
                          check=True, capture_output=True).stdout
    src = dest / "src"
    src.mkdir()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(src, filter="data")
    return src


def _time(tree: Path, args: list[str]) -> float:
    """Wall seconds of ``python -m dlscale ARGS`` on the link tree ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dlscale", *args], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _check_tree(tree: Path) -> None:
    """Fail loudly if the link tree's ``dlscale`` is not the one imported there."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", "import dlscale; print(dlscale.__file__)"],
                         cwd=tree, env=env, check=True, capture_output=True, text=True).stdout
    if not out.strip().startswith(str(tree)):
        raise SystemExit(f"bench_startup: {tree} imports dlscale from {out.strip()}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs of each command")
    ap.add_argument("--before", default=BEFORE_REV,
                    help=f"git revision to compare with (default {BEFORE_REV}; '' for the "
                         f"recorded figures)")
    ap.add_argument("--quick", action="store_true", help="3 runs")
    args = ap.parse_args(argv)
    runs = 3 if args.quick else max(args.runs, 1)
    with tempfile.TemporaryDirectory(prefix="dlscale-startup-") as tmp:
        now = _link_tree(ROOT, Path(tmp) / "now")
        trees = {"now": now}
        before_label = "recorded"
        if args.before:
            try:
                src = _export(args.before, Path(tmp))
                trees["before"] = _link_tree(src, Path(tmp) / "before")
                before_label = args.before
            except (OSError, subprocess.CalledProcessError) as exc:
                print(f"# no git revision {args.before!r} ({exc}); 'before' is the recorded "
                      f"figures", file=sys.stderr)
        for tree in trees.values():
            _check_tree(tree)
        print(f"# median wall seconds of {runs} runs each, fresh processes; before = "
              f"{before_label}")
        print(f"{'command':<36} {'before_s':>9} {'spread':>7} {'now_s':>7} {'spread':>7} "
              f"{'speed-up':>9}  target")
        for label, cmd in COMMANDS.items():
            times: dict[str, list[float]] = {name: [] for name in trees}
            for tree in trees.values():
                _time(tree, cmd)                        # bytecode, numba's cache
            for _ in range(runs):
                for name, tree in trees.items():
                    times[name].append(_time(tree, cmd))
            now_s = float(np.median(times["now"]))
            spread_now = max(times["now"]) - min(times["now"])
            if "before" in times:
                before_s = float(np.median(times["before"]))
                spread_b = f"{max(times['before']) - min(times['before']):>7.2f}"
            else:
                before_s, spread_b = BEFORE_MEASURED[label], f"{'':>7}"
            print(f"{label:<36} {before_s:>9.2f} {spread_b} {now_s:>7.2f} {spread_now:>7.2f} "
                  f"{before_s / now_s:>8.1f}x  >= 2x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
