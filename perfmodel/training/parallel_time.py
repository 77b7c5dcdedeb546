"""Time per iteration of a transformer under a parallel layout on a cluster.

The iteration of one data-parallel replica, in the terms of Narayanan et al. SC'21
(arXiv 2104.04473) Sec. 2-3, each priced by the model that prices it elsewhere:

- **compute** of one microbatch on one stage: the stage's layers' GEMMs by the
  roofline (:func:`~dlscale.perfmodel.compute.roofline.layer_times` on
  :func:`~dlscale.perfmodel.training.transformer_layers.layer_gemms`; the backward
  is two forward passes), the elementwise kernels' bytes
  (:func:`~dlscale.perfmodel.training.transformer_layers.elementwise_bytes`) at the
  device's memory bandwidth (twice the forward bytes backward: read the saved
  input and the output gradient, write the input gradient; an assumption of this
  module), recomputation (full: the layer's forward again; selective: the attention
  core's), the embedding on the first stage and the logits and loss on the last;
- **tensor-parallel communication** per layer and microbatch (Megatron, Shoeybi et
  al. 2019 Sec. 3): two allreduces of ``2 s b h`` bytes forward, two backward, two
  more in the forward that full recomputation repeats; with sequence parallelism
  each is a reduce-scatter plus an all-gather of the same tensor (Korthikanti et al.
  2022 Sec. 4.2.2), one allreduce for the embedding forward and one for the logit
  layer's input gradient; priced by :func:`~dlscale.perfmodel.network.model.collective_time_s`
  (ring, as NCCL runs inside a node) on the ranks of the group: inside a node when
  ``tp`` divides its GPUs; not overlapped (Megatron-LM of 2021 waits for each);
- **pipeline point-to-point**: the ``2 s b h`` bytes of activations (forward) and
  of their gradient (backward) between stages, per model chunk, ``/ t`` per rank
  with scatter/gather followed by an all-gather inside the receiving node
  (Narayanan et al. Sec. 4.1); a node's GPUs all send at once, so the bytes that
  leave a node are its GPUs' together on its NICs; on the critical path of every
  microbatch (an assumption: the blocking send/receive pairs of the 1F1B steady
  state);
- **the bubble**: the pipeline takes ``(m + (p - 1) / v)`` microbatch slots of one
  stage (bubble fraction ``(p - 1) / (v m)``, Narayanan et al. Sec. 2.2), the
  slowest stage's slot;
- **data-parallel gradient exchange** of the stage's ``P / (t p)`` fp16 gradients over
  the ``dp`` ranks (an allreduce; ZeRO 1: a reduce-scatter and an all-gather of the
  updated weights; ZeRO 2: the reduce-scatter every microbatch; ZeRO 3: also two
  all-gathers of the weights every microbatch: Rajbhandari et al. SC'20 Sec. 7),
  the ``tp x pp`` groups sharing each node's NICs; overlapped, when
  ``dp_overlap``, with the last microbatch's backward only (the gradients are
  complete only then), the rest **exposed**; the all-gathers are always exposed;
- **the optimizer step**: Adam streams 28 bytes per parameter it updates (reads fp32
  weights, momentum, variance and the fp16 gradient: 14; writes the three and the
  fp16 copy: 14) at the memory bandwidth, over the ZeRO shard.

Not modelled: the embedding's gradient allreduce between first and last stages, the
vocabulary-parallel loss's small allreduces, stragglers and noise, kernel launch
gaps.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from dlscale.perfmodel.compute.llm_memory import (
    LLMMemory,
    largest_microbatch,
    llm_memory,
    stage_params,
)
from dlscale.perfmodel.compute.roofline import layer_times
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.model import collective_time_s, path_hockney
from dlscale.perfmodel.network.msgfactors import message_time_s
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.perfmodel.training.transformer_layers import (
    elementwise_bytes,
    layer_gemms,
    logit_gemm,
)

__all__ = ["ADAM_STEP_BYTES", "LLMIteration", "llm_iteration", "stage_microbatch_s"]

#: Bytes Adam reads and writes per parameter it updates (see the module docstring).
ADAM_STEP_BYTES = 28.0

#: Mixed precision: 2-byte activations, gradients on the wire and weights gathered.
_E = 2.0


@dataclass(frozen=True)
class LLMIteration:
    """One iteration: its time, the breakdown, the rate and the memory verdict.

    ``iteration_s = compute_s + tp_comm_s + pp_comm_s + bubble_s + dp_exposed_s +
    optimizer_s``: the first three over the ``m`` microbatch slots of the slowest
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
            "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "micro": lay.micro,
            "global_batch": lay.global_batch, "microbatches": lay.microbatches,
            "schedule": lay.schedule, "virtual": lay.virtual, "zero": lay.zero,
            "sp": lay.sp, "recompute": lay.recompute,
            "iteration_s": self.iteration_s, "tflops_per_gpu": self.tflops_per_gpu,
            "compute_s": self.compute_s, "tp_comm_s": self.tp_comm_s,
            "pp_comm_s": self.pp_comm_s, "bubble_s": self.bubble_s,
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


def _group_time(cluster: Cluster, op: str, n_bytes: float, size: int, stride: int) -> float:
    """``op`` over ``size`` ranks ``stride`` apart, the node's other groups beside it.

    Members inside one node share it; where the group spans nodes, the node's GPUs
    that belong to other groups of the same kind run theirs at the same time, so each
    group gets its share of the node's NIC.
    """
    if size < 2:
        return 0.0
    dpn = cluster.node.devices_per_node
    per_node = max(1, min(size, dpn // stride)) if stride < dpn else 1
    nodes = math.ceil(size / per_node)
    if nodes > 1:
        share = dpn // per_node
        nic = cluster.node.nic
        node = dataclasses.replace(cluster.node, nic=dataclasses.replace(
            nic, bandwidth_Bps=nic.bandwidth_Bps / share))
        cluster = dataclasses.replace(cluster, node=node)
    return float(collective_time_s(cluster, op, "ring", n_bytes, nodes, per_node,
                                   ranks=size))


def _tp_collective(cluster: Cluster, layout: ParallelLayout, n_bytes: float) -> float:
    """One of Megatron's per-layer collectives (allreduce, or RS + AG with sp)."""
    t = layout.tp
    if t == 1:
        return 0.0
    if layout.sp:
        return (_group_time(cluster, "reduce-scatter", n_bytes, t, 1)
                + _group_time(cluster, "allgather", n_bytes, t, 1))
    return _group_time(cluster, "allreduce", n_bytes, t, 1)


def _stage_compute(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                   ) -> tuple[float, float, float, float]:
    """Per microbatch, one stage: (forward s, backward s, TP comm s, last stage's extra)."""
    dev, t, b = cluster.node.device.for_gemms(), layout.tp, layout.micro
    bw = dev.training_memory_bandwidth_Bps
    lt = layer_times(layer_gemms(model, t), dev, "fp16", b)
    gemm_f, gemm_b = float(lt.forward_s.sum()), float(lt.backward_s.sum())
    eb = elementwise_bytes(model, b, t, layout.sp)
    ew_f = eb.total_B / bw
    recompute = {"none": 0.0, "full": gemm_f + ew_f,
                 "selective": float(lt.forward_s[1:3].sum()) + eb.core_B / bw}[layout.recompute]
    sbh = float(model.seq) * b * model.hidden
    coll = _tp_collective(cluster, layout, _E * sbh)
    n_tp = 4 + (2 if layout.recompute == "full" else 0)
    n = layout.stage_layers(model)
    fwd = n * (gemm_f + ew_f)
    bwd = n * (gemm_b + 2 * ew_f + recompute)
    tp = n * n_tp * coll
    # embedding (first stage): gather, dropout: read, write, mask, and its backward;
    # one allreduce forward; the logits and loss (last stage): the product, fp16 read
    # and fp32 write each way; one allreduce of the logit layer's input gradient
    emb = (5.0 * sbh / bw) * 3
    lg = layer_times(logit_gemm(model, t), dev, "fp16", b)
    loss = 2 * 6.0 * model.seq * b * model.vocab / t / bw
    last = float(lg.forward_s.sum() + lg.backward_s.sum()) + loss
    if layout.pp > 1:
        return fwd, bwd, tp + coll, max(emb, last)
    return fwd, bwd, tp + 2 * coll, emb + last


def _pp_transfer(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                 nodes: int) -> float:
    """One activation (or gradient) hand-over between neighbouring stages."""
    if layout.pp == 1:
        return 0.0
    dpn, t = cluster.node.devices_per_node, layout.tp
    full = _E * model.seq * layout.micro * model.hidden
    per_rank = full / t if layout.scatter_gather else full
    distance = t * layout.dp
    ranks = min(dpn, layout.gpus)
    alpha, beta = path_hockney(cluster, nodes, ranks, 0, distance)
    crossing = distance >= dpn           # the neighbour sits on another node
    out = per_rank * (ranks if crossing else 1)
    time = float(message_time_s(alpha, beta, out, cluster.network.message_factors))
    if layout.scatter_gather and t > 1:
        time += _group_time(cluster, "allgather", full, t, 1)
    return time


def _dp_times(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
              bwd_s: float) -> tuple[float, float]:
    """(all data-parallel communication s, the part exposed)."""
    d = layout.dp
    if d == 1:
        return 0.0, 0.0
    params = max(stage_params(model, layout, "first"), stage_params(model, layout, "last"))
    grads = _E * params
    m, z = layout.microbatches, layout.zero
    if z == 0:
        reduce = _group_time(cluster, "allreduce", grads, d, layout.tp)
        gathers = 0.0
    else:
        reduce = _group_time(cluster, "reduce-scatter", grads, d, layout.tp)
        gathers = _group_time(cluster, "allgather", grads, d, layout.tp)
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
    nodes = _nodes(cluster, layout.gpus)
    fwd, bwd, tp, extra = _stage_compute(cluster, model, layout)
    pp = 2 * layout.virtual * _pp_transfer(cluster, model, layout, nodes)
    slot = fwd + bwd + tp + extra + pp
    m, v = layout.microbatches, layout.virtual
    slots = m * (1.0 + layout.bubble_fraction)           # m + (p - 1) / v slots
    dp_total, dp_exposed = _dp_times(cluster, model, layout, (bwd + tp) / v)
    shard = layout.dp if layout.zero >= 1 else 1
    params = max(stage_params(model, layout, "first"), stage_params(model, layout, "last"))
    opt = ADAM_STEP_BYTES * params / shard / cluster.node.device.training_memory_bandwidth_Bps
    total = slots * slot + dp_exposed + opt
    capacity = cluster.node.device.training_memory_bytes
    return LLMIteration(
        model.name, cluster.name, layout, total, m * (fwd + bwd + extra),
        m * tp, m * pp, (slots - m) * slot, dp_total, dp_exposed, opt,
        model.flops(layout.global_batch, layout.recompute), llm_memory(model, layout),
        capacity, largest_microbatch(model, layout, capacity))


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
