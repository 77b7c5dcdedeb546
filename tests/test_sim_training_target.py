"""Time to a target accuracy in co-simulation: crossing, search, repeats, caps, CLI, sweep."""

import json
import math
import re

import numpy as np
import pytest

import dlscale.kernels as K
from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.training import target as tt
from dlscale.simulator.training.cosim import _holdout

KNL, NET = get_cluster("cori-knl"), get_workload("googlenet")


@pytest.fixture
def tiny_grid(monkeypatch):
    """A 2 x 1 x 2 grid (rates x betas x taus) so that a search takes seconds."""
    monkeypatch.setattr(tt, "LR_FACTORS", (1.0, 3.0))
    monkeypatch.setattr(tt, "BETAS", (0.9,))
    monkeypatch.setattr(tt, "TAUS", (1, 4))
    monkeypatch.setattr(tt, "MOMENTA", (0.9,))


def _spec(target=0.8, cap=150, **kw):
    return tt.TargetSpec(target, max_iterations=cap, eval_every=3, **kw)


def test_reported_crossing_is_where_the_curve_first_reaches_the_target():
    rep = tt.time_to_target(KNL, NET, 4, ["async-easgd", "async-sgd"], _spec(), repeats=2)
    for alg in ("async-easgd", "async-sgd"):
        for run, curve in zip(rep.runs[alg], rep.curves[alg], strict=True):
            acc = np.array([p["accuracy"] for p in curve])
            i = int(np.argmax(acc >= 0.8))
            assert acc[i] >= 0.8 and np.all(acc[:i] < 0.8)   # the first one at or above
            assert run["time_to_target_s"] == curve[i]["time_s"]
            assert run["samples_to_target"] == curve[i]["samples"] == \
                curve[i]["iteration"] * 4 * 16               # 4 workers, batch 16
    row = rep.summary()[0]
    times = [r["time_to_target_s"] for r in rep.runs["async-easgd"]]
    assert row["time_to_target_s"] == np.median(times)
    assert (row["time_min_s"], row["time_max_s"]) == (min(times), max(times))
    assert rep.seeds == [0, 1] and row["reached"] == "2/2" and row["verdict"] == "reached"


def test_search_is_deterministic_and_picks_the_fastest_point(tiny_grid):
    a = tt.tune(KNL, NET, 4, "async-easgd", _spec(), seed=3)
    b = tt.tune(KNL, NET, 4, "async-easgd", _spec(), seed=3)
    assert a.grid == b.grid and a.chosen == b.chosen
    assert len(a.grid) == 4 and sum(g["chosen"] for g in a.grid) == 1
    best = min(g["time_to_target_s"] for g in a.grid)
    assert math.isfinite(best)
    chosen = next(g for g in a.grid if g["chosen"])
    assert chosen["time_to_target_s"] == best
    assert a.chosen == {k: chosen[k] for k in ("lr", "beta", "tau")}


def test_tuned_repeats_are_deterministic(tiny_grid):
    run = lambda: tt.time_to_target(KNL, NET, 4, ["async-sgd"], _spec(), tune_grid=True,  # noqa: E731
                                    repeats=2, seed=5).to_dict()
    assert run() == run()


def test_validation_split_is_held_out_of_training_and_apart_from_test():
    data = K.load_digits_split(seed=0)
    train, (Xv, yv) = _holdout(data, 0.2, 0)
    assert len(yv) == round(0.2 * len(data.y_train))
    assert len(train.y_train) + len(yv) == len(data.y_train)
    assert train.X_test is data.X_test
    # training and validation rows together are the training split, row for row
    assert sorted(map(bytes, np.vstack([train.X_train, Xv]))) == sorted(map(bytes, data.X_train))
    assert sorted(np.concatenate([train.y_train, yv])) == sorted(data.y_train)


def test_search_measures_on_validation_and_repeats_on_test(monkeypatch):
    seen = []
    orig = tt.run_one

    def spy(*a, **kw):
        seen.append((a[7], a[5], a[8]))          # split, run seed, data seed
        return orig(*a, **kw)

    monkeypatch.setattr(tt, "run_one", spy)
    monkeypatch.setattr(tt, "LR_FACTORS", (1.0,))
    tt.time_to_target(KNL, NET, 2, ["async-sgd"], _spec(cap=10), tune_grid=True, repeats=2)
    # the search's run seed (2) is none of the repeats' (0, 1); one data split (seed 0)
    assert seen == [("validation", 2, 0), ("test", 0, 0), ("test", 1, 0)]


def test_cap_hit_gives_a_verdict_and_no_time():
    rep = tt.time_to_target(KNL, NET, 2, ["async-sgd"], _spec(target=1.0, cap=8))
    row = rep.summary()[0]
    assert row["reached"] == "0/1" and row["time_to_target_s"] == math.inf
    assert row["verdict"].startswith("cap (8 steps/worker) hit in 1 of 1 runs; best accuracy")
    t = tt.time_to_target(KNL, NET, 4, ["async-sgd"], _spec(max_sim_time_s=1e-3)).summary()[0]
    assert t["reached"] == "0/1" and "or 0.001 s" in t["verdict"]


def test_ordering_is_stated_only_beyond_the_spread():
    assert tt.ordering("a", [1, 2, 3], "b", [4, 5, math.inf]).startswith("a faster than b")
    assert "no ordering" in tt.ordering("a", [1, 5], "b", [4, 6])
    assert tt.ordering("a", [math.inf] * 2, "b", [9, 9]).startswith("b faster than a")
    assert tt.ordering("a", [math.inf], "b", [math.inf]).endswith("neither reached the "
                                                                  "target, no ordering")


def test_defaults_follow_the_cited_rules():
    assert tt.default_settings("async-easgd", 16) == {"lr": 0.1, "beta": 0.9, "tau": 4}
    assert tt.default_settings("sync-sgd", 8)["lr"] == pytest.approx(0.1 * 8 * 0.1)
    assert tt.default_settings("async-easgd", 16, {"lr": 0.5, "tau": 2}) == \
        {"lr": 0.5, "beta": 0.9, "tau": 2}


@pytest.mark.parametrize("argv, msg", [
    (["--target-accuracy", "0"], "--target-accuracy: must be in (0, 1], got 0.0"),
    (["--target-accuracy", "1.5"], "--target-accuracy: must be in (0, 1], got 1.5"),
    (["--target-accuracy", "0.9", "--repeats", "0"], "--repeats: must be an integer >= 1, got 0"),
    (["--tune"], "--tune: only with --target-accuracy"),
    (["--repeats", "3"], "--repeats: only with --target-accuracy"),
    (["--target-accuracy", "0.9", "--nodes", "2,4"], "--nodes: --target-accuracy runs one"),
    (["--target-accuracy", "0.9", "--eval-every", "0"], "--eval-every: must be an integer >= 1"),
    (["--target-accuracy", "0.9", "--trace-out", "t.json"], "--trace-out: not with --target-accuracy"),
])
def test_bad_target_options_are_one_line_errors(capsys, argv, msg):
    code = main(["simulate", "cori-knl", "googlenet", "--nodes", "2", "--cosim", *argv])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_cli_prints_settings_grid_and_writes_json_and_plot(capsys, tmp_path, tiny_grid):
    png, out = tmp_path / "t.png", tmp_path / "rows.csv"
    argv = ["simulate", "cori-knl", "googlenet", "--nodes", "4", "--cosim", "--compare",
            "async-easgd,async-sgd", "--target-accuracy", "0.8", "--tune", "--repeats", "2",
            "--iterations", "150", "--eval-every", "3", "--plot", str(png), "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "time to 0.8 test accuracy; settings tuned on a validation split" in text
    assert "search of async-easgd (validation split, run seed 2): 4 points" in text
    assert "seed pair: " in text and png.stat().st_size > 0
    assert out.read_text().startswith("algorithm,lr,beta,alpha,tau")
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seeds"] == [0, 1] and doc["tuned"] is True
    assert len(doc["searches"]["async-easgd"]) == 4 and len(doc["searches"]["async-sgd"]) == 2
    assert [r["algorithm"] for r in doc["summary"]] == ["async-easgd", "async-sgd"]


def test_study_cosim_fidelity_reports_time_to_target(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('cluster = "cori-knl"\nworkload = "googlenet"\nnodes = [2]\n'
                 'fidelity = "cosim"\ntarget_accuracy = 0.8\nmax_iterations = 200\n'
                 'rank_by = "time_to_target_s"\n'
                 '[vary]\nalgorithm = ["async-easgd", "async-sgd"]\ntau = [1, 4]\n')
    assert main(["sweep", str(f), "-o", str(tmp_path / "out"), "--executor", "serial",
                 "--quiet", "--no-plots"]) == 0
    table = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("point "))
    assert "time_to_target_s" in table
    text = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    rows = sorted((json.loads(line) for line in text), key=lambda r: r["point"])
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    assert all(r["reached"] and r["time_to_target_s"] > 0 for r in rows)
    easgd = [r for r in rows if r["algorithm"] == "async-easgd"]
    assert [r["cosim_tau"] for r in easgd] == [1, 4]
    assert "time_to_target_s" in (tmp_path / "out" / "results.csv").read_text().splitlines()[0]


@pytest.mark.parametrize("body, msg", [
    ('fidelity = "cosim"\ntarget_accuracy = 1.5\n', "target_accuracy: must be a number in (0, 1]"),
    ('fidelity = "cosim"\nmax_iterations = 0\n', "max_iterations: must be an integer >= 1"),
    ('rank_by = "time_to_target_s"\n', "time_to_target_s needs fidelity = 'cosim'"),
])
def test_study_cosim_keys_are_checked(tmp_path, body, msg):
    from dlscale.study import load_study

    f = tmp_path / "s.toml"
    f.write_text(f'cluster = "cori-knl"\nworkload = "googlenet"\nnodes = [2]\n{body}')
    with pytest.raises(ConfigError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        load_study(f)


def test_readme_time_to_target_example_is_the_command_and_its_columns():
    import re
    import shlex
    from pathlib import Path

    from dlscale.commands.simulate_target import _COLS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    part = readme.split("#### Time to a target accuracy", 1)[1]
    cmd = re.search(r"^\$ (dlscale simulate .*--target-accuracy.*)$", part, re.M).group(1)
    argv = shlex.split(cmd)[1:]
    assert {"--tune", "--repeats", "--cosim"} <= set(argv)
    header = next(line for line in part.splitlines() if line.startswith("algorithm "))
    assert header.split() == list(_COLS)
    from dlscale.cli import build_parser

    args = build_parser().parse_args(argv)
    assert args.target_accuracy == 0.9 and args.tune and args.repeats == 3


def test_the_tuners_moving_rates_are_ones_the_run_accepts():
    """Issue 26 item 1: the grid's beta = 2.7 (alpha = 2.7 / p) was refused by the options
    check ('beta must be a finite number in [0, 1]'), so every tuned EASGD run exited 2."""
    from dlscale.simulator.training.cosim import check_beta, check_cosim_options

    for alg in ("easgd", "sync-easgd", "async-easgd", "async-measgd", "hogwild-easgd"):
        for p in (1, 2, 3, 16):
            betas = {s["beta"] for s in tt.grid(alg, p)}
            assert 0.9 in betas and (2.7 in betas) == (p >= 3 and alg != "sync-easgd")
            for beta in betas:
                check_cosim_options({"beta": beta})
                assert 0 < check_beta(beta, p, alg) <= 1


def test_tuned_easgd_search_with_beta_above_one_runs(capsys, monkeypatch):
    monkeypatch.setattr(tt, "LR_FACTORS", (3.0,))
    monkeypatch.setattr(tt, "TAUS", (4,))
    argv = ["simulate", "cori-knl", "googlenet", "--nodes", "4", "--cosim", "--compare",
            "async-easgd", "--target-accuracy", "0.5", "--tune", "--iterations", "40"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "search of async-easgd (validation split, run seed 1): 2 points" in \
        capsys.readouterr().out


def test_a_moving_rate_the_algorithm_does_not_allow_is_refused():
    from dlscale.simulator.training.run import simulate_training

    for alg, beta, msg in (("async-easgd", 5.0, "beta 5.0 on 4 workers gives async-easgd's "
                            "elastic rate alpha = beta / p = 1.25 > 1; allowed: 0 <= beta <= p"),
                           ("sync-easgd", 1.5, "allowed: 0 <= beta <= 1")):
        with pytest.raises(ConfigError, match=re.escape(msg)):
            simulate_training(KNL, NET, 4, algorithm=alg, iterations=4, mode="cosim",
                              cosim_options={"beta": beta})
