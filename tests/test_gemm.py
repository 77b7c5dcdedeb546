"""A GEMM's time from its shape: tile and wave quantization (perfmodel/compute/gemm.py)."""

from __future__ import annotations

import pytest

from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.gemm import gemm_time_s, shape_efficiency
from dlscale.perfmodel.training.transformer_layers import (
    layer_gemm_shapes,
    layer_gemms,
    logit_gemm,
    logit_gemm_shapes,
)


def test_a_shape_that_fills_whole_waves_runs_at_the_ceiling():
    # 216 tiles of 256 x 128 = two full waves on 108 SMs
    assert shape_efficiency(256 * 12, 128 * 18, sms=108) == 1.0


def test_one_tile_more_than_a_wave_costs_a_whole_wave():
    full = shape_efficiency(128 * 108, 128, sms=108)         # 108 tiles of 128 x 128
    over = shape_efficiency(128 * 109, 128, sms=108)         # 109: a second wave
    assert full == 1.0 and over == pytest.approx(109 / 216, rel=0.05)


def test_a_ragged_edge_pays_a_whole_tile():
    assert shape_efficiency(8192 + 8, 8192, sms=108) < shape_efficiency(8192, 8192, sms=108)


def test_split_k_fills_the_device_for_a_long_reduction():
    # a weight gradient: 2 x 2 output tiles of 128, reduced over 65,536 tokens
    assert shape_efficiency(256, 256, sms=108) < 0.05
    assert shape_efficiency(256, 256, k=65536, sms=108) > 0.9


def test_the_time_is_the_roofline_of_rate_and_bytes():
    rate, bw = 270e12, 1.8e12
    big = gemm_time_s(8192, 8192, 8192, 1, rate, bw, 108)
    assert big == pytest.approx(2 * 8192**3 / (rate * shape_efficiency(8192, 8192, 8192)))
    thin = gemm_time_s(2048, 2048, 64, 64, rate, bw, 108)   # Q K^T of 64 heads of 64
    assert thin == pytest.approx(2 * 64 * (2 * 2048 * 64 + 2048 * 2048) / bw)


@pytest.mark.parametrize("name,tp,micro", [("gpt-1.7b", 1, 16), ("gpt-1t", 8, 1),
                                           ("gpt3-175b", 8, 2)])
def test_the_shapes_do_the_layer_flops_forward_and_twice_backward(name, tp, micro):
    g = get_llm(name)
    shapes = layer_gemm_shapes(g, tp, micro)
    fwd = sum(2 * m * n * k * b for (m, n, k, b), _ in shapes)
    bwd = sum(2 * m * n * k * b for _, pair in shapes for (m, n, k, b) in pair)
    assert fwd == pytest.approx(micro * layer_gemms(g, tp).forward_flops, rel=1e-12)
    assert bwd == pytest.approx(2 * fwd, rel=1e-12)
    (m, n, k, b), _ = logit_gemm_shapes(g, tp, micro)
    assert 2 * m * n * k * b == pytest.approx(micro * logit_gemm(g, tp).forward_flops,
                                              rel=1e-12)


def test_a_short_reduction_pays_its_per_tile_cost_and_the_ceiling_shape_keeps_its_rate():
    """K / (K + K0), rebased on the ceiling's 8192^3 (gemm_reduction): a product at K
    256 runs slower per FLOP than one at K 8192; 8192^3 keeps the rate it had."""
    from dlscale.perfmodel.compute.gemm_reduction import REDUCTION_K0

    rate, bw, k0 = 258e12, 1.8e12, REDUCTION_K0.central
    ceiling = gemm_time_s(8192, 8192, 8192, 1, rate, bw, 108)
    assert gemm_time_s(8192, 8192, 8192, 1, rate, bw, 108, k0=k0) == pytest.approx(
        ceiling, rel=1e-12)
    short = gemm_time_s(2048, 2048, 256, 64, rate, bw, 108, k0=k0) / (2048 * 2048 * 256 * 64)
    deep = gemm_time_s(2048, 2048, 8192, 64, rate, bw, 108, k0=k0) / (2048 * 2048 * 8192 * 64)
    assert short > 1.5 * deep
    flat = (gemm_time_s(2048, 2048, k, 64, rate, bw, 108) / k for k in (256, 8192))
    assert next(flat) == pytest.approx(next(flat), rel=1e-12)      # no K0: one rate


def test_a_split_k_slice_pays_the_per_tile_cost_over_its_own_depth():
    from dlscale.perfmodel.compute.gemm import reduction_factor

    k0 = 250.0
    # 2 x 2 tiles of 128 split 27 ways over 65,536: each slice 2,428 deep
    eff = shape_efficiency(256, 256, k=65536, sms=108, k0=k0)
    assert eff == pytest.approx(shape_efficiency(256, 256, k=65536, sms=108)
                                * reduction_factor(-(-65536 // 27), k0), rel=1e-12)
