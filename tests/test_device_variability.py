"""GPU-to-GPU rate spread as a cited range of the band (compute.variability, issue 25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.variability import (
    DEVICE_SPREAD,
    SPREAD_AVERAGE,
    WHISKER_SIGMAS,
    cluster_for_band,
)
from dlscale.perfmodel.machine.noise import expected_max_factor
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ranges import corners, predict_range


def _synthetic(model: str):
    return dataclasses.replace(get_workload(model), data="synthetic")


def test_the_cited_spread_is_the_sources_average_read_as_whiskers():
    # "8% (max 22%) average performance variation" (Sinha et al., SC'22)
    assert SPREAD_AVERAGE == 0.08
    assert WHISKER_SIGMAS == pytest.approx(5.396, abs=1e-3)
    assert DEVICE_SPREAD.high == pytest.approx(0.08 / 5.396, rel=1e-3)
    assert DEVICE_SPREAD.central == 0.0 and DEVICE_SPREAD.low == 0.0


def test_only_the_slow_end_of_a_gpu_cluster_without_noise_spreads():
    c = get_cluster("dgx1-p100")
    assert cluster_for_band(c, "central") is c
    assert cluster_for_band(c, "low") is c
    assert cluster_for_band(c, "high").noise == f"lognormal:{DEVICE_SPREAD.high!r}"
    knl = get_cluster("stampede2-knl")                 # the source measured GPUs only
    assert cluster_for_band(knl, "high") is knl
    measured = dataclasses.replace(c, noise="lognormal:0.05")   # the user's own noise
    assert cluster_for_band(measured, "high") is measured
    with pytest.raises(ValueError, match="end: must be"):
        cluster_for_band(c, "slowest")


def test_the_corners_where_the_efficiency_is_lowest_wait_for_the_slowest_gpu():
    sides = {name: c.noise for name, c, _ in corners(get_cluster("dgx1-p100"),
                                                     get_workload("resnet50"))}
    spread = f"lognormal:{DEVICE_SPREAD.high!r}"
    assert sides == {"fast": "none", "slow": spread, "serial": spread,
                     "exchange-bound": spread, "step-bound": "none"}


def test_the_low_efficiency_drops_by_the_expected_slowest_of_the_ranks():
    c, w = get_cluster("summit"), _synthetic("resnet50")
    nodes = [1, 8, 64]
    with_spread = predict_range(c, w, nodes, baseline="device")
    # the same band with the spread at 0 at every end
    import dlscale.perfmodel.compute.variability as var
    flat = dataclasses.replace(DEVICE_SPREAD, high=0.0)
    orig = var.DEVICE_SPREAD
    var.DEVICE_SPREAD = flat
    try:
        without = predict_range(c, w, nodes, baseline="device")
    finally:
        var.DEVICE_SPREAD = orig
    # the central answer does not move, nor the high end
    assert np.array_equal(with_spread.efficiency, without.efficiency)
    assert np.array_equal(with_spread.band["efficiency"][1], without.band["efficiency"][1])
    low_s, low_0 = with_spread.band["efficiency"][0], without.band["efficiency"][0]
    ranks = np.asarray(with_spread.ranks, dtype=float)
    slow = expected_max_factor(f"lognormal:{DEVICE_SPREAD.high!r}", ranks)
    assert slow[0] > 1.015 and slow[-1] > slow[1] > slow[0] > 1.0     # 6, 48, 384 GPUs
    # more ranks, a slower slowest GPU: the low end falls by at most that factor
    assert np.all(low_s < low_0)
    assert np.all(low_s >= low_0 / slow - 1e-12)
    ratio = low_0 / low_s
    assert ratio[-1] > ratio[0]


def test_one_device_has_no_spread_to_wait_for():
    c, w = get_cluster("dgx1-p100"), _synthetic("resnet50")
    one = dataclasses.replace(c, node=dataclasses.replace(c.node, devices_per_node=1))
    p = predict_range(one, w, [1], baseline="device")
    central = predict(one, w, [1], baseline="device")
    assert float(p.band["efficiency"][0][0]) == pytest.approx(1.0)
    assert float(p.samples_per_s[0]) == pytest.approx(float(central.samples_per_s[0]))
