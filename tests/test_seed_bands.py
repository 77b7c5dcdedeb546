"""The seed cases of ``validate published`` carry the printed range (issue 25: the seeds
re-reported with the same accounting as the out-of-sample trial): each banded case is
rerun at every corner of the band (validation/banded.py), its central answers unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.training.predict import predict as plain_predict
from dlscale.perfmodel.training.ranges import predict_range
from dlscale.validation import banded, case_laanait_summit
from dlscale.validation.accounting import summarize
from dlscale.validation.published import CASE_MODULES, get_case, run_case

BANDED_CASES = [n for n in CASE_MODULES if getattr(get_case(n), "BANDED", False)]


def test_the_four_data_parallel_seeds_are_banded():
    assert set(BANDED_CASES) >= {"you-sc17", "cavdar-isc19", "codreanu-resnet50",
                                 "laanait-summit"}


def test_outside_a_corner_the_banded_predict_is_perfmodels_bit_for_bit():
    c, w = get_cluster("summit"), get_workload("resnet50")
    a, b = banded.predict(c, w, [1, 8, 512]), plain_predict(c, w, [1, 8, 512])
    for k in ("iteration_s", "samples_per_s", "efficiency", "comm_s"):
        assert np.array_equal(getattr(a, k), getattr(b, k))


def test_a_direct_quantity_gets_the_band_predict_prints():
    """Laanait's efficiency at 4,600 nodes is one entry of one prediction: its range is
    exactly the band `dlscale predict` prints for that row (one band, one policy)."""
    rows, _ = run_case("laanait-summit", "analytical")
    row = next(r for r in rows if r["quantity"] == "efficiency_27600_gpus")
    w = dataclasses.replace(get_workload("fcn-summit"), collective="auto")
    nodes = [1, case_laanait_summit.NODES]
    band = predict_range(get_cluster("summit"), w, nodes).band["efficiency"]
    assert row["low"] == pytest.approx(float(band[0][-1]), rel=1e-12)
    assert row["high"] == pytest.approx(float(band[1][-1]), rel=1e-12)
    assert row["low"] < row["predicted"] < row["high"]


@pytest.mark.parametrize("name", BANDED_CASES)
def test_every_banded_row_holds_its_central_value_and_says_whether_published_is_inside(name):
    rows, _ = run_case(name, "analytical")
    banded_rows = [r for r in rows if r["low"] is not None]
    assert banded_rows
    for r in banded_rows:
        assert r["low"] - 1e-12 <= r["predicted"] <= r["high"] + 1e-12
        if isinstance(r["published"], float) and r["kind"] != "efficiency-at-least":
            assert r["in_range"] == (r["low"] - 1e-12 <= r["published"] <= r["high"] + 1e-12)
    assert all(r["low"] is None for r in rows if r["kind"] in ("memory", "ordering", "count",
                                                               "scale"))


def test_the_simulated_fidelity_and_unbanded_cases_carry_no_range():
    rows, _ = run_case("laanait-summit", "simulated")
    assert all(r["low"] is None and r["in_range"] is None for r in rows)


def test_the_accounting_counts_quantities_inside_the_range():
    rows = [r for n in ("laanait-summit", "codreanu-resnet50")
            for r in run_case(n, "analytical")[0]]
    s = summarize(rows)
    # a distinct quantity (a case's group of rows, e.g. a rate and the time it implies)
    # counts as inside when every banded row of it is
    def key(r):
        return (r["case"], r.get("group") or r["quantity"])
    inside = {key(r) for r in rows if r["in_range"]} - {key(r) for r in rows
                                                        if r["in_range"] is False}
    assert ("laanait-summit", "efficiency_27600_gpus") in inside
    assert s["banded"] >= s["inside"] == len(inside) >= 1
    assert s["width_pp"] > 0 and s["width_pct"] > 0


def test_an_unknown_corner_is_refused():
    with pytest.raises(ValueError, match="corner: 'middle' is not one of fast, slow"):
        with banded.corner("middle"):
            pass
