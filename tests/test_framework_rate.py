"""The framework's compute rate as a cited range of the band (compute.framework, issue 25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.framework import COMPUTE_RATE, CPU_COMPUTE_RATE, cluster_for_band
from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.compute.variability import DEVICE_SPREAD
from dlscale.perfmodel.machine.noise import expected_max_factor
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ranges import corners, predict_range
from dlscale.perfmodel.training.repeatability import MEASUREMENT


def test_the_cited_range_is_the_sources_span():
    # Theano 26, TensorFlow 62, MXNet 104 images/s (ResNet-50, batch 16, one Titan X)
    assert COMPUTE_RATE.low == pytest.approx(26 / 62) and COMPUTE_RATE.high == pytest.approx(104 / 62)
    assert COMPUTE_RATE.central == 1.0


def test_gpu_fractions_scale_and_cpus_do_not():
    c = get_cluster("dgx1-p100")
    d = c.node.device
    low, high = (cluster_for_band(c, e).node.device for e in ("low", "high"))
    assert low.sustained_fraction == pytest.approx(d.sustained_fraction * 26 / 62)
    assert low.memory_bandwidth_Bps == pytest.approx(d.memory_bandwidth_Bps * 26 / 62)
    assert high.sustained_fraction == pytest.approx(min(1.0, d.sustained_fraction * 104 / 62))
    assert high.memory_bandwidth_Bps == d.memory_bandwidth_Bps     # the datasheet ceiling
    assert cluster_for_band(c, "central") is c
    knl = get_cluster("stampede2-knl")
    assert cluster_for_band(knl, "high") is knl        # no engine faster than the optimised
    with pytest.raises(ValueError, match="end: must be"):
        cluster_for_band(c, "lowest")


def test_a_knl_or_cpu_rate_has_the_stock_engine_range():
    """Fails before CPU_COMPUTE_RATE: a KNL's band had no compute-rate low end."""
    # PaddlePaddle 0.11.0 training, AlexNet batch 64: OpenBLAS 45.62, MKL-DNN 399.00 images/s
    assert CPU_COMPUTE_RATE.low == pytest.approx(45.62 / 399.00)
    assert (CPU_COMPUTE_RATE.central, CPU_COMPUTE_RATE.high) == (1.0, 1.0)
    knl = get_cluster("stampede2-knl")
    d = knl.node.device
    slow = cluster_for_band(knl, "low").node.device
    assert slow.sustained_fraction == pytest.approx(d.sustained_fraction * 45.62 / 399.00)
    assert slow.fast_memory_bandwidth_Bps == pytest.approx(d.fast_memory_bandwidth_Bps * 45.62 / 399.00)
    w = get_workload("resnet50")
    p = predict_range(knl, w, [1, 16])
    low, high = (float(x[0]) for x in p.band["samples_per_s"])
    central = float(p.samples_per_s[0])
    assert low < central * 0.3 and high == pytest.approx(central, rel=0.05)
    assert central == pytest.approx(float(predict(knl, w, [1]).samples_per_s[0]))


def test_the_band_of_a_gpu_rate_spans_the_framework_range():
    c, w = get_cluster("dgx1-p100"), dataclasses.replace(get_workload("resnet50"),
                                                          data="synthetic")
    p = predict_range(c, w, [1], baseline="device")
    low, high = (float(x[0]) for x in p.band["samples_per_s"])
    central = float(p.samples_per_s[0])
    # the slow corner: the compute at the range's low end (the weight update and the
    # node's exchange are not the framework's compute and keep their rates), the 8 GPUs
    # also waiting for the slowest of them (compute.variability, the same corner)
    slowest = float(expected_max_factor(f"lognormal:{DEVICE_SPREAD.high!r}", 8))
    assert central * COMPUTE_RATE.low / slowest <= low <= central * 0.45
    assert high > central * 1.3
    # the central answer is the solved rate, as before the mechanism
    assert central == pytest.approx(float(predict(c, w, [1], baseline="device").samples_per_s[0]))


def test_a_measured_rate_keeps_its_measurement_at_every_end():
    c = get_cluster("dgx1-p100")
    w = dataclasses.replace(get_workload("resnet50"), data="synthetic")
    w = dataclasses.replace(w, model=dataclasses.replace(
        w.model, measured=MeasuredCompute(batch=64, samples_per_s=219.0)))
    p = predict_range(c, w, [1], baseline="device")
    low, high = (float(x[0]) for x in p.band["compute_s"])
    # only the dispatch range is left (a floor the roofline rarely reaches at batch 64)
    assert high / low < 1.05


def test_the_exchange_bound_corner_is_the_efficiency_low():
    c, w = get_cluster("summit"), get_workload("resnet50")
    named = {name: (cc, ww) for name, cc, ww in corners(c, w)}
    cc, ww = named["exchange-bound"]
    assert cc.runtime.side("compute-rate") == "high" and cc.runtime.side("transport") == "low"
    assert not ww.overlap
    eff = {name: float(predict(cc, ww, [1024]).efficiency[0]) for name, (cc, ww) in named.items()}
    assert eff["exchange-bound"] == min(eff.values())
    band = predict_range(c, w, [1024]).band["efficiency"]
    # widened by two measurements' repeatability (training.repeatability)
    assert float(band[0][0]) == pytest.approx(eff["exchange-bound"] * MEASUREMENT.low
                                              / MEASUREMENT.high)
    assert np.all(band[0] <= band[1])
