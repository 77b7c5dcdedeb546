"""How efficiently a layer runs: its algorithm class and how full its batch keeps the device.

The roofline of :mod:`.compute` charges a layer ``FLOPs / rate``; the rate is the
device's peak times three factors:

``rate = peak(precision) * sustained_fraction * KIND_EFFICIENCY[class] * u(n)``

- ``sustained_fraction`` (per device, :mod:`.catalog.devices`): the fraction of peak
  that a dense matrix multiply (GEMM, the reference class) sustains in training,
  solved from a measured end-to-end rate so that the whole model reproduces it;
- ``KIND_EFFICIENCY`` (per layer class, below): the class's effective rate against
  GEMM. "Effective" counts the direct-convolution FLOPs of :mod:`.catalog.layers`, so
  a class whose fast algorithm does fewer multiplications (Winograd) is above 1;
- ``u(n) = n / (n + n_half)`` with ``n = batch x output elements per sample`` of the
  layer: the utilization of a layer whose work is too small to fill the device
  (small per-device batches, small late layers). ``n_half`` (:func:`half_saturation_elements`)
  comes from a published drop in per-worker rate when the batch halves.

Classes (:func:`layer_class`): ``conv3x3`` (3x3, stride 1, not grouped: Winograd
eligible), ``gemm`` (fully connected, 1x1 convolutions, attention), ``conv`` (other
kernels and strided convolutions: implicit GEMM), ``depthwise`` (one group per
channel), ``norm`` (batch/layer norm, LRN) and ``eltwise`` (activations, pooling,
residual additions, embedding gathers). ``depthwise``, ``norm`` and ``eltwise`` do a
few FLOPs per element moved, so the roofline's memory term sets their time whatever
their FLOP rate; they keep the GEMM factor and the memory ceiling decides.

Examples
--------
>>> from dlscale.perfmodel.workload import Layer
>>> layer_class(Layer("c", "conv", 10, 1.0, 1, algo="conv3x3"))
'conv3x3'
>>> layer_class(Layer("bn", "norm", 2, 1.0, 1))
'norm'
>>> KIND_EFFICIENCY["conv3x3"] / KIND_EFFICIENCY["gemm"]
2.25
>>> float(utilization(10.0, 10.0))
0.5
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .errors import ConfigError
from .workload import LAYER_CLASSES, Layer

__all__ = ["CODREANU_RATES", "KIND_EFFICIENCY", "LAYER_CLASSES", "MAX_EFFECTIVE_FRACTION",
           "half_saturation_elements", "layer_class", "utilization"]

#: Effective FLOP rate of each layer class relative to GEMM (the device's sustained
#: fraction is GEMM's).
#:
#: - ``gemm`` = 1 by definition (fully connected layers, 1x1 convolutions and
#:   attention projections are plain matrix multiplies).
#: - ``conv3x3`` = 2.25: Winograd's F(2x2, 3x3) computes a 2x2 output tile of a 3x3
#:   filter with 16 multiplications instead of direct convolution's 36, a 2.25x
#:   arithmetic reduction (Lavin & Gray, "Fast algorithms for convolutional neural
#:   networks", CVPR 2016, sec. 4.1; F(4x4, 3x3) reduces by 4). Measured with cuDNN 7 on
#:   one 3x3 layer of 128 -> 128 channels with BN and ReLU: 214 us by implicit GEMM,
#:   95 us by Winograd, the same 2.25x (daadaada/CUDA-Winograd README, kernel table).
#:   cuDNN picks it only for stride-1, ungrouped 3x3 layers.
#: - ``conv`` = 1: cuDNN runs the other convolutions as an implicit matrix multiply
#:   tiled on the fly, at the rate of the equivalent GEMM (Chetlur et al., "cuDNN:
#:   efficient primitives for deep learning", arXiv 1410.0759, sec. 3 and 4); no
#:   measurement of a different rate for 5x5/7x7/11x11 or strided layers was found, so
#:   none is claimed (FFT-based 5x5 would be faster, which this under-predicts).
#: - ``depthwise``, ``norm``, ``eltwise`` = 1: memory-bound (see the module docstring).
KIND_EFFICIENCY: dict[str, float] = {
    "gemm": 1.0,
    "conv3x3": 2.25,
    "conv": 1.0,
    "depthwise": 1.0,
    "norm": 1.0,
    "eltwise": 1.0,
}

#: Largest effective fraction of peak a measured whole-model rate may imply (counting
#: direct-convolution FLOPs): every FLOP in a Winograd F(6x6, 3x3) layer, whose
#: arithmetic reduction 6^2 3^2 / 8^2 = 5.06 is the largest of the F(m, 3) variants in
#: use (Lavin & Gray 2016, sec. 4; larger tiles lose too much accuracy in fp32). A
#: measurement implying more is a typing error (batch or rate), not a fast kernel.
MAX_EFFECTIVE_FRACTION = 6 * 6 * 3 * 3 / 8**2

_DEFAULT_CLASS = {"conv": "conv", "fc": "gemm", "attention": "gemm", "embedding": "eltwise",
                  "norm": "norm", "pool": "eltwise", "act": "eltwise", "other": "eltwise"}

#: Codreanu, Podareanu, Saletore (arXiv 1711.04291, with the authors' run notes):
#: Intel Caffe + MLSL, ResNet-50, one worker per Xeon 8160 socket. 64 nodes x 2
#: workers at 32 images per worker: 6,303 images/s = 49.2 per worker; 448 nodes x 2
#: workers at 16 per worker: 90 epochs in about 60 minutes, 8,040 iterations of
#: 14,336 images = 32,017 images/s = 35.7 per worker. Mapping (batch per worker,
#: images/s per worker). The drop also holds the larger run's extra communication
#: (the paper reports > 90% efficiency), so it bounds the batch effect from above.
CODREANU_RATES: tuple[tuple[int, float], tuple[int, float]] = (
    (32, 6303.0 / (64 * 2)),
    (16, 8040 * 14336 / (60 * 60.0) / (448 * 2)),
)


def layer_class(layer: Layer) -> str:
    """The efficiency class of ``layer``: its ``algo`` tag, or the default of its kind."""
    return layer.algo or _DEFAULT_CLASS[layer.kind]


def utilization(work_elements: np.ndarray | float, half_elements: float) -> np.ndarray:
    """``n / (n + n_half)``: the share of the device a layer of ``n`` output elements fills.

    Parameters
    ----------
    work_elements : float or ndarray
        Batch times output elements of the layer.
    half_elements : float
        ``n_half``, the work that fills half the device.
    """
    n = np.asarray(work_elements, dtype=float)
    return n / (n + half_elements)


@cache
def half_saturation_elements() -> float:
    """``n_half`` of :func:`utilization`, from :data:`CODREANU_RATES` on ResNet-50.

    Per-sample compute time at batch ``b`` is ``A + n_half C / b`` with
    ``A = sum_l F_l / k_l`` and ``C = sum_l F_l / (k_l a_l)`` (``F_l`` forward FLOPs,
    ``k_l`` the class efficiency, ``a_l`` output elements per sample); the measured
    ratio ``r`` of per-sample times at the two batches gives ``n_half`` in closed form.

    Examples
    --------
    >>> round(half_saturation_elements() / 1e3)   # output elements, thousands
    1570
    """
    from .catalog.models_resnet import resnet50

    (b1, rate1), (b2, rate2) = CODREANU_RATES
    r = rate1 / rate2                               # per-sample time at b2 over b1
    layers = resnet50().layers
    f = np.array([la.forward_flops for la in layers])
    k = np.array([KIND_EFFICIENCY[layer_class(la)] for la in layers])
    a = np.maximum(np.array([la.activation_elements for la in layers], dtype=float), 1.0)
    big_a, big_c = float(np.sum(f / k)), float(np.sum(f / (k * a)))
    # (A + n C / b2) / (A + n C / b1) = r  =>  n = (r - 1) A / (C (1 / b2 - r / b1))
    denom = big_c * (1.0 / b2 - r / b1)
    if not denom > 0:
        raise ConfigError("CODREANU_RATES: the smaller batch must be the slower per sample")
    return (r - 1.0) * big_a / denom
