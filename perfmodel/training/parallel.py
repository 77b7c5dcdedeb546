"""The parallel layout of a transformer's training: tensor, pipeline, data and expert parallelism.

A :class:`ParallelLayout` says how ``tp x pp x dp`` GPUs share one model
(Narayanan et al., SC'21, arXiv 2104.04473, Sec. 2-3; the names are Megatron-LM's
flags): ``tp`` ranks split every layer's matrices (Shoeybi et al. 2019), ``pp``
stages hold consecutive layers (``virtual`` chunks each with the interleaved
schedule), ``dp`` replicas split the global batch ``B`` into ``m = B / (b dp)``
microbatches of ``b`` sequences per replica, ZeRO (Rajbhandari et al., SC'20) shards
optimizer state (stage 1), gradients (2) and weights (3) over the ``dp`` ranks,
sequence parallelism (Korthikanti et al. 2022) splits the layer norms and dropouts
along the sequence, and recomputation trades FLOPs for activation memory. A
mixture-of-experts model's experts may be split over ``ep`` of the data-parallel
ranks (expert parallelism, Lepikhin et al., "GShard", ICLR 2021, Sec. 2.2; Fedus et
al., "Switch Transformers", JMLR 2022, Sec. 2.2): ``ep`` divides ``dp`` (the expert
groups are carved out of the data-parallel ranks, as in DeepSpeed-MoE and
Megatron-Core; :mod:`dlscale.perfmodel.training.expert`) and the experts.

Ranks are numbered as Megatron-LM numbers them: tensor-parallel rank fastest, then
data-parallel, then pipeline stage (``rank = t_i + tp (d_i + dp p_i)``), so a
tensor-parallel group is ``tp`` consecutive ranks (inside a node when ``tp`` divides
the node's GPUs) and the members of a data-parallel group are ``tp`` ranks apart; an
expert-parallel group is ``ep`` consecutive data-parallel ranks (``tp`` apart).

Every value is checked when the layout is built or checked against a model and a
machine (:meth:`ParallelLayout.check`), one line naming the field, the value and what
is allowed, before any work.

Examples
--------
>>> lay = ParallelLayout(tp=8, pp=8, dp=24, micro=2, global_batch=2304,
...                      schedule="interleaved", virtual=2)
>>> lay.gpus, lay.microbatches
(1536, 48)
>>> round(lay.bubble_fraction, 4)            # (p - 1) / (v m)
0.0729
>>> ParallelLayout(tp=1, pp=1, dp=4, micro=1, global_batch=8).is_data_parallel
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.transformer import RECOMPUTE, TransformerSpec
from dlscale.perfmodel.units import BYTES_PER_ELEMENT

__all__ = ["GRAD_BYTES", "PRECISIONS", "SCHEDULES", "ZERO_STAGES", "ParallelLayout",
           "replica_counts"]

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Cluster

#: Pipeline schedules: GPipe (Huang et al. 2019: all forwards, then all backwards),
#: 1F1B (PipeDream-Flush, Narayanan et al. 2021) and Megatron's interleaved 1F1B.
SCHEDULES = ("gpipe", "1f1b", "interleaved")

#: ZeRO stages (Rajbhandari et al. SC'20): 0 none, 1 optimizer state, 2 + gradients,
#: 3 + weights (FSDP's full sharding).
ZERO_STAGES = (0, 1, 2, 3)
#: 16-bit formats of mixed-precision training (:attr:`ParallelLayout.precision`).
PRECISIONS = ("fp16", "bf16")

#: Bytes of one gradient element as it is accumulated and reduced, by precision:
#: fp16 keeps 16-bit gradients; ``--bf16`` makes Megatron-LM accumulate and
#: all-reduce them in fp32 (``megatron/training/arguments.py`` ``validate_args``:
#: "bfloat16 requires gradient accumulation and all-reduce to be done in fp32", which
#: sets ``accumulate_allreduce_grads_in_fp32``; ``megatron/core/distributed/
#: param_and_grad_buffer.py`` then allocates each ``main_grad`` in fp32).
#: definition: the sizes of one fp16 and one fp32 element.
GRAD_BYTES = {"fp16": float(BYTES_PER_ELEMENT["fp16"]),
              "bf16": float(BYTES_PER_ELEMENT["fp32"])}


def _count(name: str, value: object) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise ConfigError(f"parallel.{name}: must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class ParallelLayout:
    """How the GPUs share one transformer (see the module docstring).

    Parameters
    ----------
    tp, pp, dp : int
        Tensor-, pipeline- and data-parallel degrees (``tp x pp x dp`` GPUs).
    micro : int
        Microbatch size ``b`` in sequences.
    global_batch : int
        ``B``, sequences per iteration; a multiple of ``b x dp``.
    schedule : {"gpipe", "1f1b", "interleaved"}
    virtual : int
        Model chunks per stage ``v`` (interleaved: at least 2; else 1).
    zero : {0, 1, 2, 3}
    sp : bool
        Sequence parallelism (needs ``tp > 1``).
    recompute : {"none", "selective", "full"}
    scatter_gather : bool
        Megatron's scatter/gather of the activations sent between stages: each of
        the ``tp`` ranks sends ``1/tp`` of them (Narayanan et al. Sec. 4.1).
    dp_overlap : bool
        Whether the gradient exchange may run beside the backward pass of the last
        microbatch (PyTorch DDP's buckets; Megatron's ``local`` DDP of 2021 exchanges
        after the pipeline's flush: False).
    ep : int
        Expert-parallel size: the experts of every layer split over ``ep`` of the
        ``dp`` ranks (1: every rank holds every expert).
    precision : {"fp16", "bf16"}
        16-bit format of the mixed-precision training. ``"bf16"`` keeps the gradients
        in fp32 (Megatron-LM sets ``accumulate_allreduce_grads_in_fp32`` with
        ``--bf16``, ``megatron/training/arguments.py``): :attr:`grad_bytes` per
        gradient in memory (:mod:`dlscale.perfmodel.compute.llm_memory`), in the
        data-parallel reduction and in the gradient accumulation
        (:mod:`dlscale.perfmodel.training.parallel_time`, and ``simulate``).
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro: int = 1
    global_batch: int = 1
    schedule: str = "1f1b"
    virtual: int = 1
    zero: int = 0
    sp: bool = False
    recompute: str = "none"
    scatter_gather: bool = True
    dp_overlap: bool = True
    ep: int = 1
    precision: str = "fp16"

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "micro", "global_batch", "virtual", "ep"):
            _count(name, getattr(self, name))
        if self.schedule not in SCHEDULES:
            raise ConfigError(f"parallel.schedule: must be one of {', '.join(SCHEDULES)}, "
                              f"got {self.schedule!r}")
        if self.zero not in ZERO_STAGES or isinstance(self.zero, bool):
            raise ConfigError(f"parallel.zero: must be one of 0, 1, 2, 3, got {self.zero!r}")
        if self.recompute not in RECOMPUTE:
            raise ConfigError(f"parallel.recompute: must be one of {', '.join(RECOMPUTE)}, "
                              f"got {self.recompute!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"parallel.precision: must be one of {', '.join(PRECISIONS)}, "
                              f"got {self.precision!r}")
        for name in ("sp", "scatter_gather", "dp_overlap"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"parallel.{name}: must be true or false, "
                                  f"got {getattr(self, name)!r}")
        if self.sp and self.tp == 1:
            raise ConfigError("parallel.sp: sequence parallelism splits the tensor-parallel "
                              "group's work, so it needs tp > 1, got tp 1")
        if self.schedule == "interleaved" and self.virtual < 2:
            raise ConfigError(f"parallel.virtual: the interleaved schedule needs at least 2 "
                              f"model chunks per stage, got {self.virtual}")
        if self.schedule != "interleaved" and self.virtual != 1:
            raise ConfigError(f"parallel.virtual: only the interleaved schedule has model "
                              f"chunks; must be 1 for {self.schedule}, got {self.virtual}")
        if self.zero >= 2 and self.pp > 1:
            # DeepSpeed's pipeline engine: "pipeline parallelism is not compatible with
            # ZeRO-2 and ZeRO-3" (DeepSpeed docs, Pipeline Parallelism)
            raise ConfigError(f"parallel.zero: ZeRO {self.zero} shards gradients, which a "
                              f"pipeline accumulates over its microbatches; with pp "
                              f"{self.pp} use zero 0 or 1")
        if self.dp % self.ep:
            raise ConfigError(f"parallel.ep: the expert-parallel groups are taken from the "
                              f"data-parallel ranks, so ep must divide dp {self.dp}, "
                              f"got {self.ep}")
        if self.global_batch % (self.micro * self.dp):
            raise ConfigError(
                f"parallel.global_batch: must be a multiple of micro x dp = "
                f"{self.micro} x {self.dp} = {self.micro * self.dp}, got {self.global_batch}")
        if self.schedule == "interleaved" and self.microbatches % self.pp:
            raise ConfigError(
                f"parallel.global_batch: the interleaved schedule needs the microbatches "
                f"(B / (b dp) = {self.microbatches}) to be a multiple of pp {self.pp}")

    @property
    def gpus(self) -> int:
        """``tp x pp x dp``."""
        return self.tp * self.pp * self.dp

    @property
    def grad_bytes(self) -> float:
        """Bytes of one gradient element, accumulated and reduced (:data:`GRAD_BYTES`).

        Examples
        --------
        >>> ParallelLayout().grad_bytes, ParallelLayout(precision="bf16").grad_bytes
        (2.0, 4.0)
        """
        return GRAD_BYTES[self.precision]

    def dp_element_bytes(self, op: str) -> float:
        """Bytes per element of a data-parallel ``op``: the ZeRO all-gathers move the
        16-bit weights, the allreduce and reduce-scatter the gradients (:attr:`grad_bytes`);
        ``predict`` and ``simulate`` both size their exchanges so.

        Examples
        --------
        >>> lay = ParallelLayout(precision="bf16")
        >>> lay.dp_element_bytes("allgather"), lay.dp_element_bytes("reduce-scatter")
        (2.0, 4.0)
        """
        # definition: a 16-bit (fp16 or bf16) weight is 2 bytes
        return 2.0 if op == "allgather" else self.grad_bytes

    @property
    def microbatches(self) -> int:
        """``m = B / (b dp)``, microbatches per replica and iteration."""
        return self.global_batch // (self.micro * self.dp)

    @property
    def is_data_parallel(self) -> bool:
        """``tp = pp = ep = 1``, ZeRO 0: the data-parallel case every existing workload is."""
        return self.tp == 1 and self.pp == 1 and self.zero == 0 and self.ep == 1

    @property
    def bubble_fraction(self) -> float:
        """Pipeline bubble over ideal time: ``(p - 1) / (v m)`` (Narayanan et al. Sec. 2.2).

        GPipe and 1F1B have the same bubble (``v = 1``); 1F1B holds fewer
        microbatches in flight (:meth:`in_flight`).
        """
        return (self.pp - 1) / (self.virtual * self.microbatches)

    def in_flight(self) -> float:
        """Microbatches whose activations the first stage holds at its peak.

        GPipe: all ``m``. 1F1B: ``min(p, m)`` (Narayanan et al. Sec. 2.2.1).
        Interleaved: ``p (1 + (p - 1) / (p v))`` layers' worth of ``p`` stages, the
        factor Korthikanti et al. 2022 (Sec. 4.2.3) give for the first stage, as
        microbatch-equivalents of a whole stage, and at most ``m``: with ``m = p``
        Megatron's warm-up (``(p - 1) 2 + (v - 1) p`` chunks, ``schedules.py``
        ``forward_backward_pipelining_with_interleaving``) already covers all ``m v``
        chunks, so the first stage holds every microbatch, as GPipe does.

        Examples
        --------
        >>> ParallelLayout(pp=4, dp=1, micro=1, global_batch=4, schedule="interleaved",
        ...                virtual=2).in_flight()
        4.0
        >>> ParallelLayout(pp=4, dp=1, micro=1, global_batch=16, schedule="interleaved",
        ...                virtual=2).in_flight()
        5.5
        """
        m, p = self.microbatches, self.pp
        if self.schedule == "gpipe":
            return float(m)
        if self.schedule == "1f1b":
            return float(min(p, m))
        return min(float(m), p * (1.0 + (p - 1) / (p * self.virtual)))

    def check(self, model: TransformerSpec, gpus: int | None = None) -> None:
        """Raise one line if the layout cannot split ``model`` (or use ``gpus`` GPUs).

        Examples
        --------
        >>> from dlscale.perfmodel.catalog.models_llm import get_llm
        >>> ParallelLayout(tp=5).check(get_llm("gpt3-175b"))
        Traceback (most recent call last):
        ...
        dlscale.perfmodel.errors.ConfigError: parallel.tp: must divide the 96 attention heads of gpt3-175b, got 5
        """
        if gpus is not None and gpus != self.gpus:
            raise ConfigError(f"parallel: tp x pp x dp = {self.tp} x {self.pp} x {self.dp} = "
                              f"{self.gpus} GPUs, but the machine has {gpus}")
        if model.heads % self.tp or (model.kv % self.tp and model.kv > self.tp):
            raise ConfigError(f"parallel.tp: must divide the {model.heads} attention heads "
                              f"of {model.name}, got {self.tp}")
        if model.ffn % self.tp:
            raise ConfigError(f"parallel.tp: must divide the MLP's {model.ffn} of "
                              f"{model.name}, got {self.tp}")
        chunks = self.pp * self.virtual
        if model.layers % chunks:
            raise ConfigError(
                f"parallel.pp: pp x virtual = {chunks} must divide the {model.layers} "
                f"layers of {model.name}")
        if self.ep > 1 and not model.moe:
            raise ConfigError(f"parallel.ep: {model.name} is a dense model (no experts); "
                              f"expert parallelism needs a mixture of experts, got ep {self.ep}")
        if self.ep > 1 and model.experts % self.ep:
            raise ConfigError(f"parallel.ep: must divide the {model.experts} experts of "
                              f"{model.name}, got {self.ep}")
        if self.sp and model.seq % self.tp:
            raise ConfigError(f"parallel.sp: tp {self.tp} must divide the sequence "
                              f"{model.seq} of {model.name}")

    def stage_layers(self, model: TransformerSpec) -> int:
        """Layers each pipeline stage holds (all its chunks)."""
        return model.layers // self.pp


def replica_counts(cluster: Cluster, counts: Sequence[int] | None, tp: int, pp: int,
                   where: str = "nodes") -> list[tuple[int, int]]:
    """Each node count with its data-parallel size ``dp``: the count's GPUs split into
    ``tp x pp`` groups (one model replica each); ``counts`` None: the fewest nodes that
    hold one replica. ``predict`` and ``simulate`` take their node counts from here.

    Parameters
    ----------
    cluster : Cluster
        The machine (its GPUs per node, its node count).
    counts : sequence of int or None
        Node counts, or None for one replica's.
    tp, pp : int
        Tensor- and pipeline-parallel sizes (positive).
    where : str
        The field or flag that gave ``counts``, for the messages.

    Raises
    ------
    ConfigError
        A count more than the cluster holds (naming ``tp x pp`` where the replica
        alone does not fit), or whose GPUs do not split into ``tp x pp`` groups.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> replica_counts(get_cluster("dgx-h100-superpod"), None, 8, 4)
    [(4, 1)]
    >>> replica_counts(get_cluster("dgx-h100-superpod"), None, 8, 10**6)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: tp x pp: one model replica of 8 x 1000000 = 8,000,000 GPUs needs 1,000,000 nodes of 8; cluster 'dgx-h100-superpod' holds 127
    """
    dpn = cluster.node.devices_per_node
    if counts is None:
        fewest = max(1, -(-tp * pp // dpn))
        if fewest > cluster.max_nodes:
            raise ConfigError(f"tp x pp: one model replica of {tp} x {pp} = {tp * pp:,} GPUs "
                              f"needs {fewest:,} nodes of {dpn}; cluster {cluster.name!r} "
                              f"holds {cluster.max_nodes:,}")
        counts = [fewest]
    out = []
    for n in counts:
        cluster.check_nodes(n)
        gpus = int(n) * dpn
        if gpus % (tp * pp):
            raise ConfigError(f"{where}: {n} nodes of {dpn} GPUs do not split into tp x pp = "
                              f"{tp} x {pp} groups")
        out.append((int(n), gpus // (tp * pp)))
    return out
