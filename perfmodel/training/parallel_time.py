"""Time per iteration of a transformer under a parallel layout on a cluster.

The iteration of one data-parallel replica, in the terms of Narayanan et al. SC'21
(arXiv 2104.04473) Sec. 2-3, each priced by the model that prices it elsewhere:

- **compute** of one microbatch on one stage: each of the stage's layers' GEMMs by
  its shape (:func:`~dlscale.perfmodel.training.transformer_layers.layer_gemm_shapes`:
  the forward product, and the backward's input- and weight-gradient products, each
  priced by :func:`~dlscale.perfmodel.compute.gemm.gemm_time_s`: the device's
  best-shape matmul ceiling times the shape's tile and wave quantization, or its
  bytes at the memory bandwidth where those take longer), the elementwise kernels'
  bytes forward and backward, kernel by kernel
  (:func:`~dlscale.perfmodel.training.transformer_layers.elementwise_bytes`), at
  the bandwidth a streaming kernel reaches (:data:`HBM_ACHIEVABLE_FRACTION` of the
  peak), recomputation (full: the layer's forward again; selective: the attention
  core's), the embedding on the first stage and the logits and loss on the last;
- **tensor-parallel communication** per layer and microbatch (Megatron, Shoeybi et
  al. 2019 Sec. 3): two allreduces of ``2 s b h`` bytes forward, two backward, two
  more in the forward that full recomputation repeats; with sequence parallelism
  each is a reduce-scatter plus an all-gather of the same tensor (Korthikanti et al.
  2022 Sec. 4.2.2), one allreduce for the embedding forward and one for the logit
  layer's input gradient; priced by :func:`~dlscale.perfmodel.network.model.collective_time_s`
  (ring, as NCCL runs inside a node) on the ranks of the group (inside a node when
  ``tp`` divides its GPUs), the intra-node link at NCCL's measured bus bandwidth
  (:data:`NCCL_NVLINK_FRACTION`); not overlapped (Megatron-LM of 2021 waits for each);
- **pipeline point-to-point**: the ``2 s b h`` bytes of activations (forward) and
  of their gradient (backward) between stages, per model chunk, ``/ t`` per rank
  with scatter/gather followed by an all-gather inside the receiving node
  (Narayanan et al. Sec. 4.1); every rank of a stage (all its replicas and tensor
  ranks) sends at once, their messages loading the routed network together
  (:func:`~dlscale.perfmodel.network.groups.shift_time_s`: the NICs, each fat-tree
  level with its taper and rails, a dragonfly's or torus's links), the stage
  boundaries apart, the slowest boundary's step; on the critical path of every
  microbatch (an assumption: the blocking send/receive pairs of the 1F1B steady
  state);
- **the bubble**: the pipeline takes ``(m + (p - 1) / v)`` microbatch slots of one
  stage (bubble fraction ``(p - 1) / (v m)``, Narayanan et al. Sec. 2.2), the
  slowest stage's slot;
- **data-parallel gradient exchange** of the stage's ``P / (t p)`` gradients (fp16;
  fp32 with bf16, ``ParallelLayout.grad_bytes``; the ZeRO all-gathers move 16-bit
  weights) over
  the ``dp`` ranks (an allreduce; ZeRO 1: a reduce-scatter and an all-gather of the
  updated weights; ZeRO 2: the reduce-scatter every microbatch; ZeRO 3: also two
  all-gathers of the weights every microbatch: Rajbhandari et al. SC'20 Sec. 7),
  every stage's ``tp`` groups at once on the routed network
  (:func:`~dlscale.perfmodel.network.groups.groups_time_s`: their ring steps'
  messages together on the NICs, rails, taper and links), the stages apart (1F1B
  staggers their last backward passes by a slot); overlapped, when
  ``dp_overlap``, with the last microbatch's backward only (the gradients are
  complete only then), the rest **exposed**; the all-gathers are always exposed;
- **the optimizer step** of Megatron-LM's mixed-precision optimizer
  (``Float16OptimizerWithFloat16Params.step``, ``megatron/optimizer/optimizer.py``),
  :data:`ADAM_STEP_BYTES` per parameter it updates at the achievable memory
  bandwidth, over the ZeRO shard: the fp16 gradients copied to fp32
  (``_copy_model_grads_to_main_grads``: read 2, write 4), unscaled with the
  inf/NaN check (read 4, write 4), their norm for clipping (read 4), Adam over fp32
  weights, gradient, momentum and variance (read 16, write 12) and the updated
  weights copied back to fp16 (``_copy_main_params_to_model_params``: read 4,
  write 2): 52; with ``precision = "bf16"`` the gradients are already fp32
  (:attr:`~dlscale.perfmodel.training.parallel.ParallelLayout.grad_bytes`) and
  ``main_grad.float()`` returns the tensor itself, no copy: 46;
- **gradient accumulation**: every microbatch adds its fp16 weight gradients into
  the accumulated ones (Megatron's local DDP hook ``param.main_grad.add_(param.grad)``,
  ``megatron/model/distributed.py``; PyTorch's ``AccumulateGrad`` the same): read
  2 + 2, write 2 bytes per parameter of the stage, at the achievable bandwidth;
  with bf16 into the fp32 ``main_grad``: read 4 + 2, write 4;
- **expert parallelism** (a mixture of experts with ``ep > 1``,
  :mod:`dlscale.perfmodel.training.expert`): each rank's expert products read its
  ``E / ep`` experts' weights; every MoE layer's dispatch and combine all-to-alls
  (two forward, two backward, two more with full recomputation) over the ``ep``
  ranks ``tp`` apart, MPICH's pairwise exchange on their links, on the critical path
  of every microbatch (not overlapped: an assumption); the expert gradients are
  reduced over the ``dp / ep`` ranks holding the same experts, the dense ones over
  ``dp``.

- **the GPUs' rate spread**: the compute (forward, backward, the end stages' extra,
  the optimizer step) times the expected largest rate factor over all the job's GPUs
  (:func:`~dlscale.perfmodel.compute.variability.slowest_factor`, the data-parallel
  path's closed form of the cluster's noise, or the GPUs' central spread where it is
  not described): a tensor group runs at its slowest GPU every layer, the pipeline
  at its slowest stage, the exchange waits for the slowest replica; the
  communication is not stretched.

Not modelled: the embedding's gradient allreduce between first and last stages, the
vocabulary-parallel loss's small allreduces, OS noise apart from the cluster's noise
model, kernel launch gaps; the tensor-parallel collectives of other groups where ``tp`` spans nodes (each
group is priced on its own nodes, as ``simulate`` runs it), the stages' exchanges
and hand-overs meeting each other (counted apart), adaptive routing (every family's
deterministic router is the one ``simulate`` routes by).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dlscale.perfmodel.compute.gemm import gemm_time_s
from dlscale.perfmodel.compute.gemm_reduction import device_k0
from dlscale.perfmodel.compute.llm_memory import (
    LLMMemory,
    largest_microbatch,
    llm_memory,
    stage_params,
)
from dlscale.perfmodel.compute.streaming import HBM_ACHIEVABLE_FRACTION, achievable_bandwidth_Bps
from dlscale.perfmodel.compute.variability import slowest_factor
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.layoutmemo import args_memo, layout_memo
from dlscale.perfmodel.machine.hardware import Cluster, Device
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.network.groups import groups_time_s, shift_time_s
from dlscale.perfmodel.training.expert import (
    alltoalls_per_layer,
    dispatch_bytes,
    local_expert_params,
    local_expert_shapes,
)
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.perfmodel.training.transformer_layers import (
    Shape,
    elementwise_bytes,
    layer_gemm_shapes,
    logit_gemm_shapes,
)

__all__ = ["ADAM_STEP_BYTES", "GRADIENT_COPY_BYTES", "HBM_ACHIEVABLE_FRACTION",
           "LOSS_BYTES_PER_LOGIT", "NCCL_NVLINK_FRACTION", "LLMIteration", "adam_step_bytes",
           "grad_accumulate_bytes", "hbm_achievable_Bps", "llm_iteration", "nccl_node", "optimizer_step_s",
           "overlap_slowdown_s",
           "stage_microbatch_s"]

#: Bytes the mixed-precision optimizer step reads and writes per parameter it
#: updates with fp16 gradients (see the module docstring: 6 + 8 + 4 + 28 + 6).
ADAM_STEP_BYTES = 52.0

#: Of :data:`ADAM_STEP_BYTES`, the copy of the fp16 gradients to fp32 (read 2, write
#: 4), which bf16's fp32 gradients do not need (:func:`adam_step_bytes`).
GRADIENT_COPY_BYTES = 6.0

#: Mixed precision: 2-byte activations and weights gathered (the gradients on the
#: wire: ``ParallelLayout.grad_bytes``).
_E = 2.0


def adam_step_bytes(layout: ParallelLayout) -> float:
    """Bytes per parameter of the optimizer step: :data:`ADAM_STEP_BYTES`, less the
    gradient copy where the gradients already are fp32 (bf16: ``main_grad.float()``
    returns the tensor itself).

    Examples
    --------
    >>> adam_step_bytes(ParallelLayout()), adam_step_bytes(ParallelLayout(precision="bf16"))
    (52.0, 46.0)
    """
    return ADAM_STEP_BYTES - (GRADIENT_COPY_BYTES if layout.grad_bytes > _E else 0.0)


def grad_accumulate_bytes(layout: ParallelLayout) -> float:
    """Bytes per parameter that adding one microbatch's 16-bit weight gradients into
    the accumulated ones moves: read both, write the accumulated (2 + 2, 2 with fp16;
    4 + 2, 4 into bf16's fp32 ``main_grad``).

    Examples
    --------
    >>> bf16 = ParallelLayout(precision="bf16")
    >>> grad_accumulate_bytes(ParallelLayout()), grad_accumulate_bytes(bf16)
    (6.0, 10.0)
    """
    return 2.0 * layout.grad_bytes + _E

# HBM_ACHIEVABLE_FRACTION (the share a streaming kernel reaches) and the rule that
# applies it live in perfmodel/compute/streaming.py, shared with the CNN roofline.


#: Share of the intra-node link's rate per direction that NCCL's collectives reach
#: as bus bandwidth on an NVSwitch node: "the nccl tests show a busbw of ~200 GB/s"
#: for 8 A100-SXM4-80GB over NVLink 3 (300 GB/s each way) with all_reduce_perf up to
#: 1 GB (NVIDIA/nccl-tests issue #149, NCCL 2.18); 208 GB/s in issue #178 on A100
#: NV12 pairs. Every collective of this path (tensor-parallel, the pipeline's
#: all-gather, the data-parallel exchange) runs its intra-node part at this share of
#: the link (applied to every device: an assumption beyond A100).
NCCL_NVLINK_FRACTION = 200.0 / 300.0


def nccl_node(cluster: Cluster) -> Cluster:
    """``cluster`` with its intra-node link at the rate NCCL's collectives reach on it
    (:data:`NCCL_NVLINK_FRACTION`): the machine every collective of this path runs on,
    in ``predict`` and in ``simulate`` alike."""
    link = cluster.node.intra_link
    slower = dataclasses.replace(link, bandwidth_Bps=link.bandwidth_Bps * NCCL_NVLINK_FRACTION)
    return dataclasses.replace(cluster, node=dataclasses.replace(cluster.node,
                                                                 intra_link=slower))


#: Bytes per logit element (of ``s b V / t`` on a rank) that Megatron-LM's loss moves,
#: forward and backward: the GPT model casts the fp16 logits to fp32 unless
#: ``--fp16-lm-cross-entropy`` (``output.float()``: read 2, write 4), and the
#: vocabulary-parallel cross entropy (``megatron/mpu/cross_entropy.py``,
#: ``_VocabParallelCrossEntropy``) runs unfused: the max over the vocabulary (read
#: 4), ``sub_`` of it (read 4, write 4), ``torch.exp(out=)`` (4, 4), the sum (4) and
#: ``div_`` (4, 4): 38 forward; backward ``grad_input.mul_`` (4, 4) and the cast's
#: gradient back to fp16 (read 4, write 2): 14.
LOSS_BYTES_PER_LOGIT = 38.0 + 14.0


def hbm_achievable_Bps(dev: Device) -> float:
    """The bandwidth memory-bound kernels reach
    (:func:`~dlscale.perfmodel.compute.streaming.achievable_bandwidth_Bps`).

    Parameters
    ----------
    dev : Device

    Returns
    -------
    float
        Bytes per second: the training memory's rate times the device's measured
        streaming share, else :data:`HBM_ACHIEVABLE_FRACTION`.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.devices_2020s import BASE_2020S
    >>> a100 = BASE_2020S["a100-sxm4-80gb"]
    >>> bool(hbm_achievable_Bps(a100) < a100.training_memory_bandwidth_Bps)
    True
    """
    return achievable_bandwidth_Bps(dev)


@dataclass(frozen=True)
class LLMIteration:
    """One iteration: its time, the breakdown, the rate and the memory verdict.

    ``iteration_s = compute_s + tp_comm_s + pp_comm_s + ep_comm_s + bubble_s +
    dp_exposed_s + optimizer_s``: the first four over the ``m`` microbatch slots of the slowest
    stage, the bubble the ``(p - 1) / v`` slots more that the pipeline takes;
    ``dp_comm_s`` is all of the gradient exchange, hidden or not.
    """

    model: str
    cluster: str
    layout: ParallelLayout
    iteration_s: float
    compute_s: float
    tp_comm_s: float
    pp_comm_s: float
    bubble_s: float
    dp_comm_s: float
    dp_exposed_s: float
    optimizer_s: float
    flops: float
    memory: LLMMemory
    memory_capacity_B: float
    #: The largest microbatch that fits, the rest of the layout kept (0: none).
    largest_micro: int = 0
    #: The MoE layers' all-to-alls over the expert-parallel group (0 with ep = 1),
    #: part of ``iteration_s`` like ``tp_comm_s``.
    ep_comm_s: float = 0.0

    @property
    def gpus(self) -> int:
        """GPUs in the job."""
        return self.layout.gpus

    @property
    def tflops_per_gpu(self) -> float:
        """Achieved TFLOP/s per GPU, the paper's accounting (FLOPs incl. recomputation)."""
        return self.flops / (self.iteration_s * self.gpus) / 1e12

    @property
    def fits(self) -> bool:
        """Whether the memory per GPU fits the device."""
        return self.memory.fits(self.memory_capacity_B)

    def to_row(self) -> dict[str, Any]:
        """One result row (output machinery's tables, JSON, CSV)."""
        lay = self.layout
        return {
            "cluster": self.cluster, "model": self.model, "gpus": self.gpus,
            "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "micro": lay.micro,
            "global_batch": lay.global_batch, "microbatches": lay.microbatches,
            "schedule": lay.schedule, "virtual": lay.virtual, "zero": lay.zero,
            "sp": lay.sp, "recompute": lay.recompute,
            "iteration_s": self.iteration_s, "tflops_per_gpu": self.tflops_per_gpu,
            "compute_s": self.compute_s, "tp_comm_s": self.tp_comm_s,
            "pp_comm_s": self.pp_comm_s, "ep_comm_s": self.ep_comm_s,
            "bubble_s": self.bubble_s,
            "dp_comm_s": self.dp_comm_s, "dp_exposed_s": self.dp_exposed_s,
            "optimizer_s": self.optimizer_s,
            "memory_GB": self.memory.total_B / 1e9, "states_GB": self.memory.states_B / 1e9,
            "activations_GB": self.memory.activations_B / 1e9,
            "capacity_GB": self.memory_capacity_B / 1e9, "fits": self.fits,
            "largest_micro": self.largest_micro,
        }


def _nodes(cluster: Cluster, gpus: int) -> int:
    dpn = cluster.node.devices_per_node
    if gpus > dpn and gpus % dpn:
        raise ConfigError(f"parallel: tp x pp x dp = {gpus} GPUs must fill whole nodes of "
                          f"{dpn} on {cluster.name}")
    nodes = math.ceil(gpus / dpn)
    cluster.check_nodes(nodes)
    return nodes


@args_memo(1)
def _group_time(cluster: Cluster, op: str, n_bytes: float, size: int, stride: int,
                ranks: int, algorithm: str = "ring", apart: int | None = None) -> float:
    """``op`` run at once by every group of ``size`` ranks ``stride`` apart among the
    job's first ``ranks``, those of each ``apart`` ranks (a stage) together
    (:func:`~dlscale.perfmodel.network.groups.groups_time_s`).

    Every group's messages of a step load the machine's links together, on the job's
    placement: the node's NICs, each topology level with its taper and rails, the
    family's own links; the intra-node link at NCCL's rate (:func:`nccl_node`).
    """
    if size < 2:
        return 0.0
    rpn = min(cluster.node.devices_per_node, ranks)
    return groups_time_s(nccl_node(cluster), op, algorithm, n_bytes, ranks, rpn, size, stride,
                         apart)


def _tp_collective(cluster: Cluster, layout: ParallelLayout, n_bytes: float) -> float:
    """One of Megatron's per-layer collectives (allreduce, or RS + AG with sp)."""
    t = layout.tp
    if t == 1:
        return 0.0
    if layout.sp:
        return (_group_time(cluster, "reduce-scatter", n_bytes, t, 1, t)
                + _group_time(cluster, "allgather", n_bytes, t, 1, t))
    return _group_time(cluster, "allreduce", n_bytes, t, 1, t)


def _gemm_s(shape: Shape, dev: Device, bw: float, k0: float) -> float:
    m, n, k, batch = shape
    return gemm_time_s(m, n, k, batch, dev.sustained_flops("fp16"), bw, dev.cores, k0=k0)


def _gemm_times(shapes: Sequence[tuple[Shape, tuple[Shape, Shape]]], dev: Device,
                bw: float, k0: float) -> tuple[list[float], list[float]]:
    """Forward and backward seconds of each product (:mod:`~dlscale.perfmodel.compute.gemm`)."""
    fwd = [_gemm_s(f, dev, bw, k0) for f, _ in shapes]
    bwd = [_gemm_s(dg, dev, bw, k0) + _gemm_s(wg, dev, bw, k0) for _, (dg, wg) in shapes]
    return fwd, bwd


def gemm_k0(cluster: Cluster) -> float:
    """The per-tile cost's ``K0`` that this cluster's GEMMs pay, at the side of the
    band its runtime picks (``"gemm-reduction"``; :func:`~dlscale.perfmodel.compute.
    gemm_reduction.device_k0`: 0 off the A100)."""
    return device_k0(cluster.node.device.name, cluster.runtime.side("gemm-reduction"))


@layout_memo(2, exclude=("dp", "global_batch", "schedule", "virtual", "zero", "scatter_gather",
                         "dp_overlap"))
def _stage_compute(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                   ) -> tuple[float, float, float, float]:
    """Per microbatch, one stage: (forward s, backward s, TP comm s, last stage's extra)."""
    dev, t, b = cluster.node.device.for_gemms(), layout.tp, layout.micro
    bw, k0 = hbm_achievable_Bps(dev), gemm_k0(cluster)
    shapes = local_expert_shapes(layer_gemm_shapes(model, t, b), model, layout)
    f_s, b_s = _gemm_times(shapes, dev, bw, k0)
    gemm_f, gemm_b = sum(f_s), sum(b_s)
    eb = elementwise_bytes(model, b, t, layout.sp)
    ew_f, ew_b = eb.total_B / bw, eb.backward_B / bw
    recompute = {"none": 0.0, "full": gemm_f + ew_f,
                 "selective": f_s[1] + f_s[2] + eb.core_B / bw}[layout.recompute]
    sbh = float(model.seq) * b * model.hidden
    coll = _tp_collective(cluster, layout, _E * sbh)
    n_tp = 4 + (2 if layout.recompute == "full" else 0)
    n = layout.stage_layers(model)
    fwd = n * (gemm_f + ew_f)
    accumulate = grad_accumulate_bytes(layout) * model.layer_params / t / bw
    bwd = n * (gemm_b + ew_b + recompute + accumulate)
    tp = n * n_tp * coll
    # embedding (first stage): gather, dropout: read, write, mask, and its backward;
    # one allreduce forward; the logits and loss (last stage): the product and the
    # unfused fp32 loss (LOSS_BYTES_PER_LOGIT); one allreduce of the logit layer's
    # input gradient
    table = grad_accumulate_bytes(layout) * model.vocab * model.hidden / t / bw
    emb = (5.0 * sbh / bw) * 3 + table
    lf, lb = _gemm_times((logit_gemm_shapes(model, t, b),), dev, bw, k0)
    loss = LOSS_BYTES_PER_LOGIT * model.seq * b * model.vocab / t / bw
    last = lf[0] + lb[0] + loss + table
    if layout.pp > 1:
        return fwd, bwd, tp + coll, max(emb, last)
    return fwd, bwd, tp + 2 * coll, emb + last


@layout_memo(2, exclude=("global_batch", "schedule", "virtual", "zero", "sp", "recompute",
                         "dp_overlap", "precision"))
def _pp_transfer(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout) -> float:
    """One activation (or gradient) hand-over between neighbouring stages, every
    stage's ranks sending to the next stage's at once
    (:func:`~dlscale.perfmodel.network.groups.shift_time_s`)."""
    if layout.pp == 1:
        return 0.0
    t, gpus = layout.tp, layout.gpus
    full = _E * model.seq * layout.micro * model.hidden
    per_rank = full / t if layout.scatter_gather else full
    time = shift_time_s(cluster, per_rank, gpus, min(cluster.node.devices_per_node, gpus),
                        t * layout.dp)
    if layout.scatter_gather and t > 1:
        time += _group_time(cluster, "allgather", full, t, 1, t)
    return time


def _ep_comm(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout) -> float:
    """Per microbatch, one stage: its MoE layers' all-to-alls (0 with ep = 1)."""
    if layout.ep == 1:
        return 0.0
    one = _group_time(cluster, "alltoall", dispatch_bytes(model, layout), layout.ep,
                      layout.tp, layout.gpus, "pairwise", layout.tp * layout.dp)
    return layout.stage_layers(model) * alltoalls_per_layer(layout) * one


def _dp_op(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout, op: str,
           params: float) -> float:
    """``op`` on the gradients of ``params``: over ``dp``; with ep > 1 the experts'
    over the ``dp / ep`` ranks ``tp ep`` apart that hold the same ones; a stage's
    groups together, the stages apart (1F1B staggers their exchanges)."""
    d, t = layout.dp, layout.tp
    e = layout.dp_element_bytes(op)
    if layout.ep == 1:
        return _group_time(cluster, op, e * params, d, t, layout.gpus, "ring", t * d)
    expert = local_expert_params(model, layout)
    return (_group_time(cluster, op, e * (params - expert), d, t, layout.gpus, "ring", t * d)
            + _group_time(cluster, op, e * expert, d // layout.ep, t * layout.ep,
                          layout.gpus, "ring", t * d))


@layout_memo(2, exclude=("schedule", "virtual", "sp", "recompute", "scatter_gather"))
def _dp_times(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
              bwd_s: float) -> tuple[float, float]:
    """(all data-parallel communication s, the part exposed)."""
    d = layout.dp
    if d == 1:
        return 0.0, 0.0
    params = max(stage_params(model, layout, "first"), stage_params(model, layout, "last"))
    m, z = layout.microbatches, layout.zero
    if z == 0:
        reduce = _dp_op(cluster, model, layout, "allreduce", params)
        gathers = 0.0
    else:
        reduce = _dp_op(cluster, model, layout, "reduce-scatter", params)
        gathers = _dp_op(cluster, model, layout, "allgather", params)
    earlier = (m - 1) * reduce if z >= 2 else 0.0
    if z == 3:
        gathers = gathers + 2 * m * gathers
    last = max(0.0, reduce - bwd_s) if layout.dp_overlap else reduce
    total = reduce + earlier + gathers
    return total, last + earlier + gathers


def llm_iteration(cluster: Cluster, model: TransformerSpec,
                  layout: ParallelLayout) -> LLMIteration:
    """Time, rate and memory of one iteration (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
        Its node's device, links and network; the job takes the first
        ``tp x pp x dp / devices_per_node`` nodes.
    model : TransformerSpec
    layout : ParallelLayout
        Checked against the model and the machine first (one line).

    Returns
    -------
    LLMIteration
    """
    layout.check(model)
    _nodes(cluster, layout.gpus)
    # the inter-node links as the runtime's transport delivers them, at the side the
    # runtime names (the data-parallel path's rule; the band's corners set the side)
    cluster = with_transport(cluster)
    fwd, bwd, tp, extra = _stage_compute(cluster, model, layout)
    # every GPU waits for the slowest of all (its tensor group each layer, the
    # pipeline its slowest stage, the exchange its slowest replica): the compute
    # times the expected largest rate factor over the job's GPUs (1 without noise)
    slow = slowest_factor(cluster, layout.gpus)
    fwd, bwd, extra = fwd * slow, bwd * slow, extra * slow
    pp = 2 * layout.virtual * _pp_transfer(cluster, model, layout)
    ep = _ep_comm(cluster, model, layout)
    slot = fwd + bwd + tp + extra + pp + ep
    m, v = layout.microbatches, layout.virtual
    slots = m * (1.0 + layout.bubble_fraction)           # m + (p - 1) / v slots
    dp_total, dp_exposed = _dp_times(cluster, model, layout, (bwd + tp) / v)
    opt = optimizer_step_s(cluster, model, layout) * slow
    beside = overlap_slowdown_s(cluster, dp_total, dp_exposed)
    total = slots * slot + dp_exposed + opt + beside
    capacity = cluster.node.device.training_memory_bytes
    return LLMIteration(
        model.name, cluster.name, layout, total, m * (fwd + bwd + extra) + beside,
        m * tp, m * pp, (slots - m) * slot, dp_total, dp_exposed, opt,
        model.flops(layout.global_batch, layout.recompute), llm_memory(model, layout),
        capacity, largest_microbatch(model, layout, capacity), m * ep)


def overlap_slowdown_s(cluster: Cluster, dp_total_s: float, dp_exposed_s: float) -> float:
    """What the compute beside the hidden part of the data-parallel exchange loses:
    ``s`` times the hidden time, ``s`` the runtime's slowdown of compute beside
    communication on the cluster's device kind at the side it names
    (:meth:`~dlscale.perfmodel.machine.runtime.Runtime.slowdown`; the rule of
    :mod:`dlscale.perfmodel.compute.overlap`: the overlapped compute takes ``1 + s`` as
    long). ``predict`` and ``simulate`` both charge it so.

    Parameters
    ----------
    cluster : Cluster
        Its runtime and device kind.
    dp_total_s, dp_exposed_s : float
        The exchange, and the part of it not hidden behind the backward pass.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> round(overlap_slowdown_s(get_cluster("dgx-h100-superpod"), 0.5, 0.1), 4)
    0.0756
    """
    return cluster.runtime.slowdown(cluster.node.device.kind) * max(dp_total_s - dp_exposed_s,
                                                                    0.0)


def optimizer_step_s(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout) -> float:
    """The mixed-precision optimizer step of the most loaded stage's rank:
    :func:`adam_step_bytes` per parameter it updates (its ZeRO shard; the experts' over
    ``dp / ep``) at the achievable memory bandwidth; ``predict`` and ``simulate`` both
    charge it so.

    Parameters
    ----------
    cluster : Cluster
    model : TransformerSpec
    layout : ParallelLayout

    Returns
    -------
    float
        Seconds.
    """
    shard = layout.dp if layout.zero >= 1 else 1
    params = max(stage_params(model, layout, "first"), stage_params(model, layout, "last"))
    if layout.ep > 1 and layout.zero >= 1:       # the experts' shard is over dp / ep
        expert = local_expert_params(model, layout)
        params, shard = params - expert + expert * layout.ep, layout.dp
    step = adam_step_bytes(layout)
    return step * params / shard / hbm_achievable_Bps(cluster.node.device)


def stage_microbatch_s(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                       ) -> tuple[float, float, float, float]:
    """What :func:`llm_iteration` charges one stage per microbatch, part by part.

    The simulator (:mod:`dlscale.simulator.training.pipeline`) runs these as events,
    with its own routed tensor-parallel collectives in place of the third.

    Returns
    -------
    tuple of float
        ``(forward s, backward s with recomputation, tensor-parallel communication
        s, the first or last stage's extra s)`` of all the stage's layers (its ``v``
        chunks together), as :func:`llm_iteration` adds them into a slot.
    """
    layout.check(model)
    return _stage_compute(cluster, model, layout)
