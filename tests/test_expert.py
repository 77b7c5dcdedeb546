"""Expert parallelism of the mixture-of-experts transformer (issue 29): ep = 1 is
today's answer, the all-to-alls are priced on the group's links, memory falls with ep,
the flag acts or is refused in one line."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.llm_memory import llm_memory
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.perfmodel.training.expert import (
    dispatch_bytes,
    expert_flops_per_token,
    expert_layer_params,
    local_expert_params,
)
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import llm_iteration, nccl_node
from dlscale.perfmodel.training.transformer_layers import layer_gemms

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests.cli_run import run_cli as _run
except ImportError:  # pragma: no cover
    from cli_run import run_cli as _run  # type: ignore[no-redef]

MIX = get_llm("mixtral-8x7b")
POD = get_cluster("dgx-h100-superpod")


def _lay(**kw):
    base = dict(tp=2, pp=1, dp=32, micro=1, global_batch=64, sp=True, recompute="none")
    return ParallelLayout(**{**base, **kw})


def _fields(r):
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}


@pytest.mark.parametrize("model,kw", [
    ("mixtral-8x7b", {}), ("mixtral-8x7b", dict(zero=1, recompute="full")),
    ("gpt-7.5b", dict(tp=2, pp=2, dp=16, sp=False))])
def test_ep_1_is_today_s_answer(model, kw):
    """The default layout and ep = 1 give the same iteration, bit for bit, and no
    all-to-all (the answer before this field existed)."""
    m = get_llm(model)
    lay = _lay(**kw)
    assert lay.ep == 1
    one = llm_iteration(POD, m, lay)
    again = llm_iteration(POD, m, dataclasses.replace(lay, ep=1))
    assert _fields(one) == _fields(again)
    assert one.ep_comm_s == 0.0
    parts = (one.compute_s + one.tp_comm_s + one.pp_comm_s + one.bubble_s + one.dp_exposed_s
             + one.optimizer_s)
    assert parts == pytest.approx(one.iteration_s, rel=1e-12)


def test_expert_flops_are_top_k_experts_per_token():
    """Fedus et al. 2022 Sec. 2: a token costs the k experts it visits; the layer's
    MLP products carry 2 k x one expert's weights per token, all E experts' weights."""
    g = layer_gemms(MIX, 1)
    mlp = [la for la in g.layers if la.name in ("mlp_up", "mlp_down")]
    assert sum(la.forward_flops for la in mlp) == MIX.seq * expert_flops_per_token(MIX)
    assert expert_flops_per_token(MIX) == 2 * 2 * 3 * 4096 * 14336
    assert sum(la.params for la in mlp) == expert_layer_params(MIX)


def test_alltoalls_are_four_per_moe_layer_on_the_group_s_links():
    """ep 4 among the 8 GPUs of one node (tp 2: ranks 2 apart): each layer's dispatch
    and combine forward and backward, MPICH's pairwise exchange of k s b h / t 16-bit
    values over the group, once per microbatch; full recomputation two more."""
    lay = _lay(ep=4)
    r = llm_iteration(POD, MIX, lay)
    n = dispatch_bytes(MIX, lay)
    assert n == 2.0 * 2 * MIX.seq * MIX.hidden / 2
    # inside the node at NCCL's measured NVLink bus bandwidth, as every collective there
    one = collective_time_s(nccl_node(POD), "alltoall", "pairwise", n, 1, 4, ranks=4)
    assert r.ep_comm_s == pytest.approx(lay.microbatches * MIX.layers * 4 * one, rel=1e-12)
    full = llm_iteration(POD, MIX, dataclasses.replace(lay, recompute="full"))
    assert full.ep_comm_s == pytest.approx(lay.microbatches * MIX.layers * 6 * one, rel=1e-12)
    parts = (r.compute_s + r.tp_comm_s + r.pp_comm_s + r.ep_comm_s + r.bubble_s
             + r.dp_exposed_s + r.optimizer_s)
    assert parts == pytest.approx(r.iteration_s, rel=1e-12)


def test_a_group_across_nodes_crosses_the_nics():
    """ep 8 with tp 2 spans two nodes: the exchange crosses the NICs and costs more
    per byte than ep 4 inside one node."""
    four, eight = llm_iteration(POD, MIX, _lay(ep=4)), llm_iteration(POD, MIX, _lay(ep=8))
    assert eight.ep_comm_s > 2 * four.ep_comm_s


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_memory_falls_with_ep(zero):
    mem = [llm_memory(MIX, _lay(ep=e, zero=zero)) for e in (1, 2, 4, 8)]
    states = [m.states_B for m in mem]
    assert states == sorted(states, reverse=True) and len(set(states)) == 4
    assert [m.total_B for m in mem] == sorted((m.total_B for m in mem), reverse=True)
    # ZeRO 0: the experts' 16 bytes per parameter shrink by ep, the rest stays
    if zero == 0:
        saved = states[0] - states[3]
        experts = MIX.layers * expert_layer_params(MIX) / 2
        assert saved == pytest.approx(16.0 * experts * (1 - 1 / 8), rel=1e-9)
        assert local_expert_params(MIX, _lay(ep=8)) == pytest.approx(experts / 8)


def test_zero_3_shards_the_experts_over_dp_either_way():
    """ZeRO 3 already spreads every state over dp; ep moves the experts' shards to
    dp / ep ranks holding E / ep experts each: the same bytes per rank."""
    one, eight = (llm_memory(MIX, _lay(ep=e, zero=3)) for e in (1, 8))
    assert eight.states_B == pytest.approx(one.states_B, rel=1e-12)


def test_expert_gradients_reduce_over_fewer_ranks():
    """The dense gradients over dp, the experts' over the dp / ep holding them: with
    ep = dp the experts exchange nothing."""
    all_dp = llm_iteration(POD, MIX, _lay(dp=8, global_batch=8, ep=8))
    none = llm_iteration(POD, MIX, _lay(dp=8, global_batch=8))
    assert all_dp.dp_comm_s < none.dp_comm_s


@pytest.mark.parametrize("kw,match", [
    (dict(ep=0), r"parallel\.ep: must be a positive integer"),
    (dict(ep=3, dp=32), r"parallel\.ep: .* must divide dp 32, got 3"),
])
def test_bad_layouts(kw, match):
    with pytest.raises(ConfigError, match=match):
        _lay(**kw)


def test_ep_needs_experts_and_must_divide_them():
    with pytest.raises(ConfigError, match=r"parallel\.ep: gpt-7\.5b is a dense model"):
        _lay(ep=2).check(get_llm("gpt-7.5b"))
    with pytest.raises(ConfigError, match=r"parallel\.ep: must divide the 8 experts"):
        _lay(ep=16).check(MIX)


def test_ep_flag_acts_on_the_transformer_path(capsys):
    base = ["predict", "dgx-h100-superpod", "mixtral-8x7b", "--tp", "2", "--sp",
            "--nodes", "8", "--format", "json"]
    rc0, plain, _ = _run(base, capsys)
    rc1, one, _ = _run([*base, "--ep", "1"], capsys)
    rc4, four, _ = _run([*base, "--ep", "4"], capsys)
    assert rc0 == rc1 == rc4 == 0 and plain == one and four != plain
    row = json.loads(four)["rows"][0]
    want = llm_iteration(POD, MIX, _lay(ep=4, global_batch=32))
    assert row["ep"] == 4 and row["ep_comm_s"] == pytest.approx(want.ep_comm_s, rel=1e-12)
    assert row["memory_GB"] < json.loads(plain)["rows"][0]["memory_GB"]
    rc, table, _ = _run([*base[:-2], "--ep", "4"], capsys)
    assert rc == 0 and "ep_comm_s" in table.splitlines()[2] and ", ep 4," in table


@pytest.mark.parametrize("argv,flag", [
    (["dgx-h100-superpod", "gpt-7.5b", "--ep", "2"], "parallel.ep"),
    (["dgx-h100-superpod", "mixtral-8x7b", "--ep", "3"], "parallel.ep"),
    (["dgx-h100-superpod", "mixtral-8x7b", "--tp", "8", "--ep", "2"], "parallel.ep"),
    (["summit", "resnet50", "--nodes", "1", "--ep", "2"], "--ep")])
def test_ep_flag_is_refused_in_one_line(argv, flag, capsys):
    rc, out, err = _run(["predict", *argv], capsys)
    assert rc == 2 and err.count("\n") == 1 and flag in err and out == "", err
