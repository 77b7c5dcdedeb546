"""The seed cases of ``validate published`` carry the printed range (issue 25: the seeds
re-reported with the same accounting as the out-of-sample trial): each banded case is
rerun at every corner of the band (validation/banded.py), its central answers unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.llm_ranges import corner_iteration, llm_band
from dlscale.perfmodel.training.parallel_time import llm_iteration as plain_llm_iteration
from dlscale.perfmodel.training.predict import predict as plain_predict
from dlscale.perfmodel.training.ranges import predict_range
from dlscale.perfmodel.training.repeatability import widen
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.validation import (
    banded,
    case_laanait_summit,
    case_megatron_korthikanti,
    case_megatron_sc21,
)
from dlscale.validation.accounting import range_line, summarize
from dlscale.validation.megatron_selene import SELENE
from dlscale.validation.published import CASE_MODULES, case_family, get_case, run_case

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


# The transformer seeds (issue 25/29): Narayanan SC'21 Table 1, Korthikanti, the orderings.
TRANSFORMER_CASES = ("megatron-sc21", "megatron-korthikanti", "megatron-orderings")


def _korthikanti(name, seqsel):
    c = case_megatron_korthikanti.CONFIGS[name]
    model = TransformerSpec(f"gpt-{name}", hidden=c[0], layers=c[1], heads=c[2], seq=2048,
                            vocab=51200, source="test")
    return model, case_megatron_korthikanti._layout(name, seqsel)


def test_the_transformer_seeds_are_banded_on_their_own_path():
    assert set(BANDED_CASES) >= set(TRANSFORMER_CASES)
    assert {case_family(n) for n in TRANSFORMER_CASES} == {"transformer"}
    assert case_family("laanait-summit") == "data-parallel"


@pytest.mark.parametrize("name", list(case_megatron_sc21.ROWS))
def test_a_table1_rate_gets_exactly_the_band_predict_prints(name):
    """A Table 1 rate is one entry of one transformer prediction: its range is the
    band `dlscale predict` prints for that layout (llm_band), to the bit."""
    rows, _ = run_case("megatron-sc21", "analytical")
    row = next(r for r in rows if r["quantity"] == f"tflops_{name.removeprefix('gpt-')}")
    central, band = llm_band(SELENE, get_llm(name), case_megatron_sc21.layout(name))
    assert row["predicted"] == central.tflops_per_gpu
    assert (row["low"], row["high"]) == band["tflops_per_gpu"]
    assert row["low"] < row["predicted"] < row["high"]


def test_a_korthikanti_time_gets_exactly_the_band_predict_prints():
    rows, _ = run_case("megatron-korthikanti", "analytical")
    for name in case_megatron_korthikanti.CONFIGS:
        for seqsel, label in ((False, "full"), (True, "seqsel")):
            row = next(r for r in rows if r["quantity"] == f"time_{name}_{label}")
            _central, band = llm_band(SELENE, *_korthikanti(name, seqsel))
            assert (row["low"], row["high"]) == band["iteration_s"]


def test_the_recomputation_saving_is_banded_corner_by_corner():
    """full / seq+sel with both iterations at the same corner, not the ratio of the two
    times' ends (which would pair a fast full run with a slow seq+sel one), then widened
    as a ratio of two measurements."""
    rows, _ = run_case("megatron-korthikanti", "analytical")
    row = next(r for r in rows if r["quantity"] == "saving_175b")
    (m, full), (_m, sel) = _korthikanti("175b", False), _korthikanti("175b", True)
    ratios = [row["predicted"]]
    for c in ("fast", "slow", "serial"):
        a, b = (corner_iteration(SELENE, m, lay, c) for lay in (full, sel))
        if a is not None and b is not None:
            ratios.append(a.iteration_s / b.iteration_s)
    assert len(ratios) == 3                 # no serial corner: dp = 1
    # a ratio of two measured runs, widened by each run's repeatability as predict's
    # efficiency is (repeatability.widen)
    lo, hi = widen("efficiency", np.array([min(ratios)]), np.array([max(ratios)]))
    assert (row["low"], row["high"]) == (float(lo[0]), float(hi[0]))
    ends = (llm_band(SELENE, m, full)[1]["iteration_s"],
            llm_band(SELENE, m, sel)[1]["iteration_s"])
    assert ends[0][0] / ends[1][1] < row["low"] < row["high"] < ends[0][1] / ends[1][0]


@pytest.mark.parametrize("name", TRANSFORMER_CASES)
def test_the_transformer_central_values_are_perfmodels_bit_for_bit(name, monkeypatch):
    mod = get_case(name)
    banded_out = mod.run("analytical")
    monkeypatch.setattr(mod, "llm_iteration", plain_llm_iteration)
    plain = mod.run("analytical")
    assert banded_out.predicted == plain.predicted
    assert banded_out.details == plain.details


def test_the_range_line_states_each_family_and_the_total():
    rows = [r for n in ("laanait-summit", "megatron-sc21", "megatron-korthikanti")
            for r in run_case(n, "analytical")[0]]
    s = summarize(rows)
    transformer = {(r["case"], r.get("group") or r["quantity"]) for r in rows
                   if r["in_range"] is not None and r["case"] != "laanait-summit"}
    assert s["banded_transformer"] == len(transformer) == 10 + 8
    assert s["banded"] == s["banded_transformer"] + s["banded_data_parallel"]
    assert s["inside"] == s["inside_transformer"] + s["inside_data_parallel"]
    line = range_line(s)
    assert (f"; transformer cases: {s['inside_transformer']} of 18 "
            f"({100 * s['inside_transformer'] / 18:.0f}%), n/a, "
            f"{s['width_pct_transformer']:.1f}%") in line
    assert f"; data-parallel cases: {s['inside_data_parallel']} of " in line


def test_a_case_of_no_known_family_is_refused(monkeypatch):
    monkeypatch.setattr(case_megatron_sc21, "FAMILY", "moe")
    with pytest.raises(ConfigError, match="FAMILY: case 'megatron-sc21' says 'moe'; "
                                          "allowed: data-parallel, transformer"):
        case_family("megatron-sc21")
