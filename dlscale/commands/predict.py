"""``dlscale predict CLUSTER WORKLOAD``: the analytical model over a range of node counts."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.commands.common import add_output_args, emit, parse_nodes
from dlscale.commands.measured_args import add_measured_args, apply_measured
from dlscale.commands.noise_arg import add_noise_arg, apply_noise
from dlscale.commands.runtime_args import (
    add_ps_args,
    add_runtime_arg,
    allreduce_summary,
    apply_ps_args,
    apply_runtime,
    collective_label,
)
from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import apply_overrides, load_workload
from dlscale.perfmodel.machine.topoinfo import network_line
from dlscale.perfmodel.training.predict import BASELINES
from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES, GROUPINGS

COLUMNS = ("nodes", "devices", "ranks", "iteration_s", "compute_s", "backward_s", "comm_s",
           "exposed_comm_s", "samples_per_s", "efficiency", "fits", "allreduce", "network_limit",
           "note")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "predict",
        help=SUMMARIES["predict"],
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
    p.add_argument("--tau", type=int, default=None,
                   help="EASGD communication period (default: the workload's)")
    p.add_argument("--precision", choices=("fp32", "fp16", "fp64", "bf16"),
                   help="training precision: fp32, fp16 (mixed) or fp64 for a layer-by-layer "
                        "model; fp16 (default) or bf16 (fp32 gradients) for a transformer")
    p.add_argument("--batch", type=int, metavar="N", help="samples per device per iteration")
    add_scaling_args(p)
    p.add_argument("--profile", metavar="FILE", help="machine profile from `dlscale calibrate`")
    add_runtime_arg(p)
    add_ps_args(p)
    add_noise_arg(p)
    p.add_argument("--plot", metavar="FILE.png", help="write a scaling plot")
    add_measured_args(p)
    add_outside_args(p)
    from dlscale.commands.predict_llm import add_layout_args

    add_layout_args(p)
    add_output_args(p)
    p.set_defaults(run=run)


def add_outside_args(p: argparse.ArgumentParser) -> None:
    """Time outside the step (:mod:`dlscale.perfmodel.training.outside`): data, loader, dispatch."""
    g = p.add_argument_group("time outside the step")
    g.add_argument("--data", choices=("real", "synthetic"),
                   help="real data is decoded on the host cores (the input pipeline bounds "
                        "the step); synthetic is not (default: the workload's, real)")
    g.add_argument("--loader-rate", type=float, metavar="X",
                   help="samples/s one node's data loader delivers, as you measured it "
                        "(default: host cores x the cited decode rate per core)")
    g.add_argument("--dispatch-us", type=float, metavar="X",
                   help="framework dispatch cost per operator in microseconds (default: "
                        "the cited 15 us)")


def add_scaling_args(p: argparse.ArgumentParser) -> None:
    """``--global-batch`` (strong scaling) and ``--baseline`` (efficiency against what)."""
    p.add_argument("--global-batch", type=int, metavar="N",
                   help="strong scaling: N samples per iteration over all devices, so each "
                        "device gets N / devices (default: the workload's scaling)")
    p.add_argument("--baseline", choices=BASELINES, default=None,
                   help="efficiency against one node (default) or one device alone")


def workload_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Workload fields set on the command line."""
    names = {"algorithm": "algorithm", "collective": "collective", "grouping": "grouping",
             "precision": "precision", "batch": "batch_per_device"}
    out = {field: getattr(args, arg) for arg, field in names.items()
           if getattr(args, arg, None) is not None}
    if out.get("precision") == "bf16":
        raise ConfigError("--precision bf16: a transformer's mixed precision (fp32 "
                          "gradients); a layer-by-layer model trains in fp32, fp16 (mixed) "
                          "or fp64")
    out.update(_outside_overrides(args))
    gb = getattr(args, "global_batch", None)
    if gb is not None and getattr(args, "batch", None) is not None:
        raise ConfigError(f"--batch: not with --global-batch (strong scaling splits the "
                          f"{gb} samples over the devices, so the batch per device follows); "
                          f"give one of them")
    if gb is not None:
        if gb < 1:
            raise ConfigError(f"--global-batch: must be an integer >= 1 (samples per iteration "
                              f"over all devices), got {gb}")
        out.update(scaling="strong", global_batch=gb)
    return out


def _outside_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """``--data``, ``--loader-rate``, ``--dispatch-us`` as workload fields (checked)."""
    out: dict[str, Any] = {}
    if getattr(args, "data", None) is not None:
        out["data"] = args.data
    rate = getattr(args, "loader_rate", None)
    if rate is not None:
        if not (math.isfinite(rate) and rate > 0):
            raise ConfigError(f"--loader-rate: must be a finite number > 0 (samples/s one "
                              f"node's loader delivers), got {rate:g}")
        out["loader_rate"] = rate
    us = getattr(args, "dispatch_us", None)
    if us is not None:
        if not (math.isfinite(us) and us >= 0):
            raise ConfigError(f"--dispatch-us: must be a finite number >= 0 (microseconds "
                              f"per operator), got {us:g}")
        out["dispatch_per_op_s"] = us * 1e-6
    return out


def check_loader_rate(args: argparse.Namespace, workload_data: str) -> None:
    """Refuse ``--loader-rate`` where the data is synthetic (``--data synthetic``, or the
    workload's ``data`` when ``--data`` is not given): synthetic data has no input
    pipeline, so the rate would be accepted and read by nothing."""
    rate = getattr(args, "loader_rate", None)
    if rate is None:
        return
    given = getattr(args, "data", None)
    if (given or workload_data) == "synthetic":
        where = "--data synthetic" if given else "the workload's data = 'synthetic'"
        raise ConfigError(f"--loader-rate {rate:g}: bounds the step by a real data set's "
                          f"input pipeline; with {where} there is no loader (give --data "
                          f"real, or drop --loader-rate)")


def check_tau(args: argparse.Namespace, algorithms: list[str]) -> None:
    """Refuse ``--tau`` where no algorithm run has a communication period (only the
    EASGD family exchanges every ``tau`` steps)."""
    from dlscale.perfmodel.training.workload import EASGD_FAMILY

    tau = getattr(args, "tau", None)
    if tau is not None and tau < 1:
        raise ConfigError(f"--tau: must be an integer >= 1 (local steps between exchanges), "
                          f"got {tau}")
    if tau is not None and not any(a in EASGD_FAMILY for a in algorithms):
        raise ConfigError(f"--tau: the EASGD family's communication period; "
                          f"{', '.join(algorithms)} communicate every step")


def check_sync_only(args: argparse.Namespace, algorithms: list[str]) -> None:
    """Refuse ``--collective`` and ``--grouping`` where no algorithm run allreduces
    gradients (the EASGD family and asynchronous SGD talk to a master or reduce and
    broadcast the weights)."""
    if "sync-sgd" in algorithms:
        return
    for flag in ("collective", "grouping"):
        if getattr(args, flag, None) is not None:
            raise ConfigError(f"--{flag}: sets the gradient allreduce of sync-sgd; "
                              f"{', '.join(algorithms)} has none")


def baseline_line(pred: Any) -> str:
    """A line flagging a baseline that does not fit in memory ("" when it fits)."""
    if pred.baseline_fits:
        return ""
    what = "one device" if pred.baseline == "device" else "one node"
    batch = (f"the whole global batch of {int(pred.global_batch[0])} samples"
             if pred.scaling == "strong" else "its batch")
    return (f"note: the baseline ({what} running {batch}) does not fit in "
            f"{pred.memory_resource}; its efficiencies compare with a run that could not "
            f"happen")


def run(args: argparse.Namespace) -> int:
    from dlscale.commands.predict_llm import check_data_parallel, is_transformer, run_llm

    if is_transformer(args.workload):
        return run_llm(args)
    check_data_parallel(args)
    from dlscale.api import predict
    from dlscale.provenance import load_cluster

    cluster, prov = load_cluster(args.cluster, args.profile)
    cluster = apply_ps_args(apply_runtime(cluster, args.runtime), args)
    cluster = apply_noise(cluster, args.noise)
    workload = load_workload(args.workload)
    check_loader_rate(args, workload.data)
    overrides = workload_overrides(args)
    if overrides:
        workload = apply_overrides(workload, overrides, "command line")
    check_sync_only(args, [workload.algorithm])
    check_tau(args, [workload.algorithm])
    if args.tau is not None:
        workload = apply_overrides(workload, {"tau": args.tau}, "command line")
    workload, measured_lines, measured_meta = apply_measured(args, workload)
    nodes = parse_nodes(f"1-{cluster.max_nodes}" if args.nodes is None else args.nodes)
    # the API's own question; the table shows the model's rows as the API's .raw holds them
    result = predict(cluster, workload, nodes, baseline=args.baseline or "node").raw
    rows = result.to_rows()
    meta = {"cluster": cluster.name, "workload": workload.name, "model": workload.model.name,
            "algorithm": workload.algorithm, "collective": workload.collective,
            "runtime": cluster.runtime.name, "allreduce_chosen": allreduce_summary(rows),
            "noise": cluster_noise(cluster),
            "precision": workload.precision, "batch_per_device": workload.batch_per_device,
            "fidelity": "analytical", "scaling": workload.scaling,
            "baseline": result.baseline, "baseline_fits": result.baseline_fits,
            "baseline_runs": result.baseline_runs,
            "baseline_iteration_s": result.baseline_iteration_s,
            "baseline_samples_per_s": result.baseline_samples_per_s,
            "network_line": network_line(cluster),
            **measured_meta}
    batch = (f"global batch {workload.global_batch}" if workload.scaling == "strong"
             else f"batch {workload.batch_per_device}/device")
    header = (f"{workload.name} ({workload.algorithm}, "
              f"{collective_label(workload.collective, cluster)}, {workload.precision}, "
              f"{batch}) on {cluster.name}, runtime {cluster.runtime.name}")
    header = "\n".join([header, network_line(cluster), *measured_lines])
    chosen = allreduce_summary(rows) if workload.algorithm == "sync-sgd" else ""
    from dlscale.perfmodel.training.easgd import noise_note

    for flag in (baseline_line(result), noise_note(workload.algorithm, cluster_noise(cluster))):
        if flag and args.format == "table":
            header += "\n" + flag
        elif flag:
            print(flag, file=sys.stderr)
    cols = [c for c in COLUMNS if c in rows[0] and (c != "note" or any(r[c] for r in rows))]
    prov = prov.with_baseline(result.baseline_text())
    emit(args, rows, meta, cols, header, prov)
    if args.plot:
        from dlscale.plots import plot_scaling

        plot_scaling(args.plot, rows, header + (f"\nallreduce: {chosen}" if chosen else ""),
                     subtitle=prov.subtitle())
    return 0
