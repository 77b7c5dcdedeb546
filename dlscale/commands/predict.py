"""``dlscale predict CLUSTER WORKLOAD``: the analytical model over a range of node counts."""

from __future__ import annotations

import argparse
from typing import Any

from dlscale.commands.common import add_output_args, emit, parse_nodes
from dlscale.commands.measured_args import add_measured_args, apply_measured
from dlscale.perfmodel.config import apply_overrides, load_cluster, load_workload
from dlscale.perfmodel.workload import ALGORITHMS, COLLECTIVES, GROUPINGS

COLUMNS = ("nodes", "devices", "iteration_s", "compute_s", "comm_s", "exposed_comm_s",
           "samples_per_s", "efficiency", "fits", "allreduce", "network_limit", "note")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "predict",
        help="predict time per iteration and scaling with the analytical model",
        description="Predict time per iteration, communication, throughput and scaling "
                    "efficiency of a workload on a cluster over a range of node counts.",
    )
    p.add_argument("cluster", help="cluster preset name (see `dlscale catalog machines`) or TOML file")
    p.add_argument("workload", help="workload preset name (see `dlscale catalog models`) or TOML file")
    p.add_argument("--nodes", default=None, type=str,
                   help="node counts: list '1,2,4', doubling range '1-4608', or 'A-B:STEP' "
                        "(default: 1 up to the cluster's size, doubling)")
    p.add_argument("--algorithm", choices=ALGORITHMS, help="training algorithm (default: the workload's)")
    p.add_argument("--collective", choices=COLLECTIVES, help="allreduce algorithm (default: the workload's)")
    p.add_argument("--grouping", choices=GROUPINGS, help="gradient fusion or graph-aware grouping")
    p.add_argument("--precision", choices=("fp32", "fp16", "fp64"), help="training precision")
    p.add_argument("--batch", type=int, metavar="N", help="samples per device per iteration")
    p.add_argument("--profile", metavar="FILE", help="machine profile from `dlscale calibrate`")
    p.add_argument("--plot", metavar="FILE.png", help="write a scaling plot")
    add_measured_args(p)
    add_output_args(p)
    p.set_defaults(run=run)


def workload_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Workload fields set on the command line."""
    names = {"algorithm": "algorithm", "collective": "collective", "grouping": "grouping",
             "precision": "precision", "batch": "batch_per_device"}
    return {field: getattr(args, arg) for arg, field in names.items()
            if getattr(args, arg, None) is not None}


def run(args: argparse.Namespace) -> int:
    from dlscale.perfmodel.predict import predict

    cluster = load_cluster(args.cluster, args.profile)
    workload = load_workload(args.workload)
    overrides = workload_overrides(args)
    if overrides:
        workload = apply_overrides(workload, overrides, "command line")
    workload, measured_lines, measured_meta = apply_measured(args, workload)
    nodes = parse_nodes(f"1-{cluster.max_nodes}" if args.nodes is None else args.nodes)
    result = predict(cluster, workload, nodes)
    rows = result.to_rows()
    meta = {"cluster": cluster.name, "workload": workload.name, "model": workload.model.name,
            "algorithm": workload.algorithm, "collective": workload.collective,
            "precision": workload.precision, "batch_per_device": workload.batch_per_device,
            "fidelity": "analytical", **measured_meta}
    header = "\n".join([f"{workload.name} ({workload.algorithm}, {workload.collective}, "
                        f"{workload.precision}, batch {workload.batch_per_device}/device) on "
                        f"{cluster.name}", *measured_lines])
    cols = [c for c in COLUMNS if c in rows[0] and (c != "note" or any(r[c] for r in rows))]
    emit(args, rows, meta, cols, header)
    if args.plot:
        from dlscale.plots import plot_scaling

        plot_scaling(args.plot, rows, header)
    return 0
