"""One transformer layer on one tensor-parallel rank: its GEMMs and its elementwise bytes.

The matrix products are :class:`~dlscale.perfmodel.training.workload.Layer` s of a
:class:`~dlscale.perfmodel.training.workload.Model` whose sample is one sequence, so
the compute model that prices every other network prices them
(:func:`dlscale.perfmodel.compute.roofline.layer_times`: the GEMM class, the device's
sustained fraction, the utilization of the work, the memory ceiling). Megatron's
tensor parallelism (Shoeybi et al. 2019, Sec. 3) splits the query/key/value and the
MLP's first matrix by columns and the attention output and the MLP's second matrix
by rows, each rank computing ``1 / t`` of every product and ``a / t`` heads.

The elementwise work (layer norms, softmax, dropouts, the MLP's activation, the
residual additions, a bias and a transpose) does a few FLOPs per byte, so it is
priced at the memory bandwidth from the bytes it reads and writes, forward and
backward, kernel by kernel as Megatron-LM runs it (:func:`elementwise_bytes`); the
tensors and their sizes are those of Korthikanti et al. 2022 (arXiv 2205.05198)
Sec. 4.1, 16-bit values and 1-byte dropout masks, each fused kernel of Megatron
(bias + GeLU, bias + dropout + add, scale + mask + softmax) reading its inputs once
and writing its outputs once. The products are also given as cuBLAS runs them
(:func:`layer_gemm_shapes`), for :mod:`dlscale.perfmodel.compute.gemm`.

Examples
--------
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> m = layer_gemms(get_llm("gpt3-175b"), tp=8)
>>> [la.name for la in m.layers]
['qkv', 'scores', 'values', 'attn_out', 'mlp_up', 'mlp_down']
>>> g = get_llm("gpt3-175b")
>>> m.forward_flops == g.seq * sum(g.layer_flops_per_token()) / 8
True
"""

from __future__ import annotations

from dataclasses import dataclass

from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.perfmodel.training.workload import Layer, Model

__all__ = ["ElementwiseBytes", "Shape", "elementwise_bytes", "layer_gemm_shapes", "layer_gemms",
           "logit_gemm", "logit_gemm_shapes"]


def layer_gemms(spec: TransformerSpec, tp: int) -> Model:
    """The matrix products of one layer on one of ``tp`` ranks; a sample is a sequence.

    ``scores`` is ``Q K^T`` and ``values`` the scores times ``V`` (``2 s^2 d`` per
    head each, Narayanan et al. SC'21 appendix); an MoE layer's MLP products are
    those of the ``top_k`` experts each token visits, with all experts' weights.

    Parameters
    ----------
    spec : TransformerSpec
    tp : int
        Tensor-parallel size.

    Returns
    -------
    Model
        Six layers, for :func:`~dlscale.perfmodel.compute.roofline.layer_times`.
    """
    s, h, f, t = spec.seq, spec.hidden, spec.ffn, tp
    kv_out = h + 2 * spec.kv * spec.head_dim
    up = (2 if spec.gated_mlp else 1) * f
    k = spec.top_k if spec.moe else 1
    n_mlp = max(spec.experts, 1)
    layers = (
        Layer("qkv", "fc", spec.qkv_weights // t, 2.0 * s * spec.qkv_weights / t, s * kv_out // t),
        Layer("scores", "attention", 0, 2.0 * s * s * h / t, spec.heads * s * s // t),
        Layer("values", "attention", 0, 2.0 * s * s * h / t, s * h // t),
        Layer("attn_out", "fc", h * h // t, 2.0 * s * h * h / t, s * h),
        Layer("mlp_up", "fc", n_mlp * h * up // t, 2.0 * s * k * h * up / t, s * k * up // t),
        Layer("mlp_down", "fc", n_mlp * f * h // t, 2.0 * s * k * f * h / t, s * k * h),
    )
    return Model(f"{spec.name}-layer-tp{t}", layers, (s * h,), "tokens", 1,
                 spec.source)


def logit_gemm(spec: TransformerSpec, tp: int) -> Model:
    """The output layer's product ``h -> V`` on one of ``tp`` ranks (vocabulary split).

    Parameters
    ----------
    spec : TransformerSpec
    tp : int
        Tensor-parallel size.

    Returns
    -------
    Model
        One layer.
    """
    s, h, v = spec.seq, spec.hidden, spec.vocab
    layer = Layer("logits", "fc", v * h // tp, 2.0 * s * h * v / tp, s * v // tp)
    return Model(f"{spec.name}-logits-tp{tp}", (layer,), (s * h,), "tokens", 1, spec.source)


@dataclass(frozen=True)
class ElementwiseBytes:
    """Bytes the elementwise kernels of one layer move, per microbatch and rank.

    Attributes
    ----------
    core_B : float
        Forward: softmax and its dropout (the attention core that selective
        recomputation recomputes).
    rest_B : float
        Forward: layer norms, dropouts with residual additions, the MLP's
        activation, the query/key/value bias, the attention output's transpose.
    core_bwd_B, rest_bwd_B : float
        The same kernels' backward.
    """

    core_B: float
    rest_B: float
    core_bwd_B: float
    rest_bwd_B: float

    @property
    def total_B(self) -> float:
        """Forward, both parts."""
        return self.core_B + self.rest_B

    @property
    def backward_B(self) -> float:
        """Backward, both parts."""
        return self.core_bwd_B + self.rest_bwd_B


def elementwise_bytes(spec: TransformerSpec, micro: int, tp: int = 1,
                      sp: bool = False) -> ElementwiseBytes:
    """Bytes read and written by one layer's elementwise kernels on one rank.

    Kernel by kernel as Megatron-LM runs a GPT layer (``megatron/model/transformer.py``,
    ``fused_softmax.py``, ``fused_bias_gelu.py``, ``mpu/layers.py``), 2-byte values
    and 1-byte dropout masks, the tensors of Korthikanti et al. 2022 Sec. 4.1; per
    microbatch, ``X = s b h`` elements (``/ t`` where tensor parallelism splits
    them), ``A = a s^2 b / t`` the attention scores, ``F = s b f / t``:

    Forward:

    - two layer norms (apex's fused kernel), each reading and writing ``X``: 8 X;
    - two fused bias + dropout + residual adds, each reading the product and the
      residual and writing the sum and a mask: 14 X;
    - the fused scale + mask + softmax reading and writing ``A`` (4 A) and its
      dropout writing the output and a mask (5 A);
    - the fused bias + GeLU reading and writing ``F`` (4 F; SwiGLU reads two and
      writes one: 6 F);
    - the query/key/value projection's bias, added by ``F.linear`` (PyTorch's
      ``addmm`` copies the broadcast bias into the output, which the GEMM then
      reads): 4 bytes per output element, ``(h + 2 kv d) / t`` per token;
    - the context's ``permute(2, 0, 1, 3).contiguous()`` before the output
      projection: reads and writes ``X / t``.

    Backward: each fused bias + dropout + add reads the gradient and the mask,
    writes the product's gradient and reads it again for the bias gradient (7 X,
    twice); each layer norm reads the gradient and its input, writes the input
    gradient and reads both again for the scale and shift gradients (10 X, twice);
    the two residual branches' gradients are added (read 2, write 1: 6 X, twice);
    GeLU's backward reads the gradient and the saved input, writes the gradient and
    reads it for the bias gradient (8 F; SwiGLU 10 F); softmax's backward reads the
    gradient and the saved output and writes the gradient (6 A), dropout's reads
    the gradient and the mask and writes one (5 A); the transpose's gradient is a
    copy (``X / t`` each way) and the query/key/value bias gradient reads the
    output gradient.

    Sequence parallelism splits the norms and the dropouts (and their gradients)
    by ``t`` too.

    Parameters
    ----------
    spec : TransformerSpec
    micro : int
        Sequences per microbatch.
    tp : int, optional
    sp : bool, optional

    Returns
    -------
    ElementwiseBytes

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> g = get_llm("gpt-1.7b")
    >>> e = elementwise_bytes(g, 1)
    >>> sbh, a_s2 = g.seq * g.hidden, g.heads * g.seq**2
    >>> e.rest_B / sbh, e.core_B / a_s2, e.rest_bwd_B / sbh, e.core_bwd_B / a_s2
    (54.0, 9.0, 88.0, 11.0)
    """
    s, h, a, f, t = float(spec.seq), spec.hidden, spec.heads, spec.ffn, tp
    sbh = s * micro * h
    split = t if sp else 1
    moe = spec.top_k if spec.moe else 1
    sbf = s * micro * f * moe / t
    act_f, act_b = (6.0, 10.0) if spec.gated_mlp else (4.0, 8.0)
    qkv = s * micro * (h + 2 * spec.kv * spec.head_dim) / t if spec.biases else 0.0
    transpose = 4.0 * sbh / t
    scores = a * s * s * micro / t
    rest_f = (2 * 4.0 + 2 * 7.0) * sbh / split + act_f * sbf + 4.0 * qkv + transpose
    rest_b = ((2 * 7.0 + 2 * 10.0 + 2 * 6.0) * sbh / split + act_b * sbf + 2.0 * qkv
              + transpose)
    return ElementwiseBytes(9.0 * scores, rest_f, 11.0 * scores, rest_b)


#: GEMM shapes ``(m, n, k, batch)`` per sequence-microbatch of one layer's products
#: on one rank: forward, then the backward's two (input gradient, weight gradient).
Shape = tuple[int, int, int, int]


def layer_gemm_shapes(spec: TransformerSpec, tp: int,
                      micro: int) -> tuple[tuple[Shape, tuple[Shape, Shape]], ...]:
    """The products of :func:`layer_gemms` as cuBLAS runs them, forward and backward.

    With ``T = s b`` tokens of a microbatch (Megatron multiplies the ``[s, b, h]``
    activations as a ``T x h`` matrix; Shoeybi et al. 2019 Sec. 3 split): a linear
    layer ``y = x W`` of ``W: k x n`` is ``(T, n, k)`` forward, ``(T, k, n)`` for the
    input gradient and ``(k, n, T)`` for the weight gradient; the attention core
    is ``b a / t`` batched products per head, ``Q K^T`` ``(s, s, d)`` and the scores
    times ``V`` ``(s, d, s)``, whose gradients are ``(s, d, s)`` twice and
    ``(s, s, d)`` plus ``(s, d, s)``.

    Parameters
    ----------
    spec : TransformerSpec
    tp : int
    micro : int
        Sequences per microbatch.

    Returns
    -------
    tuple
        Per layer of :func:`layer_gemms` (same order): ``(forward, (dgrad, wgrad))``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> g = get_llm("gpt3-175b")
    >>> sh = layer_gemm_shapes(g, 8, 1)
    >>> fl = sum(2 * m * n * k * b for (m, n, k, b), _ in sh)
    >>> fl == layer_gemms(g, 8).forward_flops
    True
    """
    s, h, f, t, b = spec.seq, spec.hidden, spec.ffn, tp, micro
    tok = s * b
    kv_out = h + 2 * spec.kv * spec.head_dim
    up = (2 if spec.gated_mlp else 1) * f
    mtok = tok * (spec.top_k if spec.moe else 1)
    d, heads = spec.head_dim, b * spec.heads // t

    def linear(m: int, n: int, k: int) -> tuple[Shape, tuple[Shape, Shape]]:
        return (m, n, k, 1), ((m, k, n, 1), (k, n, m, 1))

    return (
        linear(tok, kv_out // t, h),
        ((s, s, d, heads), ((s, d, s, heads), (s, d, s, heads))),
        ((s, d, s, heads), ((s, s, d, heads), (s, d, s, heads))),
        linear(tok, h, h // t),
        linear(mtok, up // t, h),
        linear(mtok, h, f // t),
    )


def logit_gemm_shapes(spec: TransformerSpec, tp: int,
                      micro: int) -> tuple[Shape, tuple[Shape, Shape]]:
    """The output layer's product as :func:`layer_gemm_shapes` gives a linear layer."""
    tok, h, v = spec.seq * micro, spec.hidden, spec.vocab // tp
    return (tok, v, h, 1), ((tok, h, v, 1), (h, v, tok, 1))
