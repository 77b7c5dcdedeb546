"""The range with every answer (issue 25 item 2): low <= central <= high on every row,
each mechanism's range moves the band, bad values are refused, and the band reaches
tables, JSON and CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlscale.cli import main
from dlscale.perfmodel.catalog import CLUSTERS, RUNTIMES, WORKLOADS, get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine import runtime as runtime_mod
from dlscale.perfmodel.machine.runtime import Runtime
from dlscale.perfmodel.training.ranges import (
    BAND_KEYS,
    MECHANISMS,
    Mechanism,
    corners,
    predict_range,
    register_mechanism,
)
from dlscale.perfmodel.training.repeatability import MEASUREMENT


def _ok(cluster, workload, nodes):
    try:
        return predict_range(cluster, workload, nodes)
    except ConfigError:       # a workload the machine cannot run (refused, not banded)
        return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=st.sampled_from(sorted(CLUSTERS)), workload=st.sampled_from(sorted(WORKLOADS)),
       runtime=st.sampled_from(sorted(RUNTIMES)), nodes=st.lists(
           st.integers(1, 64), min_size=1, max_size=3, unique=True))
def test_low_central_high_on_every_row(cluster, workload, runtime, nodes):
    c = get_cluster(cluster)
    c = dataclasses.replace(c, runtime=dataclasses.replace(
        RUNTIMES[runtime], links_measured=c.runtime.links_measured))
    nodes = [n for n in nodes if n <= c.max_nodes] or [1]
    pred = _ok(c, get_workload(workload), nodes)
    if pred is None:
        return
    for row in pred.to_rows():
        for k in BAND_KEYS:
            lo, mid, hi = row[f"{k}_low"], row[k], row[f"{k}_high"]
            assert lo <= mid <= hi, (cluster, workload, runtime, row["nodes"], k, lo, mid, hi)


def _band(cluster, workload, nodes=(1, 64)):
    pred = predict_range(cluster, workload, list(nodes))
    return {k: (pred.band[k][0].copy(), pred.band[k][1].copy()) for k in BAND_KEYS}


def test_transport_range_moves_the_band(monkeypatch):
    c, w = get_cluster("summit"), dataclasses.replace(get_workload("resnet50"), overlap=False)
    before = _band(c, w)
    monkeypatch.setitem(runtime_mod.TRANSPORT_EFFICIENCY_RANGE, "rdma", (0.5, 0.99))
    after = _band(c, w)
    assert after["iteration_s"][1][1] > before["iteration_s"][1][1]    # slower high end
    assert after["iteration_s"][0][1] < before["iteration_s"][0][1]    # faster low end
    assert after["efficiency"][0][1] < before["efficiency"][0][1]


def test_transport_range_does_not_move_measured_links(monkeypatch):
    c = get_cluster("summit")
    c = dataclasses.replace(c, runtime=dataclasses.replace(c.runtime, links_measured=True))
    w = dataclasses.replace(get_workload("resnet50"), overlap=False)
    before = _band(c, w)
    monkeypatch.setitem(runtime_mod.TRANSPORT_EFFICIENCY_RANGE, "rdma", (0.5, 0.99))
    after = _band(c, w)
    np.testing.assert_array_equal(before["iteration_s"][1], after["iteration_s"][1])


def test_slowdown_range_moves_the_band():
    c, w = get_cluster("summit"), get_workload("resnet50")

    def with_slowdown(central, low, high):
        rt = dataclasses.replace(c.runtime, overlap_slowdown=(("gpu", central, low, high),))
        return dataclasses.replace(c, runtime=rt)

    narrow, wide = _band(with_slowdown(0.1, 0.1, 0.1), w), _band(with_slowdown(0.1, 0.0, 0.4), w)
    # the slow corner that keeps the overlap: its compute beside the allreduces is slower
    assert wide["compute_s"][1][1] > narrow["compute_s"][1][1]
    assert wide["iteration_s"][0][1] < narrow["iteration_s"][0][1]
    assert wide["efficiency"][1][1] > narrow["efficiency"][1][1]


def test_overlap_range_moves_the_band():
    c, w = get_cluster("summit"), get_workload("resnet50")
    serial = dataclasses.replace(w, overlap=False)
    assert [name for name, *_ in corners(c, w)] == ["fast", "slow", "serial", "exchange-bound",
                                                    "step-bound"]
    assert [name for name, *_ in corners(c, serial)] == ["fast", "slow", "exchange-bound",
                                                         "step-bound"]
    overlapped = _band(c, w)
    central = predict_range(c, w, [1, 64])
    # with overlap the slow end is the run that does not overlap at all
    assert overlapped["iteration_s"][1][1] > 1.05 * central.iteration_s[1]
    assert overlapped["iteration_s"][1][1] == pytest.approx(
        predict_range(c, serial, [1, 64]).band["iteration_s"][1][1])


def test_one_rank_has_no_band_from_the_network():
    pred = predict_range(get_cluster("stampede2-skx"), get_workload("resnet50"), [1])
    row = pred.to_rows()[0]
    assert row["efficiency_low"] == row["efficiency"] == row["efficiency_high"] == 1.0


@pytest.mark.parametrize("kwargs, field", [
    ({"overlap_slowdown": (("gpu", 0.1, 0.2, 0.4),)}, "overlap_slowdown"),   # low > central
    ({"overlap_slowdown": (("gpu", 0.1, 0.0, float("nan")),)}, "overlap_slowdown"),
    ({"overlap_slowdown": (("tpu", 0.1, 0.0, 0.4),)}, "overlap_slowdown"),
    ({"overlap_slowdown": (("gpu", 0.1, 0.0, 0.4), ("gpu", 0.1, 0.0, 0.4))}, "overlap_slowdown"),
    ({"sides": (("transport", "lowest"),)}, "sides"),
])
def test_bad_range_values_are_refused(kwargs, field):
    with pytest.raises(ConfigError, match=rf"runtime 'toy'\.{field}: "):
        Runtime("toy", "t", "none", 0.0, 0.0, ("ring",), "model", "rdma", **kwargs)


def test_mechanism_registration_is_checked():
    with pytest.raises(ConfigError, match="registered twice"):
        register_mechanism(Mechanism(MECHANISMS[0].name, "high", "x"))
    with pytest.raises(ConfigError, match="fast: must be low or high"):
        Mechanism("new", "middle", "x")


def test_a_registered_mechanism_gets_its_side_in_every_corner(monkeypatch):
    import dlscale.perfmodel.training.ranges as ranges

    monkeypatch.setattr(ranges, "MECHANISMS", [*MECHANISMS])
    register_mechanism(Mechanism("a-new-mechanism", "high", "test"))
    sides = {name: c.runtime.side("a-new-mechanism")
             for name, c, _ in corners(get_cluster("summit"), get_workload("resnet50"))}
    # an exchange mechanism (the default part): slow in the exchange-bound corner
    assert sides == {"fast": "high", "slow": "low", "serial": "low", "exchange-bound": "low",
                     "step-bound": "high"}
    assert get_cluster("summit").runtime.side("a-new-mechanism") == "central"


def test_band_in_table_json_and_csv(capsys, tmp_path):
    out_csv = tmp_path / "p.csv"
    assert main(["predict", "summit", "resnet50", "--nodes", "64", "-o", str(out_csv)]) == 0
    table = capsys.readouterr().out
    row = next(ln for ln in table.splitlines() if ln.split()[:1] == ["64"])
    assert "[" in row and "-" in row
    assert "efficiency_low" not in table     # folded into the efficiency cell
    assert main(["predict", "summit", "resnet50", "--nodes", "64", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    r = doc["rows"][0]
    assert r["efficiency_low"] <= r["efficiency"] <= r["efficiency_high"]
    got = next(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert {f"{k}_{end}" for k in BAND_KEYS for end in ("low", "high")} <= set(got)
    # the efficiency cell (before the fits column): the three values as printed; its
    # high end is above 1 since a measurement's repeatability widens it (repeatability)
    cell = re.search(r"(\S+) \[(\S+)-(\S+)\]\s+yes", row)
    assert cell is not None
    printed = [float(x) for x in cell.groups()]
    want = [r["efficiency"], r["efficiency_low"], r["efficiency_high"]]
    assert printed == pytest.approx(want, rel=2e-3)


def test_plan_on_changes_the_plan_where_the_band_matters():
    from dlscale.plan import plan

    # the band's low end at 4,608 nodes is 0.686 (its exchange-bound corner 0.711,
    # widened by the repeatability) since the framework's compute rate has its cited
    # range (compute.framework) and the GPUs' rate spread its largest cluster average
    # (compute.variability)
    kw = {"min_efficiency": 0.8, "rank_by": "time", "nodes": [64, 1024, 4608]}
    central = plan("resnet50", ["summit"], **kw)
    low = plan("resnet50", ["summit"], plan_on="low", **kw)
    assert central.rows[0]["nodes"] == 4608          # 0.874 >= 0.8 at the centre
    assert low.rows[0]["nodes"] < 4608                # its low end, 0.686, is not
    assert all(r["efficiency_low"] >= 0.8 for r in low.rows)
    assert low.meta["plan_on"] == "low" and low.rows[0]["plan_on"] == "low"
    high = plan("resnet50", ["summit"], plan_on="high", deadline_s=3600.0 * 0.1,
                rank_by="nodes", nodes=[128, 256, 512, 1024])
    cen = plan("resnet50", ["summit"], deadline_s=3600.0 * 0.1, rank_by="nodes",
               nodes=[128, 256, 512, 1024])
    assert high.rows[0]["nodes"] <= cen.rows[0]["nodes"]
    for r in low.candidates:
        assert r["time_s_low"] <= r["time_s"] <= r["time_s_high"]


def test_plan_on_bad_value_is_refused(capsys):
    from dlscale.plan import plan

    with pytest.raises(ConfigError, match="plan_on: unknown name 'worst'"):
        plan("resnet50", ["summit"], plan_on="worst")
    with pytest.raises(SystemExit) as exc:       # argparse's choices: one line, status 2
        main(["plan", "resnet50", "--cluster", "summit", "--plan-on", "worst"])
    assert exc.value.code == 2 and "--plan-on" in capsys.readouterr().err


def test_plan_prints_the_band_and_what_it_planned_on(capsys):
    assert main(["plan", "resnet50", "--cluster", "summit", "--min-efficiency", "0.8",
                 "--nodes", "64,4608", "--plan-on", "low", "--rank-by", "time"]) == 0
    out = capsys.readouterr().out
    assert "planned on the low end of each range" in out
    row = next(ln for ln in out.splitlines() if ln.split()[:2] == ["1", "summit"])
    assert row.count("[") >= 4 and " 64 " in row


def test_simulate_rows_carry_the_band():
    from dlscale.simulator.training.run import simulate_training

    r = simulate_training(get_cluster("summit"), get_workload("resnet50"), 8, iterations=3)
    row = r.to_rows()[0]
    for k in ("iteration_s", "samples_per_s", "efficiency", "exposed_comm_s"):
        assert row[f"{k}_low"] <= row[k] <= row[f"{k}_high"], k
    assert row["iteration_s_high"] > row["iteration_s"]          # no overlap at all
    keys = list(row)
    assert keys.index("iteration_s_low") == keys.index("iteration_s") + 1


def test_time_outside_the_step_moves_the_band():
    """The input pipeline, dispatch and evaluation ranges (training.outside) enter the
    corners through the workload: a loader at the low end of its cited decode rate
    bounds DGX-1's step in the slow corner, so the band widens."""
    import dataclasses

    from dlscale.perfmodel.compute.measured import MeasuredCompute
    from dlscale.perfmodel.training.ranges import predict_range

    c = get_cluster("dgx1-v100")
    # mixed precision at 64 per V100: 7,190 images/s, within the central loader's
    # 40 x 196 but not the low end's 40 x 140 = 5,600 (tensorpack's DGX-1 figures);
    # the compute rate measured (899 images/s per V100), so that the framework's
    # compute-rate range (compute.framework) does not move it and the loader shows
    w = dataclasses.replace(get_workload("resnet50"), precision="fp16", batch_per_device=64)
    w = dataclasses.replace(w, model=dataclasses.replace(
        w.model, measured=MeasuredCompute(batch=64, samples_per_s=899.0)))
    real = predict_range(c, w, [1]).band["samples_per_s"]
    synthetic = predict_range(c, dataclasses.replace(w, data="synthetic"), [1]).band[
        "samples_per_s"]
    # the slow corner's loader binds (to round-off: that corner's 8 GPUs also wait for
    # the slowest, compute.variability, under the loader's bound)
    # (times the measurement's repeatability, which widens every rate's band)
    assert real[0][0] == pytest.approx(5600.0 * MEASUREMENT.low, rel=1e-12)
    assert real[0][0] < synthetic[0][0]
    names = {name: cw for name, _, cw in corners(c, w)}
    assert names["slow"].loader_rate < names["fast"].loader_rate
    assert names["slow"].dispatch_per_op_s > names["fast"].dispatch_per_op_s
