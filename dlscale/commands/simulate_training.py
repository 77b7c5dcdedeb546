"""Command-line side of simulated training: ``dlscale simulate CLUSTER WORKLOAD ...``.

:func:`add_training_args` adds the training options to an ``argparse`` parser (it
skips options the parser already has, so it can extend the ``simulate`` command's
parser, whose ``--nodes``, ``--seed``, ``--trace-out``, ``--format`` and ``--mode``
(network mode ``fast``/``flow``) it then shares); :func:`run_training` runs the
simulation for each node count (or, with ``--compare``, each algorithm), prints a
table or JSON, and writes ``-o`` files, the trace and the plots, all atomically.

Examples
--------
>>> import argparse
>>> p = argparse.ArgumentParser()
>>> p.add_argument("cluster"); p.add_argument("workload", nargs="?")  # doctest: +ELLIPSIS
_Store...
>>> add_training_args(p)
>>> args = p.parse_args(["summit", "resnet50", "--nodes", "2", "--iterations", "2",
...                      "--format", "json"])
>>> run_training(args)  # doctest: +ELLIPSIS
{...
0
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dlscale.commands.simulate_work import check_work
from dlscale.output import format_table, to_jsonable, write_rows
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import ALGORITHMS, Workload
from dlscale.provenance import NO_BASELINE, Provenance
from dlscale.simulator.training.net import NETWORKS, default_network
from dlscale.simulator.training.result import TrainingResult

__all__ = ["COLUMNS", "add_training_args", "run_training"]

#: Table columns (those a run has).
COLUMNS = ("nodes", "ranks", "algorithm", "allreduce", "iteration_s", "iteration_std_s",
           "compute_s", "backward_s", "comm_s", "exposed_comm_s", "straggler_wait_s",
           "master_queue_s", "samples_per_s",
           "efficiency", "analytical_iteration_s", "memory_per_device_bytes", "fits",
           "final_accuracy", "lost_updates")


#: Ranks above which ``--network flow`` warns of its cost (issue 27 item 6: a ring
#: allreduce took 2.9 s at 1,024 ranks and 39.7 s at 4,096).
FLOW_NOTE_RANKS = 1024


def _add(parser: argparse.ArgumentParser, *names: str, **kw: Any) -> None:
    if any(n in parser._option_string_actions for n in names):
        return
    parser.add_argument(*names, **kw)


def add_training_args(parser: argparse.ArgumentParser) -> None:
    """Add the training options (see module docstring) to ``parser``."""
    _add(parser, "--nodes", default="2",
         help="node counts: 'N', a list '1,2,4' or a doubling range '1-64' (default 2, "
              "or 1 on a one-node machine)")
    _add(parser, "--algorithm", choices=ALGORITHMS, default=None,
         help="training algorithm (default: the workload's)")
    _add(parser, "--iterations", type=int, default=None,
         help="iterations (asynchronous: steps per worker; default 20); with "
              "--target-accuracy the cap (default 300)")
    _add(parser, "--seed", type=int, default=0, help="seed of noise, placement, data")
    _add(parser, "--noise", default=None,
         help="straggler model: none, lognormal:SIGMA (0 <= SIGMA <= 2), empirical:FILE "
              "(default: the cluster's noise; where it gives none, a GPU's cited rate "
              "spread, lognormal:0.0148)")
    _add(parser, "--network", choices=NETWORKS, default=None,
         help="who answers communication times: analytical (closed forms), fast or "
              "flow (simulated topology; default: --mode if given, else fast)")
    _add(parser, "--cosim", action="store_true",
         help="co-simulation: real small-model numerics on every worker; reports accuracy")
    _add(parser, "--compare", default=None, metavar="ALG,ALG",
         help="run several algorithms (same cluster, nodes, seed) and compare them")
    _add(parser, "--tau", type=int, default=None, help="EASGD communication period")
    _add(parser, "--lr", type=float, default=None, help="co-simulation base learning rate")
    _add(parser, "--lr-schedule", default=None,
         help="co-simulation LR schedule: constant, warmup:N, step:N:G, cyclic:N[:MIN], "
              "collapsed:N[:MIN]")
    _add(parser, "--target-accuracy", type=float, default=None, metavar="A",
         help="co-simulation: run each algorithm until its model reaches accuracy A on the "
              "evaluation split (or the cap) and report the simulated time and samples to A")
    _add(parser, "--tune", action="store_true",
         help="with --target-accuracy: search each algorithm's own learning rate, EASGD "
              "moving rate and tau, momentum on a validation split (default: the "
              "literature's settings)")
    _add(parser, "--repeats", type=int, default=None, metavar="K",
         help="with --target-accuracy: K runs per algorithm over seeds; median and range")
    _add(parser, "--max-sim-time", type=float, default=None, metavar="S",
         help="with --target-accuracy: also cap the simulated time at S seconds")
    _add(parser, "--eval-every", type=int, default=None, metavar="N",
         help="co-simulation: evaluate every N steps per worker (default 5; 2 with "
              "--target-accuracy)")
    _add(parser, "--hidden", type=int, default=None, metavar="H",
         help="co-simulation: hidden units of the MLP or of the CNN's dense layer (default "
              "32; 0: softmax regression)")
    _add(parser, "--cosim-model", choices=("mlp", "cnn"), default=None,
         help="co-simulation model: the one-hidden-layer MLP (default) or a small CNN "
              "(3x3 convolution, 8 filters, 2x2 pooling, dense layer) on the 8x8 digits")
    _add(parser, "--trace-out", metavar="FILE.json", default=None,
         help="write the simulator's Chrome trace (representative ranks, first iterations)")
    _add(parser, "--plot", metavar="FILE.png", default=None,
         help="write the scaling + breakdown plot (or the accuracy plot with --cosim)")
    _add(parser, "--baseline", choices=("node", "device"), default=None,
         help="efficiency against one node (default) or one device alone, as predict "
              "gives it (the closed form, same noise; not simulated)")
    _add(parser, "--format", choices=("table", "json"), default="table",
         help="what to print (default: table)")
    _add(parser, "-o", "--output", metavar="FILE", default=None,
         help="also write the rows (.csv for CSV, else JSON)")


def default_nodes(max_nodes: int) -> int:
    """``simulate``'s node count when ``--nodes`` is not given: two, or a one-node
    machine's one (training and one collective alike)."""
    return min(2, max_nodes)


def _nodes(value: Any, max_nodes: int) -> list[int]:
    if value is None:
        return [default_nodes(max_nodes)]
    if isinstance(value, int):
        return [value]
    from dlscale.node_counts import parse_nodes
    return parse_nodes(str(value))


def _rows(runs: list[TrainingResult]) -> list[dict]:
    return [r.to_rows()[0] for r in runs]


def _load(args: argparse.Namespace) -> tuple[Cluster, Workload, list[str], dict[str, Any],
                                             Provenance]:
    """Cluster (profile, runtime) and workload (tau, collective, measured inputs) of
    ``args``, and the provenance of the cluster."""
    import dataclasses

    from dlscale.perfmodel.machine.config import load_workload
    from dlscale.provenance import load_cluster

    if not getattr(args, "workload", None):
        raise ConfigError("workload: simulated training needs a WORKLOAD (preset or TOML)")
    from dlscale.commands.runtime_args import apply_ps_args, apply_runtime

    cluster, prov = load_cluster(args.cluster, getattr(args, "profile", None))
    cluster = apply_ps_args(apply_runtime(cluster, getattr(args, "runtime", None)), args)
    workload = load_workload(args.workload)
    if getattr(args, "tau", None) is not None:
        workload = dataclasses.replace(workload, tau=int(args.tau))
    if getattr(args, "collective", None) is not None:  # the allreduce of the gradients
        workload = dataclasses.replace(workload, collective=args.collective)
    from dlscale.commands.measured_args import apply_measured

    workload, measured_lines, measured_meta = apply_measured(args, workload)
    return cluster, workload, measured_lines, measured_meta, prov


def _algorithms(args: argparse.Namespace) -> list[str | None]:
    """``--compare``'s algorithms (checked), else ``[--algorithm]`` (None: the workload's)."""
    algs = [a.strip() for a in args.compare.split(",")] if args.compare else [args.algorithm]
    for a in algs:
        if a is not None and a not in ALGORITHMS:
            raise ConfigError(f"--compare: unknown algorithm {a!r}; valid: {', '.join(ALGORITHMS)}")
    return algs


def _cosim_options(args: argparse.Namespace) -> dict[str, Any]:
    """Check the counts; the co-simulation options given on the command line."""
    for flag, v, low in (("--eval-every", getattr(args, "eval_every", None), 1),
                         ("--hidden", getattr(args, "hidden", None), 0),
                         ("--iterations", args.iterations, 1)):
        if v is not None and v < low:
            raise ConfigError(f"{flag}: must be an integer >= {low}, got {v!r}")
    cosim: dict[str, Any] = {}
    if args.lr is not None:
        cosim["lr"] = args.lr
    if args.lr_schedule:
        cosim["lr_schedule"] = args.lr_schedule
    if getattr(args, "hidden", None) is not None:
        cosim["hidden"] = args.hidden
    if getattr(args, "cosim_model", None):
        cosim["model"] = args.cosim_model
    return cosim


def _print_table(args: argparse.Namespace, runs: list[TrainingResult], rows: list[dict],
                 meta: dict[str, Any], cluster: Cluster, workload: Workload,
                 measured_lines: list[str], prov: Provenance) -> None:
    """The table, its header line and a note per configuration that does not fit."""
    from dlscale.commands.runtime_args import collective_label

    cols = [c for c in COLUMNS if any(c in r for r in rows)]
    placed = "" if meta["placement"] == "linear" else f", placement {meta['placement']}"
    print(f"# {cluster.name} / {workload.name}: simulated ({meta['mode']}, network "
          f"{meta['network']}{placed}, noise {args.noise}, seed {args.seed}); runtime "
          f"{cluster.runtime.name}, allreduce "
          f"{collective_label(workload.collective, cluster)}")
    for line in [*prov.header_lines(), *measured_lines]:
        print(f"# {line}")
    print(format_table(rows, cols))
    for r in runs:
        if not r.fits:
            m = r.memory
            print(f"# {r.nodes} nodes do not fit: {m['resource']} needs "
                  f"{m['per_rank_bytes'] / 2**30:.2f} GiB per rank, has "
                  f"{m['capacity_bytes'] / 2**30:.2f} GiB (short by "
                  f"{m['shortfall_bytes'] / 2**30:.2f} GiB); not simulated")
    for line in _notes(runs, rows, cluster, workload):
        print(f"# note: {line}")
    if runs[0].surrogate:
        print(f"# numerics: {runs[0].surrogate}")


def baseline_line(runs: list[TrainingResult], baseline: str) -> str:
    """The ``baseline:`` header line: what ``efficiency`` divides by (the closed form's
    one-node, or one-device, run of the stack's own allreduce, ``auto``, with the runs'
    noise: ``predict``'s baseline, not a simulation), shared by every row that differs
    only in its collective; "" when no row has an efficiency."""
    base = {(r.baseline_runs, r.baseline_iteration_s) for r in runs
            if r.baseline_iteration_s is not None}
    what = "1 node" if baseline == "node" else "1 device alone"
    if not base:
        return ""
    if len(base) > 1:
        return (f"baseline: efficiency of each algorithm against {what} running the "
                f"stack's own allreduce (auto), as predict gives it (closed form, same "
                f"noise; not simulated)")
    runs_label, it = base.pop()
    return (f"baseline: efficiency against {what} running {runs_label}: {it:.3g} s per "
            f"iteration, as predict gives it (closed form, same noise; not simulated)")


def _notes(runs: list[TrainingResult], rows: list[dict], cluster: Cluster,
           workload: Workload) -> list[str]:
    """``predict``'s row notes (:mod:`dlscale.perfmodel.training.row_notes`: efficiency above 1,
    throughput below the previous node count's) for the simulated rows of one algorithm,
    as ``"N nodes: why"``. The level that limits each row's network is ``predict``'s
    (:func:`~dlscale.perfmodel.training.sync.collective_summary` of the layouts, the
    one node of the baseline first, as ``predict`` asks it), without running the
    analytical model of the whole iteration again."""
    import dataclasses

    import numpy as np

    from dlscale.perfmodel.training.rank_layout import layout
    from dlscale.perfmodel.training.row_notes import row_notes
    from dlscale.perfmodel.training.sync import collective_summary

    if len({r.get("algorithm") for r in rows}) != 1 or \
            any(r.get("efficiency") is None or "samples_per_s" not in r for r in rows):
        return []
    w = dataclasses.replace(workload, algorithm=str(rows[0]["algorithm"]))
    nodes = [int(r["nodes"]) for r in rows]
    if w.algorithm == "sync-sgd":
        limit = collective_summary(cluster, w, layout(cluster, w, [1, *nodes]))[1][1:]
    else:
        limit = np.full(len(nodes), "", dtype=object)
    used = np.array([str(r.get("allreduce", "")) for r in rows], dtype=object)
    notes = row_notes(cluster, w, layout(cluster, w, nodes),
                      np.array([float(r["samples_per_s"]) for r in rows]),
                      np.array([float(r["efficiency"]) for r in rows]), used, limit)
    return [f"{n} nodes: {note}" for n, note in zip(nodes, notes, strict=True) if note]


def _plot(args: argparse.Namespace, runs: list[TrainingResult], meta: dict[str, Any],
          cluster: Cluster, workload: Workload, prov: Provenance) -> None:
    """Write ``--plot``: the accuracy plot with ``--cosim``, else scaling + breakdown."""
    from dlscale.simulator.training.plots import plot_accuracy, plot_training_scaling
    title = (f"{workload.name} on {cluster.name} (simulated), runtime "
             f"{cluster.runtime.name}")
    if meta["allreduce_chosen"]:
        title += f"\nallreduce: {meta['allreduce_chosen']}"
    title += "\n" + prov.subtitle()
    if args.cosim:
        plot_accuracy(args.plot, runs, title)
    else:
        plot_training_scaling(args.plot, runs, title)


def _flow_cost_note(cluster: Cluster, workload: Workload, nodes: int, iterations: int) -> None:
    """A line on stderr before a flow-level training run of many ranks: what it costs."""
    from dlscale.perfmodel.training.rank_layout import layout

    ranks = int(layout(cluster, workload, nodes).ranks[0])
    if ranks > FLOW_NOTE_RANKS:
        print(f"note: --network flow shares every link's rate among the flows of "
              f"{ranks:,} ranks at each change, for {iterations} iterations: where messages "
              f"share links this may take many minutes; --network fast routes the same "
              f"messages in seconds", file=sys.stderr)


def _check_seed_draws(seed: int, noise: Any, cosim: bool, cluster: Cluster,
                      nodes: list[int], network: str, placement: str) -> None:
    """Refuse a ``--seed`` given to a run that draws nothing at random: without noise
    that draws, co-simulation (data split, initial weights, batches), a random
    placement or a router that draws its paths, nothing would read it."""
    from dlscale.simulator.training.net import network_draws

    if noise.draws or cosim or network_draws(cluster, nodes, network, placement):
        return
    routing = ("the analytical network" if network == "analytical" else
               f"{placement} placement, deterministic routing")
    raise ConfigError(f"--seed {seed}: seeds the noise draws (--noise lognormal:SIGMA, "
                      f"empirical:FILE), the co-simulation (--cosim, --target-accuracy), "
                      f"a random placement (--placement random) and Valiant routing on a "
                      f"dragonfly; this run (noise {noise.spec or 'none'}, timing only, "
                      f"{routing}) draws nothing, so nothing would read it")


def run_training(args: argparse.Namespace) -> int:
    """Run the training simulation described by ``args`` (through
    :func:`dlscale.api.simulate`, which runs each node count once); 0 on success."""
    from dlscale.api import simulate

    if args.seed is None:           # not given (simulate.run sets it; a caller of this
        args.seed = 0               # function with the parser's namespace may not)
    cluster, workload, measured_lines, measured_meta, prov = _load(args)
    # a parameter-server runtime runs its own flows: 'flow' unless told otherwise
    default = default_network(cluster)
    network = args.network or (getattr(args, "mode", None) if getattr(args, "mode", None)
                               in NETWORKS else None) or default
    nodes = _nodes(args.nodes, cluster.max_nodes)
    algs = _algorithms(args)
    from dlscale.commands.simulate_target import check_target_args, run_target

    target = check_target_args(args, nodes)
    from dlscale.commands.simulate_flags import check_run_flags

    check_run_flags(args, [a or workload.algorithm for a in algs], network)
    placement = getattr(args, "placement", None) or "linear"
    cosim = _cosim_options(args)
    from dlscale.simulator.training.stragglers import make_noise

    if args.seed < 0:
        raise ConfigError(f"--seed: must be an integer >= 0, got {args.seed}")
    if args.noise is None:
        from dlscale.perfmodel.compute.variability import cluster_noise

        args.noise = cluster_noise(cluster)
    noise = make_noise(args.noise)
    if getattr(args, "seed_given", False):
        _check_seed_draws(args.seed, noise, bool(args.cosim or target), cluster, nodes,
                          network, placement)
    if target:
        alg_list = [a or workload.algorithm for a in algs]
        prov.warn()
        return run_target(args, cluster, workload, network, nodes[0], alg_list, cosim,
                          prov.with_baseline(NO_BASELINE))
    if getattr(args, "eval_every", None) is not None:
        cosim["eval_every"] = args.eval_every
    if cosim:  # every option checked before the first run (none given: nothing to check)
        from dlscale.simulator.training.cosim import check_cosim_options

        check_cosim_options(cosim)
    iterations = args.iterations or 20
    plan = [(n, a) for a in algs for n in nodes]
    check_work(cluster, workload, max(nodes), iterations, len(plan), "--iterations",
               cosim if args.cosim else None)
    if network == "flow":
        _flow_cost_note(cluster, workload, max(nodes), iterations)
    runs: list[TrainingResult] = []
    for i, a in enumerate(algs):   # the API's question, once per algorithm of --compare
        runs += simulate(cluster, workload, nodes, seed=args.seed, algorithm=a,
                         iterations=iterations, mode="cosim" if args.cosim else "timing",
                         network=network, noise=noise,
                         trace=args.trace_out if (args.trace_out and i == len(algs) - 1)
                         else False, cosim_options=cosim,
                         baseline=getattr(args, "baseline", None) or "node",
                         placement=placement, progress=len(plan) > 1).raw
    rows = _rows(runs)
    from dlscale.commands.runtime_args import allreduce_summary

    meta = {"cluster": cluster.name, "workload": workload.name, "network": network,
            "runtime": cluster.runtime.name, "collective": workload.collective,
            "allreduce_chosen": allreduce_summary(rows), "seed": args.seed, "noise": args.noise,
            "iterations": iterations, "mode": "cosim" if args.cosim else "timing",
            "baseline": getattr(args, "baseline", None) or "node",
            "placement": placement, **measured_meta}
    prov = prov.with_baseline(baseline_line(runs, getattr(args, "baseline", None) or "node")
                              or NO_BASELINE)
    meta.update(prov.meta())
    prov.warn()
    if args.format == "json":
        doc = {"meta": meta, "runs": [r.to_dict() for r in runs]}
        sys.stdout.write(json.dumps(to_jsonable(doc), indent=2) + "\n")
    else:
        _print_table(args, runs, rows, meta, cluster, workload, measured_lines, prov)
    if args.output:
        csv = str(args.output).lower().endswith(".csv")
        write_rows(args.output, [{**r, **prov.csv_columns()} for r in rows] if csv else rows, meta)
    if args.plot:
        _plot(args, runs, meta, cluster, workload, prov)
    return 0
