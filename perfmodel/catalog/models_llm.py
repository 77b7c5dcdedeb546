"""Decoder-only transformers of the LLM era, by name (:class:`TransformerSpec`).

(``models_transformer`` holds the 2017 encoder-decoder of the seed cases; these are
the models tensor and pipeline parallelism were built for.)

- ``gpt-1.7b`` ... ``gpt-1t``: the ten GPT models of Narayanan et al., SC'21 (arXiv
  2104.04473), Table 1: heads, hidden size and layers per row, vocabulary 51,200 and
  sequence 2,048 (Sec. 5.1: "vocabulary size of 51,200 ... sequence length of 2048");
  learned position embeddings, tied logits (Megatron's GPT);
- ``gpt3-175b``: Brown et al., "Language models are few-shot learners", NeurIPS 2020,
  Table 2.1: 96 layers, 96 heads of 128, hidden 12,288, context 2,048; its BPE
  vocabulary of 50,257 is padded to 51,200 by Megatron as in Narayanan et al.;
- ``llama2-70b``: Touvron et al., "Llama 2: open foundation and fine-tuned chat
  models", 2023 (arXiv 2307.09288), Table 1 and Sec. 2.2: 80 layers, hidden 8,192,
  64 heads, grouped-query attention with 8 key/value heads, context 4,096, 32,000
  tokens; SwiGLU MLP of 28,672 and RMSNorm, rotary positions, no biases, untied
  output layer (as Llama 1: Touvron et al. 2023, arXiv 2302.13971, Sec. 2.2; the
  28,672 and the kv heads are the released ``params.json`` / config of the model);
- ``mixtral-8x7b``: Jiang et al., "Mixtral of experts", 2024 (arXiv 2401.04088),
  Table 1: dim 4,096, 32 layers, head dim 128, 32 heads, 8 kv heads, hidden 14,336,
  context 32,768, vocabulary 32,000, 8 experts, top 2; the Llama layout otherwise
  (Sec. 2: "the same modifications as described in [Touvron et al.]").

Examples
--------
>>> round(LLMS["gpt-1t"].params_narayanan / 1e9, 1)     # Table 1: 1008.0
1008.0
>>> round(LLMS["llama2-70b"].params / 1e9, 1)            # Touvron et al.: 70 B
69.0
>>> m = LLMS["mixtral-8x7b"]                             # Jiang et al.: 47 B, 13 B active
>>> round(m.params / 1e9, 1), round((m.layers * m.active_layer_params) / 1e9, 1)
(46.7, 12.6)
"""

from __future__ import annotations

from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.training.transformer import TransformerSpec

__all__ = ["LLMS", "NARAYANAN_TABLE1", "get_llm"]

_NARAYANAN = "Narayanan et al. SC'21 (arXiv 2104.04473), Table 1"

#: Narayanan et al. SC'21, Table 1: name -> (heads, hidden, layers).
NARAYANAN_TABLE1: dict[str, tuple[int, int, int]] = {
    "gpt-1.7b": (24, 2304, 24),
    "gpt-3.6b": (32, 3072, 30),
    "gpt-7.5b": (32, 4096, 36),
    "gpt-18.4b": (48, 6144, 40),
    "gpt-39.1b": (64, 8192, 48),
    "gpt-76.1b": (80, 10240, 60),
    "gpt-145.6b": (96, 12288, 80),
    "gpt-310.1b": (128, 16384, 96),
    "gpt-529.6b": (128, 20480, 105),
    "gpt-1t": (160, 25600, 128),
}

#: Narayanan et al. SC'21, Sec. 5.1: vocabulary and sequence of every Table 1 model.
_V, _S = 51_200, 2_048

LLMS: dict[str, TransformerSpec] = {
    **{name: TransformerSpec(name, hidden=h, layers=n, heads=a, seq=_S, vocab=_V,
                             source=_NARAYANAN)
       for name, (a, h, n) in NARAYANAN_TABLE1.items()},
    "gpt3-175b": TransformerSpec(
        "gpt3-175b", hidden=12288, layers=96, heads=96, seq=2048, vocab=_V,
        source="Brown et al. NeurIPS 2020, Table 2.1 (vocabulary padded as Megatron)"),
    "llama2-70b": TransformerSpec(
        "llama2-70b", hidden=8192, layers=80, heads=64, kv_heads=8, seq=4096, vocab=32000,
        ffn_hidden=28672, gated_mlp=True, position_embeddings=False, tied_embeddings=False,
        biases=False, source="Touvron et al. 2023 (arXiv 2307.09288), Table 1, Sec. 2.2"),
    "mixtral-8x7b": TransformerSpec(
        "mixtral-8x7b", hidden=4096, layers=32, heads=32, kv_heads=8, seq=32768,
        vocab=32000, ffn_hidden=14336, gated_mlp=True, experts=8, top_k=2,
        position_embeddings=False, tied_embeddings=False, biases=False,
        source="Jiang et al. 2024 (arXiv 2401.04088), Table 1"),
}


def get_llm(name: str) -> TransformerSpec:
    """The transformer called ``name`` (a key of :data:`LLMS`).

    Parameters
    ----------
    name : str
        A catalog name, e.g. ``"gpt3-175b"``.

    Returns
    -------
    TransformerSpec

    Raises
    ------
    ConfigError
        An unknown name, listing the valid ones.
    """
    if name not in LLMS:
        raise unknown_name("transformer model", name, LLMS)
    return LLMS[name]
