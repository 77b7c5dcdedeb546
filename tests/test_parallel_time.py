"""Time per iteration of a transformer under a parallel layout."""

from __future__ import annotations

import dataclasses

import pytest

from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.compute.gemm import gemm_time_s
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import HBM_ACHIEVABLE_FRACTION, llm_iteration
from dlscale.perfmodel.training.transformer_layers import elementwise_bytes, layer_gemm_shapes
from dlscale.validation.megatron_selene import SELENE

GPT = get_llm("gpt-145.6b")


def _lay(**kw):
    base = dict(tp=8, pp=8, dp=24, micro=2, global_batch=2304, schedule="interleaved",
                virtual=2, recompute="full", dp_overlap=False)
    return ParallelLayout(**{**base, **kw})


def test_breakdown_adds_up_to_the_iteration():
    r = llm_iteration(SELENE, GPT, _lay())
    parts = (r.compute_s + r.tp_comm_s + r.pp_comm_s + r.bubble_s + r.dp_exposed_s
             + r.optimizer_s)
    assert parts == pytest.approx(r.iteration_s, rel=1e-12)
    assert r.fits and r.memory.total_B < 80e9
    assert r.tflops_per_gpu == pytest.approx(
        GPT.flops_narayanan(2304, "full") / (r.iteration_s * 1536) / 1e12, rel=1e-9)


def test_tp_communication_is_six_allreduces_per_layer_with_full_recompute():
    lay = _lay(pp=1, dp=1, global_batch=4, schedule="1f1b", virtual=1)
    r = llm_iteration(SELENE, GPT, lay)
    link = SELENE.node.intra_link          # NCCL's bus bandwidth: 200 of NVLink's 300 GB/s
    nccl = dataclasses.replace(SELENE, node=dataclasses.replace(SELENE.node, intra_link=(
        dataclasses.replace(link, bandwidth_Bps=link.bandwidth_Bps * 2 / 3))))
    one = collective_time_s(nccl, "allreduce", "ring", 2.0 * GPT.seq * 2 * GPT.hidden, 1, 8,
                            ranks=8)
    # 6 per layer (2 forward, 2 recomputed, 2 backward) + the embedding's + the logits'
    assert r.tp_comm_s == pytest.approx(lay.microbatches * one * (6 * GPT.layers + 2))


def _layer_gemm_s(dev, bw, tp, micro):
    rate = dev.sustained_flops("fp16")
    f = b = 0.0
    for fwd, pair in layer_gemm_shapes(GPT, tp, micro):
        f += gemm_time_s(*fwd, rate, bw, dev.cores)
        b += sum(gemm_time_s(*sh, rate, bw, dev.cores) for sh in pair)
    return f, b


def test_compute_is_the_gemms_by_shape_plus_elementwise_bytes():
    lay = _lay(pp=1, dp=1, global_batch=4, schedule="1f1b", virtual=1, recompute="none")
    r = llm_iteration(SELENE, GPT, lay)
    dev = SELENE.node.device.for_gemms()          # the GEMMs at the device's matmul ceiling
    bw = dev.memory_bandwidth_Bps * HBM_ACHIEVABLE_FRACTION     # 1.80 of 2.04 TB/s
    f, b = _layer_gemm_s(dev, bw, 8, 2)
    eb = elementwise_bytes(GPT, 2, 8)
    accumulate = 6.0 * GPT.layer_params / 8       # the weight gradients added, per microbatch
    per_layer = f + b + (eb.total_B + eb.backward_B + accumulate) / bw
    body = lay.microbatches * GPT.layers * per_layer
    assert body < r.compute_s < body * 1.05          # the embedding and logits on top


def test_bubble_is_p_minus_1_over_v_slots():
    one = llm_iteration(SELENE, GPT, _lay(schedule="1f1b", virtual=1))
    two = llm_iteration(SELENE, GPT, _lay())
    assert two.bubble_s < one.bubble_s
    slot_1 = (one.iteration_s - one.dp_exposed_s - one.optimizer_s) / (48 + 7)
    assert one.bubble_s == pytest.approx(7 * slot_1, rel=1e-9)


def test_sequence_parallel_trades_allreduce_for_rs_plus_ag():
    a = llm_iteration(SELENE, GPT, _lay())
    b = llm_iteration(SELENE, GPT, _lay(sp=True))
    assert b.memory.activations_B < a.memory.activations_B
    assert b.tp_comm_s == pytest.approx(a.tp_comm_s, rel=0.25)


def test_dp_overlap_hides_only_the_last_reduction():
    hidden = llm_iteration(SELENE, GPT, _lay(dp_overlap=True))
    shown = llm_iteration(SELENE, GPT, _lay())
    assert hidden.dp_comm_s == shown.dp_comm_s
    assert shown.dp_exposed_s == shown.dp_comm_s
    assert hidden.dp_exposed_s < shown.dp_exposed_s


def test_zero_stages_add_communication_and_cut_memory():
    kw = dict(pp=1, dp=192, global_batch=384, schedule="1f1b", virtual=1)
    rows = [llm_iteration(SELENE, GPT, _lay(zero=z, **kw)) for z in (0, 1, 2, 3)]
    mem = [r.memory.states_B for r in rows]
    assert mem == sorted(mem, reverse=True)
    assert rows[3].dp_comm_s > rows[2].dp_comm_s >= rows[1].dp_comm_s


def test_same_inputs_same_answer():
    assert llm_iteration(SELENE, GPT, _lay()) == llm_iteration(SELENE, GPT, _lay())


def test_partial_nodes_are_refused_in_one_line():
    with pytest.raises(ConfigError, match="whole nodes"):
        llm_iteration(SELENE, GPT, _lay(tp=4, pp=1, dp=3, global_batch=6,
                                        schedule="1f1b", virtual=1))
    small = dataclasses.replace(SELENE, network=dataclasses.replace(
        SELENE.network, topology=dataclasses.replace(SELENE.network.topology, max_nodes=4)))
    with pytest.raises(ConfigError, match="nodes"):
        llm_iteration(small, GPT, _lay())


def test_the_gemm_ceiling_moves_the_transformer_time():
    """The transformer path prices its GEMMs at the device's measured matmul ceiling
    (``gemm_fraction_fp16``), not at the fraction solved from ResNet-50's rate, which
    the layer-by-layer path keeps; one A100 description serves both (Selene's is the
    catalog's)."""
    from dlscale.perfmodel.catalog.devices import DEVICES

    a100 = SELENE.node.device
    assert a100 is DEVICES["a100-sxm4-80gb"]
    assert a100.gemm_fraction_fp16 == pytest.approx(258 / 312)   # power-capped, randn
    assert a100.sustained_fraction_fp16 < 0.5 < a100.for_gemms().sustained_fraction_fp16
    lay = _lay(pp=1, dp=1, global_batch=4, schedule="1f1b", virtual=1, recompute="none")
    base = llm_iteration(SELENE, GPT, lay)
    lower = dataclasses.replace(a100, gemm_fraction_fp16=0.5 * a100.gemm_fraction_fp16)
    node = dataclasses.replace(SELENE.node, device=lower)
    slower = llm_iteration(dataclasses.replace(SELENE, node=node), GPT, lay)
    assert slower.compute_s > 1.5 * base.compute_s
    unknown = dataclasses.replace(a100, gemm_fraction_fp16=0.0)     # the network's fraction
    node = dataclasses.replace(SELENE.node, device=unknown)
    assert llm_iteration(dataclasses.replace(SELENE, node=node), GPT, lay).compute_s > \
        slower.compute_s
    with pytest.raises(ConfigError, match="gemm_fraction_fp16: must be in"):
        dataclasses.replace(a100, gemm_fraction_fp16=1.5)


def test_table_1_rates_count_flops_as_the_paper_does():
    """Narayanan et al. eq. (3), full recomputation, over the iteration and the GPUs:
    the model's achieved TFLOP/s per GPU counts the same FLOPs as Table 1's."""
    from dlscale.validation.case_megatron_sc21 import ROWS, layout

    for name, row in ROWS.items():
        g, lay = get_llm(name), layout(name)
        assert g.flops(lay.global_batch, "full") == pytest.approx(
            g.flops_narayanan(lay.global_batch, "full"), rel=1e-12)
        r = llm_iteration(SELENE, g, lay)
        assert r.flops == g.flops(lay.global_batch, "full")
        assert r.tflops_per_gpu == pytest.approx(
            g.flops_narayanan(row[3], "full") / (r.iteration_s * row[2]) / 1e12, rel=1e-12)


def test_the_optimizer_step_streams_megatrons_mixed_precision_bytes():
    from dlscale.perfmodel.compute.llm_memory import stage_params

    lay = _lay()
    r = llm_iteration(dataclasses.replace(SELENE, noise="none"), GPT, lay)
    params = max(stage_params(GPT, lay, "first"), stage_params(GPT, lay, "last"))
    bw = SELENE.node.device.memory_bandwidth_Bps * HBM_ACHIEVABLE_FRACTION
    # grads to fp32 6, unscale 8, norm 4, Adam 28, weights back to fp16 6
    assert r.optimizer_s == pytest.approx((6 + 8 + 4 + 28 + 6) * params / bw, rel=1e-12)


def test_the_a100_gemm_ceiling_is_its_power_capped_rate_not_the_burst_search():
    """The A100's GEMM ceiling is its measured rate at the 400 W cap with random inputs
    (258 TFLOP/s, 8192^3, cuBLAS of 2022), below the burst best-of-shapes MAMF (271.2)
    and above nothing the sources give (257); the other devices keep their MAMF."""
    from dlscale.perfmodel.catalog.devices import DEVICES

    a100 = DEVICES["a100-sxm4-80gb"]
    ceiling = a100.for_gemms().sustained_flops("fp16") / 1e12
    assert 257.0 <= ceiling < 271.2
    assert DEVICES["a100-sxm4-40gb"].gemm_fraction_fp16 == a100.gemm_fraction_fp16
    assert DEVICES["h100-sxm"].gemm_fraction_fp16 == pytest.approx(792.1 / 989)
    # the transformer path's compute moves with it (GPT on one A100, no communication)
    lay = _lay(pp=1, dp=1, global_batch=4, schedule="1f1b", virtual=1, recompute="none")
    burst = dataclasses.replace(a100, gemm_fraction_fp16=271.2 / 312)
    node = dataclasses.replace(SELENE.node, device=burst)
    fast = llm_iteration(dataclasses.replace(SELENE, node=node), GPT, lay)
    assert llm_iteration(SELENE, GPT, lay).compute_s > 1.02 * fast.compute_s
