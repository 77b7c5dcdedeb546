"""``dlscale simulate CLUSTER``: simulate a collective on a cluster's network.

``CLUSTER`` is a preset name, a cluster TOML file, or a GraphML topology
(``*.graphml``: edges with ``bandwidth_Bps`` and ``latency_s``, endpoints marked
``kind="host"`` or ``"device"``). With a ``WORKLOAD`` it simulates training
(:mod:`dlscale.commands.simulate_training`; a transformer's parallel layout:
:mod:`dlscale.commands.simulate_llm`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.perfmodel.errors import ConfigError
from dlscale.provenance import NO_BASELINE, Provenance

__all__ = ["add_parser", "run"]

#: ``--intranode`` choices -> builder of the per-node graph (None: the default star).
INTRANODE = ("star", "summit", "pcie", "knl")


def add_parser(sub: Any) -> None:
    from dlscale.simulator.network import MODES
    from dlscale.simulator.network.schedules import ALGORITHMS
    from dlscale.simulator.topology.placement import PLACEMENTS

    p = sub.add_parser(
        "simulate",
        help=SUMMARIES["simulate"],
        description="With CLUSTER and WORKLOAD: simulate training iterations rank by rank "
                    "(stragglers, master queueing, link contention; --cosim runs the real "
                    "kernels on a small model); with a transformer WORKLOAD, one iteration "
                    "of its --tp/--pp/... layout as events. With CLUSTER alone: simulate one collective "
                    "on the routed topology (per-step times, bytes per link). Both can write "
                    "a Chrome trace.",
    )
    p.add_argument("cluster", help="cluster preset name, cluster TOML file, or topology .graphml")
    p.add_argument("workload", nargs="?", default=None,
                   help="training workload (preset or TOML): simulate training iterations "
                        "instead of one collective")
    p.add_argument("--nodes", type=str, default=None,
                   help="nodes to simulate (default: 2, or 1 on a one-node machine; refused "
                        "for a .graphml, simulated whole); with a WORKLOAD "
                        "a list or range as in predict")
    p.add_argument("--ranks", type=int, default=None,
                   help="ranks taking part (default: every device of the nodes)")
    p.add_argument("--operation", choices=tuple(ALGORITHMS), default=None,
                   help="collective operation (default: allreduce)")
    p.add_argument("--collective", default=None, metavar="ALGORITHM",
                   help="algorithm of the operation, e.g. ring, recursive-doubling, "
                        "rabenseifner, binomial-tree, double-binary-tree, hierarchical, auto "
                        "(default: the operation's first)")
    p.add_argument("--size-bytes", type=float, default=None, help="bytes per rank (default 100e6)")
    p.add_argument("--mode", choices=MODES, default=None,
                   help="fast (default) or flow; with a WORKLOAD, as --network")
    p.add_argument("--placement", choices=PLACEMENTS, default=None,
                   help="rank placement on the routed topology (default: linear; random "
                        "is seeded by --seed); with a WORKLOAD, on its simulated network")
    p.add_argument("--seed", type=int, default=None, help="seed of random placement, Valiant "
                   "routing; with a WORKLOAD also noise, cosim (refused where none draws)")
    p.add_argument("--intranode", choices=INTRANODE, default=None,
                   help="graph inside a node: star (each device on its own intra link), "
                        "summit (2 x 3 GPUs on NVLink), pcie (GPUs on PCIe switches), "
                        "knl (KNL in parts sharing MCDRAM)")
    p.add_argument("--gamma", type=float, default=None, metavar="S_PER_B",
                   help="reduction cost per byte reduced (default 0)")
    p.add_argument("--top", type=int, default=None,
                   help="most utilised links to list (default 5)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="what to print (default: table)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the JSON result to FILE")
    p.add_argument("--trace-out", metavar="FILE.json",
                   help="write the simulator's Chrome trace (open in Perfetto); with a "
                        "WORKLOAD, of the last node count's run (of the last algorithm of "
                        "--compare)")
    # the old spelling, refused: --trace reads a profiler trace in predict and plan
    p.add_argument("--trace", dest="old_trace", metavar="FILE", help=argparse.SUPPRESS)
    p.add_argument("--profile", metavar="FILE",
                   help="machine profile from `dlscale calibrate`: its network and kernel "
                        "figures replace the cluster's")
    g = p.add_argument_group("training workload settings (with a WORKLOAD), as in predict")
    g.add_argument("--batch", type=int, metavar="N", help="samples per device per iteration")
    g.add_argument("--precision", choices=("fp32", "fp16", "fp64", "bf16"),
                   help="training precision: fp32, fp16 (mixed) or fp64 for a layer-by-layer "
                        "model; fp16 (default) or bf16 (fp32 gradients) for a transformer")
    g.add_argument("--global-batch", type=int, metavar="N",
                   help="strong scaling: N samples per iteration over all devices")
    from dlscale.perfmodel.training.workload import GROUPINGS

    g.add_argument("--grouping", choices=GROUPINGS,
                   help="gradient fusion or graph-aware grouping (sync-sgd)")
    from dlscale.commands.measured_args import add_measured_args
    from dlscale.commands.runtime_args import add_ps_args, add_runtime_arg
    from dlscale.commands.simulate_training import add_training_args

    add_runtime_arg(p)  # the software stack of a training run (with WORKLOAD)
    add_ps_args(p)
    add_training_args(p)  # training options; the ones above are shared
    add_measured_args(p, trace_flag=False)
    from dlscale.commands.predict import add_outside_args

    add_outside_args(p)
    from dlscale.commands.predict_llm import add_layout_args

    add_layout_args(p)  # a transformer WORKLOAD's layout (commands/simulate_llm.py)
    p.set_defaults(run=run)


def _node_graph(kind: str, cluster: Any) -> Any:
    from dlscale.simulator.topology import intranode as ti

    d = cluster.node.devices_per_node
    if kind == "star" or (kind != "knl" and d == 1):
        return None
    if kind == "summit":
        if d % 2:
            raise ConfigError(f"--intranode summit: needs an even number of devices per node, "
                              f"cluster {cluster.name!r} has {d}")
        return ti.summit_node_graph(2, d // 2, nvlink_Bps=cluster.node.intra_link.bandwidth_Bps)
    if kind == "pcie":
        return ti.pcie_box_graph(d, min(d, 4))
    dev = cluster.node.device
    return ti.knl_node_graph(d if d in (1, 2, 4) else 1,
                             mcdram_Bps=dev.fast_memory_bandwidth_Bps or dev.memory_bandwidth_Bps,
                             nic_Bps=cluster.node.nic.bandwidth_Bps)


def _network(args: argparse.Namespace) -> tuple[Any, str, Provenance]:
    """The simulated network of ``args``, its name, and the provenance of its figures."""
    from dlscale.simulator.network import SimulatedNetwork

    opts = {"mode": args.mode, "placement": args.placement, "seed": args.seed,
            "gamma_s_per_B": args.gamma}
    if str(args.cluster).endswith(".graphml"):
        from dlscale.simulator.topology.graphml import read_graphml_topology

        if args.nodes is not None:
            raise ConfigError(f"--nodes {args.nodes}: a .graphml topology is simulated whole "
                              f"(every endpoint it marks); --ranks N runs the collective on "
                              f"N of them")
        if args.intranode_given:
            raise ConfigError(f"--intranode {args.intranode}: a .graphml topology carries "
                              f"its own graph inside each node; --intranode builds a "
                              f"cluster's")
        if args.profile is not None:
            raise ConfigError("--profile: a .graphml topology carries its own link figures; "
                              "a profile applies to a cluster preset or TOML file")
        return (SimulatedNetwork(read_graphml_topology(args.cluster), **opts), args.cluster,
                Provenance(baseline=NO_BASELINE))
    from dlscale.provenance import load_cluster

    cluster, prov = load_cluster(args.cluster, args.profile)
    from dlscale.commands.simulate_training import default_nodes

    nodes = (default_nodes(cluster.max_nodes) if args.nodes is None
             else _one_node_count(args.nodes))
    cluster.check_nodes(nodes)
    graph = _node_graph(args.intranode, cluster)
    return (SimulatedNetwork.from_cluster(cluster, nodes, graph, **opts), cluster.name,
            prov.with_baseline(NO_BASELINE))


def _one_node_count(text: str) -> int:
    from dlscale.commands.common import parse_nodes

    nodes = parse_nodes(text)
    if len(nodes) != 1:
        raise ConfigError(f"--nodes: a collective is simulated on one node count, got {text!r}")
    return nodes[0]


def _apply_workload_flags(args: argparse.Namespace) -> None:
    """``--batch``, ``--precision``, ``--grouping``, ``--global-batch`` and the time outside
    the step applied to the workload, as predict does."""
    from dlscale.commands.predict import check_loader_rate, workload_overrides
    from dlscale.perfmodel.machine.config import apply_overrides, load_workload

    if getattr(args, "loader_rate", None) is not None:
        check_loader_rate(args, load_workload(args.workload).data)
    names = {"batch": args.batch, "precision": args.precision, "grouping": args.grouping,
             "global_batch": getattr(args, "global_batch", None),
             **{k: getattr(args, k, None) for k in ("data", "loader_rate", "dispatch_us")}}
    overrides = workload_overrides(argparse.Namespace(**names))
    if overrides:
        args.workload = apply_overrides(load_workload(args.workload), overrides, "command line")


def run(args: argparse.Namespace) -> int:
    from dlscale.commands.simulate_flags import (
        check_collective_flags,
        check_training_flags,
        collective_defaults,
    )

    if args.old_trace is not None:
        raise ConfigError(f"--trace {args.old_trace}: simulate writes its Chrome trace with "
                          f"--trace-out FILE.json (--trace reads a profiler trace in predict "
                          f"and plan; here that is --measured-trace FILE); nothing was written")
    from dlscale.commands.predict_llm import LAYOUT_FLAGS, check_data_parallel, is_transformer

    args.seed_given = seed_given = args.seed is not None   # refused where nothing reads it
    if not seed_given:
        args.seed = 0
    if args.workload is not None and is_transformer(args.workload):
        from dlscale.commands.simulate_llm import run_llm_sim

        return run_llm_sim(args)
    if args.workload is None:
        for dest, flag in LAYOUT_FLAGS.items():
            if getattr(args, dest, None) is not None:
                raise ConfigError(f"{flag}: a transformer's parallel layout; give a "
                                  f"transformer WORKLOAD (simulate CLUSTER TRANSFORMER)")
    if args.workload is not None:
        from dlscale.commands.simulate_training import run_training

        check_data_parallel(args)
        check_training_flags(args)
        _apply_workload_flags(args)
        return run_training(args)
    if getattr(args, "runtime", None) is not None:
        raise ConfigError("--runtime: the software stack applies to training runs (CLUSTER "
                          "WORKLOAD); one collective runs on the links as described")
    for flag in ("batch", "precision", "global_batch"):
        if getattr(args, flag, None) is not None:
            raise ConfigError(f"--{flag.replace('_', '-')}: sets the training workload; "
                              f"give a WORKLOAD (simulate CLUSTER WORKLOAD), got only {args.cluster!r}")
    check_collective_flags(args)
    args.intranode_given = args.intranode is not None
    if args.gamma is not None:
        _check_gamma_reduces(args.operation or "allreduce", args.collective, args.gamma)
    collective_defaults(args)
    if not args.size_bytes >= 0:
        raise ConfigError(f"--size-bytes: must be >= 0, got {args.size_bytes!r}")
    from dlscale.perfmodel.limits import GAMMA_RANGE_S_PER_B, check_range

    check_range(args.gamma, GAMMA_RANGE_S_PER_B, "--gamma", "s/B")
    if args.top < 0:
        raise ConfigError(f"--top: must be >= 0, got {args.top}")
    if args.seed < 0:
        raise ConfigError(f"--seed: must be an integer >= 0, got {args.seed}")
    start = time.perf_counter()
    net, name, prov = _network(args)
    if seed_given and not net.seeded:
        raise ConfigError(f"--seed {args.seed}: seeds a random placement (--placement random) "
                          f"and Valiant routing on a dragonfly; this collective "
                          f"({args.placement} placement, deterministic routing) draws "
                          f"nothing, so nothing would read it")
    prov.warn()
    ranks = net.max_ranks if args.ranks is None else args.ranks
    if args.mode == "flow" and ranks > 64:
        print(f"simulating {ranks} ranks in flow mode (may take a while)...", file=sys.stderr)
    from dlscale.sweep_guard import StopSignals

    with StopSignals():  # SIGTERM stops a long flow run as Ctrl-C does (exit 143)
        res = net.simulate(args.operation, args.size_bytes, ranks, args.collective,
                           trace=bool(args.trace_out))
    wall = time.perf_counter() - start
    doc = res.to_dict(top=args.top)
    doc["cluster"] = name
    doc["wall_s"] = wall
    doc["metrics"] = net.metrics().to_dict()
    doc.update(prov.meta())
    if args.output:
        from dlscale.output import atomic_write_text

        atomic_write_text(args.output, json.dumps(doc, indent=2) + "\n")
    if args.trace_out:
        from dlscale.simulator.network.trace import write_json_atomic

        write_json_atomic(res.trace, args.trace_out)
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 0
    _print_collective(args, res, doc, name, prov, wall)
    return 0


def _reduces(operation: str, algorithm: str | None) -> bool:
    """Whether a receiver of ``operation`` (by ``algorithm``; its default where that is
    not one of the operation's) reduces what it gets: read from the schedule itself."""
    from dlscale.perfmodel.network.registry import algorithms
    from dlscale.perfmodel.network.schedules import build_schedule

    names = algorithms(operation)
    alg = algorithm if algorithm in names else names[0]
    return any(ph.reduce for ph in build_schedule(operation, alg, 4, 1.0))


def _check_gamma_reduces(operation: str, algorithm: str | None, gamma: float) -> None:
    """Refuse ``--gamma`` for an operation whose receivers reduce nothing (broadcast,
    allgather, alltoall copy what they get): the cost would be read by nothing."""
    from dlscale.perfmodel.network.registry import OPERATIONS

    if operation not in OPERATIONS or _reduces(operation, algorithm):
        return   # an unknown operation is argparse's to refuse
    reducing = ", ".join(op for op in OPERATIONS if _reduces(op, None))
    raise ConfigError(f"--gamma {gamma:g}: the cost per byte a receiver reduces; "
                      f"{operation} reduces nothing (its receivers copy what they get), so "
                      f"nothing would read it (it acts with --operation {reducing})")


def _print_collective(args: argparse.Namespace, res: Any, doc: dict[str, Any], name: str,
                      prov: Any, wall: float) -> None:
    """The table of one simulated collective: what ran, provenance, topology, time,
    bus bandwidth, bytes per level and the most utilised links."""
    print(f"{res.collective} ({res.algorithm}) of {res.n_bytes:.4g} B on {res.ranks} ranks of "
          f"{name}, {res.mode} mode, {res.placement} placement")
    for line in prov.header_lines("  "):
        print(line)
    busbw = 0.0
    if res.time_s > 0 and res.collective == "allreduce" and res.ranks > 1:
        busbw = 2 * (res.ranks - 1) / res.ranks * res.n_bytes / res.time_s
    m = doc["metrics"]
    exact = "exact" if m["bisection_exact"] else "estimated"
    print(f"  topology      {m['endpoints']} endpoints, {m['switches']} switches, "
          f"diameter {m['diameter_hops']} hops, bisection {m['bisection_Bps'] / 1e9:.4g} GB/s "
          f"({exact})")
    print(f"  time          {res.time_s:.6g} s   ({len(res.step_times_s)} steps, "
          f"simulated in {wall:.2f} s)")
    if busbw:
        print(f"  bus bandwidth {busbw / 1e9:.4g} GB/s")
    for lvl, b in res.bytes_per_level().items():
        print(f"  bytes on {lvl:<10s} {b:.4g}")
    if args.top:
        print("  most utilised links:")
        for row in res.top_links(args.top):
            print(f"    {row['link']:<24s} {row['level']:<8s} {row['bytes']:.4g} B  "
                  f"{100 * row['utilisation']:.1f}%")
