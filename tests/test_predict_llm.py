"""``dlscale predict`` with a transformer and a parallel layout; the data-parallel path unchanged."""

from __future__ import annotations

import json

import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import llm_iteration

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests.cli_run import run_cli as _run
except ImportError:  # pragma: no cover
    from cli_run import run_cli as _run  # type: ignore[no-redef]


@pytest.mark.parametrize("extra", [["--tp", "1"], ["--tp", "1", "--pp", "1", "--zero", "0"]])
def test_data_parallel_answers_are_unchanged_by_the_neutral_layout(extra, capsys):
    base = ["predict", "summit", "resnet50", "--nodes", "1,64", "--format", "json"]
    rc0, plain, _ = _run(base, capsys)
    rc1, with_layout, _ = _run([*base, *extra], capsys)
    assert rc0 == rc1 == 0 and plain == with_layout


@pytest.mark.parametrize("extra,flag", [(["--tp", "2"], "--tp"), (["--zero", "1"], "--zero"),
                                        (["--recompute", "full"], "--recompute"),
                                        (["--sp"], "--sp"), (["--microbatch", "2"], "--microbatch")])
def test_layouts_are_refused_for_layer_by_layer_models(extra, flag, capsys):
    rc, out, err = _run(["predict", "summit", "resnet50", "--nodes", "1", *extra], capsys)
    assert rc == 2 and err.count("\n") == 1 and flag in err and out == ""


@pytest.mark.parametrize("extra,flag", [
    (["--collective", "ring"], "--collective"), (["--batch", "4"], "--batch"),
    (["--precision", "fp32"], "--precision"), (["--baseline", "device"], "--baseline"),
    (["--tp", "5"], "--nodes"), (["--tp", "0"], "--tp"), (["--zero", "4"], "parallel.zero"),
    (["--schedule", "interleaved", "--pp", "2"], "parallel.virtual"),
    (["--sp"], "parallel.sp")])
def test_bad_or_foreign_flags_on_the_transformer_path_are_one_line(extra, flag, capsys):
    rc, out, err = _run(["predict", "dgx1-v100", "gpt-1.7b", *extra], capsys)
    assert rc == 2 and err.count("\n") == 1 and flag in err and out == "", err


def test_transformer_rows_are_the_model_s(capsys):
    argv = ["predict", "summit", "gpt-7.5b", "--tp", "2", "--pp", "3", "--microbatch", "1",
            "--global-batch", "96", "--nodes", "16,32", "--recompute", "full", "--zero", "1",
            "--format", "json"]
    rc, out, _ = _run(argv, capsys)
    assert rc == 0
    doc = json.loads(out)
    assert [r["dp"] for r in doc["rows"]] == [16, 32]
    lay = ParallelLayout(tp=2, pp=3, dp=16, micro=1, global_batch=96, recompute="full", zero=1)
    want = llm_iteration(get_cluster("summit"), get_llm("gpt-7.5b"), lay)
    assert doc["rows"][0]["iteration_s"] == pytest.approx(want.iteration_s, rel=1e-12)
    assert doc["meta"]["path"] == "transformer"


def test_table_and_csv_outputs(tmp_path, capsys):
    out_csv = tmp_path / "rows.csv"
    rc, out, _ = _run(["predict", "dgx1-v100", "gpt-1.7b", "--tp", "8", "-o", str(out_csv)],
                      capsys)
    assert rc == 0 and "tflops_per_gpu" in out and "gpt-1.7b" in out.splitlines()[0]
    assert out_csv.read_text().splitlines()[0].startswith("nodes,cluster,model,gpus")


@pytest.mark.parametrize("command", ["predict", "simulate"])
@pytest.mark.parametrize("layout", [["--tp", "1000000000000"], ["--tp", "8", "--pp", "160"]])
def test_a_replica_larger_than_the_cluster_names_its_layout(command, layout, capsys):
    # it named only the node count it derived ("--nodes: node count 125000000000 ...",
    # "nodes: 160 is more than ..."), a count the user never gave
    rc, out, err = _run([command, "dgx-h100-superpod", "llama2-70b", *layout], capsys)
    assert rc == 2 and err.count("\n") == 1 and out == "", err
    assert "tp x pp: one model replica of" in err and "holds 127" in err
