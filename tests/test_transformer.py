"""The transformer description: parameters and FLOPs against the published formulas."""

from __future__ import annotations

import math

import pytest

from dlscale.perfmodel.catalog.models_llm import LLMS, NARAYANAN_TABLE1, get_llm
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.transformer import (
    TransformerSpec,
    activation_bytes_per_layer,
    split_activation_terms,
)

#: Narayanan et al. SC'21 Table 1, "Number of parameters (billion)".
TABLE1_PARAMS = {"gpt-1.7b": 1.7, "gpt-3.6b": 3.6, "gpt-7.5b": 7.5, "gpt-18.4b": 18.4,
                 "gpt-39.1b": 39.1, "gpt-76.1b": 76.1, "gpt-145.6b": 145.6,
                 "gpt-310.1b": 310.1, "gpt-529.6b": 529.6, "gpt-1t": 1008.0}


def test_gpt3_has_175b_parameters_within_1_percent():
    assert abs(get_llm("gpt3-175b").params / 175e9 - 1) < 0.01


@pytest.mark.parametrize("name", sorted(NARAYANAN_TABLE1))
def test_table1_parameters_by_eq2_and_by_the_matrices(name):
    m = LLMS[name]
    # eq. (2) by hand: 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))
    n, h, v, s = m.layers, m.hidden, m.vocab, m.seq
    by_hand = 12 * n * h**2 * (1 + 13 / (12 * h) + (v + s) / (12 * n * h))
    assert m.params_narayanan == round(by_hand)
    assert m.params - m.params_narayanan == 2 * h        # the final layer norm
    assert round(m.params / 1e9, 1) == pytest.approx(TABLE1_PARAMS[name], abs=0.051)


@pytest.mark.parametrize("recompute,coef,logit", [("full", 96, 16), ("none", 72, 12)])
def test_flops_are_eq3(recompute, coef, logit):
    m = get_llm("gpt-145.6b")
    b, s, n, h, v = 2304, 2048, 80, 12288, 51200
    by_hand = coef * b * s * n * h**2 * (1 + s / (6 * h) + v / (logit * n * h))
    assert math.isclose(m.flops(b, recompute), by_hand, rel_tol=1e-12)
    assert math.isclose(m.flops_narayanan(b, recompute), by_hand, rel_tol=1e-12)


def test_selective_recompute_adds_the_attention_core_once():
    m = get_llm("gpt3-175b")
    core = 4.0 * m.seq * m.hidden * m.layers * m.seq * 8
    assert math.isclose(m.flops(8, "selective") - m.flops(8, "none"), core, rel_tol=1e-12)
    with pytest.raises(ConfigError, match="selective"):
        m.flops_narayanan(8, "selective")


def test_korthikanti_table2_activation_forms():
    m = get_llm("gpt3-175b")
    s, h, a, t = m.seq, m.hidden, m.heads, 8
    sbh = s * 4 * h
    assert activation_bytes_per_layer(m, 4) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert activation_bytes_per_layer(m, 4, tp=t) == pytest.approx(
        sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert activation_bytes_per_layer(m, 4, tp=t, sp=True) == pytest.approx(
        sbh * (34 / t + 5 * a * s / (h * t)))
    assert activation_bytes_per_layer(m, 4, tp=t, recompute="selective") == pytest.approx(
        sbh * (10 + 24 / t))
    assert activation_bytes_per_layer(m, 4, tp=t, sp=True, recompute="full") == pytest.approx(
        2 * sbh / t)


@pytest.mark.parametrize("name", sorted(n for n, m in LLMS.items()
                                         if m.kv == m.heads and m.ffn == 4 * m.hidden
                                         and not m.gated_mlp))
@pytest.mark.parametrize(("tp", "sp", "recompute"), [
    (1, False, "none"), (8, False, "none"), (8, True, "none"), (4, False, "selective"),
    (4, True, "selective"), (2, True, "full")])
def test_gpt_activations_are_korthikantis_bit_for_bit(name, tp, sp, recompute):
    # a GPT layer (MHA, 4 h, GeLU): the closed form as it was written before GQA,
    # ffn_hidden and SwiGLU were counted, same bits
    m = get_llm(name)
    sbh = float(m.seq) * 2 * m.hidden
    if recompute == "full":
        old = 2.0 * sbh / (tp if sp else 1)
    else:
        scores = 0.0 if recompute == "selective" else 5.0 * m.heads * m.seq / (m.hidden * tp)
        old = sbh * ((10.0 / tp if sp else 10.0) + 24.0 / tp + scores)
    assert activation_bytes_per_layer(m, 2, tp, sp, recompute) == old


def test_gqa_ffn_and_swiglu_activations_by_tensor():
    # Korthikanti Sec. 4.1's tensors with the model's shapes, bytes per token (16-bit):
    # Q 2h, K and V 2 kv d each, out-projection input 2h; gate, up and product 2f each
    llama = get_llm("llama2-70b")
    h, f, kv, d = llama.hidden, llama.ffn, llama.kv, llama.head_dim
    split = 2 * h + 2 * 2 * kv * d + 2 * h + 3 * 2 * f
    assert split_activation_terms(llama) == pytest.approx(split / h)
    sbh = float(llama.seq) * h
    assert activation_bytes_per_layer(llama, 1, 8, True, "selective") == pytest.approx(
        sbh * (10 + split / h) / 8)
    # GPT's MLP of width f (GeLU input and output) and MHA
    wide = TransformerSpec("w", hidden=1024, layers=2, heads=16, seq=512, vocab=1000,
                           ffn_hidden=8192)
    assert split_activation_terms(wide) == 8 + 4 * 8192 / 1024
    # fewer key/value heads keep less than full attention
    mha = TransformerSpec("m", hidden=1024, layers=2, heads=16, seq=512, vocab=1000)
    gqa = TransformerSpec("g", hidden=1024, layers=2, heads=16, seq=512, vocab=1000,
                          kv_heads=4)
    assert activation_bytes_per_layer(gqa, 1) < activation_bytes_per_layer(mha, 1)


def test_gqa_swiglu_and_moe_counts():
    llama = get_llm("llama2-70b")
    # Touvron et al. 2023: 70 B; the released model counts 68.98 B
    assert round(llama.params / 1e9, 2) == 68.98
    assert llama.qkv_weights == 8192 * (8192 + 2 * 8 * 128)
    mix = get_llm("mixtral-8x7b")
    assert round(mix.params / 1e9, 1) == 46.7           # Jiang et al. 2024: 47 B


@pytest.mark.parametrize("kw,field", [
    (dict(hidden=100, heads=3), "heads"), (dict(kv_heads=5), "kv_heads"),
    (dict(layers=0), "layers"), (dict(experts=4, top_k=5), "top_k"), (dict(top_k=1), "top_k")])
def test_bad_shapes_are_one_line(kw, field):
    base = dict(hidden=128, layers=2, heads=4, seq=16, vocab=100)
    with pytest.raises(ConfigError) as e:
        TransformerSpec("x", **{**base, **kw})
    assert field in str(e.value) and "\n" not in str(e.value)


def test_unknown_model_names_the_valid_ones():
    with pytest.raises(ConfigError, match="gpt3-175b"):
        get_llm("gpt3-175")


def test_the_catalog_lists_every_transformer(capsys):
    """``dlscale catalog transformers``: how a user finds the names ``predict`` takes."""
    from dlscale.cli import main
    from dlscale.perfmodel.catalog.models_llm import LLMS

    assert main(["catalog", "transformers", "--format", "json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert [r["name"] for r in rows] == list(LLMS)
    gpt3 = next(r for r in rows if r["name"] == "gpt3-175b")
    assert abs(gpt3["params_B"] - 174.6) < 0.1 and gpt3["kv_heads"] == gpt3["heads"] == 96


def test_a_mixture_of_experts_keeps_the_mlp_terms_of_every_expert_a_token_visits():
    import dataclasses

    from dlscale.perfmodel.training.transformer import split_activation_terms

    mix = get_llm("mixtral-8x7b")
    one = dataclasses.replace(mix, top_k=1)
    dense = dataclasses.replace(mix, experts=0, top_k=0)
    mlp = 6.0 * mix.ffn / mix.hidden          # SwiGLU: gate, up, product per expert
    assert split_activation_terms(one) == pytest.approx(split_activation_terms(dense))
    assert split_activation_terms(mix) - split_activation_terms(one) == pytest.approx(
        (mix.top_k - 1) * mlp)
