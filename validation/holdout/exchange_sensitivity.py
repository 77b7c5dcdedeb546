"""Round eight (issue 25, the exchange): can one slower exchange, the same for both
rows of a pair that share a machine and a software stack, give both published
efficiencies?

A diagnostic, not a prediction and not a model change. Two pairs:

- the TensorFlow K80 cluster (8 x p2.8xlarge, ``distributed_replicated`` over gRPC,
  parameter servers on the workers): ResNet-50 (25.6 M parameters) misses by +8 to
  +9 pp, Inception V3 (23.8 M, nearly the same bytes) is within at -2.4 pp. Variants
  ``tr-X``: the inter-node links delivering the fraction X of their bandwidth (the
  runtime's cited TCP central is 0.94), through the public ``fitted`` field of the
  runtime, as ``dlscale fit`` and round five's diagnostic set it;
- the DGX-1 pair under ``replicated`` with NCCL (AlexNet 247 MB of gradients, VGG-16
  553 MB): variants ``nv-X`` scale the NVLink ring's link bandwidth by X (the model's
  one ring per direction on one 20 GB/s NVLink 1 link), ``nv-X/0`` the same with
  nothing overlapped (each collective after the whole backward pass).

Usage (from the repository root)::

    python validation/holdout/exchange_sensitivity.py   # two Markdown tables

Examples
--------
>>> [name for name, _ in K80_VARIANTS][:2]
['central', 'tr-0.8']
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from dlscale.perfmodel.catalog.runtimes import apply_runtime
from dlscale.perfmodel.machine.config import load_cluster, load_workload
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.predict import predict

HERE = "validation/holdout"
K80 = f"{HERE}/aws-p2-8xlarge-x8.toml"
#: (row, workload, batch, nodes, published efficiency): run_holdout.py's ``CASES``,
#: the same sources and arithmetic (images/s at n GPUs over n x the 1-GPU rate)
K80_ROWS: tuple[tuple[str, str, int, int, float], ...] = (
    ("tf-k80-32-inception-v3", "inception-v3", 64, 4, 902 / (32 * 29.7)),
    ("tf-k80-64-inception-v3", "inception-v3", 64, 8, 1783 / (64 * 29.7)),
    ("tf-k80-32-resnet50", "resnet50", 64, 4, 1388 / (32 * 52.4)),
    ("tf-k80-64-resnet50", "resnet50", 64, 8, 2744 / (64 * 52.4)),
)
DGX_ROWS: tuple[tuple[str, str, int, int, float], ...] = (
    ("tf-dgx1-8-alexnet", f"{HERE}/tf-alexnet.toml", 512, 1, 17822 / (8 * 2987)),
    ("tf-dgx1-8-vgg16", "vgg16", 64, 1, 1081 / (8 * 154)),
)
#: (name, delivered fraction of the inter-node links; None: the runtime's own)
K80_VARIANTS: tuple[tuple[str, float | None], ...] = (
    ("central", None), ("tr-0.8", 0.8), ("tr-0.64", 0.64), ("tr-0.47", 0.47),
    ("tr-0.3", 0.3), ("tr-0.16", 0.16))
#: (name, NVLink bandwidth factor, overlap: None the schedule's, 0 none)
DGX_VARIANTS: tuple[tuple[str, float, float | None], ...] = (
    ("central", 1.0, None), ("nv-0.5", 0.5, None), ("nv-0.3", 0.3, None),
    ("nv-1/0", 1.0, 0.0), ("nv-0.75/0", 0.75, 0.0), ("nv-0.5/0", 0.5, 0.0),
    ("nv-0.3/0", 0.3, 0.0))


def _fitted(c: Cluster, field: str, value: float) -> Cluster:
    rt = dataclasses.replace(c.runtime, fitted=((field, value),), fitted_for=c.runtime.name)
    return dataclasses.replace(c, runtime=rt)


def k80_efficiency(row: tuple[str, str, int, int, float], transport: float | None) -> float:
    """The K80 row's predicted efficiency against one GPU, its runtime the trial's
    ``parameter-server`` with the inter-node delivered fraction ``transport``."""
    _, model, batch, nodes, _ = row
    c = apply_runtime(load_cluster(K80), "parameter-server")
    if transport is not None:
        c = _fitted(c, "transport", transport)
    w = dataclasses.replace(load_workload(model), batch_per_device=batch, data="synthetic")
    return float(predict(c, w, [nodes], baseline="device").efficiency[0])


def dgx_efficiency(row: tuple[str, str, int, int, float], scale: float,
                   overlap: float | None) -> float:
    """The DGX-1 row's predicted efficiency (runtime ``nccl``, the ring, as the trial's
    command) with the NVLink bandwidth times ``scale`` and the overlap ``overlap``."""
    _, model, batch, nodes, _ = row
    c = apply_runtime(load_cluster("dgx1-p100"), "nccl")
    link = c.node.intra_link
    link = dataclasses.replace(link, bandwidth_Bps=link.bandwidth_Bps * scale)
    c = dataclasses.replace(c, node=dataclasses.replace(c.node, intra_link=link))
    if overlap is not None:
        c = _fitted(c, "overlap", overlap)
    w = dataclasses.replace(load_workload(model), batch_per_device=batch,
                            collective="ring", data="synthetic")
    return float(predict(c, w, [nodes], baseline="device").efficiency[0])


def _table(names: list[str], rows: list[tuple[str, float, list[float]]]) -> list[str]:
    lines = ["| row | published | " + " | ".join(names) + " |",
             "| " + " | ".join(["---"] * (len(names) + 2)) + " |"]
    for name, pub, effs in rows:
        cells = [f"{e:.3f} ({(e - pub) * 100:+.1f})" for e in effs]
        lines.append(f"| {name} | {pub:.3f} | " + " | ".join(cells) + " |")
    return lines


def table() -> str:
    """Both Markdown tables: efficiency and its error in percentage points."""
    k80 = [(r[0], r[4], [k80_efficiency(r, t) for _, t in K80_VARIANTS]) for r in K80_ROWS]
    dgx = [(r[0], r[4], [dgx_efficiency(r, s, o) for _, s, o in DGX_VARIANTS])
           for r in DGX_ROWS]
    return "\n".join([*_table([n for n, _ in K80_VARIANTS], k80), "",
                      *_table([n for n, _, _ in DGX_VARIANTS], dgx)])


def main() -> int:
    """Print :func:`table` (run from the repository root)."""
    if not Path(K80).is_file():
        print(f"exchange_sensitivity: run from the repository root ({K80} not found)",
              file=sys.stderr)
        return 2
    print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
