"""One ``simulate`` runs one simulation per row (issue 28, "values that travel").

Counted, not timed: the simulation entry point (``run._run``, which runs the SimPy
processes of one configuration), the closed form's iteration alone (``iteration_times``
of the run module), the closed-form band (``predict_range``: six predicts, the central
answer and the fast, slow, serial, exchange-bound and step-bound corners, issue 25) and ``predict``. One question
(a command, an API call: its node counts, one algorithm) is one simulation per node
count and one closed-form answer over all of them, which gives every row its
analytical reference, the one-node baseline its efficiency divides by (``predict``'s,
not a simulation) and its band; the row notes take the network's limiting level from
the same summary ``predict`` takes it from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import numpy as np
import pytest

import dlscale.api
import dlscale.perfmodel.training.predict as predict_module
import dlscale.simulator.training.run as run_module
from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import collective_summary
from dlscale.simulator.training.run import analytical_answer, simulate_training


@pytest.fixture
def counts(monkeypatch):
    """Calls of the simulation, of the closed form's iteration alone, of the closed-form
    band (each is six predicts) and of predict, by name."""
    seen = {"simulations": 0, "iteration_times": 0, "bands": 0, "predict": 0}

    def wrap(module, name, key):
        real = getattr(module, name)

        def counted(*a, **k):
            seen[key] += 1
            return real(*a, **k)
        monkeypatch.setattr(module, name, counted)

    wrap(run_module, "_run", "simulations")
    wrap(run_module, "iteration_times", "iteration_times")
    wrap(predict_module, "predict", "predict")
    wrap(run_module, "predict_range", "bands")
    return seen


def _simulate(line: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(line.split()) == 0
    return out.getvalue()


def test_a_command_is_one_simulation_per_row_and_one_closed_form_answer(counts):
    text = _simulate("simulate summit resnet50 --nodes 1,2,4 --iterations 5")
    assert counts == {"simulations": 3, "iteration_times": 0, "bands": 1, "predict": 6}
    assert text.count("baseline: efficiency against 1 node running auto (ring): 0.135 s "
                      "per iteration, as predict gives it (closed form, same noise; not "
                      "simulated)") == 1


def test_the_4608_node_default_is_one_simulation(counts):
    """The benchmark's question (issue 27 item 5), on the closed-form network to keep the
    test short: the row is the one simulation, its baseline is predict's one node."""
    text = _simulate("simulate summit resnet50 --nodes 4608 --iterations 2 --network "
                     "analytical")
    assert counts == {"simulations": 1, "iteration_times": 0, "bands": 1, "predict": 6}
    assert "0.135 s per iteration, as predict gives it" in text


def test_a_forced_collective_divides_by_predicts_baseline(counts):
    _simulate("simulate summit resnet50 --nodes 2,4 --collective ring --iterations 5")
    assert counts == {"simulations": 2, "iteration_times": 0, "bands": 1, "predict": 6}
    summit, w = get_cluster("summit"), get_workload("resnet50")
    ring = dataclasses.replace(w, collective="ring")
    r = simulate_training(summit, ring, 2, iterations=5)
    base = predict(summit, ring, [2])
    assert r.efficiency == r.samples_per_s / (2 * base.baseline_samples_per_s)
    assert (r.baseline_iteration_s, r.baseline_runs) == (base.baseline_iteration_s,
                                                         "auto (ring)")


def test_compare_is_one_answer_per_algorithm(counts):
    _simulate("simulate cori-knl googlenet --nodes 2,4 --compare async-easgd,async-sgd "
              "--iterations 3")
    assert counts["simulations"] == 4 and counts["bands"] == 2
    assert counts["iteration_times"] == 0


def test_one_run_alone_answers_for_its_own_node_count(counts):
    r = simulate_training(get_cluster("summit"), get_workload("resnet50"), 2, iterations=3)
    assert (counts["simulations"], counts["bands"], counts["iteration_times"]) == (1, 1, 0)
    assert r.analytical_iteration_s == float(predict(get_cluster("summit"),
                                                     get_workload("resnet50"), [2]).iteration_s[0])
    quiet = simulate_training(get_cluster("summit"), get_workload("resnet50"), 2,
                              iterations=3, efficiency=False)
    assert (counts["simulations"], counts["bands"], counts["iteration_times"]) == (2, 1, 1)
    assert quiet.efficiency is None and quiet.analytical_iteration_s == r.analytical_iteration_s


def test_the_api_hands_one_answer_to_its_runs(counts):
    res = dlscale.api.simulate("summit", "resnet50", [1, 2, 4], iterations=3,
                               noise="lognormal:0.05")
    assert (counts["simulations"], counts["bands"], counts["iteration_times"]) == (3, 1, 0)
    alone = simulate_training(get_cluster("summit"), get_workload("resnet50"), 4,
                              iterations=3, noise="lognormal:0.05")
    assert res.raw[-1].to_rows() == alone.to_rows()


def test_an_answer_to_another_question_is_refused():
    summit, w = get_cluster("summit"), get_workload("resnet50")
    other = analytical_answer(summit, w, [2, 4], algorithm="sync-easgd")
    with pytest.raises(ConfigError, match="analytical: the closed form's answer for"):
        simulate_training(summit, w, 2, iterations=2, analytical=other)
    with pytest.raises(ConfigError, match="at 8 nodes"):
        simulate_training(summit, w, 8, iterations=2,
                          analytical=analytical_answer(summit, w, [2, 4]))


def test_the_command_rows_are_the_apis(tmp_path):
    """One front end (issue 28): the command's JSON rows are the API's rows for the same
    question, value for value (the API adds time to train, node-hours and cost)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", "summit", "resnet50", "--nodes", "1,3", "--iterations", "4",
                     "--noise", "lognormal:0.05", "--seed", "3", "--format", "json"]) == 0
    runs = json.loads(out.getvalue())["runs"]
    api = dlscale.api.simulate("summit", "resnet50", [1, 3], iterations=4, seed=3,
                               noise="lognormal:0.05")
    assert len(runs) == len(api.rows) == 2
    for run, row in zip(runs, api.rows, strict=True):
        assert {k: run[k] for k in row if k in run} == \
            {k: v for k, v in row.items() if k in run}
        assert set(api.raw[0].to_rows()[0]) <= set(run)
    assert all("time_to_train_s" in row for row in api.rows)


def test_the_command_asks_the_api(monkeypatch):
    asked = []
    real = dlscale.api.simulate

    def spy(*a, **k):
        asked.append(k.get("algorithm"))
        return real(*a, **k)

    monkeypatch.setattr(dlscale.api, "simulate", spy)
    _simulate("simulate cori-knl googlenet --nodes 2 --compare async-easgd,async-sgd "
              "--iterations 3")
    assert asked == ["async-easgd", "async-sgd"]


@pytest.mark.parametrize("cluster,collective,nodes", [
    ("summit", "auto", [1, 2, 4, 64, 512]), ("summit", "hierarchical", [2, 8, 100]),
    ("stampede2-knl", "rabenseifner", [1, 3, 16, 64]), ("cori-knl", "auto", [2, 9, 128])])
def test_the_notes_limit_is_predicts(cluster, collective, nodes):
    c = get_cluster(cluster)
    w = dataclasses.replace(get_workload("resnet50"), collective=collective)
    limit = collective_summary(c, w, layout(c, w, [1, *nodes]))[1][1:]
    np.testing.assert_array_equal(limit, predict(c, w, nodes).network_limit)


def test_a_baseline_that_does_not_fit_gives_no_efficiency():
    """One node running the whole global batch of 1536 samples does not fit a V100: no
    efficiency and no baseline time (the header said 'nan s per iteration')."""
    text = _simulate("simulate summit resnet50 --nodes 4 --global-batch 1536 --iterations 2")
    assert "# baseline: none (no efficiency in this output)" in text
    assert "nan" not in text and "efficiency" not in text.splitlines()[3]
