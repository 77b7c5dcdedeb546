"""Co-simulation: real kernels on real arrays in simulated event order."""

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.training.run import simulate_training

KNL = get_cluster("cori-knl")


def _run(alg, nodes=8, iterations=40, workload=None, **opts):
    w = workload or get_workload("googlenet")
    return simulate_training(KNL, w, nodes, algorithm=alg, iterations=iterations,
                             mode="cosim", efficiency=False, cosim_options=opts)


def _time_to(res, accuracy):
    for p in res.curve:
        if p["accuracy"] >= accuracy:
            return p["time_s"]
    return np.inf


@pytest.mark.parametrize("alg", ["sync-sgd", "easgd", "sync-easgd", "async-easgd",
                                 "async-measgd", "hogwild-easgd", "async-sgd", "async-msgd",
                                 "hogwild-sgd"])
def test_every_algorithm_learns_the_digits(alg):
    lr = {"async-sgd": 0.01, "async-msgd": 0.002, "hogwild-sgd": 0.01}.get(alg, 0.1)
    r = _run(alg, nodes=4, iterations=60, lr=lr, eval_every=20)
    assert r.surrogate.startswith("digits MLP 64-32-10")
    assert "googlenet on cori-knl" in r.surrogate
    assert r.curve[0]["accuracy"] < r.curve[-1]["accuracy"]
    assert r.curve[-1]["accuracy"] > 0.5          # chance is 0.1
    times = [p["time_s"] for p in r.curve]
    assert times == sorted(times)


def test_async_easgd_beats_async_sgd_in_simulated_time():
    # 64 KNL workers on one master (GoogLeNet timing): the SGD baseline exchanges every
    # step and saturates the master; EASGD exchanges every tau = 4 steps. Each
    # algorithm gets the better of two learning rates, as a user would tune it.
    w = dataclasses.replace(get_workload("googlenet"), tau=4)
    best = {}
    for alg in ("async-easgd", "async-sgd"):
        best[alg] = min(_time_to(_run(alg, 64, 150, workload=w, lr=lr, eval_every=5), 0.9)
                        for lr in (0.01, 0.3))
    assert best["async-easgd"] < best["async-sgd"] < np.inf


def test_hogwild_loses_updates_under_contention_only():
    crowded = _run("hogwild-easgd", nodes=64, iterations=20, eval_every=20)
    alone = _run("hogwild-easgd", nodes=1, iterations=20, eval_every=20)
    assert crowded.counters["lost_updates"] > 0
    assert alone.counters["lost_updates"] == 0
    locked = _run("async-easgd", nodes=64, iterations=20, eval_every=20)
    assert "lost_updates" not in locked.counters


def test_cosim_is_deterministic():
    a = _run("hogwild-sgd", nodes=16, iterations=20, eval_every=5, lr=0.01)
    b = _run("hogwild-sgd", nodes=16, iterations=20, eval_every=5, lr=0.01)
    assert a.curve == b.curve and a.counters == b.counters


def test_collapsed_ensemble_snapshots_are_averaged():
    r = _run("sync-sgd", nodes=4, iterations=40, lr=0.1, lr_schedule="collapsed:10",
             eval_every=10)
    assert r.counters["ensemble_snapshots"] == 4
    assert 0.5 < r.counters["ensemble_accuracy"] <= 1.0


def test_bad_cosim_option_is_named():
    with pytest.raises(ConfigError, match="cosim options: unknown lrr"):
        _run("sync-sgd", lrr=0.1)
    with pytest.raises(ConfigError, match="cosim dataset: must be 'digits' or 'synthetic'"):
        _run("sync-sgd", dataset="mnist")


def test_sync_sgd_replicas_stay_identical(monkeypatch):
    from dlscale.simulator.training import cosim as training_cosim

    seen = {}
    orig = training_cosim.Numerics.sync_step

    def spy(self, k, t):
        orig(self, k, t)
        seen["x"] = self.x.copy()

    monkeypatch.setattr(training_cosim.Numerics, "sync_step", spy)
    _run("sync-sgd", nodes=8, iterations=5, lr=0.1)
    x = seen["x"]
    assert x.shape[0] == 8 and np.all(x == x[0])


def test_cnn_model_learns_and_bad_model_is_named():
    r = _run("async-easgd", nodes=4, iterations=60, lr=0.1, eval_every=20, model="cnn")
    assert r.surrogate.startswith("digits CNN 8x8-conv3x3x8-pool2-32-10")
    assert r.curve[0]["accuracy"] < r.curve[-1]["accuracy"] and r.curve[-1]["accuracy"] > 0.5
    with pytest.raises(ConfigError, match="cosim model: must be 'mlp' or 'cnn', got 'rnn'"):
        _run("sync-sgd", model="rnn")
    with pytest.raises(ConfigError, match="cosim model: 'cnn' needs square images"):
        _run("sync-sgd", model="cnn", hidden=0)
