"""Capacity planning: ranking, limits, infeasibility explanations, input checks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import load_cluster, load_workload
from dlscale.plan import plan

sys.path.insert(0, str(Path(__file__).parent))
import sweep_fakes


@pytest.fixture
def setup(tmp_path):
    c, w = sweep_fakes.write_configs(tmp_path)
    return load_cluster(c), load_workload(w)


def run(setup, **kw):
    cluster, workload = setup
    kw.setdefault("collectives", ["ring"])
    return plan(workload, [cluster], evaluator=sweep_fakes.ring_eval, **kw)


def test_ranked_by_cost_and_all_feasible(setup):
    res = run(setup, min_efficiency=0.01, collectives=["ring", "rabenseifner"])
    assert res.feasible
    costs = [r["cost"] for r in res.rows]
    assert costs == sorted(costs)
    assert [r["rank"] for r in res.rows] == list(range(1, len(res.rows) + 1))
    assert all(r["efficiency"] >= 0.01 for r in res.rows)
    # the ring_eval efficiency drops with nodes: the candidates below 1% are gone
    assert len(res.candidates) > len(res.rows)
    r = res.rows[0]
    assert r["cost"] == pytest.approx(3.0 * r["node_hours"])
    assert r["time_s"] == pytest.approx(2 * 60000 / r["samples_per_s"])
    assert r["bottleneck"] in ("compute", "network")
    assert r["power_w"] == 1800 * r["nodes"]


def test_max_nodes_caps_search(setup):
    res = run(setup, max_nodes=8)
    assert max(r["nodes"] for r in res.candidates) == 8


def test_deadline_infeasible_says_by_how_much(setup):
    fastest = min(c["time_s"] for c in run(setup).candidates)
    res = run(setup, deadline_s=fastest / 2)
    assert not res.feasible and not res.rows
    assert len(res.infeasible) == 1
    assert res.infeasible[0].startswith("deadline: best ")
    assert "(100% over)" in res.infeasible[0]


def test_two_limits_each_reported(setup):
    res = run(setup, throughput=1e12, max_power_w=1000.0)
    assert not res.feasible
    text = "\n".join(res.infeasible)
    assert "throughput: best" in text and "short" in text
    assert "max_power: best 1.8 kW against a limit of 1 kW (80% over)" in text


def test_budget_needs_price(setup, tmp_path):
    _cluster, workload = setup
    free = load_cluster(sweep_fakes.CLUSTER_TOML)
    with pytest.raises(ConfigError, match=r"budget_cost: cluster 'my-v100-cluster' has no price"):
        plan(workload, [free], budget_cost=100.0, evaluator=sweep_fakes.ring_eval)
    res = plan(workload, [free], budget_cost=1e9, prices={"my-v100-cluster": 2.0},
               collectives=["ring"], evaluator=sweep_fakes.ring_eval)
    assert res.rows[0]["cost"] == pytest.approx(2.0 * res.rows[0]["node_hours"])


@pytest.mark.parametrize("kw, match", [
    ({"min_efficiency": 1.5}, r"min_efficiency: must be in \(0, 1\], got 1\.5"),
    ({"epochs": 1, "samples": 10}, r"give epochs or samples, not both"),
    ({"deadline_s": -1}, r"deadline_s: must be a finite number > 0, got -1"),
    ({"rank_by": "speed"}, r"rank_by: unknown name 'speed'"),
    ({"collectives": ["rings"]}, r"collectives: unknown name 'rings'.*did you mean 'ring'"),
    ({"prices": {"nope": 1.0}}, r"prices: unknown name 'nope'"),
])
def test_bad_requests(setup, kw, match):
    with pytest.raises(ConfigError, match=match):
        run(setup, **kw)


def test_json_written(setup, tmp_path):
    import json

    res = run(setup, deadline_s=1e-9)
    res.to_json(tmp_path / "p.json")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["meta"]["feasible"] is False
    assert doc["meta"]["infeasible"][0].startswith("deadline")


def test_plan_command(tmp_path, capsys):
    import argparse
    import json

    from dlscale.commands import plan as cmd

    c, w = sweep_fakes.write_configs(tmp_path)
    parser = argparse.ArgumentParser(prog="dlscale")
    cmd.add_parser(parser.add_subparsers(dest="command"))
    out = tmp_path / "plan.json"
    base = ["plan", str(w), "--cluster", str(c), "--collectives", "ring", "--max-nodes", "4",
            "-o", str(out)]
    args = parser.parse_args([*base, "--budget", "1e6"])
    assert args.run(args) == 0
    text = capsys.readouterr().out
    assert "rank  cluster" in text and "my-v100-cluster" in text
    assert json.loads(out.read_text())["meta"]["feasible"] is True
    args = parser.parse_args([*base, "--deadline-h", "1e-9"])
    assert args.run(args) == 1
    assert "infeasible:\n  deadline: best" in capsys.readouterr().out
    args = parser.parse_args([*base, "--price", "my-v100-cluster=abc"])
    with pytest.raises(ConfigError, match=r"--price: expected NAME=PRICE_PER_NODE_HOUR"):
        args.run(args)
