from dataclasses import replace

import numpy as np
import pytest

from dlscale.perfmodel.catalog.models_resnet import resnet50
from dlscale.perfmodel.compute.efficiency import (
    BATCH_RATES,
    BatchRatePoint,
    fit_half_per_core,
    half_elements_per_core,
    half_saturation_elements,
    layer_class,
)
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.compute.streaming import HBM_ACHIEVABLE_FRACTION
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Device
from dlscale.perfmodel.training.workload import Layer, Model

V100ISH = Device("v", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)


def _model():
    return Model("m", (
        Layer("conv", "conv", params=1000, forward_flops=1e9, activation_elements=10_000),
        Layer("relu", "act", params=0, forward_flops=1e4, activation_elements=10_000),
        Layer("fc", "fc", params=100_000, forward_flops=2e5, activation_elements=10),
    ), input_shape=(3, 32, 32), dataset="none", samples_per_epoch=1)


def _u(n):
    return n / (n + half_saturation_elements(V100ISH))


def test_compute_bound_layer_is_flops_over_sustained_peak_times_utilization():
    t = layer_times(_model(), V100ISH, "fp32", 32)
    u = _u(32 * 10_000)              # the layer's output elements for the batch
    assert t.forward_s[0] == pytest.approx(32e9 / (7e12 * u))
    assert t.backward_s[0] == pytest.approx(2 * 32e9 / (7e12 * u))
    assert t.compute_bound[0]


def test_winograd_eligible_conv_runs_at_2_25x_the_direct_rate():
    plain = _model()
    fast = Model("m", (replace(plain.layers[0], algo="conv3x3"), *plain.layers[1:]),
                 plain.input_shape, "none", 1)
    t_plain = layer_times(plain, V100ISH, "fp32", 32)
    t_fast = layer_times(fast, V100ISH, "fp32", 32)
    assert t_plain.forward_s[0] / t_fast.forward_s[0] == pytest.approx(2.25)
    assert t_fast.forward_s[1:] == pytest.approx(t_plain.forward_s[1:])


def test_catalog_layers_carry_their_algorithm_class():
    classes = {la.name: layer_class(la) for la in resnet50().layers}
    assert classes["conv1"] == "conv"              # 7x7 stride 2
    assert classes["res2a_b"] == "conv3x3"         # 3x3 stride 1
    assert classes["res3a_b"] == "conv"            # 3x3 stride 2 (v1.5): not Winograd
    assert classes["res2a_a"] == "gemm"            # 1x1
    assert classes["fc1000"] == "gemm"
    assert classes["conv1_bn"] == "norm" and classes["res2a_add"] == "eltwise"
    with pytest.raises(ConfigError, match=r"layer 'x'.algo: must be one of gemm, conv3x3, conv, "
                                          r"depthwise, norm, eltwise or empty, got 'fft'"):
        Layer("x", "conv", 1, 1.0, 1, algo="fft")


def _speedup(point: BatchRatePoint) -> float:
    # compute-bound device with the point's cores: per-sample time of its model at the
    # two batches through the roofline itself
    from dlscale.perfmodel.compute.efficiency import _catalog_model
    dev = replace(V100ISH, cores=point.cores, memory_bandwidth_Bps=1e30)
    m = _catalog_model(point.model)
    t = layer_times(m, dev, "fp32", np.array([point.batch_small, point.batch_large],
                                              dtype=float)).total_s
    return float(t[0] / point.batch_small) / float(t[1] / point.batch_large)


def test_batch_curve_is_fitted_to_the_cited_single_device_rates():
    # n_half = cores x the class's least-squares figure; the roofline of a compute-bound
    # device then gives each cited speed-up back to within the fit's scatter
    for cls, worst in (("gpu", 0.03), ("cpu", 0.03)):
        for p in BATCH_RATES[cls]:
            measured = p.rate_large / p.rate_small
            assert _speedup(p) == pytest.approx(measured, rel=worst), (cls, p)
    assert half_saturation_elements(V100ISH) == pytest.approx(80 * half_elements_per_core("gpu"))
    knl = replace(V100ISH, kind="knl", cores=68)
    assert half_saturation_elements(knl) == pytest.approx(68 * half_elements_per_core("cpu"))


def test_least_squares_fit_recovers_a_known_curve():
    # speed-ups made by the roofline at a known n_half per core come back exactly
    from dlscale.perfmodel.compute.efficiency import _catalog_model, _sums
    h_true = 20_000.0
    made = []
    for model, cores, b1 in (("resnet50", 56, 16), ("vgg16", 13, 32), ("googlenet", 40, 8)):
        p = BatchRatePoint(model, "synthetic", cores, b1, 1.0, 2 * b1, 1.0, "test")
        a, c = _sums(_catalog_model(p.model))
        per_sample = [a + h_true * p.cores * c / b for b in (p.batch_small, p.batch_large)]
        made.append(replace(p, rate_large=per_sample[0] / per_sample[1]))
    assert fit_half_per_core(tuple(made)) == pytest.approx(h_true, rel=1e-12)
    slower = replace(made[0], rate_large=0.5)
    with pytest.raises(ConfigError, match="the larger batches must be the faster"):
        fit_half_per_core((slower,))
    with pytest.raises(ConfigError, match="needs 0 < batch_small < batch_large"):
        fit_half_per_core((replace(made[0], batch_large=8),))


def test_memory_bound_layer_uses_bytes_over_bandwidth():
    t = layer_times(_model(), V100ISH, "fp32", 32)
    # relu: reads 10k, writes 10k elements per sample, 4 bytes, at the bandwidth a
    # streaming kernel reaches (no measured share here: 1.80 / 2.04 of 900 GB/s)
    bw = 900e9 * HBM_ACHIEVABLE_FRACTION
    assert t.forward_s[1] == pytest.approx(4 * 32 * 20_000 / bw)
    assert t.backward_s[1] == pytest.approx(4 * 32 * 30_000 / bw)
    assert not t.compute_bound[1]
    # first layer reads the input: 3*32*32 elements
    assert t.forward_bytes[0] == pytest.approx(4 * (32 * (3072 + 10_000) + 1000))


def test_fp16_uses_tensor_core_peak_and_half_the_bytes():
    t32 = layer_times(_model(), V100ISH, "fp32", 32)
    t16 = layer_times(_model(), V100ISH, "fp16", 32)
    assert t32.forward_s[0] / t16.forward_s[0] == pytest.approx(8.0)
    assert t16.forward_bytes == pytest.approx(t32.forward_bytes / 2)


def test_vectorized_over_batches_and_share():
    b = np.array([1.0, 8.0, 64.0])
    t = layer_times(_model(), V100ISH, "fp32", b)
    assert t.forward_s.shape == (3, 3)
    assert np.all(np.diff(t.total_s) > 0)
    half = layer_times(_model(), V100ISH, "fp32", b, share=0.5)
    # half a device: half the rate, and the batch fills that half as twice the batch would
    # fill the whole device (utilization of 2 x the work)
    u1, u2 = _u(b[:, None] * 10_000), _u(2 * b[:, None] * 10_000)
    assert half.forward_s[:, 0] == pytest.approx(2 * t.forward_s[:, 0] * (u1 / u2)[:, 0])
    assert half.forward_s[2, 1] == pytest.approx(2 * t.forward_s[2, 1])     # memory bound
    assert layer_times(_model(), V100ISH, "fp32", 8.0).total_s == pytest.approx(t.total_s[1])


def test_bad_inputs_raise_before_work():
    with pytest.raises(ConfigError, match=r"batch: must be a positive number or 1-D array, got 0"):
        layer_times(_model(), V100ISH, "fp32", 0)
    with pytest.raises(ConfigError, match=r"precision: must be one of fp64, fp32, fp16, got 'bf16'"):
        layer_times(_model(), V100ISH, "bf16", 1)
    with pytest.raises(ConfigError, match=r"share: must be a positive number, got -1"):
        layer_times(_model(), V100ISH, "fp32", 1, share=-1)


def test_update_streams_five_arrays_with_momentum():
    bw = 900e9 * HBM_ACHIEVABLE_FRACTION          # the streaming share, as every kernel
    assert update_s(1e6, V100ISH) == pytest.approx(20e6 / bw)
    assert update_s(1e6, V100ISH, momentum=False) == pytest.approx(12e6 / bw)
