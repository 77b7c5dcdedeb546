"""How efficiently a layer runs: its algorithm class and how full its batch keeps the device.

The roofline of :mod:`dlscale.perfmodel.compute.roofline` charges a layer ``FLOPs / rate``; the rate is the
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
  (small per-device batches, small late layers). ``n_half``
  (:func:`half_saturation_elements`) is the device's cores (SMs on a GPU) times a
  per-core figure of its class (GPU or CPU), fitted by least squares
  (:func:`fit_half_per_core`) to published single-device rates at two batch sizes
  (:data:`BATCH_RATES`: TensorFlow's benchmark tables for P100 and K80, PaddlePaddle's
  MKL-DNN tables for Xeon Gold 6148), none of which is a validation case.

Classes (:func:`layer_class`): ``conv3x3`` (3x3, stride 1, not grouped: Winograd
eligible), ``gemm`` (fully connected, 1x1 convolutions, attention), ``conv`` (other
kernels and strided convolutions: implicit GEMM), ``depthwise`` (one group per
channel), ``norm`` (batch/layer norm, LRN) and ``eltwise`` (activations, pooling,
residual additions, embedding gathers). ``depthwise``, ``norm`` and ``eltwise`` do a
few FLOPs per element moved, so the roofline's memory term sets their time whatever
their FLOP rate; they keep the GEMM factor and the memory ceiling decides.

Examples
--------
>>> from dlscale.perfmodel.training.workload import Layer
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

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.workload import LAYER_CLASSES, Layer, Model

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Device

__all__ = ["BATCH_RATES", "DEVICE_CLASS", "KIND_EFFICIENCY", "LAYER_CLASSES",
           "MAX_EFFECTIVE_FRACTION", "BatchRatePoint", "fit_half_per_core",
           "half_elements_per_core", "half_saturation_elements", "layer_class", "utilization"]

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




@dataclass(frozen=True)
class BatchRatePoint:
    """A published single-device training rate of one model at two per-device batches.

    ``cores`` is the measured device's cores (streaming multiprocessors on a GPU), the
    unit :func:`half_saturation_elements` scales ``n_half`` by.
    """

    model: str
    device: str
    cores: int
    batch_small: int
    rate_small: float
    batch_large: int
    rate_large: float
    source: str


_TF = ("TensorFlow performance benchmarks, May 2017, tf_cnn_benchmarks, synthetic data, "
       "1 GPU (tensorflow/docs_src/performance/benchmarks.md, tensorflow.org)")
_PADDLE = ("PaddlePaddle benchmark/IntelOptimizedPaddle.md, Dec. 2017 (v0.11.0, MKL-DNN "
           "v0.11), training incl. update, 224x224 (github.com/PaddlePaddle/Paddle)")

#: Device class -> published rates (images/s) of one device at two batch sizes.
#: Independent of every validation case (none of these runs is one).
#:
#: - ``gpu``: TensorFlow's benchmark page (May 2017, CUDA 8 / cuDNN 5.1; tables
#:   "Training synthetic data", one GPU, and "Other Results", batch 32). DGX-1 P100
#:   (56 SMs, NVIDIA P100 datasheet): ResNet-50 195 -> 219, Inception-v3 128 -> 142,
#:   ResNet-152 82.7 -> 91.8, VGG16 144 -> 154 img/s at 32 -> 64 per GPU. Google
#:   Compute Engine K80 (one GK210, 13 SMX, NVIDIA K80 datasheet): ResNet-50 49.5 ->
#:   51.9, Inception-v3 29.3 -> 30.5 img/s at 32 -> 64.
#: - ``cpu``: PaddlePaddle's Intel-optimized benchmark (Dec. 2017): one process on
#:   2 x Xeon Gold 6148 (2 x 20 Skylake-SP cores, Intel ARK), MKL-DNN, images/s at
#:   batch 64 / 128 / 256: VGG-19 28.46 / 29.83 / 30.44, ResNet-50 81.69 / 82.35 /
#:   84.08, GoogLeNet 250.46 / 264.83 / 269.50 (consecutive pairs below).
BATCH_RATES: dict[str, tuple[BatchRatePoint, ...]] = {
    "gpu": (
        BatchRatePoint("resnet50", "p100-sxm2", 56, 32, 195.0, 64, 219.0, _TF),
        BatchRatePoint("inception-v3", "p100-sxm2", 56, 32, 128.0, 64, 142.0, _TF),
        BatchRatePoint("resnet152", "p100-sxm2", 56, 32, 82.7, 64, 91.8, _TF),
        BatchRatePoint("vgg16", "p100-sxm2", 56, 32, 144.0, 64, 154.0, _TF),
        BatchRatePoint("resnet50", "k80 (GCE)", 13, 32, 49.5, 64, 51.9, _TF),
        BatchRatePoint("inception-v3", "k80 (GCE)", 13, 32, 29.3, 64, 30.5, _TF),
    ),
    "cpu": (
        BatchRatePoint("vgg19", "2x xeon-gold-6148", 40, 64, 28.46, 128, 29.83, _PADDLE),
        BatchRatePoint("vgg19", "2x xeon-gold-6148", 40, 128, 29.83, 256, 30.44, _PADDLE),
        BatchRatePoint("resnet50", "2x xeon-gold-6148", 40, 64, 81.69, 128, 82.35, _PADDLE),
        BatchRatePoint("resnet50", "2x xeon-gold-6148", 40, 128, 82.35, 256, 84.08, _PADDLE),
        BatchRatePoint("googlenet", "2x xeon-gold-6148", 40, 64, 250.46, 128, 264.83,
                       _PADDLE),
        BatchRatePoint("googlenet", "2x xeon-gold-6148", 40, 128, 264.83, 256, 269.50,
                       _PADDLE),
    ),
}

#: Device kind -> the class whose fit it takes. KNL takes the CPU figure per core
#: (assumption: no published KNL batch sweep was found; its cores carry the same two
#: 512-bit vector units as Skylake-SP's, Sodani et al., IEEE Micro 2016).
DEVICE_CLASS = {"gpu": "gpu", "cpu": "cpu", "knl": "cpu"}


def _catalog_model(name: str) -> Model:
    """The catalog model a :class:`BatchRatePoint` names (ResNet-152 is built, not listed)."""
    from dlscale.perfmodel.catalog.models_cnn import vgg16, vgg19
    from dlscale.perfmodel.catalog.models_inception import googlenet, inception_v3
    from dlscale.perfmodel.catalog.models_resnet import resnet
    # ResNet depths 50 and 152: He et al. CVPR 2016, Table 1
    builders: dict[str, Callable[[], Model]] = {
        "resnet50": lambda: resnet(50), "resnet152": lambda: resnet(152),
        "inception-v3": inception_v3, "googlenet": googlenet, "vgg16": vgg16, "vgg19": vgg19}
    return builders[name]()


def _sums(model: Model) -> tuple[float, float]:
    """``A = sum_l F_l / k_l`` and ``C = sum_l F_l / (k_l a_l)`` of ``model``'s layers."""
    layers = model.layers
    f = np.array([la.forward_flops for la in layers])
    k = np.array([KIND_EFFICIENCY[layer_class(la)] for la in layers])
    a = np.maximum(np.array([la.activation_elements for la in layers], dtype=float), 1.0)
    return float(np.sum(f / k)), float(np.sum(f / (k * a)))


def fit_half_per_core(points: tuple[BatchRatePoint, ...]) -> float:
    """Least-squares ``n_half`` per core from measured rates at two batches.

    Compute-bound closed form: the per-sample time at batch ``b`` is
    ``A + h c C / b`` (``h`` the figure per core, ``c`` the device's cores; ``A`` and
    ``C`` from :func:`_sums`, memory-bound layers and the weight update left out).
    A point's measured speed-up ``r = rate_large / rate_small`` then gives one
    equation linear in ``h``: ``h x = r - 1`` with
    ``x = c (C / A) (1 / b_small - r / b_large)``; ``h = sum(x y) / sum(x^2)`` over
    the points (least squares on the relative speed-up).

    Parameters
    ----------
    points : tuple of BatchRatePoint
        The measurements (one class of device).

    Returns
    -------
    float
        Output elements per core that fill half of it.

    Examples
    --------
    >>> round(fit_half_per_core(BATCH_RATES["gpu"]) / 1e3, 1)   # per SM, thousands
    9.7
    """
    xs, ys = [], []
    for p in points:
        if not (0 < p.batch_small < p.batch_large and p.rate_small > 0 and p.rate_large > 0):
            raise ConfigError(f"batch rate point {p.model} on {p.device}: needs 0 < batch_small "
                              f"< batch_large and positive rates, got {p!r}")
        big_a, big_c = _sums(_catalog_model(p.model))
        r = p.rate_large / p.rate_small
        xs.append(p.cores * (big_c / big_a) * (1.0 / p.batch_small - r / p.batch_large))
        ys.append(r - 1.0)
    x, y = np.array(xs), np.array(ys)
    h = float(x @ y / (x @ x)) if float(x @ x) > 0 else 0.0
    if not h > 0:
        raise ConfigError("batch rate points: the larger batches must be the faster per "
                          f"sample on the whole, got a fitted n_half per core of {h:g}")
    return h


@cache
def half_elements_per_core(device_class: str) -> float:
    """:func:`fit_half_per_core` of :data:`BATCH_RATES` ``[device_class]`` (cached).

    Parameters
    ----------
    device_class : {"gpu", "cpu"}
        A key of :data:`BATCH_RATES`.

    Examples
    --------
    >>> round(half_elements_per_core("cpu") / 1e3, 1)            # per core, thousands
    6.3
    """
    if device_class not in BATCH_RATES:
        raise ConfigError(f"device class: must be one of {', '.join(BATCH_RATES)}, "
                          f"got {device_class!r}")
    return fit_half_per_core(BATCH_RATES[device_class])


def half_saturation_elements(device: Device) -> float:
    """``n_half`` of :func:`utilization` on ``device``: its cores times its class's figure.

    Assumption: the work that fills half a device grows with its parallel units (cores,
    SMs on a GPU); fitted separately, the P100 (56 SMs) and the K80's GK210 (13 SMX)
    give per-SM figures within a factor 1.5 of each other (9.5 and 13.6 thousand).
    Single points scatter more (GPU 7.3-20.2 thousand per SM; CPU 2.1-26.8 thousand
    per core, where the measured speed-ups are 1-6%, near the runs' noise).

    Parameters
    ----------
    device : Device
        Its ``kind`` picks the class (:data:`DEVICE_CLASS`), its ``cores`` scale it.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_device
    >>> round(half_saturation_elements(get_device("v100-sxm2")) / 1e3)   # 80 SMs
    777
    """
    return half_elements_per_core(DEVICE_CLASS[device.kind]) * device.cores
