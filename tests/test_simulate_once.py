"""One ``simulate`` runs each simulation it needs once (issue 28, "values that travel").

Counted, not timed: the simulation entry point (``run._run``, which runs the SimPy
processes of one configuration), the analytical model of a whole iteration
(``iteration_times`` of the run module) and ``predict``. A command's rows share one
one-node baseline run; a one-node row that is its own baseline (the stack's own
allreduce, or a forced one that is what the stack's own runs for every bucket) is not
simulated twice; the baseline runs carry no analytical reference; the row notes take
the network's limiting level from the same summary ``predict`` takes it from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io

import numpy as np
import pytest

import dlscale.perfmodel.training.predict as predict_module
import dlscale.perfmodel.training.ranges as ranges_module
import dlscale.simulator.training.run as run_module
from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.training.predict import baseline_workload, predict
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import collective_summary
from dlscale.simulator.training.run import simulate_training


@pytest.fixture
def counts(monkeypatch):
    """Calls of the simulation, of the iteration model, of the closed-form band (each is
    six predicts: the central answer and the fast, slow, serial, exchange-bound and
    step-bound corners, issue 25)
    and of predict, by name."""
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
    wrap(ranges_module, "predict_range", "bands")
    return seen


def _simulate(line: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(line.split()) == 0
    return out.getvalue()


def test_rows_share_one_baseline_and_the_one_node_row_is_it(counts):
    text = _simulate("simulate summit resnet50 --nodes 1,2,4 --iterations 5")
    # no predict but the band's (one per row, six predicts each)
    assert counts == {"simulations": 3, "iteration_times": 3, "bands": 3, "predict": 18}
    assert text.count("baseline: efficiency against 1 node running auto (ring)") == 1


def test_a_forced_collective_shares_the_baseline_of_its_rows(counts):
    _simulate("simulate summit resnet50 --nodes 2,4 --collective ring --iterations 5")
    # two rows and one baseline (auto), which carries no analytical reference
    assert counts == {"simulations": 3, "iteration_times": 2, "bands": 2, "predict": 12}


def test_a_forced_collective_that_auto_runs_is_simulated_once(counts):
    skx, w = get_cluster("stampede2-skx"), get_workload("resnet50")
    forced = dataclasses.replace(w, collective="rabenseifner")
    r = simulate_training(skx, forced, 1, iterations=5)
    assert counts["simulations"] == 1
    # what a second simulation of the stack's own allreduce gives: the same run
    one = simulate_training(skx, baseline_workload(forced), 1, iterations=5, efficiency=False)
    assert one.iteration_times_s.tolist() == r.iteration_times_s.tolist()
    assert r.efficiency == r.samples_per_s / one.samples_per_s == 1.0
    assert r.baseline_iteration_s == one.iteration_s
    assert r.baseline_runs == f"auto ({one.counters['allreduce']})" == "auto (rabenseifner)"


def test_a_forced_collective_that_auto_does_not_run_has_its_own_baseline(counts):
    summit, w = get_cluster("summit"), get_workload("resnet50")
    r = simulate_training(summit, dataclasses.replace(w, collective="ring"), 1, iterations=4)
    assert counts["simulations"] == 2       # auto runs double-binary-tree for a bucket
    one = simulate_training(summit, w, 1, iterations=4, efficiency=False)
    assert r.efficiency == r.samples_per_s / one.samples_per_s
    assert r.baseline_iteration_s == one.iteration_s


def test_the_api_shares_baselines_when_asked(counts):
    summit, w = get_cluster("summit"), get_workload("resnet50")
    shared: dict = {}
    a = simulate_training(summit, w, 2, iterations=3, baselines=shared)
    b = simulate_training(summit, w, 4, iterations=3, baselines=shared)
    assert counts["simulations"] == 3 and len(shared) == 1
    alone = simulate_training(summit, w, 4, iterations=3)
    assert (a.baseline_iteration_s, b.efficiency) == (alone.baseline_iteration_s,
                                                      alone.efficiency)


@pytest.mark.parametrize("cluster,collective,nodes", [
    ("summit", "auto", [1, 2, 4, 64, 512]), ("summit", "hierarchical", [2, 8, 100]),
    ("stampede2-knl", "rabenseifner", [1, 3, 16, 64]), ("cori-knl", "auto", [2, 9, 128])])
def test_the_notes_limit_is_predicts(cluster, collective, nodes):
    c = get_cluster(cluster)
    w = dataclasses.replace(get_workload("resnet50"), collective=collective)
    limit = collective_summary(c, w, layout(c, w, [1, *nodes]))[1][1:]
    np.testing.assert_array_equal(limit, predict(c, w, nodes).network_limit)
