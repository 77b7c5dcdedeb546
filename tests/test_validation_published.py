"""Tests of validation/published.py and the published cases.

Every published quantity of every case is held to its tolerance; the ones the model
misses are expected failures (strict), with the diagnosed cause as the reason, so a
model change that fixes one makes its test fail until the case file is updated.
"""

from __future__ import annotations

import argparse
import json
from functools import cache

import pytest

from dlscale.commands.validate_published import add_published_parser, run_published
from dlscale.perfmodel.errors import ConfigError
from dlscale.validation.published import (
    CASE_MODULES,
    Quantity,
    compare,
    get_case,
    miss_key,
    run_case,
)


@cache
def _rows(case: str, fidelity: str = "analytical") -> dict[str, dict]:
    rows, _ = run_case(case, fidelity)
    return {r["quantity"]: r for r in rows}


def _params():
    out = []
    for case in CASE_MODULES:
        mod = get_case(case)
        for fid in mod.FIDELITIES:
            names = ([q.name for q in mod.QUANTITIES] if fid == "analytical"
                     else list(mod.SIMULATED_QUANTITIES))
            published = {q.name for q in mod.QUANTITIES if q.published is not None}
            for name in names:
                if name not in published:
                    continue
                key = miss_key(name, fid)
                marks: list = [pytest.mark.slow] if fid == "simulated" else []
                if key in mod.MISSES:
                    marks.append(pytest.mark.xfail(strict=True, reason=mod.MISSES[key]))
                out.append(pytest.param(case, name, fid, marks=marks, id=f"{case}-{key}"))
    return out


@pytest.mark.parametrize(("case", "quantity", "fidelity"), _params())
def test_published_quantity_within_tolerance(case: str, quantity: str, fidelity: str) -> None:
    row = _rows(case, fidelity)[quantity]
    assert row["predicted"] is not None, row["note"]
    assert row["within"], f"{row['predicted']!r} vs {row['published']!r}: error {row['error']!r}"


@pytest.mark.parametrize("case", list(CASE_MODULES))
def test_case_declares_every_quantity_once_and_predicts_it(case: str) -> None:
    mod = get_case(case)
    names = [q.name for q in mod.QUANTITIES]
    assert len(names) == len(set(names))
    assert {k.split("@")[0] for k in mod.MISSES} <= set(names), "a miss names an unknown quantity"
    assert {k.split("@")[1] for k in mod.MISSES if "@" in k} <= set(mod.FIDELITIES)
    rows = _rows(case)
    assert set(rows) == set(names)
    for r in rows.values():
        assert r["source"], f"{r['quantity']} has no source"
        assert r["fidelity"] == "analytical"
        if r["within"] is False:
            assert r["note"].startswith("MISS: ") and "not yet diagnosed" not in r["note"]


def test_compare_measures_each_kind() -> None:
    eff = compare("c", "p", Quantity("e", "efficiency", 0.91, "", "s"), 0.85)
    assert eff["error"] == pytest.approx(-6.0) and eff["within"] is False
    t = compare("c", "p", Quantity("t", "time", 60.0, "min", "s"), 66.0)
    assert t["error"] == pytest.approx(0.1) and t["within"] is True
    n = compare("c", "p", Quantity("n", "count", 16, "parts", "s"), 8)
    assert n["error"] == -8 and n["within"] is False
    o = compare("c", "p", Quantity("o", "ordering", "a before b", "", "s"), ("a before b", True))
    assert o["error"] == "right" and o["within"] is True
    none = compare("c", "p", Quantity("x", "time", 1.0, "s", "s"), None)
    assert none["predicted"] is None and none["within"] is False
    pred = compare("c", "p", Quantity("y", "efficiency", None, "", "s"), 0.5)
    assert pred["within"] is None and pred["predicted"] == 0.5


def test_unknown_names_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"case: unknown name 'summit'; valid: cavdar-isc19, "):
        get_case("summit")
    with pytest.raises(ConfigError, match="quantity kind: unknown name 'speed'"):
        Quantity("x", "speed", 1.0, "", "")
    with pytest.raises(ConfigError, match="fidelity: case 'you-sc17' offers analytical, got 'x'"):
        run_case("you-sc17", "x")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dlscale validate")
    add_published_parser(p.add_subparsers(dest="what"))
    return p


def test_cli_table_json_and_plots(tmp_path, capsys) -> None:
    args = _parser().parse_args(["published", "--case", "you-sc17", "--plots", str(tmp_path),
                                 "-o", str(tmp_path / "out.json")])
    assert args.run(args) == 0
    out = capsys.readouterr().out
    assert "k80_speedup_total" in out and "MISS" in out and "within tolerance" in out
    assert (tmp_path / "you-sc17.png").stat().st_size > 10_000
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["meta"]["cases"] == ["you-sc17"]
    assert {r["quantity"] for r in doc["rows"]} == set(_rows("you-sc17"))
    args = _parser().parse_args(["published", "--case", "you-sc17", "--format", "json"])
    assert run_published(args) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["rows"] == len(_rows("you-sc17"))


def test_cli_rejects_unknown_case(capsys) -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["published", "--case", "nope"])
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_simulated_fidelity_is_the_training_simulation() -> None:
    # The case's simulated row is simulate_training's result with the fidelity's
    # settings: the same efficiency, and a time that agrees with the analytical one
    # (routed allreduces; the closed form counts the same link loads).
    import dataclasses

    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.simulator.training.run import simulate_training
    from dlscale.validation.fidelity import SETTINGS, describe, simulate_case

    c = get_cluster("stampede2-skx")
    w = dataclasses.replace(get_workload("resnet50"), ranks_per_node=2, collective="auto")
    got = simulate_case(c, w, 8)
    ref = simulate_training(c, w, 8, **SETTINGS)
    assert got.network == "fast" and got.ranks == 16
    assert got.efficiency == ref.efficiency and got.iteration_s == ref.iteration_s
    assert got.iteration_s == pytest.approx(got.analytical_iteration_s, rel=0.02)
    assert describe(got).startswith("simulated iteration ")


def test_simulated_fidelity_rejects_what_it_cannot_run() -> None:
    # Cavdar's weak runs (C7): 4 ranks per node on a node of 2 devices.
    import dataclasses

    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.validation.fidelity import simulate_case

    c = get_cluster("stampede2-skx")
    w = dataclasses.replace(get_workload("transformer-base"), ranks_per_node=4,
                            sparse_as_dense=True)
    with pytest.raises(ConfigError, match=r"network: 8 ranks \(4 per node\) but the simulated "
                                          r"topology has 4 endpoints"):
        simulate_case(c, w, 2)
    big = dataclasses.replace(get_workload("resnet50"), batch_per_device=100_000)
    with pytest.raises(ConfigError, match=r"workload: resnet50 on 2 nodes of summit does not fit"):
        simulate_case(get_cluster("summit"), big, 2)


def test_catalog_holds_what_the_issue_lists() -> None:
    # Issue 7, "Also": models, links and servers the cases (and their variants) need.
    from dlscale.perfmodel import catalog

    for name in ("inception-v3", "resnet101", "vgg19", "resnet50", "alexnet-cifar10",
                 "transformer-base", "fcn-summit"):
        catalog.get_model(name)
    for name in ("eth-10g-tcp", "eth-100g-roce", "ib-fdr", "ib-edr", "ib-hdr"):
        catalog.get_link(name)
    for name in ("pcie-4xp100", "pcie-8xp100", "pcie-4xv100", "pcie-8xv100", "dgx1-p100",
                 "dgx1-v100", "summit", "stampede2-skx", "stampede2-knl", "cori-knl-flat",
                 "k80-8gpu"):
        catalog.get_cluster(name)
    assert catalog.get_cluster("pcie-8xv100").node.devices_per_node == 8
