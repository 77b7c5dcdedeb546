"""Per-layer roofline compute time of the forward and backward passes.

For each layer ``l`` and batch ``b`` (samples per rank):

- forward FLOPs ``F_l b``; backward FLOPs ``2 F_l b`` (the gradient with respect to
  the layer's input and the one with respect to its weights each cost about one
  forward pass: the usual rule, e.g. Kaplan et al. 2020, "Scaling laws", sec. 2.1);
- forward bytes ``e (b (a_{l-1} + a_l) + w_l)``: read the input activations, write
  the output, read the weights, with ``e`` bytes per element at the training
  precision and ``a_l`` the layer's output elements per sample (``a_0`` the input);
- backward bytes ``e (b (2 a_{l-1} + a_l) + 2 w_l)``: read the output gradient and
  the saved input, write the input gradient, read the weights, write their
  gradients;
- time ``max(FLOPs / (peak(precision) * sustained_fraction(precision)), bytes / memory
  bandwidth)``, the roofline (Williams, Waterman, Patterson 2009).

A rank that owns a share ``s`` of a device (several CPU ranks per socket: ``s < 1``)
or of several (one rank driving a two-socket node: ``s = 2``) gets ``s`` times its
peak and its bandwidth. ``fp16`` uses the device's fp16 peak (tensor cores on a
V100) and 2-byte activations.

Examples
--------
>>> from dlscale.perfmodel.hardware import Device
>>> from dlscale.perfmodel.workload import Layer, Model
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)
>>> fc = Layer("fc", "fc", params=1000, forward_flops=2e9, activation_elements=10)
>>> m = Model("toy", (fc,), input_shape=(100,), dataset="none", samples_per_epoch=1)
>>> t = layer_times(m, gpu, "fp32", batch=10)
>>> t.forward_s.tolist(), t.backward_s.tolist()   # 2e10 FLOP / 5e12 FLOP/s
([0.004], [0.008])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .errors import ConfigError
from .hardware import Device
from .units import BYTES_PER_ELEMENT
from .workload import Model

__all__ = ["BYTES_PER_ELEMENT", "LayerTimes", "layer_times", "update_s"]



@dataclass(frozen=True)
class LayerTimes:
    """Per-layer compute of one iteration of one rank.

    Attributes
    ----------
    forward_s, backward_s : ndarray
        Seconds per layer, shape ``(L,)`` for a scalar batch or ``(N, L)`` for a
        1-D array of ``N`` batches; layers in model order (input first).
    forward_flops, backward_flops : ndarray
        FLOPs per layer (same shape).
    forward_bytes, backward_bytes : ndarray
        Memory traffic per layer (same shape).
    compute_bound : ndarray of bool
        Whether the FLOP ceiling (not memory bandwidth) sets the forward time.
    """

    forward_s: np.ndarray
    backward_s: np.ndarray
    forward_flops: np.ndarray
    backward_flops: np.ndarray
    forward_bytes: np.ndarray
    backward_bytes: np.ndarray
    compute_bound: np.ndarray

    @property
    def total_s(self) -> np.ndarray:
        """Forward plus backward seconds, summed over layers (shape ``()`` or ``(N,)``)."""
        return np.asarray(self.forward_s.sum(axis=-1) + self.backward_s.sum(axis=-1))


def _precision_bytes(precision: str) -> int:
    try:
        return BYTES_PER_ELEMENT[precision]
    except KeyError:
        raise ConfigError(
            f"precision: must be one of {', '.join(BYTES_PER_ELEMENT)}, got {precision!r}"
        ) from None


def layer_times(model: Model, device: Device, precision: str, batch: ArrayLike,
                share: float = 1.0) -> LayerTimes:
    """Roofline time of every layer's forward and backward pass (see module docstring).

    Parameters
    ----------
    model : Model
    device : Device
    precision : {"fp32", "fp16", "fp64"}
    batch : float or 1-D array
        Samples per rank (may be fractional in strong scaling).
    share : float
        Devices per rank (``devices_per_node / ranks_per_node``).
    """
    e = _precision_bytes(precision)
    b = np.asarray(batch, dtype=float)
    if b.ndim > 1 or np.any(~np.isfinite(b)) or np.any(b <= 0):
        raise ConfigError(f"batch: must be a positive number or 1-D array, got {batch!r}")
    if not (np.isfinite(share) and share > 0):
        raise ConfigError(f"share: must be a positive number, got {share!r}")
    flops_rate = device.sustained_flops(precision) * share
    bw = device.training_memory_bandwidth_Bps * share
    layers = model.layers
    f = np.array([layer.forward_flops for layer in layers], dtype=float)
    w = np.array([layer.params for layer in layers], dtype=float)
    out = np.array([layer.activation_elements for layer in layers], dtype=float)
    inp = np.concatenate(([float(np.prod(model.input_shape))], out[:-1]))
    bcol = b[..., None]                                   # (N, 1) or (1,)
    ff = f * bcol
    fb = 2.0 * ff
    bytes_f = e * (bcol * (inp + out) + w)
    bytes_b = e * (bcol * (2 * inp + out) + 2 * w)
    t_f = np.maximum(ff / flops_rate, bytes_f / bw)
    t_b = np.maximum(fb / flops_rate, bytes_b / bw)
    return LayerTimes(t_f, t_b, ff, fb, bytes_f, bytes_b, ff / flops_rate >= bytes_f / bw)


def update_s(params: float, device: Device, momentum: bool = True, share: float = 1.0) -> float:
    """Time of one SGD weight update over ``params`` fp32 weights.

    Streams the weights (read, write) and the gradient (read), and with momentum the
    velocity (read, write): 5 or 3 arrays of 4 bytes, at the memory bandwidth.

    Parameters
    ----------
    params : float
        Weights updated.
    device : Device
        Its training memory bandwidth.
    momentum : bool, optional
        Whether a velocity array is read and written too (default True).
    share : float, optional
        Devices the rank drives (its bandwidth is ``share`` times one device's).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> from dlscale.perfmodel.hardware import Device
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)
    >>> update_s(1e9, gpu)   # 20 GB at 1 TB/s
    0.02
    """
    arrays = 5 if momentum else 3
    return arrays * 4.0 * params / (device.training_memory_bandwidth_Bps * share)
