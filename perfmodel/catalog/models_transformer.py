"""Transformer (Vaswani et al. 2017) as in the TensorFlow official model.

The TF official Transformer (``tensorflow/models``, ``official/transformer``) that
Cavdar et al. (ISC 2019) trained under Horovod:

- one embedding table of ``vocab x hidden`` shared by the encoder input, the decoder
  input and the pre-softmax projection (``EmbeddingSharedWeights``); its gradient
  reaches Horovod as ``IndexedSlices`` (layer kind ``embedding``,
  ``sparse_gradient=True``), the rows touched being the tokens of the batch (the
  shared softmax projection makes the whole table appear in the gathered slices,
  which the perfmodel accounts for from the table size);
- attention projections without biases (``use_bias=False``), feed-forward layers
  with biases, layer norm (scale and bias) before each sublayer and after each stack;
- vocabulary of 33,708 subword tokens (the ``wmt32k`` vocabulary of the TF official
  data pipeline, as stated in the Horovod issue threads quoted by published-results);
- base: hidden 512, filter 2048, 8 heads, 6+6 layers; big: hidden 1024, filter
  4096, 16 heads, 6+6 layers (Vaswani et al. Table 3).

A sample is one sentence pair. Tokens per sample is an assumption: 28 subword
tokens per side, from WMT'14 en-de having about 4.5 M pairs (Vaswani et al. Sec.
5.1) and roughly 1.3e8 subword tokens per side after 32k-wordpiece encoding
(about 28 per sentence; order-of-magnitude figure, not stated by the papers). The
embedding rows touched per sample are source + target tokens = 56.

FLOPs per sample: every dense matrix product costs ``2 x in x out`` per token;
attention scores cost ``2 S^2 d`` (Q K^T) plus ``2 S^2 d`` (weights x V) per layer for
sequence length ``S``; the softmax projection costs ``2 d V`` per target token.

Examples
--------
>>> round(transformer("base").params / 1e6, 1)   # Vaswani et al. Table 3: 65 M (37k vocab)
61.4
>>> round(transformer("big").params / 1e6, 1)    # Vaswani et al. Table 3: 213 M
210.8
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.datasets import DATASETS
from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.training.workload import Layer, Model

__all__ = [
    "TOKENS_PER_SIDE",
    "TRANSFORMER_SIZES",
    "VOCAB_SIZE",
    "transformer",
    "transformer_base",
    "transformer_big",
]

#: Subword vocabulary of the TF official wmt32k data (Cavdar et al. ISC 2019, arXiv
#: 1905.04035; Horovod issues).
VOCAB_SIZE = 33_708
#: Assumed subword tokens per sentence on each side (source, target); see module doc.
TOKENS_PER_SIDE = 28

#: name -> (hidden, filter, heads, layers per stack); Vaswani et al. 2017, Table 3.
TRANSFORMER_SIZES: dict[str, tuple[int, int, int, int]] = {
    "base": (512, 2048, 8, 6),
    "big": (1024, 4096, 16, 6),
}


def _attention(name: str, d: int, s_q: int, s_kv: int) -> Layer:
    """Multi-head attention: Q, K, V and output projections (no bias) and the scores."""
    # W_Q, W_K, W_V, W_O, each d x d (Vaswani et al. 2017, arXiv 1706.03762, Sec. 3.2.2)
    params = 4 * d * d
    # definition: one multiply-add = 2 FLOPs; Q and out on s_q tokens, K and V on s_kv,
    # then Q K^T and (softmax) x V
    proj = 2.0 * d * d * (2 * s_q + 2 * s_kv)
    scores = 2.0 * s_q * s_kv * d * 2                # definition: multiply-add = 2 FLOPs
    # assumption: 5 FLOPs per score for the softmax (max, subtract, exp, sum, divide),
    # a counting convention; no published figure
    softmax = 5.0 * s_q * s_kv
    return Layer(name, "attention", params, proj + scores + softmax, s_q * d)


def _ffn(name: str, d: int, f: int, s: int) -> Layer:
    params = d * f + f + f * d + d
    # definition: one multiply-add = 2 FLOPs; one FLOP per bias add and per ReLU
    flops = 2.0 * s * (d * f + f * d) + s * (f + d) + s * f   # products, biases, ReLU
    return Layer(name, "fc", params, flops, s * (f + d))


def _norm(name: str, d: int, s: int) -> Layer:
    # assumption: 8 FLOPs per element for layer norm (mean, centre, square, variance,
    # normalise, scale, shift), a counting convention; no published figure
    return Layer(name, "norm", 2 * d, 8.0 * s * d, s * d)


def transformer(size: str, vocab: int = VOCAB_SIZE, tokens: int = TOKENS_PER_SIDE) -> Model:
    """Transformer ``size`` ("base" or "big"), layer by layer.

    Parameters
    ----------
    size : {"base", "big"}
        A key of :data:`TRANSFORMER_SIZES`.
    vocab : int, optional
        Shared source/target vocabulary (the embedding's rows).
    tokens : int, optional
        Tokens per sentence on each side.

    Returns
    -------
    Model
        Layer by layer; the shared embedding has a sparse gradient.

    Raises
    ------
    ConfigError
        An unknown ``size``.
    """
    if size not in TRANSFORMER_SIZES:
        raise unknown_name("transformer size", size, TRANSFORMER_SIZES)
    d, f, _heads, n = TRANSFORMER_SIZES[size]
    s = t = tokens
    layers: list[Layer] = [
        # shared embedding / softmax table: the lookup costs no FLOPs (a gather);
        # activations: source and target embeddings (scaled by sqrt(d): 1 FLOP each)
        Layer("embedding_shared", "embedding", vocab * d, float((s + t) * d), (s + t) * d,
              sparse_gradient=True),
    ]
    for i in range(n):
        layers += [
            _norm(f"enc{i}_attn_norm", d, s),
            _attention(f"enc{i}_self_attn", d, s, s),
            _norm(f"enc{i}_ffn_norm", d, s),
            _ffn(f"enc{i}_ffn", d, f, s),
        ]
    layers.append(_norm("enc_out_norm", d, s))
    for i in range(n):
        layers += [
            _norm(f"dec{i}_self_norm", d, t),
            _attention(f"dec{i}_self_attn", d, t, t),
            _norm(f"dec{i}_cross_norm", d, t),
            _attention(f"dec{i}_cross_attn", d, t, s),
            _norm(f"dec{i}_ffn_norm", d, t),
            _ffn(f"dec{i}_ffn", d, f, t),
        ]
    layers.append(_norm("dec_out_norm", d, t))
    # pre-softmax projection with the shared table: parameters counted once, above;
    # definition: multiply-add = 2 FLOPs; the 5 FLOPs per logit of the softmax as in
    # _attention (assumption)
    layers.append(Layer("softmax_projection", "fc", 0, 2.0 * t * d * vocab + 5.0 * t * vocab,
                        t * vocab))
    name = f"transformer-{size}"
    return Model(name, tuple(layers), (s + t,), "wmt14-en-de", DATASETS["wmt14-en-de"],
                 "Vaswani et al. NeurIPS 2017; TF official Transformer (tensorflow/models)",
                 sparse_rows_per_sample=float(s + t))


def transformer_base() -> Model:
    """Transformer-base: hidden 512, 6+6 layers, shared 33,708 x 512 embedding."""
    return transformer("base")


def transformer_big() -> Model:
    """Transformer-big: hidden 1024, 6+6 layers, shared 33,708 x 1024 embedding."""
    return transformer("big")
