"""Memory per GPU of a transformer trained with a parallel layout, and the fit verdict.

The terms, on the pipeline stage that needs the most (the first or the last):

- **weights, gradients, optimizer state**: mixed-precision Adam keeps 2 bytes of
  fp16 weights, 2 of fp16 gradients and 12 of optimizer state (fp32 master weights,
  momentum and variance) per parameter, 16 in all (Rajbhandari et al., "ZeRO:
  memory optimizations toward training trillion parameter models", SC'20, Sec. 3.1:
  ``2 Psi + 2 Psi + K Psi``, ``K = 12``). A rank holds its stage's parameters over
  ``tp`` (the layers' matrices are split, Shoeybi et al. 2019; norms and biases are
  counted split too, a small overcount of the split); ZeRO stage 1 divides the 12
  by ``dp``, stage 2 the gradients' 2 too, stage 3 the weights' 2 too (Sec. 5).
  With ``precision = "bf16"`` the gradients are fp32, 4 bytes (18 per parameter;
  ``6 + 12 / dp`` under ZeRO 1): Megatron-LM's ``accumulate_allreduce_grads_in_fp32``,
  on whenever ``--bf16`` is (:attr:`~dlscale.perfmodel.training.parallel.ParallelLayout.grad_bytes`).
  With expert parallelism a rank holds ``E / ep`` of each layer's experts
  (:func:`~dlscale.perfmodel.training.expert.local_expert_params`), and ZeRO shards
  their states over the ``dp / ep`` ranks that hold the same experts;
  The first stage holds the token (and position) tables, the last the final norm
  and, when ``pp > 1`` or the logits are untied, its own copy of the ``V x h``
  output matrix (Megatron keeps the tied copy on both ends and allreduces its
  gradient; Narayanan et al. SC'21, Sec. 4);
- **activations**: :func:`~dlscale.perfmodel.training.transformer.activation_bytes_per_layer`
  (Korthikanti et al. 2022, Table 2) times the stage's layers times the
  microbatches in flight (:meth:`ParallelLayout.in_flight`: GPipe ``m``, 1F1B
  ``p``, interleaved ``p (1 + (p - 1) / (p v))``; Korthikanti Sec. 4.2.3) on the
  first stage, and on the last GPipe's ``m``, 1F1B's one, interleaved's
  ``((v - 1) p + 1) / v`` (``m`` when ``m = p``: Megatron-LM's warm-up count); with
  full recomputation one layer's activations without recomputation on top, for the
  layer being recomputed; on the first stage the embedding's dropout mask, ``s b h``
  bytes per microbatch in flight (``/ t`` with sequence parallelism), and on the
  last the output layer's ``4 s b h / t (1 + V / h)`` (its norm, the logits in fp32
  for the loss: Korthikanti Sec. 4.3, as this module reads it) and, at the peak,
  the 16-bit logits the output layer produced, ``2 s b V / t``: Megatron-LM casts
  them for the loss while still holding them (``vocab_parallel_cross_entropy(
  output.float(), labels)`` in ``megatron/model/gpt_model.py``; Megatron Core's
  ``VocabParallelCrossEntropy.calculate_logits_max``), so both copies are live while
  the loss runs (:data:`LOSS_16BIT_LOGIT_BYTES`);
- **communication buffers**: the two pipeline send/receive buffers of one
  microbatch's activations (``2 x 2 s b h`` bytes, ``/ t`` with scatter/gather), and
  with ZeRO the reduce and gather buckets of DeepSpeed's defaults,
  ``reduce_bucket_size = allgather_bucket_size = 5e8`` elements, capped by the rank's
  parameters, a gradient element as the reduction moves it (4 bytes under bf16) and a
  weight element 2 bytes (DeepSpeed configuration reference, "ZeRO optimizations");
  with expert parallelism the all-to-all's send and receive buffers of one MoE
  layer (:func:`~dlscale.perfmodel.training.expert.dispatch_bytes` each; an
  assumption: one layer's in flight).

Workspace of the libraries (cuBLAS, NCCL) and fragmentation are not counted.

Examples
--------
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> from dlscale.perfmodel.training.parallel import ParallelLayout
>>> lay = ParallelLayout(tp=8, pp=8, dp=24, micro=2, global_batch=2304,
...                      schedule="interleaved", virtual=2, recompute="full")
>>> mem = llm_memory(get_llm("gpt-145.6b"), lay)
>>> round(mem.states_B / 1e9, 1), round(mem.activations_B / 1e9, 1)
(37.9, 13.3)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.layoutmemo import layout_memo
from dlscale.perfmodel.training.expert import (
    dispatch_bytes,
    expert_layer_params,
    local_expert_params,
)
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec, activation_bytes_per_layer

__all__ = ["ADAM_BYTES", "LOSS_16BIT_LOGIT_BYTES", "ZERO_BUCKET_ELEMENTS",
           "LLMMemory", "largest_microbatch", "llm_memory", "stage_memory", "stage_params"]

#: Mixed-precision Adam, bytes per parameter: fp16 weights, fp16 gradients, fp32
#: master weights + momentum + variance (Rajbhandari et al. SC'20, Sec. 3.1).
ADAM_BYTES = {"weights": 2.0, "gradients": 2.0, "optimizer": 12.0}

#: Bytes per logit of the output layer's 16-bit logits, live beside their fp32 copy
#: while the loss runs (Megatron-LM ``gpt_model.py``: ``output.float()`` with
#: ``output`` still held; see the module docstring).
#: definition: the size of one fp16/bf16 element.
LOSS_16BIT_LOGIT_BYTES = 2.0

#: DeepSpeed's default ``reduce_bucket_size`` and ``allgather_bucket_size``
#: (elements; DeepSpeed configuration JSON reference, ZeRO optimizations).
ZERO_BUCKET_ELEMENTS = 5e8


@dataclass(frozen=True)
class LLMMemory:
    """Bytes per GPU on the stage that needs the most, by term.

    Attributes
    ----------
    weights_B, gradients_B, optimizer_B : float
        Model states after ZeRO's sharding.
    activations_B : float
        Activations kept for the backward pass at the peak.
    buffers_B : float
        Communication buffers.
    stage : str
        ``"first"`` or ``"last"``: the stage these figures are of.
    """

    weights_B: float
    gradients_B: float
    optimizer_B: float
    activations_B: float
    buffers_B: float
    stage: str

    @property
    def states_B(self) -> float:
        """Weights, gradients and optimizer state."""
        return self.weights_B + self.gradients_B + self.optimizer_B

    @property
    def total_B(self) -> float:
        """Everything counted."""
        return self.states_B + self.activations_B + self.buffers_B

    def fits(self, capacity_B: float) -> bool:
        """Whether the total is at most ``capacity_B``."""
        return self.total_B <= capacity_B


@layout_memo(1, exclude=("dp", "micro", "global_batch", "schedule", "virtual", "zero", "sp",
                         "recompute", "scatter_gather", "dp_overlap", "precision"))
def stage_params(model: TransformerSpec, layout: ParallelLayout, stage: str) -> float:
    """Parameters one rank of the ``"first"`` or ``"last"`` stage holds (before ZeRO).

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout
    stage : {"first", "last"}
        With ``pp = 1`` the one stage is both.

    Returns
    -------
    float
        Parameters (the stage's layers, its embedding or output matrix, over ``tp``;
        the layers' experts over ``ep`` too).
    """
    t, h = layout.tp, model.hidden
    layers = layout.stage_layers(model) * model.layer_params / t
    # the experts other ranks of the expert-parallel group hold (0.0 for ep = 1)
    layers -= (1.0 - 1.0 / layout.ep) * layout.stage_layers(model) * expert_layer_params(model) / t
    out = 0.0
    first = stage == "first" or layout.pp == 1
    last = stage == "last" or layout.pp == 1
    if first:
        out += model.vocab * h / t + (model.seq * h if model.position_embeddings else 0)
    if last:
        out += (2 if model.biases else 1) * h
        if layout.pp > 1 or not model.tied_embeddings:
            out += model.vocab * h / t
    return layers + out


def _states(params: float, layout: ParallelLayout,
            expert: float = 0.0) -> tuple[float, float, float]:
    """Weights, gradients, optimizer bytes; ``expert`` of the ``params`` are sharded
    by ZeRO over the ``dp / ep`` ranks holding the same experts."""
    d, z = layout.dp, layout.zero
    # bf16: the contiguous fp32 gradient buffer (each parameter's ``main_grad``,
    # megatron/core/distributed/param_and_grad_buffer.py ``_ParamAndGradBuffer``)
    # holds every parameter of the rank's chunks; distributed_optimizer.py
    # reduce-scatters in it in place, so it stays whole under ZeRO 1, which shards
    # the fp32 main weights and Adam's two moments only (the 12)
    grad = layout.grad_bytes
    if not expert:
        w = ADAM_BYTES["weights"] * params / (d if z >= 3 else 1)
        g = grad * params / (d if z >= 2 else 1)
        o = ADAM_BYTES["optimizer"] * params / (d if z >= 1 else 1)
        return w, g, o
    de = d // layout.ep

    def held(stage: int) -> float:
        return (params - expert) / d + expert / de if z >= stage else params

    return (ADAM_BYTES["weights"] * held(3), grad * held(2),
            ADAM_BYTES["optimizer"] * held(1))


def _last_in_flight(layout: ParallelLayout) -> float:
    """Microbatches whose activations the last stage's rank holds at its peak.

    GPipe: all ``m`` (every forward before any backward). 1F1B: one (the last rank
    warms up none, Narayanan et al. SC'21 Sec. 2.2.1). Interleaved: the last rank
    runs ``(v - 1) p`` chunk forwards before its first backward, all ``m v`` when
    ``m = p`` (Megatron-LM ``forward_backward_pipelining_with_interleaving``,
    ``num_warmup_microbatches``), each chunk ``1 / v`` of the rank's layers.
    """
    m, p, v = layout.microbatches, layout.pp, layout.virtual
    if layout.schedule == "gpipe":
        return float(m)
    if layout.schedule == "1f1b" or v == 1:
        return 1.0
    if m == p:
        return float(m)
    return min(((v - 1) * p + 1) / v, float(m))


def _activations(model: TransformerSpec, layout: ParallelLayout, stage: str) -> float:
    t, b, sp = layout.tp, layout.micro, layout.sp
    sbh = float(model.seq) * b * model.hidden
    per_layer = activation_bytes_per_layer(model, b, t, sp, layout.recompute)
    flight = layout.in_flight() if stage == "first" else _last_in_flight(layout)
    acts = per_layer * layout.stage_layers(model) * flight
    if layout.recompute == "full":
        acts += activation_bytes_per_layer(model, b, t, sp, "none")
    if stage == "first" or layout.pp == 1:
        acts += sbh / (t if sp else 1) * flight          # embedding dropout mask
    if stage == "last" or layout.pp == 1:
        acts += 4.0 * sbh / t * (1 + model.vocab / model.hidden)
        acts += LOSS_16BIT_LOGIT_BYTES * sbh / t * model.vocab / model.hidden
    return acts


def _buffers(model: TransformerSpec, layout: ParallelLayout, params: float) -> float:
    """The rank's communication buffers; ``params`` its stage's parameters (the ZeRO
    buckets' cap: a bucket holds at most the rank's gradients or weights)."""
    sbh = float(model.seq) * layout.micro * model.hidden
    p2p = 2 * 2.0 * sbh / (layout.tp if layout.scatter_gather else 1) if layout.pp > 1 else 0.0
    zero = 0.0
    if layout.zero:                 # a reduce bucket of gradients, a gather one of weights,
        zero = min(ZERO_BUCKET_ELEMENTS, params) * (    # each element as the exchange moves it
            layout.dp_element_bytes("reduce-scatter") + layout.dp_element_bytes("allgather"))
    if layout.ep > 1:
        return p2p + zero + 2 * dispatch_bytes(model, layout)
    return p2p + zero


def stage_memory(model: TransformerSpec, layout: ParallelLayout, stage: str) -> LLMMemory:
    """Memory per GPU of one rank of the ``"first"`` or ``"last"`` pipeline stage.

    A measurement taken on one rank (Megatron-LM logs the last rank's memory) is
    of one stage, not necessarily the one that needs the most.

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout
        Checked against the model first.
    stage : {"first", "last"}
        With ``pp = 1`` the one stage is both.

    Returns
    -------
    LLMMemory

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> lay = ParallelLayout(tp=8, pp=8, dp=24, micro=2, global_batch=2304,
    ...                      schedule="interleaved", virtual=2, recompute="full")
    >>> last = stage_memory(get_llm("gpt-145.6b"), lay, "last")
    >>> last.stage, last.total_B < llm_memory(get_llm("gpt-145.6b"), lay).total_B
    ('last', True)
    """
    if stage not in ("first", "last"):
        raise ConfigError(f"stage: must be 'first' or 'last', got {stage!r}")
    layout.check(model)
    params = stage_params(model, layout, stage)
    expert = local_expert_params(model, layout) if layout.ep > 1 else 0.0
    w, g, o = _states(params, layout, expert)
    acts = _activations(model, layout, stage)
    return LLMMemory(w, g, o, acts, _buffers(model, layout, params),
                     stage)


@layout_memo(1, exclude=())
def llm_memory(model: TransformerSpec, layout: ParallelLayout) -> LLMMemory:
    """Memory per GPU of ``model`` under ``layout`` (see the module docstring).

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout
        Checked against the model first (one line for a layout that cannot split it).

    Returns
    -------
    LLMMemory
        The stage whose total is largest.
    """
    layout.check(model)
    best: LLMMemory | None = None
    for stage in ("first", "last") if layout.pp > 1 else ("first",):
        mem = stage_memory(model, layout, stage)
        if best is None or mem.total_B > best.total_B:
            best = mem
    assert best is not None
    return best


@layout_memo(1, exclude=("micro",))
def largest_microbatch(model: TransformerSpec, layout: ParallelLayout,
                       capacity_B: float) -> int:
    """The largest microbatch of a valid layout like ``layout`` that fits ``capacity_B``.

    The candidates are the microbatches that divide the sequences per replica
    (``B / dp``) and keep the schedule's constraints; 0 when none fits.

    Parameters
    ----------
    model : TransformerSpec
    layout : ParallelLayout
        Everything but its microbatch is kept.
    capacity_B : float
        Bytes of the device's memory.

    Returns
    -------
    int

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> lay = ParallelLayout(tp=8, pp=8, dp=24, micro=2, global_batch=2304,
    ...                      schedule="interleaved", virtual=2, recompute="full")
    >>> largest_microbatch(get_llm("gpt-145.6b"), lay, 80e9)
    6
    """
    per_replica = layout.global_batch // layout.dp
    best = 0
    for micro in range(1, per_replica + 1):
        if per_replica % micro:
            continue
        m = per_replica // micro
        if layout.schedule == "interleaved" and m % layout.pp:
            continue
        if not llm_memory(model, replace(layout, micro=micro)).fits(capacity_B):
            break                                   # memory grows with the microbatch
        best = micro
    return best
