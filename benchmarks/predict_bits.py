"""Predict outputs to compare bit for bit across a change to the network walks.

``python benchmarks/predict_bits.py OUTDIR [--quick]`` runs ``dlscale predict`` (the
``dlscale`` module of the interpreter that runs this script) on the cases below and
writes each case's JSON and CSV into ``OUTDIR``. Run it before and after a change
(each from its own checkout or install) and compare the two folders with
``cmp``: ``for f in A/*; do cmp "$f" "B/${f##*/}"; done``.

The cases: the README quick start (Summit, ResNet-50, doubling 1..4,608), every
collective on Summit over an uneven stride of node counts (non-powers of two), the
benchmark's 4,608 counts (``1-4608:1``, skipped with ``--quick``) and three other
fat-tree presets (a 2-level tree, Stampede2's tapered tree, a rail-optimised
SuperPOD) and a dragonfly (Cori), each with the recursive doubling, the tree and the
default collective.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

COLLECTIVES = ("ring", "recursive-doubling", "rabenseifner", "double-binary-tree",
               "binomial-tree", "hierarchical", "auto")
OTHERS = (("p100-cluster", "1-648:13"), ("stampede2-knl", "1-4200:97"),
          ("dgx-h100-superpod", "1-127:3"), ("cori-knl", "1-9688:211"))


def cases(quick: bool) -> list[tuple[str, list[str]]]:
    """``(name, dlscale arguments)`` of every case."""
    out = [("readme", ["predict", "summit", "resnet50", "--nodes", "1-4608"])]
    for c in COLLECTIVES:
        out.append((f"summit-{c}", ["predict", "summit", "resnet50", "--nodes",
                                    "1-4608:37", "--collective", c]))
        out.append((f"summit-{c}-doubling", ["predict", "summit", "resnet50", "--nodes",
                                             "1-4608", "--collective", c]))
    for cluster, nodes in OTHERS:
        for c in ("recursive-doubling", "double-binary-tree", "auto"):
            out.append((f"{cluster}-{c}", ["predict", cluster, "resnet50", "--nodes", nodes,
                                           "--collective", c]))
    out.append(("summit-vgg16-rd", ["predict", "summit", "vgg16", "--nodes", "1-4608:41",
                                    "--collective", "recursive-doubling"]))
    if not quick:
        out.append(("summit-all", ["predict", "summit", "resnet50", "--nodes", "1-4608:1"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--quick", action="store_true", help="without the 4,608-count case")
    args = ap.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    for name, cmd in cases(args.quick):
        base = os.path.join(args.outdir, name)
        subprocess.run([sys.executable, "-m", "dlscale", *cmd, "-o", base + ".json",
                        "-o", base + ".csv"], check=True, stdout=subprocess.DEVNULL)
        print(name, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
