"""``dlscale plan TRANSFORMER``: the layout search from the command line and the API."""

from __future__ import annotations

import json

import pytest

from dlscale import api
from dlscale.perfmodel.errors import ConfigError

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests.cli_run import run_cli as _run
except ImportError:  # pragma: no cover
    from cli_run import run_cli as _run  # type: ignore[no-redef]

BASE = ["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "16", "--nodes", "1"]


def test_plans_best_row_is_predicts_answer(tmp_path, capsys):
    out = tmp_path / "p.json"
    rc, text, _ = _run([*BASE, "-o", str(out)], capsys)
    assert rc == 0 and "best: " in text and "why this layout:" in text
    b = json.loads(out.read_text())["meta"]["best"]
    argv = ["predict", "dgx1-v100", "gpt-1.7b", "--nodes", "1", "--tp", str(b["tp"]),
            "--pp", str(b["pp"]), "--microbatch", str(b["micro"]), "--global-batch", "16",
            "--schedule", b["schedule"], "--zero", str(b["zero"]), "--recompute",
            b["recompute"], "--format", "json"]
    argv += ["--virtual", str(b["virtual"])] if b["virtual"] > 1 else []
    argv += ["--sp"] if b["sp"] else []
    rc, text, _ = _run(argv, capsys)
    row = json.loads(text)["rows"][0]
    assert rc == 0 and row["iteration_s"] == b["iteration_s"]
    assert row["tflops_per_gpu"] == b["tflops_per_gpu"] and row["memory_GB"] == b["memory_GB"]


def test_plans_best_moe_row_is_predicts_answer_with_its_ep(tmp_path, capsys):
    """Mixtral 8x7B on 4 DGX H100 nodes: the search tries the ep asked (ep 1, the
    fastest here, left out), prints its column and why line, and predict with that
    --ep gives the row's numbers bit for bit."""
    out = tmp_path / "p.json"
    rc, text, _ = _run(["plan", "mixtral-8x7b", "--cluster", "dgx-h100-superpod",
                        "--global-batch", "32", "--nodes", "4", "--recompute", "selective",
                        "--sp", "on", "--ep", "2,4,8", "-o", str(out)], capsys)
    b = json.loads(out.read_text())["meta"]["best"]
    assert rc == 0 and b["ep"] > 1
    assert f", dp {b['dp']}, ep {b['ep']}, micro" in text
    assert any(ln.startswith(f"  ep {b['ep']}: the best with another ep") for ln in
               text.splitlines())
    assert " ep " in next(ln for ln in text.splitlines() if ln.startswith("rank"))
    argv = ["predict", "dgx-h100-superpod", "mixtral-8x7b", "--nodes", "4", "--tp",
            str(b["tp"]), "--pp", str(b["pp"]), "--ep", str(b["ep"]), "--microbatch",
            str(b["micro"]), "--global-batch", "32", "--schedule", b["schedule"], "--zero",
            str(b["zero"]), "--recompute", b["recompute"], "--format", "json"]
    argv += ["--virtual", str(b["virtual"])] if b["virtual"] > 1 else []
    argv += ["--sp"] if b["sp"] else []
    rc, text, _ = _run(argv, capsys)
    row = json.loads(text)["rows"][0]
    assert rc == 0 and row["ep"] == b["ep"] and row["iteration_s"] == b["iteration_s"]
    assert row["tflops_per_gpu"] == b["tflops_per_gpu"] and row["memory_GB"] == b["memory_GB"]


def test_ep_restricts_a_moe_search_and_is_refused_for_a_dense_model(capsys):
    kw = dict(global_batch=32, nodes=[4], recompute=["selective"], sp=[True])
    res = api.plan_layouts("mixtral-8x7b", ["dgx-h100-superpod"], ep=[4, 8], **kw)
    assert {m["ep"] for m in res.rows} <= {4, 8} and res.rows
    rc, text, err = _run([*BASE, "--ep", "2"], capsys)
    assert rc == 2 and text == "" and err.count("\n") == 1
    assert "ep: gpt-1.7b is a dense model (no experts)" in err
    rc, text, err = _run(["plan", "mixtral-8x7b", "--cluster", "dgx-h100-superpod",
                          "--global-batch", "32", "--nodes", "4", "--ep", "3"], capsys)
    assert rc == 2 and text == "" and "ep: 3 must divide the 8 experts of mixtral-8x7b" in err


def test_no_layout_fits_says_the_closest_in_one_line(capsys):
    rc, text, err = _run(["plan", "gpt3-175b", "--cluster", "dgx1-v100", "--global-batch",
                          "16", "--nodes", "1"], capsys)
    bad = [ln for ln in text.splitlines() if ln.startswith("infeasible")]
    assert rc == 1 and err == "" and len(bad) == 1
    assert bad[0].startswith("infeasible: memory: no layout of gpt3-175b fits; the closest, tp ")
    assert "GB per GPU" in bad[0] and "of 16 GB" in bad[0]


def test_the_fewest_gpus_that_meet_a_target():
    kw = dict(global_batch=64, nodes=[1, 2, 4, 8], recompute=["selective"], zero=[1])
    free = api.plan_layouts("gpt-1.7b", ["perlmutter"], **kw)
    rates = {m["gpus"]: m["tokens_per_day"] for m in free.meta["machines"]}
    assert free.meta["gpus"] == max(rates, key=lambda g: rates[g])   # no target: fastest
    need = (rates[8] + rates[16]) / 2
    res = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens_per_day=need, **kw)
    assert res.feasible and res.meta["gpus"] == 16
    assert res.rows[0]["tokens_per_day"] >= need
    # the same target as tokens by a deadline
    days = 3.0
    same = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens=need * days,
                            deadline_s=days * 86400, **kw)
    assert same.meta["gpus"] == 16 and same.rows[0]["days"] <= days
    far = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens_per_day=10 * max(rates.values()),
                           **kw)
    assert not far.feasible and far.meta["infeasible"][0].startswith("target: the fastest")


def test_a_target_nothing_meets_exits_1_with_one_line(capsys):
    rc, text, _ = _run([*BASE, "--tokens-per-day", "1e15"], capsys)
    bad = [ln for ln in text.splitlines() if ln.startswith("infeasible")]
    assert rc == 1 and len(bad) == 1 and "short" in bad[0]


@pytest.mark.parametrize("extra,flag", [
    (["--epochs", "3"], "--epochs"), (["--price", "dgx1-v100=3"], "--price"),
    (["--rank-by", "nodes"], "--rank-by"), (["--batch", "4"], "--batch"),
    (["--tp", "x"], "--tp"), (["--recompute", "some"], "--recompute"),
    (["--tp", "3"], "tp: 3 does not split gpt-1.7b"), (["--pp", "5"], "pp: 5 must divide"),
    (["--schedule", "zigzag"], "--schedule"), (["--tokens-per-day", "-1"], "tokens_per_day"),
    (["--deadline-h", "10"], "deadline"), (["--top", "-1"], "--top"),
    (["--tokens", "1e9", "--deadline-h", "1", "--tokens-per-day", "1e9"], "tokens_per_day"),
])
def test_bad_inputs_are_one_line_before_any_work(extra, flag, capsys):
    rc, text, err = _run([*BASE, *extra], capsys)
    assert rc == 2 and text == "" and err.count("\n") == 1 and flag in err, err


def test_global_batch_and_cluster_are_needed(capsys):
    rc, _, err = _run(["plan", "gpt-1.7b", "--cluster", "dgx1-v100"], capsys)
    assert rc == 2 and "--global-batch" in err
    rc, _, err = _run(["plan", "gpt-1.7b", "--global-batch", "16"], capsys)
    assert rc == 2 and "--cluster" in err


@pytest.mark.parametrize("flag,value", [
    ("--tokens-per-day", "1e9"), ("--tokens", "1e9"), ("--tp", "2"), ("--pp", "2"),
    ("--microbatch", "2"), ("--zero", "1"), ("--recompute", "full"), ("--sp", "on"),
    ("--schedule", "1f1b"), ("--dp-overlap", "never"), ("--ep", "2")])
def test_layout_flags_are_refused_on_the_data_parallel_path(flag, value, capsys):
    rc, text, err = _run(["plan", "resnet50", "--cluster", "summit", "--nodes", "1",
                          flag, value], capsys)
    assert rc == 2 and text == "" and err.count("\n") == 1 and flag in err


def test_api_plan_sends_a_transformer_to_the_layout_search():
    res = api.plan("gpt-1.7b", ["dgx1-v100"], global_batch=16, nodes=[1], recompute=["none"],
                   zero=[0])
    assert res.feasible and res.meta["objective"] == "highest throughput"
    assert res.rows == api.plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=16,
                                        nodes=[1], recompute=["none"], zero=[0]).rows
    with pytest.raises(ConfigError, match="unknown option epochs"):
        api.plan("gpt-1.7b", ["dgx1-v100"], global_batch=16, epochs=3)


def test_help_shows_a_runnable_example(capsys):
    rc, text, _ = _run(["plan", "--help"], capsys)
    assert rc == 0
    example = "dlscale plan gpt-1.7b --cluster dgx1-v100 --global-batch 16 --nodes 1"
    assert example in " ".join(text.split())
    rc, text, _ = _run(example.split()[1:], capsys)
    assert rc == 0 and text.startswith("plan for gpt-1.7b")


def test_max_nodes_and_tokens_act_on_the_transformer_path():
    kw = dict(global_batch=64, nodes=[1, 2, 4, 8], recompute=["selective"], zero=[1])
    res = api.plan_layouts("gpt-1.7b", ["perlmutter"], max_nodes=2, **kw)
    assert {m["nodes"] for m in res.meta["machines"]} <= {1, 2}
    days = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens=1e10, **kw)
    b = days.meta["best"]
    assert b["days"] == 1e10 / b["tokens_per_s"] / 86400
    with pytest.raises(ConfigError, match="no node count"):
        api.plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=16, nodes=[2])


def test_a_node_count_no_layout_can_use_is_named_not_dropped(capsys):
    """Every node count asked is planned or named with its reason: one beyond the
    machine (dgx1-v100 is one node), one whose GPUs no layout splits (Llama-2-70B's 64
    heads and 80 layers over 1,016 GPUs with 1,024 sequences)."""
    rc, text, _ = _run(["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "3",
                        "--nodes", "1,2"], capsys)
    assert rc == 0
    lines = [ln for ln in text.splitlines() if ln.startswith("no layout: ")]
    res = api.plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=3, nodes=[1, 2])
    assert lines == [f"no layout: {ln}" for ln in res.meta["without_layout"]]
    assert lines == ["no layout: dgx1-v100 at 2 nodes: beyond its 1 (its size); not tried"]
    assert [m["nodes"] for m in res.meta["machines"]] == [1]
    res = api.plan_layouts("llama2-70b", ["dgx-h100-superpod"], global_batch=1024,
                           nodes=[32, 127], recompute=["selective"], zero=[1])
    assert res.meta["without_layout"] == [
        "dgx-h100-superpod at 127 nodes (1016 GPUs): no layout splits its GPUs with this "
        "global batch"]


def _plan_with_tokens():
    return api.plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=16, nodes=[1],
                            tokens=1e9, recompute=("none",), sp=(False,))


def test_a_plan_rows_band_is_llm_band_for_its_layout():
    """Fails before planband: plan's rows carried no ``_low`` / ``_high``."""
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.perfmodel.training.llm_ranges import llm_band
    from dlscale.perfmodel.training.parallel import ParallelLayout

    res = _plan_with_tokens()
    assert res.rows and res.meta["best"] == res.rows[0]
    for row in res.rows:
        lay = ParallelLayout(tp=row["tp"], pp=row["pp"], dp=row["dp"], micro=row["micro"],
                             global_batch=16, schedule=row["schedule"],
                             virtual=row["virtual"], zero=row["zero"], sp=row["sp"],
                             recompute=row["recompute"], ep=row["ep"])
        central, band = llm_band(get_cluster("dgx1-v100"), get_llm("gpt-1.7b"), lay)
        assert row["iteration_s"] == central.iteration_s
        for k in ("iteration_s", "tflops_per_gpu", "tokens_per_s"):
            assert (row[f"{k}_low"], row[f"{k}_high"]) == band[k]
            assert row[f"{k}_low"] <= row[k] <= row[f"{k}_high"]
        low, high = band["tokens_per_s"]
        assert (row["tokens_per_day_low"], row["tokens_per_day_high"]) == (low * 86400.0,
                                                                            high * 86400.0)
        assert (row["days_low"], row["days_high"]) == (1e9 / high / 86400.0,
                                                       1e9 / low / 86400.0)
    # the machines table carries the same band (it carried none before)
    for m in res.meta["machines"]:
        assert m["tokens_per_s_low"] <= m["tokens_per_s"] <= m["tokens_per_s_high"]
    assert res.meta["machines"][0]["tokens_per_s_low"] == res.rows[0]["tokens_per_s_low"]


def test_plan_on_low_chooses_the_machine_whose_low_end_meets_the_target(capsys):
    """Fails before: ``--plan-on`` was refused on the transformer path."""
    kw = dict(global_batch=64, nodes=[1, 2, 4, 8], recompute=["selective"], zero=[1])
    free = api.plan_layouts("gpt-1.7b", ["perlmutter"], **kw)
    by_gpus = {m["gpus"]: m for m in free.meta["machines"]}
    # a target the 16-GPU machine meets on its central rate but not on its low end
    need = (by_gpus[16]["tokens_per_day_low"] + by_gpus[16]["tokens_per_day"]) / 2
    assert by_gpus[32]["tokens_per_day_low"] >= need
    central = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens_per_day=need, **kw)
    low = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens_per_day=need, plan_on="low",
                           **kw)
    high = api.plan_layouts("gpt-1.7b", ["perlmutter"], tokens_per_day=need, plan_on="high",
                            **kw)
    assert (central.meta["gpus"], low.meta["gpus"]) == (16, 32)
    assert high.meta["gpus"] <= 16 and low.meta["plan_on"] == "low"
    far = api.plan_layouts("gpt-1.7b", ["perlmutter"], plan_on="low",
                           tokens_per_day=by_gpus[32]["tokens_per_day"] * 1.001, **kw)
    assert "at the low end of its band" in far.meta["infeasible"][0]
    with pytest.raises(ConfigError, match="plan_on: unknown name 'worst'"):
        api.plan_layouts("gpt-1.7b", ["perlmutter"], plan_on="worst", **kw)
    rc, text, _ = _run([*BASE, "--plan-on", "low"], capsys)
    assert rc == 0 and "planned on the low end of each machine's band" in text
    best = next(ln for ln in text.splitlines() if ln.startswith("best: "))
    assert best.count(" [") == 2, best


def test_a_plans_table_shows_the_band_and_its_files_carry_it(tmp_path, capsys):
    """Fails before planband: no bracket in the layouts table, no band keys in JSON/CSV."""
    from dlscale.perfmodel.output.tables import format_cell

    out = tmp_path / "p.json"
    rc, text, _ = _run([*BASE, "--tokens", "1e9", "-o", str(out)], capsys)
    doc = json.loads(out.read_text())
    best = doc["meta"]["best"]
    line = next(ln for ln in text.splitlines() if ln.lstrip().startswith("1 "))
    for k in ("tokens_per_s", "tflops_per_gpu", "iteration_s", "days"):
        cell = format_cell(best, k)
        assert rc == 0 and " [" in cell and cell in line
    keys = {f"{k}_{end}" for k in ("iteration_s", "tflops_per_gpu", "tokens_per_s",
                                   "tokens_per_day", "days") for end in ("low", "high")}
    assert keys <= set(doc["rows"][0]) and keys <= set(best)
    csv = _plan_with_tokens().to_csv(tmp_path / "p.csv").read_text().splitlines()[0]
    assert keys <= set(csv.split(","))


@pytest.mark.parametrize("workload", ["gpt-1.7b", "resnet50"])
def test_plan_refuses_a_csv_output_before_any_work(workload, tmp_path, capsys, monkeypatch):
    """plan -o writes JSON; it used to write ``x.json`` for ``-o x.csv`` and say
    "written: x.csv" (a file that does not exist). Now one line, exit 2, nothing written,
    and no search run."""
    from dlscale import api

    def boom(*a, **k):
        raise AssertionError("searched before refusing")

    monkeypatch.setattr(api, "plan_layouts", boom)
    monkeypatch.setattr(api, "plan", boom)
    argv = ["plan", workload, "--cluster", "dgx1-v100", "--global-batch", "16", "--nodes", "1",
            "-o", str(tmp_path / "x.csv")]
    rc, _out, err = _run(argv, capsys)
    assert rc == 2
    assert "-o: plan writes JSON" in err and "name a .json file" in err
    assert list(tmp_path.iterdir()) == []


def test_a_result_tables_json_names_the_file_it_wrote(tmp_path):
    from dlscale.results import ResultTable

    written = ResultTable([{"a": 1}], {"m": 1}).to_json(tmp_path / "r.csv")
    assert written == tmp_path / "r.json" and written.exists()
    assert not (tmp_path / "r.csv").exists()
