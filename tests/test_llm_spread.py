"""The GPUs' rate spread on the transformer path: predict and plan charge the expected
slowest of the job's GPUs, as the data-parallel path does (compute.variability)."""

from __future__ import annotations

import dataclasses

import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.variability import DEVICE_SPREAD
from dlscale.perfmodel.machine.noise import expected_max_factor
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import (
    llm_iteration,
    optimizer_step_s,
    stage_microbatch_s,
)
from dlscale.validation.megatron_selene import SELENE

GPT = get_llm("gpt-145.6b")
LAY = ParallelLayout(tp=8, pp=8, dp=24, micro=2, global_batch=2304, schedule="interleaved",
                     virtual=2, recompute="full", dp_overlap=False)


def _none(cluster):
    return dataclasses.replace(cluster, noise="none")


def test_an_undescribed_gpu_cluster_computes_at_the_expected_slowest_of_its_gpus():
    """Noise unset: the compute and the optimizer step times the lognormal's expected
    maximum over all 1,536 GPUs at the central spread (sigma 1.48%), the DP path's
    closed form; the communication unchanged."""
    assert not SELENE.noise
    k = float(expected_max_factor(f"lognormal:{DEVICE_SPREAD.central!r}", LAY.gpus))
    assert 1.04 < k < 1.07
    spread, flat = llm_iteration(SELENE, GPT, LAY), llm_iteration(_none(SELENE), GPT, LAY)
    assert spread.compute_s == pytest.approx(k * flat.compute_s, rel=1e-12)
    assert spread.optimizer_s == pytest.approx(k * flat.optimizer_s, rel=1e-12)
    for key in ("tp_comm_s", "pp_comm_s", "dp_comm_s", "dp_exposed_s"):
        assert getattr(spread, key) == getattr(flat, key)
    slots = LAY.microbatches * (1 + LAY.bubble_fraction)
    stretch = (k - 1) * (flat.compute_s * slots / LAY.microbatches + flat.optimizer_s)
    assert spread.iteration_s - flat.iteration_s == pytest.approx(stretch, rel=1e-9)


def test_noise_none_is_the_sum_of_the_stage_parts_bit_for_bit():
    """``none``: no factor at all (the answer before the spread, bit for bit)."""
    c = _none(SELENE)
    r = llm_iteration(c, GPT, LAY)
    fwd, bwd, _tp, extra = stage_microbatch_s(c, GPT, LAY)
    assert r.compute_s == LAY.microbatches * (fwd + bwd + extra)
    assert r.optimizer_s == optimizer_step_s(c, GPT, LAY)


def test_the_clusters_own_noise_replaces_the_spread():
    own = dataclasses.replace(SELENE, noise="lognormal:0.05")
    k = float(expected_max_factor("lognormal:0.05", LAY.gpus))
    flat = llm_iteration(_none(SELENE), GPT, LAY)
    assert llm_iteration(own, GPT, LAY).compute_s == pytest.approx(k * flat.compute_s,
                                                                    rel=1e-12)


def test_the_factor_grows_with_the_gpus_of_the_job():
    pod, model = get_cluster("dgx-h100-superpod"), get_llm("gpt-39.1b")
    ratios = []
    for dp in (1, 4, 16):
        lay = ParallelLayout(tp=8, pp=2, dp=dp, global_batch=64, dp_overlap=False)
        ratios.append(llm_iteration(pod, model, lay).compute_s
                      / llm_iteration(_none(pod), model, lay).compute_s)
    assert 1.0 < ratios[0] < ratios[1] < ratios[2]


def test_simulate_draws_the_spread_predict_charges():
    """Simulate TRANSFORMER draws each GPU's factor from the same spread; its mean over
    seeds is predict's expected slowest of the 64 GPUs within 1% (the simulated
    bubble averages its stages' factors where predict charges the slowest's: -0.3%)."""
    from dlscale.simulator.training.pipeline import simulate_pipeline

    model = get_llm("gpt-39.1b")
    lay = ParallelLayout(tp=8, pp=4, dp=2, micro=1, global_batch=64)
    runs = [simulate_pipeline(SELENE, model, lay, seed=s) for s in range(20)]
    flat = simulate_pipeline(_none(SELENE), model, lay)
    assert runs[0].noise == f"lognormal:{DEVICE_SPREAD.central!r}"
    mean = sum(r.iteration_s for r in runs) / len(runs)
    assert min(r.iteration_s for r in runs) > flat.iteration_s
    assert runs[0].analytical.iteration_s > flat.analytical.iteration_s
    assert mean == pytest.approx(runs[0].analytical.iteration_s, rel=0.01)


def test_simulate_transformer_takes_the_clusters_spread_and_none_turns_it_off():
    from dlscale.api import simulate_transformer

    kw = dict(tp=8, pp=1, microbatch=1, global_batch=4)
    spread = simulate_transformer(SELENE, "gpt-1.7b", 1, **kw)
    flat = simulate_transformer(SELENE, "gpt-1.7b", 1, noise="none", **kw)
    assert spread.raw[0].noise.startswith("lognormal:") and flat.raw[0].noise == "none"
    assert spread.raw[0].iteration_s > flat.raw[0].iteration_s


def test_simulate_with_noise_none_sits_beside_predict_without_the_spread():
    """``noise="none"`` on an undescribed cluster: predict's answer beside the run is for
    the same noise (as the data-parallel simulator's), and the two agree as before."""
    from dlscale.simulator.training.pipeline import simulate_pipeline

    model = get_llm("gpt-39.1b")
    lay = ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=16, recompute="full")
    res = simulate_pipeline(SELENE, model, lay, noise="none")
    assert res.analytical.iteration_s == llm_iteration(_none(SELENE), model, lay).iteration_s
    assert res.iteration_s == pytest.approx(res.analytical.iteration_s, rel=0.001)


def _iteration(argv, capsys):
    import json

    from dlscale.cli import main

    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"][0]["iteration_s"]


def test_predict_noise_acts_on_the_transformer_path(capsys):
    """``--noise`` replaces the GPUs' spread on the transformer path too (it was refused
    there while the path charged none); a bad spec is refused in one line."""
    from dlscale.cli import main

    argv = ["predict", "dgx-h100-superpod", "gpt-1.7b", "--tp", "8", "--nodes", "2"]
    spread = _iteration(argv, capsys)
    flat = _iteration([*argv, "--noise", "none"], capsys)
    wide = _iteration([*argv, "--noise", "lognormal:0.05"], capsys)
    assert flat < spread < wide
    capsys.readouterr()
    assert main([*argv, "--noise", "lognormal:0.05", "--format", "json"]) == 0
    import json

    assert json.loads(capsys.readouterr().out)["meta"]["noise"] == "lognormal:0.05"
    pod = dataclasses.replace(get_cluster("dgx-h100-superpod"), noise="none")
    lay = ParallelLayout(tp=8, pp=1, dp=2, global_batch=2)
    assert flat == llm_iteration(pod, get_llm("gpt-1.7b"), lay).iteration_s
    try:
        rc = main([*argv, "--noise", "gauss"])
    except SystemExit as exc:
        rc = int(exc.code or 0)
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "noise: unknown name 'gauss'" in err[0]
