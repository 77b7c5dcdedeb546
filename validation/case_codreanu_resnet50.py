"""Case: Codreanu, Podareanu, Saletore, "Scale out for large minibatch SGD" (arXiv 1711.04291).

Published numbers (``reference/published-results.md`` section 3):

- ResNet-50 on ImageNet-1K in 28 minutes on up to 104K x86 cores, above 90% scaling
  efficiency [S abstract].
- Intel Caffe + MLSL on Stampede2 SKX nodes, 2 workers per node. 64 nodes, 32 images
  per worker (global batch 4,096): 6,303 images/s. 448 nodes, 16 per worker (global
  14,336): 90 epochs in about 60 minutes (8,040 iterations), about 32,000 images/s
  [D] [S authors' run notes].

Inputs: the catalog's ``stampede2-skx`` / ``stampede2-knl`` clusters (one Stampede2
fabric, described once in the catalog) and ``resnet50`` workload (fp32, synchronous
SGD); the case sets only workers per node, batch per worker, node counts and epochs,
as stated, and the allreduce rule R6. Assumptions (one per unknown, fixed before any error
was looked at):

R1. Workers per node: 2 on SKX (stated) = one per socket, the catalog's device.
R2. The 104K-core run: 104,000 cores do not fit in Stampede2's 1,736 SKX nodes (48
    cores each, 83,328 cores), so it ran on the KNL partition: 68 cores per node,
    nodes = 104,000 / 68 rounded to the nearest whole node = 1,529; one worker per
    KNL node (the catalog's device is the chip); 16 images per worker, the per-worker
    batch of the largest stated run; 90 epochs (the lower end of "90-120 epochs").
R3. "Above 90% efficiency" is a lower bound, compared as one: met by a prediction of
    at least 90% less the 5 pp tolerance, against one node (the model's definition of
    weak-scaling efficiency). (Revised after the first runs, which compared the bound
    as if it were the value 90%, so that a prediction of 95.5% counted as a miss of a
    claim it satisfies.)
R5. Simulated fidelity: the discrete-event training simulation
    (:func:`dlscale.simulator.training.run.simulate_training` through
    :func:`dlscale.validation.fidelity.simulate_case`: every worker resolved,
    per-layer backward, buckets, overlap and negotiation, each allreduce routed on
    the Stampede2 fat tree with its 28:20 tapered leaves, fast mode, no noise, seed
    0, 3 iterations) with the same cluster, workload and node counts; the KNL
    efficiency is the simulation's own, against its one-node run.
R4. Time for 90 epochs = 90 x 1,281,167 images / predicted images/s (the 8,040
    stated iterations are 90 epochs at 14,336 per iteration).
R6. Allreduce algorithm: ``collective="auto"``, the library's tuner. The paper names
    none; Intel Caffe's gradients were reduced by Intel MLSL over Intel MPI, which
    selects the allreduce algorithm by message size and communicator size (as
    MPICH does: Thakur, Rabenseifner, Gropp, IJHPCA 2005). The model's "auto" takes,
    per bucket size and rank count, the least predicted time among its allreduce
    algorithms. This is the ONE rule every synchronous-SGD case applies
    (validation/README.md), not a per-case choice; it was revised after a first run
    that used the preset's flat ring, whose results stay as diagnostic PREDICTIONS
    (``..._ring``).
R7. Software stack: Intel Caffe + MLSL over Intel MPI, as stated (authors' run
    notes), on both partitions: ``runtime = "mlsl"`` (no coordinator, no cycle, one
    message per layer, Intel MPI's algorithms, two MLSL endpoint servers per process on
    a Xeon and four on a KNL pinned to their own cores, as Intel Caffe's launcher does:
    :mod:`dlscale.perfmodel.catalog.runtimes`), not the partition preset's Horovod
    (which Cavdar et al. ran). The authors' 64-node script (MLSL_NUM_SERVERS=2,
    OMP_NUM_THREADS=22 per 24-core socket) matches the launcher's default.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dlscale.perfmodel.catalog import get_cluster, get_runtime, get_workload
from dlscale.validation.banded import predict
from dlscale.validation.fidelity import describe, simulate_case
from dlscale.validation.published import CaseOutput, Curve, Quantity

__all__ = ["FIDELITIES", "MISSES", "MISS_ERRORS", "PAPER", "QUANTITIES", "run"]

PAPER = "Codreanu, Podareanu, Saletore 2017 (ResNet-50 on ~100K x86 cores)"
FIDELITIES = ("analytical", "simulated")
#: The analytical rows carry the printed range (validation/banded.py).
BANDED = True
#: Quantities the simulated fidelity predicts (R5).
SIMULATED_QUANTITIES = ("skx_64_nodes_images_per_s", "skx_448_nodes_images_per_s",
                        "skx_448_nodes_90_epochs_time", "knl_104k_cores_90_epochs_time",
                        "knl_104k_cores_efficiency")
_SRC = "published-results.md sec. 3"

SKX, KNL = "stampede2-skx", "stampede2-knl"
EPOCHS = 90
KNL_NODES = round(104_000 / 68)     # R2

QUANTITIES = (
    Quantity("skx_64_nodes_images_per_s", "throughput", 6303.0, "img/s",
             _SRC + " (authors' run notes)"),
    # derived [D] from the stated 90 epochs in ~60 min: one published figure with
    # skx_448_nodes_90_epochs_time, counted once (accounting.py). The batch-utilization
    # curve no longer comes from this case (efficiency.BATCH_RATES: TensorFlow and
    # PaddlePaddle benchmark tables), so both rows are independent checks again.
    Quantity("skx_448_nodes_images_per_s", "throughput", 32000.0, "img/s",
             _SRC + " [D] from 90 epochs in ~60 min", group="skx_448_nodes_90_epochs_time"),
    Quantity("skx_448_nodes_90_epochs_time", "time", 60.0, "min", _SRC + " (authors' run notes)"),
    Quantity("knl_104k_cores_90_epochs_time", "time", 28.0, "min", _SRC + " (abstract)"),
    Quantity("knl_104k_cores_efficiency", "efficiency-at-least", 0.90, "", _SRC + " (abstract: above 90%)"),
    Quantity("skx_448_nodes_efficiency", "efficiency", None, "", "prediction"),
    Quantity("skx_448_nodes_images_per_s_ring", "throughput", None, "img/s",
             "diagnostic prediction (R6): collective='ring' (the first run's rule)"),
    Quantity("knl_104k_cores_efficiency_ring", "efficiency", None, "",
             "diagnostic prediction (R6): collective='ring' (the first run's rule)"),
)

_SKX448 = (
    "compute dominates the model at this scale (MLSL's per-layer allreduces of 102 MB "
    "in all, each by Intel MPI's choice for its size (R7), are hidden behind the "
    "backward pass), so the rate is the per-worker compute rate: 47.0 img/s per socket "
    "at 32 per worker (skx_64_nodes_images_per_s, within) and 44.9 at 16, a 4.5% drop on "
    "the CPU batch-utilization curve (efficiency.BATCH_RATES: PaddlePaddle's MKL-DNN "
    "rates on 2 x Xeon Gold 6148, which rise only 1-6% per batch doubling, independent "
    "of this case; both on the 22 of 24 cores that MLSL's two endpoint servers leave, "
    "runtime mlsl's progress_cores). The published 35.7 img/s per worker at 448 nodes "
    "(32,000 / 896) is a 27% drop from the 64-node run that the model's compute and its "
    "hidden communication do not produce; what the model lacks: the stated 60 minutes "
    "are the wall time of the whole run (start-up, data loading, evaluation passes), "
    "and stragglers, neither of which is a cited figure here")
_KNL = (
    "the model's KNL node trains ResNet-50 at 62.5 img/s at 16 per node, compute-bound "
    "with the allreduce hidden, on the 64 of 68 cores that MLSL's four endpoint servers "
    "leave (runtime mlsl): the KNL's sustained fraction is solved from Intel Caffe "
    "AlexNet at batch 256 (444 img/s) and its batch-utilization curve is the CPU class's "
    "per-core figure (Skylake-SP MKL-DNN rates) times 68 cores, an assumption (no "
    "published KNL batch sweep was found); the published 28 minutes imply 43 img/s per "
    "node, so ResNet-50 at 16 per node runs further below AlexNet's fraction on KNL "
    "than that transfer carries, or the run's wall time holds what the model lacks "
    "(as for skx_448_nodes_90_epochs_time)")

#: Quantity -> diagnosed cause of the miss.
MISSES: dict[str, str] = {
    "skx_448_nodes_images_per_s": _SKX448,
    "skx_448_nodes_images_per_s@simulated": (
        _SKX448 + "; simulated, the routed allreduces (75 ms per step) stay hidden behind "
        "the 356 ms step, so the simulated rate is the analytical one"),
    "knl_104k_cores_90_epochs_time": _KNL,
    "knl_104k_cores_90_epochs_time@simulated": _KNL + "; simulated as analytically",
}

#: Miss key -> the error it had when its cause was diagnosed (the row's error unit:
#: pp, relative fraction, difference; "wrong" for an ordering; None where this
#: fidelity predicts nothing). Its test fails if the miss grows past this, changes
#: side or starts passing (accounting.miss_band); update it with the cause.
MISS_ERRORS: dict[str, float | str | None] = {
    "skx_448_nodes_images_per_s": 0.257,
    "skx_448_nodes_images_per_s@simulated": 0.257,
    "knl_104k_cores_90_epochs_time": -0.281,
    "knl_104k_cores_90_epochs_time@simulated": -0.281,
}


def _cluster(name: str):
    """The partition running the stated stack (R7)."""
    return dataclasses.replace(get_cluster(name), runtime=get_runtime("mlsl"))


def _resnet(**kw: Any):
    """The preset for 90 epochs with the library's tuner choosing the allreduce (R6)."""
    kw.setdefault("collective", "auto")
    return dataclasses.replace(get_workload("resnet50"), epochs=float(EPOCHS), **kw)


def _minutes(samples_per_s: float, w) -> float:
    return EPOCHS * w.model.samples_per_epoch / samples_per_s / 60.0


def _run_simulated() -> CaseOutput:
    skx, knl = _cluster(SKX), _cluster(KNL)
    w16 = _resnet(ranks_per_node=2, batch_per_device=16)
    k16 = _resnet(batch_per_device=16)
    s64 = simulate_case(skx, _resnet(ranks_per_node=2, batch_per_device=32), 64)
    s448 = simulate_case(skx, w16, 448)
    kn = simulate_case(knl, k16, KNL_NODES)
    pred = {"skx_64_nodes_images_per_s": s64.samples_per_s,
            "skx_448_nodes_images_per_s": s448.samples_per_s,
            "skx_448_nodes_90_epochs_time": _minutes(s448.samples_per_s, w16),
            "knl_104k_cores_90_epochs_time": _minutes(kn.samples_per_s, k16),
            "knl_104k_cores_efficiency": kn.efficiency}
    det = {"skx_64_nodes_images_per_s": describe(s64),
           "skx_448_nodes_images_per_s": describe(s448),
           "skx_448_nodes_90_epochs_time": f"{s448.samples_per_s:,.0f} img/s simulated",
           "knl_104k_cores_90_epochs_time": (f"{kn.samples_per_s:,.0f} img/s simulated "
                                             f"({kn.samples_per_s / KNL_NODES:.1f} per node)"),
           "knl_104k_cores_efficiency": describe(kn)}
    return CaseOutput(pred, det)


def run(fidelity: str = "analytical") -> CaseOutput:
    """Predict every quantity of the case at ``fidelity`` (see R5 for "simulated")."""
    if fidelity == "simulated":
        return _run_simulated()
    pred: dict[str, Any] = {}
    det: dict[str, str] = {}
    skx = _cluster(SKX)
    nodes = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 448, 512, 1024, 1736])
    b32 = predict(skx, _resnet(ranks_per_node=2, batch_per_device=32), nodes)
    b16 = predict(skx, _resnet(ranks_per_node=2, batch_per_device=16), nodes)
    i64, i448 = (int(np.flatnonzero(nodes == n)[0]) for n in (64, 448))
    pred["skx_64_nodes_images_per_s"] = float(b32.samples_per_s[i64])
    pred["skx_448_nodes_images_per_s"] = float(b16.samples_per_s[i448])
    w = _resnet()
    pred["skx_448_nodes_90_epochs_time"] = _minutes(float(b16.samples_per_s[i448]), w)
    pred["skx_448_nodes_efficiency"] = float(b16.efficiency[i448])
    for name, p, i in (("skx_64_nodes_images_per_s", b32, i64),
                       ("skx_448_nodes_images_per_s", b16, i448)):
        det[name] = (f"iteration {p.iteration_s[i]:.3f} s: compute {p.compute_s[i]:.3f} s, "
                     f"exposed allreduce {p.exposed_comm_s[i]:.4f} s, efficiency "
                     f"{p.efficiency[i]:.3f}")

    knl = _cluster(KNL)
    knl_nodes = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, KNL_NODES, 2048])
    k = predict(knl, _resnet(batch_per_device=16), knl_nodes)
    j = int(np.flatnonzero(knl_nodes == KNL_NODES)[0])
    pred["knl_104k_cores_90_epochs_time"] = _minutes(float(k.samples_per_s[j]), w)
    pred["knl_104k_cores_efficiency"] = float(k.efficiency[j])
    ring16 = predict(skx, _resnet(ranks_per_node=2, batch_per_device=16, collective="ring"), 448)
    pred["skx_448_nodes_images_per_s_ring"] = float(ring16.samples_per_s[0])
    kring = predict(knl, _resnet(batch_per_device=16, collective="ring"), [1, KNL_NODES])
    pred["knl_104k_cores_efficiency_ring"] = float(kring.efficiency[1])
    det["knl_104k_cores_90_epochs_time"] = (
        f"{KNL_NODES} KNL nodes: {k.samples_per_s[j]:,.0f} img/s "
        f"({k.samples_per_s[j] / KNL_NODES:.1f} per node), iteration {k.iteration_s[j]:.3f} s, "
        f"exposed allreduce {k.exposed_comm_s[j]:.4f} s")

    curves = [
        Curve("ResNet-50 throughput, Stampede2 SKX, 2 workers/node", "nodes", "images/s",
              tuple(map(float, nodes)), tuple(map(float, b32.samples_per_s)),
              ((64.0, 6303.0, "6,303 img/s, 64 nodes, 32/worker"),
               (448.0, 32000.0, "~32,000 img/s, 448 nodes, 16/worker")),
              label="predicted, 32 per worker",
              extra=(("predicted, 16 per worker", tuple(map(float, nodes)),
                      tuple(map(float, b16.samples_per_s))),)),
        Curve("ResNet-50 weak scaling, Stampede2 KNL, 16 per node", "nodes",
              "scaling efficiency", tuple(map(float, knl_nodes)), tuple(map(float, k.efficiency)),
              ((float(KNL_NODES), 0.90, "above 90% on ~104K cores"),)),
    ]
    return CaseOutput(pred, det, curves)
