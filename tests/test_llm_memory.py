"""Memory per GPU of a parallel layout and the layout's checks."""

from __future__ import annotations

import dataclasses

import pytest

from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.llm_memory import llm_memory, stage_memory
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import activation_bytes_per_layer


def test_one_gpu_states_are_16_bytes_per_parameter():
    m = get_llm("gpt-1.7b")
    mem = llm_memory(m, ParallelLayout(micro=1, global_batch=1))
    assert mem.states_B == pytest.approx(16.0 * m.params)


def test_activations_by_hand_without_parallelism():
    m = get_llm("gpt-1.7b")
    s, h, a, v, n = m.seq, m.hidden, m.heads, m.vocab, m.layers
    sbh = s * 2 * h
    mem = llm_memory(m, ParallelLayout(micro=2, global_batch=2))
    # Korthikanti Table 2 per layer, the embedding dropout mask, the output layer,
    # and the 16-bit logits live beside their fp32 copy while the loss runs
    # (Megatron-LM: output.float() with output still held), 2 s b V
    by_hand = n * sbh * (34 + 5 * a * s / h) + sbh + 4 * sbh * (1 + v / h) + 2 * sbh * v / h
    assert mem.activations_B == pytest.approx(by_hand)


@pytest.mark.parametrize("zero,shards", [(0, (1, 1, 1)), (1, (1, 1, 8)), (2, (1, 8, 8)),
                                         (3, (8, 8, 8))])
def test_zero_shards_by_stage(zero, shards):
    m = get_llm("gpt-7.5b")
    base = llm_memory(m, ParallelLayout(dp=8, micro=1, global_batch=8))
    mem = llm_memory(m, ParallelLayout(dp=8, micro=1, global_batch=8, zero=zero))
    assert (base.weights_B / mem.weights_B, base.gradients_B / mem.gradients_B,
            base.optimizer_B / mem.optimizer_B) == pytest.approx(shards)


def test_recompute_and_sp_order_the_activations():
    m = get_llm("gpt3-175b")
    acts = {}
    for rc in ("none", "selective", "full"):
        for sp in (False, True):
            lay = ParallelLayout(tp=8, pp=8, dp=1, micro=1, global_batch=64, recompute=rc, sp=sp)
            acts[rc, sp] = llm_memory(m, lay).activations_B
    assert acts["none", False] > acts["selective", False] > acts["selective", True]
    assert acts["none", False] > acts["none", True] > acts["full", True]
    assert acts["selective", True] > acts["full", True]


def test_1f1b_holds_p_microbatches_gpipe_all():
    m = get_llm("gpt-39.1b")
    kw = dict(tp=8, pp=2, dp=1, micro=1, global_batch=16)
    one = llm_memory(m, ParallelLayout(**kw, schedule="1f1b"))
    gp = llm_memory(m, ParallelLayout(**kw, schedule="gpipe"))
    assert gp.activations_B > 7 * one.activations_B / 2 * 0.9     # 16 vs 2 in flight


def test_interleaved_with_as_many_microbatches_as_stages_holds_no_more_than_gpipe():
    """Fails before: the interleaved first stage held p + (p - 1) / v = 4.75
    microbatches' activations of the 4 there are."""
    m = get_llm("gpt-39.1b")
    kw = dict(tp=8, pp=4, dp=1, micro=1, global_batch=4)
    inter = llm_memory(m, ParallelLayout(**kw, schedule="interleaved", virtual=4))
    gp = llm_memory(m, ParallelLayout(**kw, schedule="gpipe"))
    assert ParallelLayout(**kw, schedule="interleaved", virtual=4).in_flight() == 4.0
    assert inter.activations_B <= gp.activations_B


@pytest.mark.parametrize("kw,field", [
    (dict(tp=0), "parallel.tp"), (dict(schedule="zb"), "parallel.schedule"),
    (dict(zero=4), "parallel.zero"), (dict(recompute="some"), "parallel.recompute"),
    (dict(sp=True), "parallel.sp"), (dict(schedule="interleaved"), "parallel.virtual"),
    (dict(virtual=2), "parallel.virtual"), (dict(global_batch=3, dp=2), "global_batch"),
    (dict(schedule="interleaved", virtual=2, pp=4, global_batch=6), "global_batch"),
    (dict(precision="fp8"), "parallel.precision")])
def test_bad_layouts_are_one_line(kw, field):
    with pytest.raises(ConfigError) as e:
        ParallelLayout(**kw)
    assert field in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kw,gpus,text", [(dict(tp=5), None, "heads"),
                                          (dict(pp=7), None, "layers"),
                                          (dict(tp=2, dp=3, global_batch=3), 8, "machine has 8")])
def test_layout_against_model_and_machine(kw, gpus, text):
    with pytest.raises(ConfigError, match=text):
        ParallelLayout(**kw).check(get_llm("gpt3-175b"), gpus=gpus)


def test_largest_microbatch_fits_and_the_next_does_not():

    from dlscale.perfmodel.compute.llm_memory import largest_microbatch

    m = get_llm("gpt-18.4b")
    lay = ParallelLayout(tp=8, dp=32, micro=1, global_batch=1024, recompute="full")
    best = largest_microbatch(m, lay, 80e9)
    assert best >= 1
    assert llm_memory(m, dataclasses.replace(lay, micro=best)).fits(80e9)
    bigger = [b for b in range(best + 1, 33) if 32 % b == 0]
    assert not llm_memory(m, dataclasses.replace(lay, micro=bigger[0])).fits(80e9)
    assert largest_microbatch(m, lay, 1e9) == 0


def test_zero_2_with_a_pipeline_is_refused():
    with pytest.raises(ConfigError, match=r"parallel\.zero"):
        ParallelLayout(pp=2, zero=2)


def test_stage_memory_gives_each_stage_and_llm_memory_the_larger():
    # Megatron-LM logs the last rank's memory: a check against it needs the last
    # stage, which holds fewer microbatches in flight than the first under 1F1B.
    m = get_llm("gpt-1.7b")
    lay = ParallelLayout(pp=4, dp=2, micro=1, global_batch=16, schedule="1f1b")
    first, last = stage_memory(m, lay, "first"), stage_memory(m, lay, "last")
    assert (first.stage, last.stage) == ("first", "last")
    assert first.activations_B > last.activations_B
    assert llm_memory(m, lay) == max(first, last, key=lambda x: x.total_B)
    one = ParallelLayout(micro=1, global_batch=1)
    # with one stage, "last" is the same rank as "first"
    assert stage_memory(m, one, "last").total_B == llm_memory(m, one).total_B


def test_stage_memory_refuses_an_unknown_stage():
    with pytest.raises(ConfigError, match=r"stage: must be 'first' or 'last', got 'middle'"):
        stage_memory(get_llm("gpt-1.7b"), ParallelLayout(micro=1, global_batch=1), "middle")


@pytest.mark.parametrize(("schedule", "virtual", "micro", "flight"), [
    ("gpipe", 1, 1, 16.0),             # every forward before any backward: all m
    ("1f1b", 1, 1, 1.0),               # the last rank warms up none
    ("interleaved", 2, 1, 2.5),        # (v - 1) p + 1 = 5 chunks of 1 / v of its layers
    ("interleaved", 2, 4, 4.0),        # m = p: Megatron warms up all m v chunks
])
def test_last_stage_holds_the_microbatches_its_schedule_keeps(schedule, virtual, micro, flight):
    # Megatron-LM's interleaved schedule warms the last rank up with (v - 1) p chunk
    # forwards; before this the last stage held one microbatch under every schedule.
    m = get_llm("gpt-1.7b")
    lay = ParallelLayout(pp=4, dp=1, micro=micro, global_batch=16, schedule=schedule,
                         virtual=virtual)
    sbh = m.seq * micro * m.hidden
    layers = activation_bytes_per_layer(m, micro) * m.layers / 4
    output = sbh * (4 + 6 * m.vocab / m.hidden)     # norm, fp32 and 16-bit logits
    assert stage_memory(m, lay, "last").activations_B == pytest.approx(flight * layers + output)


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_bf16_keeps_fp32_gradients_whole_under_zero_1(zero):
    # Megatron-LM: --bf16 sets accumulate_allreduce_grads_in_fp32; the fp32 grad buffer
    # stays whole under the distributed optimizer (ZeRO 1), which shards the 12 only
    m = get_llm("gpt-1.7b")
    lay = ParallelLayout(tp=1, pp=1, dp=4, micro=1, global_batch=4, zero=zero)
    fp16 = stage_memory(m, lay, "first")
    bf16 = stage_memory(m, dataclasses.replace(lay, precision="bf16"), "first")
    params = m.params
    shard = 4 if zero >= 2 else 1
    assert bf16.gradients_B == 4.0 * params / shard == 2 * fp16.gradients_B
    assert (bf16.weights_B, bf16.optimizer_B, bf16.activations_B) == (
        fp16.weights_B, fp16.optimizer_B, fp16.activations_B)
    if zero == 1:
        assert bf16.states_B == pytest.approx((6 + 12 / 4) * params)
