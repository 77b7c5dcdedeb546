"""The public API: loaders with overrides, result objects, delegation to the models."""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from dlscale import api
from dlscale.perfmodel.errors import ConfigError, DlscaleError

sys.path.insert(0, str(Path(__file__).parent))
import sweep_fakes


def test_loaders_apply_overrides(tmp_path):
    c, w = sweep_fakes.write_configs(tmp_path)
    cluster = api.load_cluster(c, {"node.nic.bandwidth_Gbps": 200})
    assert cluster.node.nic.bandwidth_Bps == 25e9
    work = api.load_workload(w, {"fusion_threshold_MiB": 8})
    assert work.fusion_threshold_bytes == 8 * 1024**2
    with pytest.raises(ConfigError, match=r"bandwith_GBps: unknown key"):
        api.load_cluster(c, {"network.link.bandwith_GBps": 1})


def test_sweep_from_table_and_result_object(tmp_path):
    c, w = sweep_fakes.write_configs(tmp_path)
    res = api.sweep({"cluster": str(c), "workload": str(w), "nodes": "1-8",
                     "vary": {"collective": ["ring", "rabenseifner"]}}, tmp_path / "out",
                    executor="serial", evaluators={"analytical": sweep_fakes.ring_eval},
                    plots=False)
    rows = res.to_rows()
    assert len(rows) == 8 and rows[0]["collective"] == "ring" and rows[4]["collective"] == "rabenseifner"
    rows[0]["nodes"] = -1  # a copy: the result is unchanged
    assert res.rows[0]["nodes"] == 1
    path = res.to_csv(tmp_path / "t.csv")
    with open(path) as fh:
        got = list(csv.DictReader(fh))
    assert len(got) == 8 and got[3]["nodes"] == "8"
    with pytest.raises(DlscaleError, match="needs out_dir"):
        api.sweep({"cluster": "x", "workload": "y", "nodes": [1]})


def test_plan_through_api(tmp_path):
    c, w = sweep_fakes.write_configs(tmp_path)
    res = api.plan(w, [c], collectives=["ring"], evaluator=sweep_fakes.ring_eval, max_nodes=4)
    assert res.feasible and {r["nodes"] for r in res.to_rows()} == {1, 2, 4}
    res.to_csv(tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().startswith("rank,cluster,topology")


def test_simulate_with_stragglers_runs_the_real_simulator():
    """Issue 26 item 3: ``stragglers=0.1`` raised a raw TypeError from the simulator (the
    old test replaced the simulator with a fake that took the keyword)."""
    kw = {"iterations": 4, "efficiency": False}
    res = api.simulate("summit", "resnet50", [1, 2], seed=5, stragglers=0.1, **kw)
    same = api.simulate("summit", "resnet50", [1, 2], seed=5, noise="lognormal:0.1", **kw)
    calm = api.simulate("summit", "resnet50", [1, 2], seed=5, **kw)
    assert res.rows == same.rows and res.meta["fidelity"] == "simulated"
    assert [r["nodes"] for r in res.rows] == [1, 2] and res.rows[0]["time_to_train_s"] > 0
    assert res.rows[1]["iteration_s"] > calm.rows[1]["iteration_s"]  # the slowest rank waits
    assert len(res.raw) == 2


@pytest.mark.parametrize("kw, msg", [
    ({"straggler": 0.1}, "simulate: unknown option straggler; valid: stragglers, algorithm"),
    ({"stragglers": 0.1, "noise": "none"}, "stragglers and noise both given"),
    ({"stragglers": -1}, "stragglers must be a lognormal sigma >= 0, got -1"),
    ({"stragglers": 5.0}, "sigma"),
])
def test_simulate_refuses_a_bad_option_with_one_line(kw, msg):
    with pytest.raises(ConfigError, match=re.escape(msg)):
        api.simulate("summit", "resnet50", 1, iterations=2, **kw)


def test_simulate_without_a_simulator_says_so(monkeypatch):
    import dlscale.simulator as sim

    monkeypatch.delattr(sim, "simulate", raising=False)
    with pytest.raises(DlscaleError, match=r"needs dlscale\.simulator\.simulate"):
        api.simulate("summit", "resnet50", 1)


@pytest.mark.skipif(importlib.util.find_spec("dlscale.perfmodel.training.predict") is None,
                    reason="dlscale.perfmodel.training.predict not there yet")
def test_predict_rows_and_csv(tmp_path):
    res = api.predict("summit", "resnet50", "1-16")
    rows = res.to_rows()
    assert [r["nodes"] for r in rows] == [1, 2, 4, 8, 16]
    assert all(r["samples_per_s"] > 0 for r in rows)
    assert rows[-1]["time_to_train_s"] < rows[0]["time_to_train_s"]
    res.to_csv(tmp_path / "p.csv")
    assert (tmp_path / "p.csv").read_text().count("\n") == 6
