import numpy as np
import pytest

from dlscale.perfmodel.compute import layer_times, update_s
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.hardware import Device
from dlscale.perfmodel.workload import Layer, Model

V100ISH = Device("v", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)


def _model():
    return Model("m", (
        Layer("conv", "conv", params=1000, forward_flops=1e9, activation_elements=10_000),
        Layer("relu", "act", params=0, forward_flops=1e4, activation_elements=10_000),
        Layer("fc", "fc", params=100_000, forward_flops=2e5, activation_elements=10),
    ), input_shape=(3, 32, 32), dataset="none", samples_per_epoch=1)


def test_compute_bound_layer_is_flops_over_sustained_peak():
    t = layer_times(_model(), V100ISH, "fp32", 32)
    assert t.forward_s[0] == pytest.approx(32e9 / 7e12)
    assert t.backward_s[0] == pytest.approx(2 * 32e9 / 7e12)
    assert t.compute_bound[0]


def test_memory_bound_layer_uses_bytes_over_bandwidth():
    t = layer_times(_model(), V100ISH, "fp32", 32)
    # relu: reads 10k, writes 10k elements per sample, 4 bytes
    assert t.forward_s[1] == pytest.approx(4 * 32 * 20_000 / 900e9)
    assert t.backward_s[1] == pytest.approx(4 * 32 * 30_000 / 900e9)
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
    assert half.forward_s == pytest.approx(2 * t.forward_s)
    assert layer_times(_model(), V100ISH, "fp32", 8.0).total_s == pytest.approx(t.total_s[1])


def test_bad_inputs_raise_before_work():
    with pytest.raises(ConfigError, match=r"batch: must be a positive number or 1-D array, got 0"):
        layer_times(_model(), V100ISH, "fp32", 0)
    with pytest.raises(ConfigError, match=r"precision: must be one of fp64, fp32, fp16, got 'bf16'"):
        layer_times(_model(), V100ISH, "bf16", 1)
    with pytest.raises(ConfigError, match=r"share: must be a positive number, got -1"):
        layer_times(_model(), V100ISH, "fp32", 1, share=-1)


def test_update_streams_five_arrays_with_momentum():
    assert update_s(1e6, V100ISH) == pytest.approx(20e6 / 900e9)
    assert update_s(1e6, V100ISH, momentum=False) == pytest.approx(12e6 / 900e9)
