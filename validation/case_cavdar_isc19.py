"""Case: Cavdar, Codreanu, Karakus et al., "Densifying assumed-sparse tensors" (ISC 2019).

Published numbers (``reference/published-results.md`` section 2):

- Horovod on Stampede2, CPU only: 91% weak scaling efficiency up to 1200 MPI
  processes on 300 nodes; up to 65% strong scaling efficiency up to 400 processes on
  200 nodes [S abstract]; 4 processes per node (weak), 2 (strong) [D].
- The shared embedding's gradient is an IndexedSlices that stock Horovod allgathers:
  about 4.26 GiB per rank past about 50 nodes, where the job runs out of memory;
  densified (``sparse_as_dense``), the buffer is vocab x hidden x 4 bytes, about 69 MB
  at hidden 512 and vocab 33,708, whatever P [S Horovod issue threads].
- Batch about 5,000 tokens per process; Horovod fusion threshold 128 MB [S threads].

Inputs: the catalog's ``stampede2-skx`` cluster and ``transformer-base`` workload
(178 sentence pairs = 5,000 tokens per process, fusion 128 MB, stock Horovod's
sparse allgather); the case sets only what the paper states: ranks per node,
node counts, ``sparse_as_dense`` (the paper's fix) and, for strong scaling, the
global batch, and the allreduce rule C6. Assumptions (one per unknown, fixed before any error was looked at):

C1. Partition: SKX. The abstract says "Stampede2, CPU only"; 4 and 2 processes per
    node divide the SKX node's two sockets evenly, and the authors' ResNet-50 runs
    on the same machine (Codreanu et al.) used the SKX nodes.
C2. Model size: Transformer base (hidden 512): the one published buffer size (69 MB
    at hidden 512) is for it.
C3. Per-process batch: 5,000 tokens = 178 sentence pairs per process in the weak
    runs (the catalog preset's tokens per sentence); the workload's per-device batch
    is set so that each rank gets 178 (``178 x ranks_per_node / 2`` per socket).
C4. Strong scaling: the global batch is fixed at 5,000 tokens per process at the
    largest run, 400 x 178 = 71,200 sentence pairs, and efficiency is measured
    against one node (2 processes), the model's definition.
C5. Memory: the threads give the per-rank gathered buffer "past about 50 nodes";
    that is read as 50 ranks (one process per node there). The out-of-memory scale is
    predicted on this case's machine and weak-scaling layout (SKX, 4 processes per
    node, each with a quarter of the node's 192 GB): the smallest node count at which
    the sparse path no longer fits.
C6. Allreduce algorithm: ``collective="auto"``, the library's tuner. The paper names
    none; Horovod on Stampede2's CPUs reduces over Intel MPI, which selects the
    allreduce algorithm by message size and communicator size (as MPICH does:
    Thakur, Rabenseifner, Gropp, IJHPCA 2005). The model's "auto" takes, per bucket
    size and rank count, the least predicted time among its allreduce algorithms.
    This is the ONE rule every synchronous-SGD case applies (validation/README.md),
    not a per-case choice; it was revised after a first run that used the preset's
    flat ring, whose results stay as diagnostic PREDICTIONS (``..._ring``). The
    sparse allgather is a ring allgather either way (Horovod's MPI_Allgatherv).
C7. No simulated fidelity. The training simulation places one rank per simulated
    endpoint, and a Stampede2 SKX node has two (its sockets, the catalog's
    devices); the weak runs' 4 processes per node cannot be placed (the simulator
    raises ConfigError, tests/test_validation_published.py holds it). The strong
    runs (2 per node) could be, but the case keeps one fidelity for both
    efficiencies rather than simulate one and not the other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.memory import (
    dense_embedding_bytes,
    memory_per_rank,
    sparse_gather_bytes,
)
from dlscale.perfmodel.units import GiB
from dlscale.validation.banded import predict
from dlscale.validation.published import CaseOutput, Curve, Quantity

__all__ = ["FIDELITIES", "MISSES", "MISS_ERRORS", "PAPER", "QUANTITIES", "run"]

PAPER = "Cavdar, Codreanu, Karakus et al. ISC 2019 (densifying assumed-sparse tensors)"
FIDELITIES = ("analytical",)
#: The analytical rows carry the printed range (validation/banded.py).
BANDED = True
_SRC = "published-results.md sec. 2"

CLUSTER = "stampede2-skx"                   # C1
WORKLOAD = "transformer-base"               # C2
PER_RANK_BATCH = 5000 // 28                 # C3: the preset's 178 sentence pairs
WEAK_RPN, WEAK_NODES = 4, 300               # [D] 1200 / 300
STRONG_RPN, STRONG_NODES = 2, 200           # [D] 400 / 200
STRONG_GLOBAL_BATCH = 400 * PER_RANK_BATCH  # C4
GATHER_RANKS = 50                           # C5

QUANTITIES = (
    Quantity("weak_efficiency_1200_ranks", "efficiency", 0.91, "", _SRC + " (abstract)"),
    Quantity("strong_efficiency_400_ranks", "efficiency", 0.65, "", _SRC + " (abstract)"),
    Quantity("sparse_gather_bytes_per_rank_50", "memory", 4.26 * GiB, "bytes",
             _SRC + " (Horovod issue threads)"),
    # vocab x hidden x 4 bytes with both inputs cited from the same threads: an
    # arithmetic restatement, a consistency check outside the count (accounting.py)
    Quantity("dense_buffer_bytes", "memory", 69e6, "bytes", _SRC + " (Horovod issue threads)",
             check="consistency"),
    Quantity("sparse_oom_nodes", "scale", 50, "nodes", _SRC + " (Horovod issue threads)"),
    Quantity("dense_fits_at_300_nodes", "ordering", "densified run fits at 300 nodes", "",
             _SRC + " (abstract: the fix scales to 300 nodes)"),
    Quantity("weak_efficiency_1200_ranks_ring", "efficiency", None, "",
             "diagnostic prediction (C6): collective='ring' (the first run's rule)"),
    Quantity("strong_efficiency_400_ranks_ring", "efficiency", None, "",
             "diagnostic prediction (C6): collective='ring' (the first run's rule)"),
)

#: Quantity -> diagnosed cause of the miss.
MISSES: dict[str, str] = {
    "weak_efficiency_1200_ranks": (
        "the model's communication is small next to compute: the densified 69 MB "
        "embedding plus the rest (61 M parameters, 245 MB in 128 MB buckets) take "
        "68 ms of allreduce per iteration (the ring, the fastest of Intel MPI's "
        "algorithms at 1,200 ranks, runtime horovod-intel-mpi), half of it hidden, against a 2.8 s step of 178 "
        "sentence pairs on half a socket; the paper's 9% loss comes from what the "
        "model lacks: Horovod's per-tensor negotiation of hundreds of Transformer "
        "tensors per step, TensorFlow's CPU op scheduling between ranks sharing a "
        "socket, and stragglers"),
    "strong_efficiency_400_ranks": (
        "with C4's global batch each of the 400 ranks still has 178 sentence pairs, so "
        "compute stays 1.5 s per step (a whole socket per rank) and the model loses only "
        "the exposed allreduce (30 ms; the tuner keeps the ring at 400 ranks) (13.5 pp "
        "before the batch curve was fitted to published Xeon rates instead of Codreanu "
        "et al.'s per-worker drop, whose larger n_half slowed the one-node baseline); "
        "the paper's 65% implies per-rank work far smaller than C4 assumes (its global "
        "batch is not public) and the fixed per-step overheads above, which the model "
        "lacks"),
    "sparse_oom_nodes": (
        "the model runs out of memory only when the gathered IndexedSlices (90 MB per "
        "contributing rank) exceed a rank's 48 GB share of the SKX node, at about 130 "
        "nodes x 4 ranks; the threads' failure at about 50 nodes with 4.26 GiB "
        "gathered is far below any node's capacity, pointing at what the model lacks: "
        "TensorFlow's extra copies of the gathered slices (concatenation, then the "
        "dense conversion for the update) and MPI's 2 GiB limit on int counts in "
        "MPI_Allgatherv, which a 4.26 GiB buffer exceeds"),
}

#: Miss key -> the error it had when its cause was diagnosed (the row's error unit:
#: pp, relative fraction, difference; "wrong" for an ordering; None where this
#: fidelity predicts nothing). Its test fails if the miss grows past this, changes
#: side or starts passing (accounting.miss_band); update it with the cause.
MISS_ERRORS: dict[str, float | str | None] = {
    "weak_efficiency_1200_ranks": 8.6,
    "strong_efficiency_400_ranks": 30.025,
    "sparse_oom_nodes": 1.54,
}


def _workload(rpn: int, **kw: Any):
    """The preset with ``rpn`` ranks per node and 178 sentence pairs per rank (C3).

    The allreduce is the library's tuner's (C6) unless ``collective`` is given.
    """
    kw.setdefault("collective", "auto")
    w = get_workload(WORKLOAD)
    dpn = get_cluster(CLUSTER).node.devices_per_node
    batch = PER_RANK_BATCH * rpn // dpn
    return dataclasses.replace(w, ranks_per_node=rpn, batch_per_device=batch, **kw)


def run(fidelity: str = "analytical") -> CaseOutput:
    """Predict every quantity of the case (only the analytical fidelity so far)."""
    cluster = get_cluster(CLUSTER)
    pred: dict[str, Any] = {}
    det: dict[str, str] = {}

    nodes = np.array([1, 2, 4, 8, 16, 32, 64, 128, 200, 256, 300])
    dense = _workload(WEAK_RPN, sparse_as_dense=True)
    weak = predict(cluster, dense, nodes)
    i = int(np.flatnonzero(nodes == WEAK_NODES)[0])
    pred["weak_efficiency_1200_ranks"] = float(weak.efficiency[i])
    det["weak_efficiency_1200_ranks"] = (
        f"{WEAK_NODES} nodes: step {weak.compute_s[i]:.3f} s, allreduce {weak.comm_s[i]:.3f} s, "
        f"exposed {weak.exposed_comm_s[i]:.3f} s")
    pred["dense_fits_at_300_nodes"] = (
        f"{'fits' if weak.fits[i] else 'does not fit'} "
        f"({weak.memory_per_device_bytes[i] / GiB:.1f} GiB per socket)", bool(weak.fits[i]))

    strong_w = _workload(STRONG_RPN, sparse_as_dense=True, scaling="strong",
                         global_batch=STRONG_GLOBAL_BATCH)
    strong = predict(cluster, strong_w, nodes)
    j = int(np.flatnonzero(nodes == STRONG_NODES)[0])
    pred["strong_efficiency_400_ranks"] = float(strong.efficiency[j])
    det["strong_efficiency_400_ranks"] = (
        f"{STRONG_NODES} nodes: step {strong.compute_s[j]:.3f} s, "
        f"exposed allreduce {strong.exposed_comm_s[j]:.3f} s")

    ring_w = predict(cluster, _workload(WEAK_RPN, sparse_as_dense=True, collective="ring"),
                     [1, WEAK_NODES])
    pred["weak_efficiency_1200_ranks_ring"] = float(ring_w.efficiency[1])
    ring_s = predict(cluster, _workload(STRONG_RPN, sparse_as_dense=True, scaling="strong",
                                        global_batch=STRONG_GLOBAL_BATCH, collective="ring"),
                     [1, STRONG_NODES])
    pred["strong_efficiency_400_ranks_ring"] = float(ring_s.efficiency[1])

    sparse = _workload(WEAK_RPN, sparse_as_dense=False)
    pred["sparse_gather_bytes_per_rank_50"] = float(
        sparse_gather_bytes(sparse, GATHER_RANKS, PER_RANK_BATCH))
    pred["dense_buffer_bytes"] = dense_embedding_bytes(dense)
    scan = np.arange(1, cluster.max_nodes + 1)
    verdict = memory_per_rank(sparse, cluster, scan * WEAK_RPN, PER_RANK_BATCH)
    over = np.flatnonzero(~verdict.fits)
    pred["sparse_oom_nodes"] = float(scan[over[0]]) if over.size else None
    det["sparse_oom_nodes"] = (f"capacity {verdict.capacity_bytes / GiB:.0f} GiB per rank "
                               f"({verdict.resource})")

    ranks = np.array([1, 2, 4, 8, 16, 32, 50, 64, 128, 256, 512, 1024, 1200])
    gathered = np.asarray(sparse_gather_bytes(sparse, ranks, PER_RANK_BATCH)) / GiB
    curves = [
        Curve("Weak scaling, Transformer base, Stampede2 SKX, 4 ranks/node (densified)",
              "nodes", "scaling efficiency", tuple(map(float, nodes)),
              tuple(map(float, weak.efficiency)), ((300.0, 0.91, "91% at 300 nodes"),)),
        Curve("Strong scaling, 2 ranks/node, global batch 71,200 pairs (C4)", "nodes",
              "scaling efficiency", tuple(map(float, nodes)), tuple(map(float, strong.efficiency)),
              ((200.0, 0.65, "65% at 200 nodes"),)),
        Curve("Per-rank gradient buffer: sparse allgather vs densified", "ranks", "GiB",
              tuple(map(float, ranks)), tuple(map(float, gathered)),
              ((50.0, 4.26, "4.26 GiB gathered, ~50 nodes"),
               (50.0, 69e6 / GiB, "69 MB densified")),
              label="sparse allgather (predicted)",
              extra=(("densified (predicted)", tuple(map(float, ranks)),
                      tuple([dense_embedding_bytes(dense) / GiB] * len(ranks))),)),
    ]
    return CaseOutput(pred, det, curves)
