"""The compute rate of the framework that trains, against the one a device was solved on.

A GPU's ``sustained_fraction`` (:mod:`.catalog.devices`) is solved from one measured
rate of one model in one framework (for the catalog's GPUs, mostly TensorFlow's
benchmark tables). The same model on the same GPU trains at very different rates in
other frameworks and versions (cuDNN algorithm choice, data layout, fused kernels,
memory reuse), so a run in a framework the device was not solved on has a compute
rate of its own that the model cannot know. The central answer keeps the solved rate
(factor 1); the band takes the factor :data:`COMPUTE_RATE` gives, the range of
``rate(framework) / rate(TensorFlow)`` that cross-framework benchmarks measured on
one GPU and one model:

- Shi et al.'s benchmark scripts (HKBU dlbench, "Benchmarking State-of-the-Art Deep
  Learning Software Tools", arXiv 1608.07249) as run on a GTX Titan X (Maxwell),
  CUDA 7.5, cuDNN 5.1 (github.com/guolinke/deep-learning-benchmarks, README.md,
  "samples/second" table): ResNet-50 at batch 16: Caffe 38, CNTK 87, MXNet 104,
  TensorFlow (r0.10) 62, Theano 26, Torch 101 images/s, so ``[26/62, 104/62] =
  [0.42, 1.68]``; AlexNet at batch 16: 346, 461, 506, 507, 615, 564, so
  ``[0.68, 1.21]``.
- ilkarman/DeepLearningFrameworks (README.md, results of 24 Nov 2017, half a K80):
  ResNet-50 feature extraction on the GPU: TensorFlow 155, MXNet 130, PyTorch 130,
  CNTK 117, Chainer 107, Caffe2 71 images/s (the frameworks themselves, Keras
  front ends left out), so ``[0.46, 1.00]``; the VGG-style CNN on CIFAR-10 trains
  in 145 (MXNet) to 173 s (TensorFlow), so ``[1.00, 1.19]``.

The range is the span over both sources and both models: ``[0.42, 1.68]``, for GPUs.
A CPU's or Xeon Phi's fraction is solved on an optimised engine (Intel Caffe's MKL2017
engine, :mod:`.catalog.devices`), and the same framework trains at a fraction of that
rate on a stock BLAS back end. :data:`CPU_COMPUTE_RATE` is that span, from one
training measurement on one CPU (PaddlePaddle 0.11.0, ``benchmark/IntelOptimizedPaddle.md``
at commit ea46de6, 2 x Xeon Gold 6148, "training on single node using MKL-DNN / MKLML /
OpenBLAS", images/s including the parameter update, batches 64, 128, 256): OpenBLAS
against MKL-DNN from 45.62 / 399.00 = 0.114 (AlexNet, batch 64) to 10.80 / 30.44 = 0.355
(VGG-19), 27.12 / 84.08 = 0.32 (ResNet-50), 108.25 / 269.50 = 0.40 (GoogLeNet); MKLML
0.17-0.59. No engine faster than the optimised one was measured, so the high end is 1:
``[0.114, 1]`` for ``cpu`` and ``knl`` devices (the source measured a Xeon; the KNL runs
the same MKL-DNN / MKL2017 engines, a transfer, not a measurement). A model with a
measured rate (``--measured-samples-per-s``, a profile) keeps its measurement at every
end: the roofline scales its layers back to it.

The factor scales the device's sustained fractions (capped at 1, the datasheet
peak); at the slow end it also scales the memory bandwidth the roofline's
memory-bound layers run at (a slower framework is slower on those layers too; on a
KNL its MCDRAM's too), while at the fast end the datasheet bandwidth is a hardware
ceiling and stays.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> c = get_cluster("dgx1-p100")
>>> d = c.node.device
>>> fast = cluster_for_band(c, "high").node.device
>>> round(fast.sustained_fraction / d.sustained_fraction, 2)   # capped: 1 / 0.608
1.64
>>> cluster_for_band(c, "central") is c
True
>>> knl = get_cluster("stampede2-knl")
>>> slow = cluster_for_band(knl, "low").node.device
>>> round(slow.sustained_fraction / knl.node.device.sustained_fraction, 3)
0.114
>>> cluster_for_band(knl, "high") is knl
True
"""

from __future__ import annotations

import dataclasses

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["COMPUTE_RATE", "CPU_COMPUTE_RATE", "cluster_for_band", "rate_range"]

#: rate(framework) / rate(the framework the device was solved on), one model, one GPU.
#: Central 1 (the solved rate); low 26/62 = 0.42 (Theano vs TensorFlow r0.10, ResNet-50
#: batch 16, GTX Titan X: guolinke/deep-learning-benchmarks README.md, samples/second);
#: high 104/62 = 1.68 (MXNet vs TensorFlow, the same table). The other source
#: (ilkarman/DeepLearningFrameworks README.md, 24 Nov 2017, K80) lies inside:
#: ResNet-50 on the GPU 71/155 = 0.46 (Caffe2) to 1.00, the CIFAR-10 CNN 1.00 to
#: 173/145 = 1.19 (MXNet).
COMPUTE_RATE = CitedRange(
    "framework_compute_rate", central=1.0, low=26.0 / 62.0, high=104.0 / 62.0,
    unit="x the solved compute rate",
    source="guolinke/deep-learning-benchmarks README.md (HKBU dlbench scripts, Titan X "
           "Maxwell): ResNet-50 batch 16, Theano 26, TensorFlow 62, MXNet 104 images/s; "
           "ilkarman/DeepLearningFrameworks README.md (K80, Nov 2017) lies inside")
#: The same for a CPU or Xeon Phi: rate(framework) / rate(the optimised engine its
#: fraction was solved on), one model, one CPU. Central 1; low 45.62 / 399.00 = 0.114
#: (PaddlePaddle 0.11.0 on OpenBLAS against MKL-DNN, AlexNet training at batch 64, 2 x
#: Xeon Gold 6148: PaddlePaddle/Paddle benchmark/IntelOptimizedPaddle.md, commit
#: ea46de6, images/s); high 1 (no engine faster than the optimised one measured).
CPU_COMPUTE_RATE = CitedRange(
    "framework_compute_rate_cpu", central=1.0, low=45.62 / 399.00, high=1.0,
    unit="x the solved compute rate",
    source="PaddlePaddle/Paddle benchmark/IntelOptimizedPaddle.md (0.11.0, 2 x Xeon Gold "
           "6148, training images/s): AlexNet batch 64 OpenBLAS 45.62, MKL-DNN 399.00; "
           "VGG-19, ResNet-50, GoogLeNet 0.27-0.40 lie inside")
register(COMPUTE_RATE, CPU_COMPUTE_RATE)


def rate_range(kind: str) -> CitedRange | None:
    """The cited compute-rate range of a device kind (``None``: no range).

    Examples
    --------
    >>> rate_range("gpu") is COMPUTE_RATE, rate_range("knl") is CPU_COMPUTE_RATE
    (True, True)
    """
    if kind == "gpu":
        return COMPUTE_RATE
    if kind in ("cpu", "knl"):
        return CPU_COMPUTE_RATE
    return None


def cluster_for_band(cluster: Cluster, end: str) -> Cluster:
    """``cluster`` with its device's compute rate at ``end`` of its kind's range
    (:func:`rate_range`).

    Parameters
    ----------
    cluster : Cluster
        The machine at its solved (central) rates.
    end : {"low", "central", "high"}
        Which end of the range.

    Returns
    -------
    Cluster
        The same object at ``"central"``, for a device kind with no range, or where
        the factor is 1; else a copy whose device's sustained fractions are scaled by
        the factor (at most 1), and at the low end its memory bandwidths too.
    """
    if end not in ("low", "central", "high"):
        raise ValueError(f"end: must be low, central or high, got {end!r}")
    device = cluster.node.device
    cited = rate_range(device.kind)
    if end == "central" or cited is None or at_end(cited, end) == 1.0:
        return cluster
    k = at_end(cited, end)
    scaled = dataclasses.replace(
        device, sustained_fraction=min(1.0, device.sustained_fraction * k),
        sustained_fraction_fp16=min(1.0, device.sustained_fraction_fp16 * k),
        memory_bandwidth_Bps=device.memory_bandwidth_Bps * min(k, 1.0),
        fast_memory_bandwidth_Bps=device.fast_memory_bandwidth_Bps * min(k, 1.0))
    node = dataclasses.replace(cluster.node, device=scaled)
    return dataclasses.replace(cluster, node=node)
