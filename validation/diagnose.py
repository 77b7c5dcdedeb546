"""Re-check the diagnosed cause of every published miss: where does its time go?

``python -m dlscale.validation.diagnose`` prints, for each configuration behind a
miss of :mod:`.published` (the case's own cluster, workload and node count), one
rank's iteration taken apart:

- ``flop_ms``: forward + backward FLOPs at the device's sustained rate (the compute
  ceiling alone, as if memory were infinitely fast);
- ``mem_ms``: forward + backward memory traffic at the memory bandwidth (the memory
  ceiling alone, as if FLOPs were free);
- ``roofline_ms``: the model's forward + backward (per layer, the larger of the two);
  ``bound``: which ceiling is the larger in total (``compute`` or ``memory``), and
  ``flop_layers``: the share of the roofline time spent in layers whose FLOP
  ceiling is the larger;
- ``compute_ms``, ``comm_ms``, ``exposed_ms``, ``iteration_ms``: the prediction's
  compute (the roofline plus the weight update), collectives, and the part of them
  not hidden; ``dominant``: ``compute`` when compute is at least the exposed
  communication, else ``communication``;
- ``mem_GB``, ``fits``: bytes one device holds and whether they fit its training
  memory (:mod:`dlscale.perfmodel.compute.memory`).

Each configuration carries the claim its miss's diagnosis makes
(``compute-bound``: the FLOP ceiling exceeds the memory ceiling; ``memory-bound``:
the reverse; ``compute-dominated``: compute outweighs the exposed communication;
``fits`` / ``does-not-fit``: the memory model's verdict),
and the script says whether it holds. The two ceilings come from the model itself
(:func:`dlscale.perfmodel.compute.roofline.layer_times` on the device with its memory, or its
FLOPs, made a million times faster), so they follow any change to the compute model.

Examples
--------
>>> r = diagnose_config(CONFIGS[0])
>>> r["case"], r["bound"], r["holds"]
('laanait-summit', 'compute', True)
>>> r["flop_ms"] > 5 * r["mem_ms"]
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CLAIMS", "CONFIGS", "Config", "diagnose", "diagnose_config", "main"]

#: What a diagnosis may claim about a configuration.
CLAIMS = ("compute-bound", "memory-bound", "compute-dominated", "fits", "does-not-fit")

#: Speed-up applied to one ceiling to read the other alone.
_FAST = 1e6


@dataclass(frozen=True)
class Config:
    """One configuration behind one or more misses, with the claim its diagnosis makes."""

    case: str
    label: str
    misses: tuple[str, ...]
    claim: str
    build: Callable[[], tuple[Any, Any, int]]   # -> (cluster, workload, nodes)


def _laanait() -> tuple[Any, Any, int]:
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.validation.case_laanait_summit import _workload
    return get_cluster("summit"), _workload(), 1


def _codreanu(cluster: str, nodes: int, rpn: int | None, batch: int) -> Callable[[], tuple[Any, Any, int]]:
    def build() -> tuple[Any, Any, int]:
        from dlscale.perfmodel.catalog import get_cluster
        from dlscale.validation.case_codreanu_resnet50 import _resnet
        kw: dict[str, Any] = {"batch_per_device": batch}
        if rpn is not None:
            kw["ranks_per_node"] = rpn
        return get_cluster(cluster), _resnet(**kw), nodes
    return build


def _cavdar(strong: bool) -> Callable[[], tuple[Any, Any, int]]:
    def build() -> tuple[Any, Any, int]:
        from dlscale.perfmodel.catalog import get_cluster
        from dlscale.validation import case_cavdar_isc19 as c
        if strong:
            w = c._workload(c.STRONG_RPN, sparse_as_dense=True, scaling="strong",
                            global_batch=c.STRONG_GLOBAL_BATCH)
            return get_cluster(c.CLUSTER), w, c.STRONG_NODES
        return get_cluster(c.CLUSTER), c._workload(c.WEAK_RPN, sparse_as_dense=True), c.WEAK_NODES
    return build


def _cavdar_sparse() -> tuple[Any, Any, int]:
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.validation import case_cavdar_isc19 as c
    return get_cluster(c.CLUSTER), c._workload(c.WEAK_RPN, sparse_as_dense=False), c.GATHER_RANKS


def _you_knl_parts() -> tuple[Any, Any, int]:
    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.validation.case_you_sc17 import KNL
    w = get_workload("alexnet-cifar10")
    return get_cluster(KNL), dataclasses.replace(w, algorithm="sync-easgd", ranks_per_node=16,
                                                 batch_per_device=w.batch_per_device * 16), 1


def _you_k80() -> tuple[Any, Any, int]:
    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.validation.case_you_sc17 import K80
    return get_cluster(K80), dataclasses.replace(get_workload("alexnet-cifar10"),
                                                 algorithm="easgd"), 1


#: The configurations behind the misses, each with its diagnosis' claim.
CONFIGS: tuple[Config, ...] = (
    Config("laanait-summit", "FCN fp16, batch 4, 1 Summit node", ("peak_flops_27600_gpus",),
           "compute-bound", _laanait),
    Config("codreanu-resnet50", "ResNet-50, 448 SKX nodes, 2 x 16 per node",
           ("skx_448_nodes_images_per_s",), "compute-dominated",
           _codreanu("stampede2-skx", 448, 2, 16)),
    Config("codreanu-resnet50", "ResNet-50, 1,529 KNL nodes, 16 per node",
           ("knl_104k_cores_90_epochs_time",), "compute-dominated",
           _codreanu("stampede2-knl", 1529, None, 16)),
    Config("cavdar-isc19", "Transformer base, 300 SKX nodes x 4 ranks (weak)",
           ("weak_efficiency_1200_ranks",), "compute-dominated", _cavdar(False)),
    Config("cavdar-isc19", "Transformer base, 200 SKX nodes x 2 ranks (strong)",
           ("strong_efficiency_400_ranks",), "compute-dominated", _cavdar(True)),
    Config("you-sc17", "AlexNet-CIFAR10, original EASGD, 8 K80 GPUs",
           ("k80_comm_share_original", "k80_speedup_tree", "k80_speedup_weights_on_gpu",
            "k80_speedup_total"), "compute-dominated", _you_k80),
    Config("you-sc17", "AlexNet-CIFAR10, 1 KNL in 16 parts (Sync EASGD)",
           ("knl_largest_parts_fitting_mcdram",), "does-not-fit", _you_knl_parts),
    Config("cavdar-isc19", "Transformer base, sparse allgather, 50 SKX nodes x 4 ranks",
           ("sparse_oom_nodes",), "fits", _cavdar_sparse),
)


def _ceilings(cluster: Any, workload: Any, nodes: int) -> dict[str, float]:
    from dlscale.perfmodel.compute.roofline import layer_times
    from dlscale.perfmodel.training.rank_layout import layout

    lay = layout(cluster, workload, [nodes])
    dev = cluster.node.device
    batch, share = float(lay.batch_per_rank[0]), float(lay.share)
    cf = lay.compute_fraction
    rep = dataclasses.replace
    fast_mem = rep(dev, memory_bandwidth_Bps=dev.memory_bandwidth_Bps * _FAST,
                   fast_memory_bandwidth_Bps=dev.fast_memory_bandwidth_Bps * _FAST)
    fast_flop = rep(dev, peak_fp64_flops=dev.peak_fp64_flops * _FAST,
                    peak_fp32_flops=dev.peak_fp32_flops * _FAST,
                    peak_fp16_flops=dev.peak_fp16_flops * _FAST)
    roof = layer_times(workload.model, dev, workload.precision, batch, share, cf)
    flop = layer_times(workload.model, fast_mem, workload.precision, batch, share, cf)
    mem = layer_times(workload.model, fast_flop, workload.precision, batch, share, cf)
    per_layer = roof.forward_s + roof.backward_s
    flop_layers = (flop.forward_s + flop.backward_s) >= (mem.forward_s + mem.backward_s)
    return {"batch_per_rank": batch, "flop_ms": 1e3 * float(flop.total_s),
            "mem_ms": 1e3 * float(mem.total_s), "roofline_ms": 1e3 * float(roof.total_s),
            "flop_layers": float(per_layer[flop_layers].sum() / per_layer.sum())}


def diagnose_config(cfg: Config) -> dict[str, Any]:
    """One configuration taken apart (keys: see the module docstring) and its claim."""
    from dlscale.perfmodel.training.predict import predict

    cluster, workload, nodes = cfg.build()
    row: dict[str, Any] = {"case": cfg.case, "config": cfg.label, "nodes": nodes,
                           "misses": ", ".join(cfg.misses), "claim": cfg.claim}
    row.update(_ceilings(cluster, workload, nodes))
    p = predict(cluster, workload, [nodes])
    row.update(compute_ms=1e3 * float(p.compute_s[0]), comm_ms=1e3 * float(p.comm_s[0]),
               exposed_ms=1e3 * float(p.exposed_comm_s[0]),
               iteration_ms=1e3 * float(p.iteration_s[0]),
               mem_GB=float(p.memory_per_device_bytes[0]) / 1e9, fits=bool(p.fits[0]))
    row["bound"] = "compute" if row["flop_ms"] >= row["mem_ms"] else "memory"
    row["dominant"] = "compute" if row["compute_ms"] >= row["exposed_ms"] else "communication"
    row["holds"] = {"compute-bound": row["bound"] == "compute",
                    "memory-bound": row["bound"] == "memory",
                    "compute-dominated": row["dominant"] == "compute",
                    "fits": row["fits"], "does-not-fit": not row["fits"]}[cfg.claim]
    return row


def diagnose(cases: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """:func:`diagnose_config` of every configuration (of ``cases``, default all)."""
    return [diagnose_config(c) for c in CONFIGS if cases is None or c.case in cases]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit status 1 if a diagnosis' claim does not hold."""
    import argparse

    from dlscale.perfmodel.output.tables import format_table

    ap = argparse.ArgumentParser(prog="python -m dlscale.validation.diagnose",
                                 description="compute-bound vs memory-bound time and "
                                             "communication behind each published miss")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    args = ap.parse_args(argv)
    rows = diagnose(args.case)
    cols = ["case", "config", "batch_per_rank", "flop_ms", "mem_ms", "roofline_ms", "bound",
            "flop_layers", "compute_ms", "comm_ms", "exposed_ms", "iteration_ms", "dominant",
            "mem_GB", "fits", "claim", "holds"]
    shown = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}
             for r in rows]
    print(format_table(shown, cols))
    for r in rows:
        print(f"- {r['case']} {r['config']}: {r['misses']}: claim {r['claim']} "
              f"{'holds' if r['holds'] else 'DOES NOT HOLD'}")
    return 0 if all(r["holds"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
