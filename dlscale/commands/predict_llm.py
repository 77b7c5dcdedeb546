"""``dlscale predict CLUSTER TRANSFORMER --tp T --pp P ...``: a transformer's parallel layout.

The transformer path of ``predict`` (:mod:`dlscale.perfmodel.training.parallel_time`):
one row per node count, the data-parallel size following from the GPUs, tensor and
pipeline sizes. The flags of the layer-by-layer (data-parallel) path that do not
apply here are refused in one line, and the layout flags are refused on that path
unless they describe it (``tp = pp = 1``, ``zero = 0``, nothing else set), where the
data-parallel answer is printed unchanged.
"""

from __future__ import annotations

import argparse
from typing import Any

from dlscale.commands.noise_arg import apply_noise
from dlscale.perfmodel.errors import ConfigError

__all__ = ["LAYOUT_FLAGS", "add_layout_args", "check_data_parallel", "check_llm_precision",
           "is_transformer", "run_llm"]

#: dest -> flag of the layout options.
LAYOUT_FLAGS = {"tp": "--tp", "pp": "--pp", "microbatch": "--microbatch",
                "schedule": "--schedule", "virtual": "--virtual", "zero": "--zero",
                "recompute": "--recompute", "sp": "--sp", "ep": "--ep"}

#: dest -> flag of the data-parallel path's options, refused on the transformer path.
_DP_ONLY = {"algorithm": "--algorithm", "collective": "--collective", "grouping": "--grouping",
            "tau": "--tau",
            "batch": "--batch", "profile": "--profile", "runtime": "--runtime",
            "ps_servers": "--ps-servers", "ps_placement": "--ps-placement",
            "ps_strategy": "--ps-strategy", "plot": "--plot",
            "measured_samples_per_s": "--measured-samples-per-s", "measured_trace": "--trace",
            "horovod_timeline": "--horovod-timeline", "data": "--data",
            "loader_rate": "--loader-rate", "dispatch_us": "--dispatch-us"}

COLUMNS = ("nodes", "gpus", "tp", "pp", "dp", "microbatches", "iteration_s", "tflops_per_gpu",
           "tokens_per_s", "compute_s", "tp_comm_s", "pp_comm_s", "bubble_s", "dp_exposed_s", "optimizer_s",
           "memory_GB", "fits", "largest_micro")


def add_layout_args(p: argparse.ArgumentParser) -> None:
    """The parallel layout of a transformer model (``dlscale catalog models``)."""
    from dlscale.perfmodel.training.parallel import SCHEDULES
    from dlscale.perfmodel.training.transformer import RECOMPUTE

    g = p.add_argument_group("parallel layout (transformer models)")
    g.add_argument("--tp", type=int, metavar="T", help="tensor-parallel size (default 1)")
    g.add_argument("--pp", type=int, metavar="P", help="pipeline stages (default 1)")
    g.add_argument("--microbatch", type=int, metavar="B",
                   help="sequences per microbatch (default 1); --global-batch sets the "
                        "sequences per iteration (default: one microbatch per replica)")
    g.add_argument("--schedule", choices=SCHEDULES, help="pipeline schedule (default 1f1b)")
    g.add_argument("--virtual", type=int, metavar="V",
                   help="model chunks per stage of the interleaved schedule")
    g.add_argument("--zero", type=int, metavar="Z", help="ZeRO stage 0-3 (default 0)")
    g.add_argument("--recompute", choices=RECOMPUTE,
                   help="activation recomputation (default none)")
    g.add_argument("--sp", action="store_true", default=None,
                   help="sequence parallelism (needs --tp > 1)")
    g.add_argument("--ep", type=int, metavar="E",
                   help="expert-parallel size of a mixture-of-experts model: its experts "
                        "split over E of the data-parallel ranks (default 1)")


def is_transformer(name: str) -> bool:
    """Whether ``name`` is a transformer model of the catalog (``models_llm``)."""
    from dlscale.perfmodel.catalog.models_llm import LLMS

    return name in LLMS


def check_data_parallel(args: argparse.Namespace) -> None:
    """Refuse a layout flag on a layer-by-layer workload unless it names the data-parallel case."""
    from dlscale.perfmodel.catalog.models_llm import LLMS

    neutral = {"tp": 1, "pp": 1, "zero": 0, "ep": 1}
    for dest, flag in LAYOUT_FLAGS.items():
        value = getattr(args, dest, None)
        if value is None or neutral.get(dest) == value:
            continue
        raise ConfigError(
            f"{flag}: workload {args.workload!r} is a layer-by-layer model trained data "
            f"parallel (tp = pp = 1, zero 0); parallel layouts need a transformer model: "
            f"{', '.join(LLMS)}")


def _refuse_dp_flags(args: argparse.Namespace) -> None:
    for dest, flag in _DP_ONLY.items():
        if getattr(args, dest, None) is not None:
            raise ConfigError(f"{flag}: sets the data-parallel path of predict; the "
                              f"transformer {args.workload!r} is priced by its parallel layout")
    if getattr(args, "baseline", None) is not None:
        raise ConfigError("--baseline: the transformer path reports TFLOP/s per GPU, not an "
                          "efficiency against a baseline")
    check_llm_precision(getattr(args, "precision", None))


def check_llm_precision(precision: str | None) -> None:
    """Refuse a ``--precision`` that is not a transformer's 16-bit mixed precision."""
    from dlscale.perfmodel.training.parallel import PRECISIONS

    if precision is not None and precision not in PRECISIONS:
        raise ConfigError(f"--precision: a transformer trains in mixed precision, "
                          f"{' or '.join(PRECISIONS)} (16-bit math and activations; bf16 "
                          f"keeps fp32 gradients), got {precision}")


def _layout(args: argparse.Namespace, dp: int) -> Any:
    from dlscale.perfmodel.training.parallel import ParallelLayout

    micro = args.microbatch if args.microbatch is not None else 1
    schedule = args.schedule or "1f1b"
    virtual = args.virtual if args.virtual is not None else 1
    batch = args.global_batch if args.global_batch is not None else micro * dp
    return ParallelLayout(tp=args.tp if args.tp is not None else 1,
                          pp=args.pp if args.pp is not None else 1, dp=dp, micro=micro,
                          global_batch=batch, schedule=schedule, virtual=virtual,
                          zero=args.zero if args.zero is not None else 0,
                          sp=bool(args.sp), recompute=args.recompute or "none",
                          ep=args.ep if args.ep is not None else 1,
                          precision=args.precision or "fp16")


def run_llm(args: argparse.Namespace) -> int:
    """Price the layout at every node count; print and write the rows."""
    from dlscale.commands.common import emit, parse_nodes
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.perfmodel.training.llm_ranges import band_row, llm_band
    from dlscale.perfmodel.training.parallel import replica_counts
    from dlscale.provenance import load_cluster

    _refuse_dp_flags(args)
    cluster, prov = load_cluster(args.cluster, None)
    cluster = apply_noise(cluster, args.noise)     # one policy with the DP path
    model = get_llm(args.workload)
    tp = args.tp if args.tp is not None else 1
    pp = args.pp if args.pp is not None else 1
    if tp < 1 or pp < 1:
        raise ConfigError(f"--{'tp' if tp < 1 else 'pp'}: must be a positive integer, "
                          f"got {tp if tp < 1 else pp}")
    counts = None if args.nodes is None else parse_nodes(args.nodes)
    layouts = [(n, _layout(args, dp))
               for n, dp in replica_counts(cluster, counts, tp, pp, "--nodes")]
    for _n, lay in layouts:
        lay.check(model)
    columns = list(COLUMNS)
    if any(lay.ep > 1 for _n, lay in layouts):
        columns[columns.index("dp") + 1:columns.index("dp") + 1] = ["ep"]
        columns[columns.index("pp_comm_s") + 1:columns.index("pp_comm_s") + 1] = ["ep_comm_s"]
    rows = []
    for n, lay in layouts:
        central, band = llm_band(cluster, model, lay)
        rows.append({"nodes": n, **band_row(central, model, band)})
    lay = layouts[0][1]
    header = (f"{model.name} ({model.params / 1e9:.1f} B parameters) on {cluster.name}: "
              f"tp {lay.tp}, pp {lay.pp}, microbatch {lay.micro}, {lay.schedule}"
              f"{f' v {lay.virtual}' if lay.virtual > 1 else ''}, zero {lay.zero}, "
              f"recompute {lay.recompute}{', sp' if lay.sp else ''}"
              f"{f', ep {lay.ep}' if lay.ep > 1 else ''}, mixed precision {lay.precision}")
    from dlscale.perfmodel.compute.variability import cluster_noise

    meta = {"cluster": cluster.name, "model": model.name, "fidelity": "analytical",
            "path": "transformer", "noise": cluster_noise(cluster), "source": model.source}
    emit(args, rows, meta, columns, header, prov)
    return 0
