"""The streaming-bandwidth rule and a normalisation's extra passes (issue 25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog.devices import DEVICES
from dlscale.perfmodel.compute.passes import NORM_EXTRA_PASSES, extra_passes
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.compute.streaming import HBM_ACHIEVABLE_FRACTION, achievable_bandwidth_Bps
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Device
from dlscale.perfmodel.training.parallel_time import hbm_achievable_Bps
from dlscale.perfmodel.training.workload import Layer, Model

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 10e12, 80e12, 16e9, 1e12, 0.5)


def _bn_model() -> Model:
    bn = Layer("bn", "norm", 2 * 64, 4.0 * 64 * 56 * 56, 64 * 56 * 56)
    return Model("bn", (bn,), input_shape=(64, 56, 56), dataset="none", samples_per_epoch=1)


def test_one_rule_for_both_paths():
    for dev in (GPU, DEVICES["p100-sxm2"], DEVICES["a100-sxm4-80gb"], DEVICES["xeon-phi-7250-flat"]):
        assert hbm_achievable_Bps(dev) == achievable_bandwidth_Bps(dev)


def test_measured_share_else_the_common_one():
    assert achievable_bandwidth_Bps(GPU) == pytest.approx(1e12 * HBM_ACHIEVABLE_FRACTION)
    p100 = DEVICES["p100-sxm2"]
    assert achievable_bandwidth_Bps(p100) == pytest.approx(557.23e9)      # STREAM triad, ECC
    assert achievable_bandwidth_Bps(DEVICES["k80"]) == pytest.approx(175.62e9)
    # KNL's catalog bandwidths are STREAM figures: no share applied on top
    knl = DEVICES["xeon-phi-7250-flat"]
    assert achievable_bandwidth_Bps(knl) == knl.training_memory_bandwidth_Bps
    # the transformer path's devices keep the common share
    a100 = DEVICES["a100-sxm4-80gb"]
    assert achievable_bandwidth_Bps(a100) == pytest.approx(
        a100.training_memory_bandwidth_Bps * HBM_ACHIEVABLE_FRACTION)


def test_bad_stream_fraction_is_refused():
    with pytest.raises(ConfigError, match="stream_fraction: must be in"):
        dataclasses.replace(GPU, stream_fraction=1.5)


def test_memory_bound_layer_and_update_move_at_the_achievable_bandwidth():
    m = _bn_model()
    t = layer_times(m, GPU, "fp32", 32)
    assert not t.compute_bound[0]
    assert float(t.forward_s[0]) == pytest.approx(float(t.forward_bytes[0]) / achievable_bandwidth_Bps(GPU))
    assert update_s(1e9, GPU) == pytest.approx(20e9 / achievable_bandwidth_Bps(GPU))


def test_batch_norm_reads_its_input_twice():
    m = _bn_model()
    n, b = 64 * 56 * 56, 32
    t = layer_times(m, GPU, "fp32", b)
    # forward: statistics read + normalise read + write; backward: reduce (dy, x) +
    # elementwise (dy, x, write dx), plus the parameters
    assert float(t.forward_bytes[0]) == pytest.approx(4 * (3 * b * n + 128))
    assert float(t.backward_bytes[0]) == pytest.approx(4 * (5 * b * n + 256))
    assert NORM_EXTRA_PASSES.low <= NORM_EXTRA_PASSES.central <= NORM_EXTRA_PASSES.high


def test_only_trained_normalisations_get_extra_passes():
    layers = (Layer("lrn", "norm", 0, 11.0, 8), Layer("r", "act", 0, 1.0, 8),
              Layer("p", "pool", 0, 1.0, 8), Layer("ln", "norm", 4, 8.0, 8))
    m = Model("m", layers, (8,), "none", 1)
    assert extra_passes(m).tolist() == [0.0, 0.0, 0.0, 1.0]
    assert np.all(extra_passes(m, "low") == 0.0)
