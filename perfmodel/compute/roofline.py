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
- a training normalisation (batch or layer norm) makes
  :data:`~dlscale.perfmodel.compute.passes.NORM_EXTRA_PASSES` more passes: ``e b p a_{l-1}``
  more bytes forward and ``e b p (a_{l-1} + a_l)`` backward
  (:func:`~dlscale.perfmodel.compute.passes.extra_passes`: the kernels' second read);
- time ``max(FLOPs / rate, bytes / memory bandwidth)``, the roofline (Williams,
  Waterman, Patterson 2009), with ``rate = peak(precision) * sustained_fraction(precision)
  * KIND_EFFICIENCY[class] * u(batch * a_l)``: the device's GEMM fraction, the layer's
  algorithm class (a Winograd-eligible 3x3 convolution runs 2.25x the direct-convolution
  FLOP rate) and how full the layer's work keeps the device (:mod:`dlscale.perfmodel.compute.efficiency`),
  and the memory bandwidth the one a streaming kernel reaches
  (:func:`~dlscale.perfmodel.compute.streaming.achievable_bandwidth_Bps`, the rule the
  transformer path uses too).

With a measurement on the model (``model.measured``, :mod:`dlscale.perfmodel.compute.measured`), the times are
scaled so that one device at the measured batch takes what was measured (forward and
backward separately where both are known, per layer where layers are named); the
roofline keeps only the shape: the split over layers, and the change with batch and
share.

A rank that owns a share ``s`` of a device (several CPU ranks per socket: ``s < 1``)
or of several (one rank driving a two-socket node: ``s = 2``) gets ``s`` times its
peak and its bandwidth. Cores that the software stack's communication threads hold
(``compute_fraction < 1``, :meth:`dlscale.perfmodel.machine.runtime.Runtime.compute_fraction`) take their share
of the peak and of the work that fills the device, not of the bandwidth; a measured
throughput (``model.measured``) is taken as measured with every core computing. ``fp16`` uses the device's fp16 peak (tensor cores on a
V100) and 2-byte activations.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Device
>>> from dlscale.perfmodel.training.workload import Layer, Model
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)
>>> fc = Layer("fc", "fc", params=1000, forward_flops=2e9, activation_elements=10**6)
>>> m = Model("toy", (fc,), input_shape=(100,), dataset="none", samples_per_epoch=1)
>>> t = layer_times(m, gpu, "fp32", batch=10)
>>> t.forward_s.round(4).tolist()   # 2e10 FLOP / (5e12 FLOP/s x utilization 0.93)
[0.0043]
>>> from dataclasses import replace
>>> from dlscale.perfmodel.compute.measured import parse_rate
>>> mm = replace(m, measured=parse_rate("1000@10"))     # 10 ms per iteration measured
>>> t2 = layer_times(mm, gpu, "fp32", batch=10)
>>> round(float(t2.total_s) + update_s(m.params, gpu), 9)
0.01
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.compute.efficiency import (
    KIND_EFFICIENCY,
    MAX_EFFECTIVE_FRACTION,
    half_saturation_elements,
    layer_class,
    utilization,
)
from dlscale.perfmodel.compute.passes import extra_passes
from dlscale.perfmodel.compute.streaming import achievable_bandwidth_Bps
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Device
from dlscale.perfmodel.training.workload import Model
from dlscale.perfmodel.units import BYTES_PER_ELEMENT

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
                share: float = 1.0, compute_fraction: float = 1.0,
                dispatch_s: float = 0.0) -> LayerTimes:
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
    compute_fraction : float
        Share of those devices' cores that computes (the rest run the software stack's
        communication threads): scales the FLOP rate and the work that fills the
        device, not the memory bandwidth.
    dispatch_s : float
        The framework's host seconds per operator: no layer runs faster than its
        operators are dispatched (:func:`dlscale.perfmodel.compute.dispatch.dispatch_floor`);
        0 (the default) leaves the roofline alone.
    """
    e = _precision_bytes(precision)
    b = np.asarray(batch, dtype=float)
    if b.ndim > 1 or np.any(~np.isfinite(b)) or np.any(b <= 0):
        raise ConfigError(f"batch: must be a positive number or 1-D array, got {batch!r}")
    if not (np.isfinite(share) and share > 0):
        raise ConfigError(f"share: must be a positive number, got {share!r}")
    if not (0 < compute_fraction <= 1):
        raise ConfigError(f"compute_fraction: must be in (0, 1], got {compute_fraction!r}")
    times = _roofline(model, device, precision, e, b, share, compute_fraction)
    m = model.measured
    if m is not None and m.holds_times:   # a measurement already holds the dispatch it paid
        return _apply_measured(model, device, precision, e, times)
    times = _floored(model, dispatch_s, times)
    if m is not None:   # only the backward's readiness measured: the model's times, split by it
        return _apply_measured(model, device, precision, e, times, dispatch_s)
    return times


def _floored(model: Model, dispatch_s: float, times: LayerTimes) -> LayerTimes:
    """``times`` no shorter than their operators' dispatch (unchanged for 0)."""
    if dispatch_s <= 0:
        return times
    from dlscale.perfmodel.compute.dispatch import dispatch_floor

    f, bk = dispatch_floor(model, dispatch_s, times.forward_s, times.backward_s)
    return dataclasses.replace(times, forward_s=f, backward_s=bk)


def _roofline(model: Model, device: Device, precision: str, e: int, b: np.ndarray,
              share: float, compute_fraction: float = 1.0) -> LayerTimes:
    cores = share * compute_fraction          # devices' worth of computing cores
    flops_rate = device.sustained_flops(precision) * cores
    bw = achievable_bandwidth_Bps(device) * share
    layers = model.layers
    f = np.array([layer.forward_flops for layer in layers], dtype=float)
    w = np.array([layer.params for layer in layers], dtype=float)
    out = np.array([layer.activation_elements for layer in layers], dtype=float)
    k = np.array([KIND_EFFICIENCY[layer_class(layer)] for layer in layers])
    inp = np.concatenate(([float(np.prod(model.input_shape))], out[:-1]))
    bcol = b[..., None]                                   # (N, 1) or (1,)
    # a share of a device fills it as much as the whole batch would the whole device
    rate = flops_rate * k * utilization(np.maximum(bcol * out, 1.0) / cores,
                                        half_saturation_elements(device))
    ff = f * bcol
    fb = 2.0 * ff
    p = extra_passes(model)                               # a normalisation's second read
    bytes_f = e * (bcol * ((1 + p) * inp + out) + w)
    bytes_b = e * (bcol * ((2 + p) * inp + (1 + p) * out) + 2 * w)
    t_f = np.maximum(ff / rate, bytes_f / bw)
    t_b = np.maximum(fb / rate, bytes_b / bw)
    return LayerTimes(t_f, t_b, ff, fb, bytes_f, bytes_b, ff / rate >= bytes_f / bw)


def _measured_scales(model: Model, device: Device, precision: str, e: int,
                     dispatch_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer factors (forward, backward) that make the roofline the measurement
    (``dispatch_s``: the dispatch floor of a readiness-only measurement's model times)."""
    m = model.measured
    assert m is not None
    ref = _floored(model, dispatch_s,
                   _roofline(model, device, precision, e, np.asarray(float(m.batch)), 1.0))
    rf, rb = ref.forward_s, ref.backward_s
    sf, sb = _total_scales(model, device, precision, rf, rb)
    if m.backward_ready:
        sb = sb * _ready_factors(model, rb * sb)
    return sf, sb


def _ready_factors(model: Model, bwd: np.ndarray) -> np.ndarray:
    """Factors that make the backward pass reach each named layer when measured.

    ``model.measured.backward_ready`` holds ``(layer, seconds after the first named
    gradient was ready)``. A layer's gradient is ready when the backward pass has
    run from the output down to it, so the backward time of the layers from one named
    layer up to (not including) the next one in backward order is the difference of
    their offsets; those segments are scaled to it, and the layers outside them to
    keep the backward total. Offsets out of backward order are skipped.
    """
    m = model.measured
    assert m is not None
    names = [layer.name for layer in model.layers]
    points = sorted(((names.index(n), r) for n, r in m.backward_ready), reverse=True)
    kept = [points[0]]
    for i, r in points[1:]:
        if i < kept[-1][0] and r >= kept[-1][1]:
            kept.append((i, r))
    factor = np.ones(len(names))
    inside = np.zeros(len(names), dtype=bool)
    for (i_prev, r_prev), (i, r) in pairwise(kept):
        seg = slice(i, i_prev)
        have = float(bwd[seg].sum())
        if have > 0 and r > r_prev:
            factor[seg] = (r - r_prev) / have
            inside[seg] = True
    outside = ~inside
    left = float(bwd.sum() - (bwd * factor)[inside].sum())
    if outside.any() and left > 0 and bwd[outside].sum() > 0:
        factor[outside] = left / float(bwd[outside].sum())
    return factor


def _total_scales(model: Model, device: Device, precision: str, rf: np.ndarray,
                  rb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Factors from the measured totals or per-layer times (1 where only readiness is known)."""
    m = model.measured
    assert m is not None
    implied = m.samples_per_s or (m.batch / (m.forward_s + m.backward_s) if m.forward_s else 0.0)
    effective = implied * 3.0 * model.forward_flops / device.peak_flops(precision)
    if effective > MAX_EFFECTIVE_FRACTION:
        raise ConfigError(
            f"{m.source or 'measured'}: {implied:.4g} samples/s of {model.name} at batch {m.batch} is "
            f"{effective:.2f} x the {precision} peak of {device.name} in direct-convolution "
            f"FLOPs; at most {MAX_EFFECTIVE_FRACTION:.2f} x is possible (Winograd F(6x6,3x3) on "
            f"every FLOP): check the rate and the batch")
    names = [layer.name for layer in model.layers]
    if m.layers:
        idx = np.array([names.index(row[0]) for row in m.layers])
        mf = np.array([row[1] for row in m.layers])
        mb = np.array([row[2] for row in m.layers])
        sf, sb = np.empty(len(names)), np.empty(len(names))
        rest = np.ones(len(names), dtype=bool)
        rest[idx] = False
        # layers not named: the rest of the measured totals where given, in the
        # roofline's proportions; else the named layers' measured/roofline ratio
        left_f, left_b = m.forward_s - mf.sum(), m.backward_s - mb.sum()
        if m.forward_s > 0 and left_f > 0 and left_b > 0 and rest.any():
            sf[:], sb[:] = left_f / rf[rest].sum(), left_b / rb[rest].sum()
        else:
            sf[:], sb[:] = mf.sum() / rf[idx].sum(), mb.sum() / rb[idx].sum()
        sf[idx] = mf / rf[idx]
        sb[idx] = mb / rb[idx]
        return sf, sb
    if m.forward_s > 0:
        return (np.full(len(names), m.forward_s / rf.sum()),
                np.full(len(names), m.backward_s / rb.sum()))
    compute = m.iteration_s - update_s(model.params, device)
    if m.samples_per_s and compute <= 0:
        raise ConfigError(
            f"{m.source or 'measured'}: {m.samples_per_s:g} samples/s at batch {m.batch} is {m.iteration_s:.4g} s "
            f"per iteration, less than the weight update alone on {device.name} "
            f"({update_s(model.params, device):.4g} s): check the rate and the batch")
    if not m.samples_per_s:
        return np.ones(len(names)), np.ones(len(names))
    scale = compute / (rf.sum() + rb.sum())
    return np.full(len(names), scale), np.full(len(names), scale)


def _apply_measured(model: Model, device: Device, precision: str, e: int,
                    times: LayerTimes, dispatch_s: float = 0.0) -> LayerTimes:
    sf, sb = _measured_scales(model, device, precision, e, dispatch_s)
    return replace(times, forward_s=times.forward_s * sf, backward_s=times.backward_s * sb)


def update_s(params: float, device: Device, momentum: bool = True, share: float = 1.0) -> float:
    """Time of one SGD weight update over ``params`` fp32 weights.

    Streams the weights (read, write) and the gradient (read), and with momentum the
    velocity (read, write): 5 or 3 arrays of 4 bytes, at the bandwidth a streaming
    kernel reaches (:func:`~dlscale.perfmodel.compute.streaming.achievable_bandwidth_Bps`).

    Parameters
    ----------
    params : float
        Weights updated.
    device : Device
        Its achievable streaming bandwidth.
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
    >>> from dlscale.perfmodel.machine.hardware import Device
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)
    >>> round(update_s(1e9, gpu), 4)   # 20 GB at 1 TB/s x 1.80 / 2.04 (the A100 share)
    0.0227
    """
    arrays = 5 if momentum else 3
    return arrays * 4.0 * params / (achievable_bandwidth_Bps(device) * share)
