"""``dlscale simulate CLUSTER TRANSFORMER --tp T --pp P ...``: a layout's iteration as events.

The transformer path of ``simulate`` (:func:`dlscale.api.simulate_transformer`, the
one front end): the layout flags of ``predict``'s transformer path, the node counts,
``--global-batch``, ``--noise`` and ``--seed``, ``--format``, ``-o`` and
``--trace-out`` (a Chrome trace of the last node count's run). Every other
flag of ``simulate`` is refused in one line, before any work: it sets the one
collective, the data-parallel training loop or its network, none of which this
simulation reads.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dlscale.perfmodel.errors import ConfigError

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["ACTS", "run_llm_sim"]

#: dests this path reads (the layout flags, and these).
ACTS = ("cluster", "workload", "nodes", "global_batch", "noise", "seed", "format", "output",
        "trace_out", "tp", "pp", "microbatch", "schedule", "virtual", "zero", "recompute", "sp",
        "ep", "precision")

#: Why a flag of ``simulate`` does not act here, by dest (the rest: _OTHER).
_WHY = {
    "mode": "the pipeline's and the exchange's messages always move as flows on the "
            "routed network",
    "network": "the pipeline's and the exchange's messages always move as flows on the "
               "routed network",
    "placement": "ranks are placed in Megatron's order (tensor, data, pipeline)",
    "profile": "the transformer path prices the catalog's figures (as predict's)",
    "old_trace": "simulate writes its Chrome trace with --trace-out",
    "batch": "a transformer's batch is --microbatch and --global-batch",
}
_OTHER = "sets the data-parallel training loop or the one collective, not a transformer's layout"

COLUMNS = ("nodes", "gpus", "tp", "pp", "dp", "microbatches", "iteration_s", "analytical_s",
           "vs_analytical", "tflops_per_gpu", "pipeline_s", "busy_s", "bubble_s", "tail_s",
           "messages", "messages_met", "memory_GB", "fits")


def _given(args: argparse.Namespace, dest: str) -> bool:
    value = getattr(args, dest)
    if dest == "seed":
        return False
    if dest == "format":
        return value != "table"
    return value is not None and value is not False


def refuse_other_flags(args: argparse.Namespace) -> None:
    """One line for the first flag given that this path does not read."""
    for dest in sorted(vars(args)):
        if dest in ACTS or dest in ("run", "command", "func", "seed_given") or \
                not _given(args, dest):
            continue
        flag = "--" + dest.replace("_", "-") if dest != "old_trace" else "--trace"
        raise ConfigError(f"{flag}: {_WHY.get(dest, _OTHER)}; the transformer "
                          f"{args.workload!r} is simulated by its parallel layout")


def _check_seed_draws(seed: int, cluster: Cluster, noise: str | None) -> None:
    """Refuse a ``--seed`` where the noise draws nothing: the one thing it seeds here
    (the network is routed from the default seed, on the linear placement)."""
    from dlscale.perfmodel.compute.variability import cluster_noise
    from dlscale.simulator.training.stragglers import make_noise

    nz = make_noise(cluster_noise(cluster) if noise is None else noise)
    if not nz.draws:
        raise ConfigError(f"--seed {seed}: seeds the transformer simulation's noise draws "
                          f"(--noise lognormal:SIGMA, empirical:FILE); noise "
                          f"{nz.spec or 'none'} draws nothing, so nothing would read it")


def run_llm_sim(args: argparse.Namespace) -> int:
    """Simulate the layout at every node count; print and write the rows."""
    from dlscale.api import simulate_transformer
    from dlscale.commands.common import emit
    from dlscale.perfmodel.output.atomicio import check_output_path
    from dlscale.provenance import load_cluster

    refuse_other_flags(args)
    from dlscale.commands.predict_llm import check_llm_precision

    check_llm_precision(args.precision)
    check_output_path(args.output, "-o")
    check_output_path(args.trace_out, "--trace-out")
    cluster, prov = load_cluster(args.cluster, None)
    if getattr(args, "seed_given", False):
        _check_seed_draws(args.seed, cluster, args.noise)
    res = simulate_transformer(
        cluster, args.workload, args.nodes, tp=1 if args.tp is None else args.tp,
        pp=1 if args.pp is None else args.pp,
        microbatch=1 if args.microbatch is None else args.microbatch,
        global_batch=args.global_batch, schedule=args.schedule or "1f1b",
        virtual=1 if args.virtual is None else args.virtual,
        zero=0 if args.zero is None else args.zero, recompute=args.recompute or "none",
        sp=bool(args.sp), ep=1 if args.ep is None else args.ep,
        precision=args.precision or "fp16", noise=args.noise, seed=args.seed,
        trace=args.trace_out)
    first = res.raw[0]
    lay = first.analytical.layout
    header = (f"{first.analytical.model} on {cluster.name}, simulated (one iteration as "
              f"events): tp {lay.tp}, pp {lay.pp}, microbatch {lay.micro}, {lay.schedule}"
              f"{f' v {lay.virtual}' if lay.virtual > 1 else ''}, zero {lay.zero}, "
              f"recompute {lay.recompute}{', sp' if lay.sp else ''}"
              f"{f', ep {lay.ep}' if lay.ep > 1 else ''}, {lay.precision}, "
              f"noise {first.noise}, "
              f"seed {args.seed}\n  analytical_s: predict's answer to the same layout; "
              f"messages_met: message groups that shared a link with another in flight")
    out = argparse.Namespace(format=args.format, output=None)
    emit(out, res.rows, res.meta, list(COLUMNS), header, prov)
    if args.output:
        from dlscale.output import write_rows

        csv = str(args.output).lower().endswith(".csv")
        write_rows(args.output, [{**r, **prov.csv_columns()} for r in res.rows] if csv
                   else res.rows, {**res.meta, **prov.meta()})
    return 0
