"""The band of the transformer path (issue 29): low and high beside every time, rate
and TFLOP/s, from the cited ranges that act on it; the central answer unchanged."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.variability import cluster_for_band, slowest_factor
from dlscale.perfmodel.machine.runtime import transport_efficiency
from dlscale.perfmodel.training.llm_ranges import (
    LLM_BAND_KEYS,
    band_row,
    llm_band,
    llm_corners,
)
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import llm_iteration

POD = get_cluster("dgx-h100-superpod")
LAYOUTS = [
    ("gpt3-175b", ParallelLayout(tp=8, pp=8, dp=2, global_batch=64, recompute="full")),
    ("gpt-1.7b", ParallelLayout(tp=1, pp=1, dp=64, global_batch=128)),
    ("gpt-39.1b", ParallelLayout(tp=8, pp=2, dp=4, global_batch=64, zero=1,
                                 schedule="interleaved", virtual=2)),
    ("mixtral-8x7b", ParallelLayout(tp=2, dp=32, global_batch=64, sp=True, ep=8)),
]


def _fields(r):
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}


@pytest.mark.parametrize("name,lay", LAYOUTS, ids=[n for n, _ in LAYOUTS])
def test_central_is_unchanged_and_inside_its_band(name, lay):
    model = get_llm(name)
    central, band = llm_band(POD, model, lay)
    assert _fields(central) == _fields(llm_iteration(POD, model, lay))
    row = band_row(central, model, band)
    for k in LLM_BAND_KEYS:
        assert row[f"{k}_low"] <= row[k] <= row[f"{k}_high"], k
    assert row["tokens_per_s"] == lay.global_batch * model.seq / central.iteration_s


def test_transport_range_brackets_the_central_inter_node_exchange():
    """The central answer charges the cited central RDMA fraction (0.97), as the
    data-parallel path does, the corners its range (0.96-0.976): the pipeline's
    hand-overs across nodes at most 0.97/0.96 as long at the slow corner (the central
    answer charged the NICs' rated rate before, outside its own mechanism's range)."""
    name, lay = LAYOUTS[0]
    central, band = llm_band(POD, get_llm(name), lay)
    low, high = band["pp_comm_s"]
    assert low < central.pp_comm_s < high
    ratio = transport_efficiency("rdma", "central") / transport_efficiency("rdma", "low")
    assert high <= central.pp_comm_s * ratio * (1 + 1e-9)
    rated = dataclasses.replace(POD, runtime=dataclasses.replace(POD.runtime,
                                                                 links_measured=True))
    assert llm_iteration(rated, get_llm(name), lay).pp_comm_s < low


def test_hidden_exchange_slows_compute_and_serial_corner_exposes_it():
    """Data parallel over 8 nodes: the exchange hidden behind the last backward pass
    slows it by 18.9 % in the central answer, up to 40 % at the slow corner (arXiv
    2507.03114), and the serial corner exposes it all."""
    model = get_llm("gpt-1.7b")
    lay = ParallelLayout(tp=1, pp=1, dp=64, global_batch=128)
    central, band = llm_band(POD, model, lay)
    names = [n for n, _c, _l in llm_corners(POD, lay)]
    assert names == ["fast", "slow", "serial"]
    none = dataclasses.replace(POD, runtime=dataclasses.replace(POD.runtime,
                                                                overlap_slowdown=()))
    plain = llm_iteration(none, model, lay)
    hidden = central.dp_comm_s - central.dp_exposed_s
    assert hidden > 0
    assert central.compute_s == pytest.approx(plain.compute_s + 0.189 * hidden, rel=1e-12)
    assert central.iteration_s == pytest.approx(plain.iteration_s + 0.189 * hidden,
                                                rel=1e-12)
    spread = cluster_for_band(POD, "high")         # the GPUs' largest spread, 4.08%
    slow = dataclasses.replace(spread, runtime=dataclasses.replace(
        POD.runtime, sides=(("transport", "low"), ("overlap-slowdown", "high"),
                            ("device-variability", "high"))))
    at_slow = llm_iteration(slow, model, lay)
    slow_plain = llm_iteration(dataclasses.replace(slow, runtime=dataclasses.replace(
        slow.runtime, overlap_slowdown=())), model, lay)
    slow_hidden = at_slow.dp_comm_s - at_slow.dp_exposed_s
    assert at_slow.compute_s == pytest.approx(slow_plain.compute_s + 0.40 * slow_hidden,
                                              rel=1e-12)
    serial = llm_iteration(slow, model, dataclasses.replace(lay, dp_overlap=False))
    assert band["dp_exposed_s"][1] == serial.dp_exposed_s == serial.dp_comm_s
    assert band["compute_s"][1] == at_slow.compute_s
    assert band["tflops_per_gpu"][0] < central.tflops_per_gpu


def test_the_band_spans_the_gpus_spread_from_none_to_its_slow_end():
    """The compute's band: no spread at the fast corner, Sinha et al.'s largest cluster
    average (sigma 4.08%) at the slow one, the expected slowest of the job's GPUs; a
    cluster's own noise is kept at every corner."""
    model = get_llm("gpt-39.1b")
    lay = ParallelLayout(tp=8, pp=2, dp=4, global_batch=64, dp_overlap=False)
    central, band = llm_band(POD, model, lay)
    none = llm_iteration(dataclasses.replace(POD, noise="none"), model, lay)
    k_mid, k_high = (slowest_factor(c, lay.gpus) for c in (POD, cluster_for_band(POD, "high")))
    assert 1.0 < k_mid < k_high
    assert central.compute_s == pytest.approx(none.compute_s * k_mid, rel=1e-12)
    assert band["compute_s"] == pytest.approx((none.compute_s, none.compute_s * k_high),
                                              rel=1e-12)
    own = dataclasses.replace(POD, noise="lognormal:0.02")
    mid, own_band = llm_band(own, model, lay)
    assert own_band["compute_s"][0] == own_band["compute_s"][1] == mid.compute_s


def test_no_serial_corner_without_overlap():
    lay = ParallelLayout(tp=8, pp=1, dp=1, global_batch=4)
    assert [n for n, _c, _l in llm_corners(POD, lay)] == ["fast", "slow"]


def _run(argv, capsys):
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    return rc, capsys.readouterr().out


def test_table_json_and_csv_carry_the_band(capsys, tmp_path):
    argv = ["predict", "dgx-h100-superpod", "gpt3-175b", "--tp", "8", "--pp", "8",
            "--global-batch", "64", "--recompute", "full", "--nodes", "16"]
    rc, table = _run(argv, capsys)
    assert rc == 0
    head, line = table.splitlines()[2:4]
    assert "iteration_s_low" not in head and "tokens_per_s" in head
    assert line.count("[") >= 3                       # e.g. 76.35 [76.35-76.44]
    rc, out = _run([*argv, "--format", "json"], capsys)
    row = json.loads(out)["rows"][0]
    lay = ParallelLayout(tp=8, pp=8, dp=2, global_batch=64, recompute="full")
    want = llm_iteration(POD, get_llm("gpt3-175b"), lay)
    assert row["iteration_s"] == want.iteration_s          # the central value, exactly
    assert row["iteration_s_low"] <= row["iteration_s"] <= row["iteration_s_high"]
    rc, out = _run([*argv, "--format", "csv"], capsys)
    got = next(csv.DictReader(io.StringIO(out)))
    assert {"tflops_per_gpu_low", "tflops_per_gpu_high", "tokens_per_s_high"} <= set(got)


def test_the_transformer_band_takes_a_measurements_repeatability_as_the_dp_band_does():
    """One rule for both paths: the iteration widened as a time, TFLOP/s and tokens per
    second as rates (repeatability.widen); the parts of the iteration are not."""
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.perfmodel.training.llm_ranges import corner_iteration, llm_band, llm_corners
    from dlscale.perfmodel.training.parallel import ParallelLayout
    from dlscale.perfmodel.training.repeatability import MEASUREMENT

    c, m = get_cluster("dgx-h100-superpod"), get_llm("gpt-39.1b")
    lay = ParallelLayout(tp=8, pp=2, dp=8, global_batch=64)
    central, band = llm_band(c, m, lay)
    at = [central] + [corner_iteration(c, m, lay, n) for n, _c, _l in llm_corners(c, lay)]
    times = [r.iteration_s for r in at]
    assert band["iteration_s"] == (min(times) / MEASUREMENT.high,
                                   max(times) / MEASUREMENT.low)
    low, high = band["tflops_per_gpu"]
    assert low < central.tflops_per_gpu * MEASUREMENT.low + 1e-9
    assert high >= central.tflops_per_gpu * MEASUREMENT.high
    comp = [r.compute_s for r in at]
    assert band["compute_s"] == (min(comp), max(comp))


def test_the_band_spans_the_gemm_per_tile_cost_from_its_low_to_its_high_k0():
    """On an A100 (Selene) every product runs at K / (K + K0) of its rate, K0 the
    cookbook's per-row range (gemm_reduction.REDUCTION_K0): the fast corner at the
    low K0, the slow one at the high; the band's compute holds both ends. Off the
    A100 (the H100 pod) no K0 is charged at any corner."""
    from dlscale.perfmodel.compute.gemm_reduction import REDUCTION_K0
    from dlscale.perfmodel.training.parallel_time import gemm_k0
    from dlscale.validation.megatron_selene import SELENE

    model = get_llm("gpt-1.7b")
    lay = ParallelLayout(tp=1, pp=1, dp=8, global_batch=128, dp_overlap=False)
    central, band = llm_band(SELENE, model, lay)
    assert gemm_k0(SELENE) == REDUCTION_K0.central
    ends = {}
    for end in ("low", "high"):
        at = dataclasses.replace(SELENE, runtime=dataclasses.replace(
            SELENE.runtime, sides=(("gemm-reduction", end),)))
        assert gemm_k0(at) == getattr(REDUCTION_K0, end)
        ends[end] = llm_iteration(at, model, lay).compute_s
    assert ends["low"] < central.compute_s < ends["high"]
    assert band["compute_s"][0] <= ends["low"] and band["compute_s"][1] >= ends["high"]
    corners = dict((n, c) for n, c, _l in llm_corners(SELENE, lay))
    assert (gemm_k0(corners["fast"]), gemm_k0(corners["slow"])) == (REDUCTION_K0.low,
                                                                    REDUCTION_K0.high)
    assert {gemm_k0(c) for _n, c, _l in llm_corners(POD, lay)} == {0.0}
