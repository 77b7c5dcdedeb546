"""Calibration, then prediction: the same cluster predicted from its catalog figures
and from a machine profile measured by ``dlscale calibrate``.

The shipped profile, examples/profiles/this-host.json, was measured with
``mpiexec -n 2 dlscale calibrate --budget-s 12`` on the 2-core VM this project is
built on (one host, so intra-node shared-memory and kernel figures only; its notes
say so). Measure your own with ``mpiexec -n N dlscale calibrate -o profile.json``
and pass ``--profile profile.json``.

Run: ``python examples/calibrate_then_predict.py [--small] [--profile FILE]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import dlscale.api as dl
from dlscale.output import format_table
from dlscale.perfmodel.machine.profile import load_profile

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", action="store_true", help="up to 16 nodes")
    ap.add_argument("--profile", default=str(HERE / "profiles" / "this-host.json"))
    ap.add_argument("--cluster", default="stampede2-skx",
                    help="a CPU cluster, like the host the profile was measured on")
    ap.add_argument("--workload", default="resnet50")
    args = ap.parse_args(argv)
    prof = load_profile(args.profile)
    nodes = "1-16" if args.small else "1-1024"
    before = dl.predict(args.cluster, args.workload, nodes).to_rows()
    after = dl.predict(args.cluster, args.workload, nodes, profile=args.profile).to_rows()
    cat = dl.load_cluster(args.cluster)
    cal = dl.load_cluster(args.cluster, profile=args.profile)
    print(f"profile: {Path(args.profile).name}, regimes {', '.join(prof.p2p)}; "
          f"{len(prof.notes)} note(s)")
    for label, c in (("catalog", cat), ("measured", cal)):
        d = c.node.device
        print(f"{label:9s} intra-node {c.node.intra_link.latency_s * 1e6:.3g} us, "
              f"{c.node.intra_link.bandwidth_Bps / 1e9:.3g} GB/s; memory "
              f"{d.training_memory_bandwidth_Bps / 1e9:.3g} GB/s; sustained fraction "
              f"{d.sustained_fraction:.3g}")
    rows = [{"nodes": b["nodes"], "catalog_iter_s": b["iteration_s"],
             "measured_iter_s": a["iteration_s"], "catalog_eff": b["efficiency"],
             "measured_eff": a["efficiency"],
             "ratio": a["iteration_s"] / b["iteration_s"]} for b, a in zip(before, after, strict=True)]
    print(f"{args.workload} on {args.cluster}:")
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
