"""The parallel layouts of a transformer on a number of GPUs: what a search tries.

:func:`layouts` lists every :class:`~dlscale.perfmodel.training.parallel.ParallelLayout`
of a model on ``gpus`` GPUs (nodes of ``devices_per_node``) and a global batch that
the model and the machine allow, in one stated order (the search's tie-break):

- ``tp`` ascending over the divisors of the attention heads that divide the MLP
  width (and the key/value heads where those are more than ``tp``), inside a node
  (``tp`` divides the node's GPUs) unless ``tp_across_nodes``;
- ``pp`` ascending over the divisors of the layers with ``tp x pp`` dividing the
  GPUs (``dp = gpus / (tp pp)``), the global batch a multiple of ``dp``;
- ``ep`` ascending over the divisors of ``dp`` that divide the experts (a mixture of
  experts; a dense model has the one value 1), the expert groups carved out of the
  data-parallel ranks as :class:`~dlscale.perfmodel.training.parallel.ParallelLayout`
  takes them;
- ``micro`` ascending over the divisors of the sequences per replica ``B / dp``;
- the schedule: ``1f1b``, then ``interleaved`` by ``v`` ascending (``pp x v``
  divides the layers, the microbatches a multiple of ``pp``), then ``gpipe``;
  with ``pp = 1`` the one schedule ``1f1b``;
- ``zero`` ascending (2 and 3 only without a pipeline, as
  :class:`~dlscale.perfmodel.training.parallel.ParallelLayout` allows);
- ``recompute`` none, selective, full; then ``sp`` off, on (``tp > 1``, ``tp``
  divides the sequence).

Every dimension can be restricted (:class:`LayoutSpace`); a value the model or the
machine cannot take is refused in one line when the space is checked.

Examples
--------
>>> from dlscale.perfmodel.catalog.models_llm import get_llm
>>> lays = list(layouts(get_llm("gpt-1.7b"), 8, 8, 16, LayoutSpace(recompute=("none",),
...                                                                   sp=(False,))))
>>> len(lays), lays[0].tp, lays[-1].tp, lays[-1].pp
(232, 1, 8, 1)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.parallel import (
    PRECISIONS,
    SCHEDULES,
    ZERO_STAGES,
    ParallelLayout,
)
from dlscale.perfmodel.training.transformer import RECOMPUTE, TransformerSpec

__all__ = ["DP_OVERLAP", "LayoutSpace", "divisors", "ep_sizes", "layouts", "tp_sizes"]

#: When the layouts' gradient exchange overlaps the last backward (:class:`LayoutSpace`).
DP_OVERLAP = ("always", "never", "without-pipeline")


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending.

    Parameters
    ----------
    n : int

    Returns
    -------
    list of int

    Examples
    --------
    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class LayoutSpace:
    """Which values of each dimension a search tries (None: every valid one).

    Attributes
    ----------
    tp, pp, micro, ep : tuple of int or None
        ``ep`` restricts the expert-parallel sizes of a mixture of experts (a dense
        model has only ``ep = 1``).
    zero : tuple of int
    recompute : tuple of str
    sp : tuple of bool
    schedules : tuple of str
        Of :data:`~dlscale.perfmodel.training.parallel.SCHEDULES`; ``interleaved``
        tries every ``v`` that divides the layers per stage.
    tp_across_nodes : bool
        Let a tensor-parallel group span nodes (a what-if; default inside a node).
    dp_overlap : {"always", "never", "without-pipeline"}
        The layouts' ``dp_overlap``: the gradient exchange beside the last
        backward always (PyTorch DDP, the layout's default), never, or only without
        a pipeline (Megatron-LM of 2021: its own DDP after the pipeline's flush).
    precision : {"fp16", "bf16"}
        The layouts' mixed precision (one training choice, not searched).
    """

    tp: tuple[int, ...] | None = None
    pp: tuple[int, ...] | None = None
    micro: tuple[int, ...] | None = None
    zero: tuple[int, ...] = ZERO_STAGES
    recompute: tuple[str, ...] = RECOMPUTE
    sp: tuple[bool, ...] = (False, True)
    schedules: tuple[str, ...] = ("1f1b", "interleaved")
    tp_across_nodes: bool = False
    dp_overlap: str = "always"
    ep: tuple[int, ...] | None = None
    precision: str = "fp16"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(f"search.precision: must be one of {', '.join(PRECISIONS)}, "
                              f"got {self.precision!r}")
        if self.dp_overlap not in DP_OVERLAP:
            raise ConfigError(f"search.dp_overlap: must be one of {', '.join(DP_OVERLAP)}, "
                              f"got {self.dp_overlap!r}")
        for name in ("tp", "pp", "micro", "ep"):
            vals = getattr(self, name)
            if vals is not None and (not vals or any(
                    not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in vals)):
                raise ConfigError(f"search.{name}: must be positive integers, got {vals!r}")
        for name, valid in (("zero", ZERO_STAGES), ("recompute", RECOMPUTE),
                            ("schedules", SCHEDULES), ("sp", (False, True))):
            vals = getattr(self, name)
            bad = [v for v in vals if v not in valid or (name != "sp" and isinstance(v, bool))]
            if not vals or bad:
                raise ConfigError(f"search.{name}: must be some of "
                                  f"{', '.join(map(str, valid))}, got {vals!r}")


def tp_sizes(model: TransformerSpec, devices_per_node: int, across: bool = False) -> list[int]:
    """Tensor-parallel sizes the model splits into (inside a node unless ``across``).

    Parameters
    ----------
    model : TransformerSpec
    devices_per_node : int
    across : bool
        Allow sizes that span nodes.

    Returns
    -------
    list of int
        Ascending.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> tp_sizes(get_llm("gpt3-175b"), 8), tp_sizes(get_llm("llama2-70b"), 8)
    ([1, 2, 4, 8], [1, 2, 4, 8])
    """
    out = []
    for t in divisors(model.heads):
        if model.ffn % t or (model.kv % t and model.kv > t):
            continue
        if not across and (t > devices_per_node or devices_per_node % t):
            continue
        out.append(t)
    return out


def ep_sizes(model: TransformerSpec, dp: int) -> list[int]:
    """Expert-parallel sizes of ``model`` with ``dp`` data-parallel ranks, ascending.

    The divisors of ``dp`` that divide the experts (Lepikhin et al., "GShard", ICLR
    2021, Sec. 2.2: the experts of a layer spread over the ranks; the groups come out
    of the data-parallel ranks, :mod:`dlscale.perfmodel.training.parallel`); ``[1]``
    for a dense model.

    Parameters
    ----------
    model : TransformerSpec
    dp : int

    Returns
    -------
    list of int

    Examples
    --------
    >>> from dlscale.perfmodel.catalog.models_llm import get_llm
    >>> ep_sizes(get_llm("mixtral-8x7b"), 8), ep_sizes(get_llm("mixtral-8x7b"), 12)
    ([1, 2, 4, 8], [1, 2, 4])
    >>> ep_sizes(get_llm("gpt-1.7b"), 8)
    [1]
    """
    if not model.moe:
        return [1]
    return [e for e in divisors(dp) if model.experts % e == 0]


def _schedules(model: TransformerSpec, pp: int, m: int,
               space: LayoutSpace) -> Iterator[tuple[str, int]]:
    if pp == 1:
        yield "1f1b", 1
        return
    if "1f1b" in space.schedules:
        yield "1f1b", 1
    if "interleaved" in space.schedules and m % pp == 0:
        per_stage = model.layers // pp
        for v in divisors(per_stage)[1:]:
            yield "interleaved", v
    if "gpipe" in space.schedules:
        yield "gpipe", 1


def layouts(model: TransformerSpec, gpus: int, devices_per_node: int, global_batch: int,
            space: LayoutSpace | None = None) -> Iterator[ParallelLayout]:
    """Every valid layout of ``model`` on ``gpus`` GPUs, in the order of the module docstring.

    Parameters
    ----------
    model : TransformerSpec
    gpus : int
        GPUs of the job (whole nodes).
    devices_per_node : int
    global_batch : int
        Sequences per iteration, kept by every layout.
    space : LayoutSpace, optional
        Restrictions of the dimensions (default: none).

    Yields
    ------
    ParallelLayout
    """
    space = space or LayoutSpace()
    tps = tp_sizes(model, devices_per_node, space.tp_across_nodes)
    for t in tps if space.tp is None else [t for t in tps if t in space.tp]:
        for p in divisors(model.layers):
            if gpus % (t * p) or (space.pp is not None and p not in space.pp):
                continue
            d = gpus // (t * p)
            if global_batch % d:
                continue
            per_replica = global_batch // d
            eps = [e for e in ep_sizes(model, d) if space.ep is None or e in space.ep]
            micros = [b for b in divisors(per_replica)
                      if space.micro is None or b in space.micro]
            zeros = [z for z in space.zero if p == 1 or z <= 1]
            sps = [s for s in space.sp if not s or (t > 1 and model.seq % t == 0)]
            overlap = space.dp_overlap == "always" or (
                space.dp_overlap == "without-pipeline" and p == 1)
            for e in eps:
                for b in micros:
                    for sched, v in _schedules(model, p, per_replica // b, space):
                        for z in zeros:
                            for r in space.recompute:
                                for s in sps:
                                    yield ParallelLayout(tp=t, pp=p, dp=d, micro=b,
                                                         global_batch=global_batch,
                                                         schedule=sched, virtual=v, zero=z,
                                                         sp=s, recompute=r,
                                                         dp_overlap=overlap, ep=e,
                                                         precision=space.precision)
