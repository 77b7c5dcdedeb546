"""Expert parallelism of a mixture-of-experts transformer: what each rank holds and sends.

A mixture-of-experts (MoE) layer replaces the MLP by ``E`` expert MLPs and a linear
router that sends each token to its ``k`` best experts (top-k gating: Shazeer et al.,
"Outrageously large neural networks", ICLR 2017; Lepikhin et al., "GShard", ICLR
2021, top 2; Fedus et al., "Switch Transformers", JMLR 2022, top 1; Jiang et al.,
"Mixtral of experts", 2024, arXiv 2401.04088, Sec. 2.1: 8 experts, top 2). The terms
this module gives, per rank of an expert-parallel group of ``ep`` data-parallel ranks:

- **expert FLOPs per token**: each token is multiplied by the weights of ``k``
  experts, ``2 k`` FLOPs per expert weight forward (Fedus et al. Sec. 2: a token's
  FLOPs are those of the ``k`` experts it visits, not of all ``E``; Jiang et al.
  Sec. 2.1: 13 B "active" of 47 B parameters per token), so the layer's MLP costs
  ``k`` dense MLPs (:meth:`TransformerSpec.active_layer_params`, :func:`expert_flops_per_token`).
  Routing is taken as balanced: each rank's ``E / ep`` experts receive, on
  average, as many token-expert pairs as the rank sends (``s b k`` per microbatch),
  so a rank's expert GEMMs are the ``k`` experts' worth of its own tokens, on the
  weights of its ``E / ep`` experts, one product per local expert
  (:func:`local_expert_shapes`). The load
  imbalance of a real router and the capacity factor's padding (Fedus et al. Sec.
  2.2: 1.0 to 1.25) are not modelled;
- **two all-to-alls per MoE layer forward, two backward** over the ``ep`` ranks:
  the dispatch sends each token's hidden state to the ranks of its ``k`` experts,
  the combine sends the experts' outputs back (Lepikhin et al. Sec. 2.2 and Fig. 3;
  DeepSpeed-MoE, Rajbhandari et al., ICML 2022, Sec. 5.2); the backward pass sends
  the gradients the same two ways; full recomputation runs the forward's two again.
  Each rank's send buffer is ``k s b h`` 16-bit values (the tokens it holds going into
  the MLP: ``s b``, ``/ t`` with sequence parallelism), ``1 / ep`` of them for each
  group member (:func:`dispatch_bytes`), priced as MPICH's pairwise exchange on the
  group's links (:func:`dlscale.perfmodel.network.collectives.alltoall_s`);
- **expert weights, gradients and optimizer state** divided by ``ep``: a rank holds
  ``E / ep`` experts (:func:`local_expert_params`); their gradients are reduced over
  the ``dp / ep`` ranks that hold the same experts (the expert-data-parallel group,
  ranks ``tp ep`` apart), the dense weights' over all ``dp``; ZeRO shards the expert
  states over ``dp / ep``.

Examples
--------
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> from dlscale.perfmodel.training.parallel import ParallelLayout
>>> m = get_llm("mixtral-8x7b")
>>> expert_layer_params(m) == 8 * 3 * 4096 * 14336
True
>>> lay = ParallelLayout(dp=8, ep=8, global_batch=8)
>>> local_expert_params(m, lay) == m.layers * 3 * 4096 * 14336
True
>>> dispatch_bytes(m, lay) == 2 * 2 * 32768 * 4096          # k s b h, 2 bytes each
True
>>> alltoalls_per_layer(lay)
4
"""

from __future__ import annotations

from collections.abc import Sequence

from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.perfmodel.training.transformer_layers import Shape

__all__ = ["EXPERT_GEMMS", "alltoalls_per_layer", "dispatch_bytes", "expert_flops_per_token",
           "expert_layer_params", "local_expert_params", "local_expert_shapes"]

#: The layers of :func:`~dlscale.perfmodel.training.transformer_layers.layer_gemms`
#: that are the experts' products in an MoE layer, and their positions in it (and in
#: :func:`~dlscale.perfmodel.training.transformer_layers.layer_gemm_shapes`).
EXPERT_GEMMS = ("mlp_up", "mlp_down")
EXPERT_POSITIONS = (4, 5)

#: 16-bit activations and gradients on the wire (mixed precision).
_E = 2.0


def expert_layer_params(model: TransformerSpec) -> int:
    """Weights (and biases) of one layer's ``E`` experts; 0 for a dense model.

    The router's ``h E`` gate is dense: every rank keeps it.

    Parameters
    ----------
    model : TransformerSpec

    Returns
    -------
    int
    """
    if not model.moe:
        return 0
    biases = model.ffn + model.hidden if model.biases else 0
    return model.experts * (model.mlp_weights + biases)


def expert_flops_per_token(model: TransformerSpec) -> float:
    """Forward FLOPs of one layer's experts per token: ``2 k`` x one expert's weights.

    Fedus et al. 2022 Sec. 2 (a token's computation is that of the experts it is
    routed to); for a dense model the one MLP's ``2 x`` its weights.

    Parameters
    ----------
    model : TransformerSpec

    Returns
    -------
    float
    """
    return 2.0 * (model.top_k if model.moe else 1) * model.mlp_weights


def local_expert_params(model: TransformerSpec, layout: ParallelLayout) -> float:
    """Expert parameters one rank of a stage holds: the stage's layers' ``E / ep``
    experts, split over ``tp`` as the dense MLP is (Megatron's column/row split).

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    float
    """
    return layout.stage_layers(model) * expert_layer_params(model) / (layout.tp * layout.ep)


def dispatch_bytes(model: TransformerSpec, layout: ParallelLayout) -> float:
    """Bytes of one rank's send buffer in one all-to-all of one MoE layer, one microbatch.

    ``k`` copies of the hidden state of each token the rank holds (``s b``, ``/ t``
    with sequence parallelism), 2 bytes each; a ``1 / ep`` block for each member of
    the expert-parallel group (balanced routing). 0 for a dense model.

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    float
        Bytes.
    """
    if not model.moe:
        return 0.0
    tokens = float(model.seq) * layout.micro / (layout.tp if layout.sp else 1)
    return _E * model.top_k * tokens * model.hidden


def alltoalls_per_layer(layout: ParallelLayout) -> int:
    """All-to-alls per MoE layer and microbatch: dispatch and combine forward and
    backward, two more with full recomputation (the forward again).

    Parameters
    ----------
    layout : ParallelLayout

    Returns
    -------
    int
    """
    return 4 + (2 if layout.recompute == "full" else 0)


def local_expert_shapes(shapes: Sequence[tuple[Shape, tuple[Shape, Shape]]],
                        model: TransformerSpec,
                        layout: ParallelLayout) -> tuple[tuple[Shape, tuple[Shape, Shape]], ...]:
    """One layer's products on one rank: each expert product as ``E / ep`` products,
    one per local expert, of the tokens routed to it.

    Balanced routing (module docstring): the rank's ``s b k`` token-expert pairs are
    spread evenly over its ``E / ep`` experts, so each expert multiplies
    ``s b k ep / E`` tokens by its own weights (a grouped GEMM, batch ``E / ep``):
    the FLOPs stay those of ``k`` experts per token, the weights read are those of
    the rank's experts. A dense model returns ``shapes`` as given.

    Parameters
    ----------
    shapes : sequence
        :func:`~dlscale.perfmodel.training.transformer_layers.layer_gemm_shapes` of the
        layer: per product ``(forward, (dgrad, wgrad))``, each ``(m, n, k, batch)``.
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    tuple
        The same products, the experts' split per local expert.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> from dlscale.perfmodel.training.transformer_layers import layer_gemm_shapes
    >>> m = get_llm("mixtral-8x7b")
    >>> sh = layer_gemm_shapes(m, 1, 1)
    >>> m.seq * m.top_k, sh[4][0]          # the rank's token-expert pairs, one product
    (65536, (65536, 28672, 4096, 1))
    >>> local_expert_shapes(sh, m, ParallelLayout(dp=8, ep=8, global_batch=8))[4][0]
    (65536, 28672, 4096, 1)
    >>> local_expert_shapes(sh, m, ParallelLayout(dp=8, ep=1, global_batch=8))[4][0]
    (8192, 28672, 4096, 8)
    """
    out = tuple(shapes)
    if not model.moe:
        return out
    local = model.experts // layout.ep
    split = list(out)
    for i in EXPERT_POSITIONS:
        (m, n, k, _), ((_, dn, dk, _), (wm, wn, _, _)) = out[i]
        per = max(1, m // local)
        split[i] = ((per, n, k, local), ((per, dn, dk, local), (wm, wn, per, local)))
    return tuple(split)


