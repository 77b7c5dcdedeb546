"""A transformer's mixed precision (``--precision fp16|bf16``) moves memory, the
data-parallel exchange, the gradient accumulation and the optimizer step, in
``predict``, ``simulate`` and ``plan`` alike; the data-parallel path refuses bf16."""

from __future__ import annotations

import json

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.llm_memory import llm_memory
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import llm_iteration, optimizer_step_s

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests.cli_run import run_cli
except ImportError:  # pragma: no cover
    from cli_run import run_cli  # type: ignore[no-redef]

H100 = "dgx-h100-superpod"
LLAMA = ["--tp", "8", "--pp", "4", "--nodes", "16", "--global-batch", "512"]


def _json(argv, capsys):
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _layout(precision: str) -> ParallelLayout:
    return ParallelLayout(tp=8, pp=4, dp=4, micro=1, global_batch=512, precision=precision)


def test_bf16_reduces_fp32_gradients_and_skips_the_gradient_copy():
    c, m = get_cluster(H100), get_llm("llama2-70b")
    f16, b16 = llm_iteration(c, m, _layout("fp16")), llm_iteration(c, m, _layout("bf16"))
    # twice the bytes in the data-parallel reduction (fp32 main_grad)
    assert b16.dp_comm_s > 1.5 * f16.dp_comm_s
    # the optimizer step: 46 of 52 bytes per parameter (no fp16 -> fp32 gradient copy)
    assert optimizer_step_s(c, m, _layout("bf16")) == pytest.approx(
        optimizer_step_s(c, m, _layout("fp16")) * 46 / 52, rel=1e-12)
    # accumulating into fp32 gradients reads and writes more
    assert b16.compute_s > f16.compute_s
    assert llm_memory(m, _layout("bf16")).total_B > llm_memory(m, _layout("fp16")).total_B


def test_predict_precision_acts_and_names_itself(capsys):
    rows = {p: _json(["predict", H100, "llama2-70b", *LLAMA, "--precision", p],
                     capsys)["rows"][0] for p in ("fp16", "bf16")}
    assert rows["bf16"]["memory_GB"] > rows["fp16"]["memory_GB"]
    assert rows["bf16"]["dp_exposed_s"] > rows["fp16"]["dp_exposed_s"]
    assert rows["bf16"]["optimizer_s"] < rows["fp16"]["optimizer_s"]
    default = _json(["predict", H100, "llama2-70b", *LLAMA], capsys)["rows"][0]
    assert default == rows["fp16"]
    capsys.readouterr()
    assert main(["predict", H100, "llama2-70b", *LLAMA, "--precision", "bf16"]) == 0
    assert "mixed precision bf16" in capsys.readouterr().out


def test_simulate_precision_acts_and_agrees_with_predict(capsys):
    argv = ["simulate", "dgx1-v100", "gpt-1.7b", "--tp", "2", "--microbatch", "2"]
    rows = {p: _json([*argv, "--precision", p], capsys)["rows"][0] for p in ("fp16", "bf16")}
    assert rows["bf16"]["memory_GB"] > rows["fp16"]["memory_GB"]
    assert rows["bf16"]["iteration_s"] != rows["fp16"]["iteration_s"]
    # simulate's analytical_s is predict's answer to the same layout, bf16 included
    lay = ParallelLayout(tp=2, dp=4, micro=2, global_batch=8, precision="bf16")
    want = llm_iteration(get_cluster("dgx1-v100"), get_llm("gpt-1.7b"), lay).iteration_s
    assert rows["bf16"]["analytical_s"] == pytest.approx(want, rel=1e-12)
    assert abs(rows["bf16"]["vs_analytical"]) < 0.05


def test_plan_precision_acts(tmp_path, capsys):
    argv = ["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "16", "--nodes", "1",
            "--zero", "2", "--recompute", "full", "--tp", "1", "--pp", "1"]
    best = {}
    for p in ("fp16", "bf16"):
        out = tmp_path / f"{p}.json"
        capsys.readouterr()
        assert main([*argv, "--precision", p, "-o", str(out)]) == 0
        best[p] = json.loads(out.read_text())["meta"]["best"]
        text = capsys.readouterr().out
    assert best["bf16"]["memory_GB"] > best["fp16"]["memory_GB"]
    assert "recompute full, bf16:" in text


@pytest.mark.parametrize("argv,flag", [
    (["predict", "summit", "resnet50", "--nodes", "1", "--precision", "bf16"], "--precision bf16"),
    (["simulate", "summit", "resnet50", "--nodes", "1", "--precision", "bf16"], "--precision bf16"),
    (["predict", "dgx1-v100", "gpt-1.7b", "--precision", "fp32"], "--precision"),
    (["simulate", "dgx1-v100", "gpt-1.7b", "--precision", "fp64"], "--precision"),
    (["plan", "resnet50", "--cluster", "summit", "--nodes", "1-4", "--precision", "bf16"],
     "--precision"),
])
def test_a_precision_the_path_does_not_model_is_one_line(argv, flag, capsys):
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and flag in err, err


@pytest.mark.parametrize("zero", [1, 3])
def test_zero_buckets_hold_gradients_as_the_reduction_moves_them(zero):
    # DeepSpeed's reduce bucket of 5e8 gradient elements is 4 B each under bf16's fp32
    # gradients (1 GB more than fp16's), its gather bucket 5e8 16-bit weights either way
    m = get_llm("llama2-70b")
    lay = {p: ParallelLayout(tp=8, pp=1, dp=32, micro=1, global_batch=512, zero=zero,
                             recompute="full", precision=p) for p in ("fp16", "bf16")}
    f16, b16 = llm_memory(m, lay["fp16"]), llm_memory(m, lay["bf16"])
    assert f16.buffers_B == pytest.approx(4 * 5e8, rel=1e-12)
    assert b16.buffers_B - f16.buffers_B == pytest.approx(2 * 5e8, rel=1e-12)
