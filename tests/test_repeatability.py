"""A measurement's own repeatability widens the band (training.repeatability, issue 25)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ranges import band_of, corners, predict_range
from dlscale.perfmodel.training.repeatability import MEASUREMENT, widen


def test_the_cited_range_is_the_pages_largest_pair():
    # one K80 of a p2.8xlarge, InceptionV3 batch 64: 30.8 and 29.7 images/s
    assert MEASUREMENT.low == pytest.approx(29.7 / 30.25)
    assert MEASUREMENT.high == pytest.approx(30.8 / 30.25)
    assert MEASUREMENT.central == 1.0
    # the other pairs the page gives lie inside
    for a, b in ((51.5, 52.4), (19.7, 19.4), (29.9, 29.2), (49.0, 48.4)):
        assert MEASUREMENT.low <= min(a, b) / ((a + b) / 2) <= max(a, b) / ((a + b) / 2) \
            <= MEASUREMENT.high


def test_widen_rates_times_and_ratios():
    lo, hi = widen("samples_per_s", np.array([100.0]), np.array([120.0]))
    assert (lo[0], hi[0]) == pytest.approx((100 * MEASUREMENT.low, 120 * MEASUREMENT.high))
    lo, hi = widen("iteration_s", np.array([1.0]), np.array([2.0]))
    assert (lo[0], hi[0]) == pytest.approx((1 / MEASUREMENT.high, 2 / MEASUREMENT.low))
    lo, hi = widen("efficiency", np.array([1.0, 0.8]), np.array([1.0, 0.9]))
    k = MEASUREMENT.high / MEASUREMENT.low
    assert list(lo) == pytest.approx([1.0, 0.8 / k]) and list(hi) == pytest.approx([1.0, 0.9 * k])
    same = np.array([0.5])
    assert widen("comm_s", same, same) == (same, same)


def test_the_band_holds_a_repeated_measurement_and_the_centre_does_not_move():
    """Fails before the mechanism: the band was the corners' span only, and a second
    measurement of the corners' fastest answer fell outside it."""
    c = get_cluster("summit")
    w = dataclasses.replace(get_workload("resnet50"), data="synthetic")
    p = predict_range(c, w, [1, 4])
    at = corners(c, w)
    central = predict(c, w, [1, 4])
    for key in ("samples_per_s", "iteration_s", "efficiency"):
        span = band_of(getattr(central, key), [getattr(predict(cc, ww, [1, 4]), key)
                                               for _, cc, ww in at])
        low, high = p.band[key]
        moved = slice(1, None) if key == "efficiency" else slice(None)   # 1 node: 1 by definition
        assert np.all(low[moved] < span[0][moved]) and np.all(high[moved] > span[1][moved])
    assert float(p.band["efficiency"][0][0]) == float(p.band["efficiency"][1][0]) == 1.0
    assert np.array_equal(p.samples_per_s, central.samples_per_s)
    assert np.array_equal(p.efficiency, central.efficiency)
    # an efficiency above 1 is inside the band: two runs each off by the page's spread
    assert float(p.band["efficiency"][1][1]) > 1.0
