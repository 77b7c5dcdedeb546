"""Round five (issue 25, the exchange): how far each overlap or exchange mechanism
would have to move to give the Horovod and DGX-1 NCCL rows, each within its cited
range or beyond it.

A diagnostic, not a prediction and not a model change: every variant is the holdout
row's own cluster and workload with one value of one mechanism set through the
public :class:`~dlscale.perfmodel.machine.runtime.Runtime` fields that ``dlscale fit``
and the band already use (``sides`` for a cited range's end, ``fitted`` for a value in
place of the cited central one). The variants:

- ``central``: the row as the trial predicts it;
- ``slow-hi``: compute beside communication at the cited high, 0.40 (arXiv
  2507.03114, "40.0 %" at most; the central is the mean, 0.189);
- ``ovl-0.5``, ``ovl-0``: each exchange starts at half of the lead the schedule
  allows, or after the whole backward pass (the band's serial corner);
- ``tr-0.8``, ``tr-0.7``, ``tr-0.6``: the inter-node links delivering that fraction
  of their bandwidth (the cited RDMA central is 0.97, range 0.96-0.976); no effect
  on one node.

Usage (from the repository root)::

    python validation/holdout/overlap_sensitivity.py   # a Markdown table

Examples
--------
>>> [name for name, _ in VARIANTS][:3]
['central', 'slow-hi', 'ovl-0.5']
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from dlscale.perfmodel.catalog.runtimes import apply_runtime
from dlscale.perfmodel.machine.config import load_cluster, load_workload
from dlscale.perfmodel.training.predict import predict

HERE = "validation/holdout"
HVD = f"{HERE}/uber-horovod-pascal.toml"
#: (row, cluster, workload, batch, nodes, published efficiency): the holdout's rows
#: (run_holdout.py ``CASES``, the same sources and arithmetic)
ROWS: tuple[tuple[str, str, str, int, int, float], ...] = (
    ("horovod-128-vgg16", HVD, "vgg16", 64, 32, 0.79),
    ("horovod-512-vgg16", HVD, "vgg16", 64, 128, 0.68),
    ("horovod-128-inception-v3", HVD, "inception-v3", 64, 32, 0.90),
    ("horovod-512-inception-v3", HVD, "inception-v3", 64, 128, 0.90),
    ("horovod-128-resnet101", HVD, "resnet101", 64, 32, 0.90),
    ("horovod-512-resnet101", HVD, "resnet101", 64, 128, 0.90),
    ("tf-dgx1-8-alexnet", "dgx1-p100", f"{HERE}/tf-alexnet.toml", 512, 1,
     17822 / (8 * 2987)),
    ("tf-dgx1-8-vgg16", "dgx1-p100", "vgg16", 64, 1, 1081 / (8 * 154)),
)
#: (name, Runtime fields replaced)
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("central", {}),
    ("slow-hi", {"sides": (("overlap-slowdown", "high"),)}),
    ("ovl-0.5", {"fitted": (("overlap", 0.5),)}),
    ("ovl-0", {"fitted": (("overlap", 0.0),)}),
    ("tr-0.8", {"fitted": (("transport", 0.8),)}),
    ("tr-0.7", {"fitted": (("transport", 0.7),)}),
    ("tr-0.6", {"fitted": (("transport", 0.6),)}),
)


def efficiency(row: tuple[str, str, str, int, int, float], fields: dict[str, Any]) -> float:
    """The row's predicted efficiency (against one device) with ``fields`` replaced
    on its cluster's runtime.

    The DGX-1 rows take the runtime ``nccl`` and the ring, as their holdout commands
    do (``--runtime nccl --collective ring``); the Horovod rows keep their file's
    ``horovod-legacy-nccl``.
    """
    _, cluster, workload, batch, nodes, _ = row
    c = load_cluster(cluster)
    if cluster == "dgx1-p100":
        c = apply_runtime(c, "nccl")
    w = dataclasses.replace(load_workload(workload), batch_per_device=batch,
                            collective="ring")
    if cluster == "dgx1-p100":
        w = dataclasses.replace(w, data="synthetic")
    if "fitted" in fields:
        fields = {**fields, "fitted_for": c.runtime.name}
    c = dataclasses.replace(c, runtime=dataclasses.replace(c.runtime, **fields))
    return float(predict(c, w, [nodes], baseline="device").efficiency[0])


def table() -> str:
    """The Markdown table: each row's published efficiency, then each variant's
    prediction with its error in percentage points."""
    head = "| row | published | " + " | ".join(n for n, _ in VARIANTS) + " |"
    lines = [head, "| " + " | ".join(["---"] * (len(VARIANTS) + 2)) + " |"]
    for row in ROWS:
        cells = []
        for _, fields in VARIANTS:
            e = efficiency(row, fields)
            cells.append(f"{e:.3f} ({(e - row[5]) * 100:+.1f})")
        lines.append(f"| {row[0]} | {row[5]:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    """Print :func:`table` (run from the repository root)."""
    if not Path(HVD).is_file():
        print(f"overlap_sensitivity: run from the repository root ({HVD} not found)",
              file=sys.stderr)
        return 2
    print(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
