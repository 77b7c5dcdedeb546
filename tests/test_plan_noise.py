"""``plan --noise`` (one parser entry and one policy with ``predict --noise``,
dlscale/commands/noise_arg.py): it acts on the data-parallel and the transformer plan,
the answer being what ``predict`` gives with the same spec, and a bad spec is one line
before any work. Every test here fails before the flag existed (argparse refused it)."""

from __future__ import annotations

import json

import pytest

from dlscale.cli import main

DP = ["plan", "resnet50", "--cluster", "summit", "--nodes", "1,8", "--top", "5"]
LLM = ["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "16", "--nodes", "1",
       "--top", "1"]


def _plans(argv, tmp_path, name):
    out = tmp_path / f"{name}.json"
    assert main([*argv, "-o", str(out)]) in (0, 1)
    return json.loads(out.read_text())


def _rate(doc, key):
    return {(p["nodes"], p["algorithm"], p["collective"]): p[key] for p in doc["rows"]}


def test_noise_moves_the_data_parallel_plan(tmp_path, capsys):
    base = _plans(DP, tmp_path, "base")
    calm = _plans([*DP, "--noise", "none"], tmp_path, "none")
    loud = _plans([*DP, "--noise", "lognormal:0.1"], tmp_path, "loud")
    capsys.readouterr()
    assert [d["meta"]["noise"]["summit"][:16] for d in (base, calm, loud)] == [
        "lognormal:0.0148", "none", "lognormal:0.1"]
    r0, r1, r2 = (_rate(d, "samples_per_s") for d in (base, calm, loud))
    # the GPUs' default spread lies between none and a 10% spread, on every plan
    assert r0 and set(r0) == set(r1) == set(r2)
    assert all(r1[k] > r0[k] > r2[k] for k in r0)


def test_the_data_parallel_plan_takes_predicts_answer(tmp_path, capsys):
    doc = _plans([*DP, "--noise", "lognormal:0.1"], tmp_path, "p")
    capsys.readouterr()
    one = [p for p in doc["rows"] if p["nodes"] == 8 and p["algorithm"] == "sync-sgd"]
    assert main(["predict", "summit", "resnet50", "--nodes", "8", "--noise", "lognormal:0.1",
                 "--format", "json"]) == 0
    pred = json.loads(capsys.readouterr().out)["rows"][0]
    assert one and pred["samples_per_s"] == pytest.approx(one[0]["samples_per_s"], rel=1e-12)


def test_noise_moves_the_transformer_plan(tmp_path, capsys):
    calm = _plans([*LLM, "--noise", "none"], tmp_path, "none")
    loud = _plans([*LLM, "--noise", "lognormal:0.1"], tmp_path, "loud")
    capsys.readouterr()
    assert [d["meta"]["noise"] for d in (calm, loud)] == [{"dgx1-v100": "none"},
                                                          {"dgx1-v100": "lognormal:0.1"}]
    best = [max(p["tokens_per_s"] for p in d["rows"]) for d in (calm, loud)]
    assert best[0] > best[1]


@pytest.mark.parametrize("argv", [DP, LLM], ids=["data-parallel", "transformer"])
@pytest.mark.parametrize("spec,match", [("gauss", "unknown name 'gauss'"),
                                        ("lognormal:7", "must be a number in [0, 2]"),
                                        ("", "unknown name ''")])
def test_a_bad_noise_is_one_line(argv, spec, match, capsys):
    assert main([*argv, "--noise", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("dlscale plan: error: --noise: ") and match in err[0]


@pytest.mark.parametrize("argv", [["predict", "summit", "resnet50", "--nodes", "1"],
                                  ["predict", "dgx1-v100", "gpt-1.7b"]],
                         ids=["data-parallel", "transformer"])
def test_predict_takes_the_same_policy(argv, capsys):
    """An empty spec is refused on both predict paths (the data-parallel one took it
    silently as "the cluster's default" before, while the transformer one refused it)."""
    assert main([*argv, "--noise", ""]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dlscale predict: error: --noise: unknown name ''")
