"""GPU-to-GPU rate spread as a cited range of the band (compute.variability, issue 25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.variability import (
    DEVICE_SPREAD,
    SPREAD_AVERAGE,
    SPREAD_MAX,
    cluster_for_band,
    cluster_noise,
    sigma_of_variation,
)
from dlscale.perfmodel.machine.noise import expected_max_factor
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ranges import corners, predict_range


def _synthetic(model: str):
    return dataclasses.replace(get_workload(model), data="synthetic")


def test_the_cited_spread_is_the_artifacts_fence_span_over_the_median():
    # "8% (max 22%) average performance variation" (Sinha et al., SC'22); variation =
    # (q3 + 1.5 IQR - (q1 - 1.5 IQR)) / median (the artifact's plot_aggregated.py)
    assert (SPREAD_AVERAGE, SPREAD_MAX) == (0.08, 0.22)
    for v in (0.08, 0.22):
        s = sigma_of_variation(v)
        q1, q2, q3 = np.exp(-0.6744897501960817 * s), 1.0, np.exp(0.6744897501960817 * s)
        iqr = q3 - q1
        assert (q3 + 1.5 * iqr - (q1 - 1.5 * iqr)) / q2 == pytest.approx(v, rel=1e-12)
    assert DEVICE_SPREAD.central == pytest.approx(0.08 / 5.396, rel=1e-3)
    assert DEVICE_SPREAD.high == pytest.approx(0.0408, abs=1e-4)
    assert DEVICE_SPREAD.low == 0.0


def test_a_gpu_cluster_without_noise_computes_with_the_central_spread():
    c = get_cluster("dgx1-p100")
    assert c.noise == ""                                   # the preset describes none
    assert cluster_noise(c) == f"lognormal:{DEVICE_SPREAD.central!r}"
    assert cluster_noise(get_cluster("stampede2-knl")) == "none"   # GPUs only
    assert cluster_noise(dataclasses.replace(c, noise="none")) == "none"   # the user's
    assert cluster_noise(dataclasses.replace(c, noise="lognormal:0.05")) == "lognormal:0.05"


def test_the_band_moves_the_spread_of_a_gpu_cluster_without_noise():
    c = get_cluster("dgx1-p100")
    assert cluster_for_band(c, "central") is c
    assert cluster_for_band(c, "low").noise == "none"
    assert cluster_for_band(c, "high").noise == f"lognormal:{DEVICE_SPREAD.high!r}"
    knl = get_cluster("stampede2-knl")                 # the source measured GPUs only
    assert cluster_for_band(knl, "high") is knl
    measured = dataclasses.replace(c, noise="lognormal:0.05")   # the user's own noise
    assert cluster_for_band(measured, "high") is measured
    assert cluster_for_band(measured, "low") is measured
    with pytest.raises(ValueError, match="end: must be"):
        cluster_for_band(c, "slowest")


def test_the_corners_where_the_efficiency_is_lowest_wait_for_the_slowest_gpu():
    sides = {name: c.noise for name, c, _ in corners(get_cluster("dgx1-p100"),
                                                     get_workload("resnet50"))}
    spread = f"lognormal:{DEVICE_SPREAD.high!r}"
    assert sides == {"fast": "none", "slow": spread, "serial": spread,
                     "exchange-bound": spread, "step-bound": "none"}


def test_the_central_answer_waits_for_the_expected_slowest_gpu():
    c, w = get_cluster("summit"), _synthetic("resnet50")
    nodes = [1, 8, 64]
    central = predict(c, w, nodes, baseline="device")
    spec = f"lognormal:{DEVICE_SPREAD.central!r}"
    same = predict(dataclasses.replace(c, noise=spec), w, nodes, baseline="device")
    flat = predict(dataclasses.replace(c, noise="none"), w, nodes, baseline="device")
    assert np.array_equal(central.iteration_s, same.iteration_s)
    slow = expected_max_factor(spec, np.asarray(central.ranks, dtype=float))
    assert 1.0 < slow[0] < slow[1] < slow[2] < 1.05               # 6, 48, 384 GPUs
    assert np.all(central.iteration_s > flat.iteration_s)
    assert np.all(central.efficiency < flat.efficiency)
    # the compute terms grow by the factor, nothing else: the step at most that longer
    assert np.all(central.iteration_s <= flat.iteration_s * slow + 1e-12)


def test_the_low_efficiency_drops_by_the_expected_slowest_of_the_ranks():
    c, w = get_cluster("summit"), _synthetic("resnet50")
    nodes = [1, 8, 64]
    with_spread = predict_range(c, w, nodes, baseline="device")
    # the same band with the spread at its central value at the slow end
    import dlscale.perfmodel.compute.variability as var
    flat = dataclasses.replace(DEVICE_SPREAD, high=DEVICE_SPREAD.central)
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
    slow = (expected_max_factor(f"lognormal:{DEVICE_SPREAD.high!r}", ranks)
            / expected_max_factor(f"lognormal:{DEVICE_SPREAD.central!r}", ranks))
    assert slow[0] > 1.02 and slow[-1] > slow[1] > slow[0] > 1.0     # 6, 48, 384 GPUs
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


def test_simulate_draws_the_spread_predict_charges():
    from dlscale.simulator.training.run import simulate_training

    c, w = get_cluster("summit"), _synthetic("resnet50")
    sim = simulate_training(c, w, 2, iterations=100, seed=3, efficiency=False)
    flat = simulate_training(c, w, 2, iterations=100, seed=3, efficiency=False,
                             noise="none")
    pred = predict(c, w, [2])
    assert sim.noise == f"lognormal:{DEVICE_SPREAD.central!r}"
    assert float(sim.iteration_s) > float(flat.iteration_s)
    # the mean simulated iteration: the closed form's expected slowest of 12 ranks
    assert float(sim.iteration_s) == pytest.approx(float(pred.iteration_s[0]), rel=0.01)
