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

The range is the span over both sources and both models: ``[0.42, 1.68]``. It applies
to GPUs only: both sources measure GPUs, and no cross-framework training measurement
on one CPU or Xeon Phi was found (their fractions are solved on Intel Caffe with
MKL), so a CPU or KNL device has no band from this mechanism. A model with a measured
rate (``--measured-samples-per-s``, a profile) keeps its measurement at every end:
the roofline scales its layers back to it.

The factor scales the device's sustained fractions (capped at 1, the datasheet
peak); at the slow end it also scales the memory bandwidth the roofline's
memory-bound layers run at (a slower framework is slower on those layers too), while
at the fast end the datasheet bandwidth is a hardware ceiling and stays.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> c = get_cluster("dgx1-p100")
>>> d = c.node.device
>>> fast = cluster_for_band(c, "high").node.device
>>> round(fast.sustained_fraction / d.sustained_fraction, 2)
1.68
>>> cluster_for_band(c, "central") is c
True
>>> cluster_for_band(get_cluster("stampede2-knl"), "low").node.device.sustained_fraction == \\
...     get_cluster("stampede2-knl").node.device.sustained_fraction
True
"""

from __future__ import annotations

import dataclasses

from dlscale.perfmodel.cited import CitedRange, at_end, register
from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["COMPUTE_RATE", "cluster_for_band"]

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
register(COMPUTE_RATE)


def cluster_for_band(cluster: Cluster, end: str) -> Cluster:
    """``cluster`` with its GPU's compute rate at ``end`` of :data:`COMPUTE_RATE`.

    Parameters
    ----------
    cluster : Cluster
        The machine at its solved (central) rates.
    end : {"low", "central", "high"}
        Which end of the range.

    Returns
    -------
    Cluster
        The same object at ``"central"`` or for a device that is not a GPU; else a
        copy whose device's sustained fractions are scaled by the factor (at most 1),
        and at the low end its memory bandwidth too.
    """
    if end not in ("low", "central", "high"):
        raise ValueError(f"end: must be low, central or high, got {end!r}")
    device = cluster.node.device
    if end == "central" or device.kind != "gpu":
        return cluster
    k = at_end(COMPUTE_RATE, end)
    bandwidth = device.memory_bandwidth_Bps * min(k, 1.0)
    scaled = dataclasses.replace(
        device, sustained_fraction=min(1.0, device.sustained_fraction * k),
        sustained_fraction_fp16=min(1.0, device.sustained_fraction_fp16 * k),
        memory_bandwidth_Bps=bandwidth)
    node = dataclasses.replace(cluster.node, device=scaled)
    return dataclasses.replace(cluster, node=node)
