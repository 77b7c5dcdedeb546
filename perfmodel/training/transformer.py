"""A decoder-only transformer: its shape, parameters, FLOPs and activation bytes.

The published closed forms this module implements (each function names its source):

- parameters, Narayanan et al., "Efficient large-scale language model training on
  GPU clusters using Megatron-LM", SC'21 (arXiv 2104.04473), eq. (2):
  ``P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h))`` for a GPT layer of
  ``4 h^2 + 4 h`` attention and ``8 h^2 + 5 h`` MLP and layer-norm weights, the
  ``V h`` token and ``s h`` position embeddings. :meth:`TransformerSpec.params`
  counts the same weights one matrix at a time, so it equals eq. (2) for a GPT
  layer (plus the final layer norm's ``2 h``) and extends it to grouped-query
  attention, a gated (SwiGLU) MLP and experts;
- FLOPs per iteration, the same paper, eq. (3) and its appendix:
  ``F = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))`` with full recomputation (four
  forward passes' worth of the layers, three of the logit layer), ``72`` instead of
  ``96`` without recomputation (three forward passes). :meth:`TransformerSpec.flops`
  counts the matrix products (a multiply-add is 2 FLOPs) the same way: per token
  and layer ``2 x (weights of the layer's matrices)`` plus ``4 s h`` for ``Q K^T``
  and the scores times ``V``, and ``2 h V`` for the logits;
- activation bytes per layer, Korthikanti et al., "Reducing activation recomputation
  in large transformer models", 2022 (arXiv 2205.05198), Sec. 4 and Table 2, 16-bit
  activations: ``s b h (34 + 5 a s / h)`` without parallelism;
  ``s b h (10 + 24 / t + 5 a s / (h t))`` with tensor parallelism ``t``;
  ``s b h (34 / t + 5 a s / (h t))`` with sequence parallelism too; selective
  recomputation drops the ``5 a s / h`` term (the attention scores, softmax and its
  dropout); full recomputation keeps ``2 s b h`` (the layer's input). The ``24``
  that tensor parallelism splits follows grouped-query attention, the MLP's width
  and SwiGLU (:func:`split_activation_terms`), 24 for a GPT layer.

Examples
--------
>>> import math
>>> gpt3 = TransformerSpec("gpt3-175b", hidden=12288, layers=96, heads=96, seq=2048,
...                        vocab=51200)
>>> round(gpt3.params / 1e9, 1)            # Brown et al. 2020: 175 B
174.6
>>> gpt3.params - gpt3.params_narayanan    # the final layer norm's scale and shift
24576
>>> round(gpt3.flops(1536, "full") / 1e18, 2)
4.51
>>> math.isclose(gpt3.flops(1536, "full"), gpt3.flops_narayanan(1536, "full"), rel_tol=1e-12)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from dlscale.perfmodel.errors import ConfigError

__all__ = ["RECOMPUTE", "TransformerSpec", "activation_bytes_per_layer",
           "split_activation_terms"]

#: Activation recomputation modes (Korthikanti et al. 2022, Sec. 5).
RECOMPUTE = ("none", "selective", "full")

#: Forward passes' worth of work per iteration by recomputation mode, for the layers
#: (Narayanan et al. SC'21 eq. 3 and appendix: backward = 2 forward, full
#: recomputation one forward more); selective adds the attention core only
#: (:meth:`TransformerSpec.flops`).
_PASSES = {"none": 3, "selective": 3, "full": 4}


def _check_recompute(recompute: str) -> None:
    if recompute not in RECOMPUTE:
        raise ConfigError(f"recompute: must be one of {', '.join(RECOMPUTE)}, "
                          f"got {recompute!r}")


def _positive_int(owner: str, name: str, value: object) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise ConfigError(f"{owner}.{name}: must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class TransformerSpec:
    """A decoder-only transformer.

    Parameters
    ----------
    name : str
        Catalog name.
    hidden, layers, heads : int
        ``h``, ``l`` and ``a`` (``h`` divisible by ``a``).
    seq, vocab : int
        Sequence length ``s`` and vocabulary ``V``.
    kv_heads : int
        Key/value heads (grouped-query attention, Ainslie et al. 2023); 0: ``heads``.
    ffn_hidden : int
        MLP inner size; 0: ``4 h`` (GPT).
    gated_mlp : bool
        SwiGLU (Shazeer 2020): three ``h x f`` matrices, no biases (Llama, Touvron et
        al. 2023); else GPT's two matrices with biases and GeLU.
    experts, top_k : int
        Mixture of experts: ``experts`` MLPs per layer, each token routed to ``top_k``
        of them (0 experts: a dense MLP).
    position_embeddings : bool
        Learned ``s x h`` position table (GPT); False for rotary (Llama).
    tied_embeddings : bool
        The logit layer reuses the token table (GPT, Megatron); else its own ``V x h``.
    biases : bool
        Linear layers carry biases (GPT); Llama's do not.
    source : str
        Citation.
    """

    name: str
    hidden: int
    layers: int
    heads: int
    seq: int
    vocab: int
    kv_heads: int = 0
    ffn_hidden: int = 0
    gated_mlp: bool = False
    experts: int = 0
    top_k: int = 0
    position_embeddings: bool = True
    tied_embeddings: bool = True
    biases: bool = True
    source: str = ""

    def __post_init__(self) -> None:
        owner = f"transformer {self.name!r}"
        for name in ("hidden", "layers", "heads", "seq", "vocab"):
            _positive_int(owner, name, getattr(self, name))
        for name in ("kv_heads", "ffn_hidden", "experts", "top_k"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 0):
                raise ConfigError(f"{owner}.{name}: must be an integer >= 0, got {value!r}")
        if self.hidden % self.heads:
            raise ConfigError(f"{owner}.heads: must divide hidden {self.hidden}, "
                              f"got {self.heads}")
        if self.kv_heads and self.heads % self.kv_heads:
            raise ConfigError(f"{owner}.kv_heads: must divide heads {self.heads}, "
                              f"got {self.kv_heads}")
        if self.experts and not 1 <= self.top_k <= self.experts:
            raise ConfigError(f"{owner}.top_k: must be in 1..experts ({self.experts}) "
                              f"for a mixture of experts, got {self.top_k}")
        if not self.experts and self.top_k:
            raise ConfigError(f"{owner}.top_k: must be 0 without experts, got {self.top_k}")

    # --- shape ---------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        """``h / a``."""
        return self.hidden // self.heads

    @property
    def kv(self) -> int:
        """Key/value heads (``heads`` without grouped-query attention)."""
        return self.kv_heads or self.heads

    @property
    def ffn(self) -> int:
        """MLP inner size ``f`` (``4 h`` by default)."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def moe(self) -> bool:
        """Whether the MLP is a mixture of experts."""
        return self.experts > 0

    # --- parameters ----------------------------------------------------------------
    @property
    def qkv_weights(self) -> int:
        """``h x (h + 2 kv d)``: the fused query, key and value projection."""
        return self.hidden * (self.hidden + 2 * self.kv * self.head_dim)

    @property
    def mlp_weights(self) -> int:
        """One MLP's (one expert's) matrices: ``2 h f``, or ``3 h f`` gated."""
        return (3 if self.gated_mlp else 2) * self.hidden * self.ffn

    def _layer_biases_and_norms(self) -> int:
        h, f = self.hidden, self.ffn
        norms = 2 * 2 * h                           # two layer norms, scale and shift
        if not self.biases:
            return norms // 2                       # RMSNorm: a scale only (Llama)
        mlps = max(self.experts, 1)
        return norms + (h + 2 * self.kv * self.head_dim) + h + mlps * (f + h)

    @property
    def layer_params(self) -> int:
        """Parameters of one layer (all experts, the router)."""
        h = self.hidden
        router = h * self.experts                   # a linear gate (Fedus et al. 2021)
        mlps = max(self.experts, 1) * self.mlp_weights
        return self.qkv_weights + h * h + mlps + router + self._layer_biases_and_norms()

    @property
    def embedding_params(self) -> int:
        """Token (and position) tables; a second ``V x h`` when the logits are untied."""
        h = self.hidden
        table = self.vocab * h + (self.seq * h if self.position_embeddings else 0)
        return table + (0 if self.tied_embeddings else self.vocab * h)

    @property
    def params(self) -> int:
        """All parameters: layers, embeddings, the final norm."""
        final = (2 if self.biases else 1) * self.hidden
        return self.layers * self.layer_params + self.embedding_params + final

    @property
    def params_narayanan(self) -> int:
        """Narayanan et al. SC'21 eq. (2), ``12 l h^2 + 13 l h + (V + s) h`` (GPT)."""
        n, h = self.layers, self.hidden
        return round(12 * n * h * h * (1 + 13 / (12 * h) + (self.vocab + self.seq) / (12 * n * h)))

    @property
    def active_layer_params(self) -> int:
        """Matrix weights one token multiplies per layer (``top_k`` experts of an MoE)."""
        h = self.hidden
        mlps = self.top_k if self.moe else 1
        return self.qkv_weights + h * h + mlps * self.mlp_weights + h * self.experts

    # --- FLOPs ---------------------------------------------------------------------
    def layer_flops_per_token(self) -> tuple[float, float]:
        """Forward FLOPs per token of one layer: (matrix weights, attention core).

        ``2 x`` the multiplied weights, and ``4 s h`` for ``Q K^T`` and scores x ``V``
        (Narayanan et al. SC'21, appendix: ``24 B s h^2 + 4 B s^2 h`` per layer).
        """
        return 2.0 * self.active_layer_params, 4.0 * self.seq * self.hidden

    def flops(self, batch: int, recompute: str = "full") -> float:
        """FLOPs of one iteration on ``batch`` sequences (forward, backward, recompute).

        Three forward passes' worth (forward, two for the backward), one more of the
        layers with full recomputation, and of the attention core with selective
        recomputation; the logit layer is never recomputed (Narayanan et al. SC'21
        eq. 3). For a GPT layer this is eq. (3) exactly.
        """
        _check_recompute(recompute)
        weights, core = self.layer_flops_per_token()
        tokens = float(batch) * self.seq
        passes = _PASSES[recompute]
        layer = passes * weights + (passes + (recompute == "selective")) * core
        logits = 3 * 2.0 * self.hidden * self.vocab
        return tokens * (self.layers * layer + logits)

    def flops_narayanan(self, batch: int, recompute: str = "full") -> float:
        """Narayanan et al. SC'21 eq. (3): ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``.

        ``72 B s l h^2 (1 + s/(6h) + V/(12 l h))`` without recomputation (the
        paper's appendix); selective recomputation is not in the paper
        (:meth:`flops` counts it).
        """
        _check_recompute(recompute)
        if recompute == "selective":
            raise ConfigError("recompute: Narayanan et al. eq. (3) has none and full only, "
                              "got 'selective'")
        b, s, n, h, v = float(batch), self.seq, self.layers, self.hidden, self.vocab
        if recompute == "full":
            return 96 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))
        return 72 * b * s * n * h * h * (1 + s / (6 * h) + v / (12 * n * h))


def activation_bytes_per_layer(spec: TransformerSpec, micro: int, tp: int = 1,
                               sp: bool = False, recompute: str = "none") -> float:
    """Activation bytes one layer keeps for one microbatch on one tensor-parallel rank.

    Korthikanti et al. 2022 (arXiv 2205.05198), Sec. 4.1 and Table 2, 16-bit
    activations and 1-byte dropout masks (see the module docstring). ``10 s b h``
    of the ``34`` are the layer norms' inputs and the dropout outputs and masks
    that tensor parallelism alone leaves whole on every rank; sequence parallelism
    splits them too.

    Parameters
    ----------
    spec : TransformerSpec
    micro : int
        Sequences per microbatch ``b``.
    tp : int, optional
        Tensor-parallel size ``t``.
    sp : bool, optional
        Sequence parallelism.
    recompute : {"none", "selective", "full"}, optional

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> g = TransformerSpec("g", hidden=12288, layers=96, heads=96, seq=2048, vocab=51200)
    >>> sbh = 2048 * 1 * 12288
    >>> activation_bytes_per_layer(g, 1) / sbh == 34 + 5 * 96 * 2048 / 12288
    True
    >>> activation_bytes_per_layer(g, 1, tp=8, sp=True, recompute="selective") / sbh
    4.25
    """
    _check_recompute(recompute)
    if tp < 1:
        raise ConfigError(f"tp: must be a positive integer, got {tp!r}")
    s, h, a = spec.seq, spec.hidden, spec.heads
    sbh = float(s) * micro * h
    if recompute == "full":
        return 2.0 * sbh / (tp if sp else 1)
    scores = 0.0 if recompute == "selective" else 5.0 * a * s / (h * tp)
    whole = 10.0 / tp if sp else 10.0
    return sbh * (whole + split_activation_terms(spec) / tp + scores)


def split_activation_terms(spec: TransformerSpec) -> float:
    """Bytes per ``s b h`` one layer keeps that tensor parallelism splits (``24`` for GPT).

    Korthikanti et al. 2022 (arXiv 2205.05198), Sec. 4.1, counts what the backward
    pass keeps, 16-bit: in attention ``Q`` and ``K`` for ``Q K^T`` (``4 s b h``),
    ``V`` for the scores times ``V`` (``2 s b h``) and the output projection's input
    (``2 s b h``); in the MLP the GeLU's input (``8 s b h``, the first linear's
    ``4 h`` output) and the second linear's input (``8 s b h``). Those tensors
    follow the model's shapes, each 2 bytes per element:

    - grouped-query attention: ``K`` and ``V`` have ``kv_heads`` heads of ``h / a``,
      ``2 s b h kv / a`` each, so attention keeps ``2 + 2 + 4 kv / a`` (``8`` for
      ``kv = a``);
    - an MLP of width ``f``: the GeLU's input and output are ``s b f``, ``4 f / h``;
    - SwiGLU (Shazeer 2020): the two up projections' outputs (gate and up, the
      SiLU's and the product's inputs) and the gated product (the down projection's
      input), ``6 f / h``.
    - a mixture of experts routes every token to ``top_k`` experts (Jiang et al. 2024,
      Sec. 2: "each token ... two experts" of Mixtral), so each keeps ``top_k`` copies
      of the MLP's terms, one per expert it went through (the routed tokens of every
      expert its rank holds: as many, on average, as its own tokens times ``top_k``).

    The terms tensor parallelism leaves whole (the layer norms' and the two linears'
    inputs, the dropout masks, ``10 s b h``) and the scores' ``5 a s / h`` (per query
    head) are unchanged. For a GPT layer (``kv = a``, ``f = 4 h``, GeLU) this is 24
    exactly (Korthikanti's Table 2).

    Examples
    --------
    >>> g = TransformerSpec("g", hidden=4096, layers=2, heads=32, seq=2048, vocab=32000)
    >>> split_activation_terms(g)
    24.0
    >>> llama = TransformerSpec("l", hidden=4096, layers=2, heads=32, seq=2048, vocab=32000,
    ...                         kv_heads=8, ffn_hidden=11008, gated_mlp=True)
    >>> split_activation_terms(llama)
    21.125
    >>> moe = TransformerSpec("m", hidden=4096, layers=2, heads=32, seq=2048, vocab=32000,
    ...                       kv_heads=8, ffn_hidden=14336, gated_mlp=True, experts=8,
    ...                       top_k=2)
    >>> split_activation_terms(moe) == 5 + 2 * 6 * 14336 / 4096
    True
    """
    h, f = spec.hidden, spec.ffn
    attention = 2.0 + 2.0 + 4.0 * spec.kv / spec.heads      # Q, K, V, output projection in
    mlp = (6.0 if spec.gated_mlp else 4.0) * f / h * (spec.top_k if spec.moe else 1)
    return attention + mlp
