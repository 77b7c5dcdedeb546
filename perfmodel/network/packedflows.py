"""Plans' per-message flows packed into flat arrays, for the compiled critical path.

A plan costed on its critical path (:attr:`dlscale.perfmodel.network.plan.CollectivePlan.flows`) is a list of
steps, each with its messages and their cost classes. :func:`pack_flows` packs them
into the compressed rows of :class:`dlscale.perfmodel.network.chainwalk.ChainSteps` plus one row
per (step, class) of what prices it (loads per level, NIC, hops, size), one plan
(:meth:`dlscale.perfmodel.network.plan.CollectivePlan.packed`) or the plans of a whole scaling curve one
after another (:func:`dlscale.perfmodel.network.plan.packed_curve`), so one call of the compiled walk
(:func:`dlscale.perfmodel.network.chainwalk.longest_chains`) prices every node count at once.
:func:`dlscale.perfmodel.network.stepcost.packed_time_s` prices them.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Crossbar
>>> from dlscale.perfmodel.network.plan import plan_collective
>>> plan = plan_collective(Crossbar(8), 2, 3, True, "allreduce", "recursive-doubling")
>>> pk = plan.packed()
>>> pk is not None and (int(pk.steps.plan_ranks[0]), len(pk.steps.step_cost))
(6, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dlscale.perfmodel.network.chainwalk import ChainSteps

if TYPE_CHECKING:
    from dlscale.perfmodel.network.plan import StepFlows

__all__ = ["PackedFlows", "pack_flows"]


@dataclass(frozen=True)
class PackedFlows:
    """The flows of ``J`` plans packed for the compiled walk.

    Attributes
    ----------
    steps : ChainSteps
        Messages and reductions of every step of every plan (classes numbered across
        all steps: ``I`` columns).
    levels : tuple of str
        Levels of the columns of ``load``.
    load : ndarray, shape (I, L)
        Per class, the most loaded link of each level on its path (units of ``n``,
        times the step's message size).
    inter : ndarray of bool, shape (I,)
        Per class, whether its path leaves the node.
    hops : ndarray of int, shape (I,)
        Per class, switch-to-switch hops.
    moves : ndarray of bool, shape (I,)
        Per class, whether its message leaves its rank.
    size : ndarray, shape (I,)
        Per class, its step's largest message in units of ``n``.
    plan : ndarray of int, shape (I,)
        Per class, its plan (a column of the sizes priced).
    """

    steps: ChainSteps
    levels: tuple[str, ...]
    load: np.ndarray
    inter: np.ndarray
    hops: np.ndarray
    moves: np.ndarray
    size: np.ndarray
    plan: np.ndarray
    #: priced walks, by machine figures and sizes (:func:`dlscale.perfmodel.network.stepcost.packed_time_s`)
    priced: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict, init=False,
                                                         compare=False, repr=False)


def pack_flows(plans: Sequence[tuple[Sequence[StepFlows], tuple[str, ...]]]) -> PackedFlows:
    """Plans' flows packed one after another (plan ``j`` is ``plans[j]``).

    Parameters
    ----------
    plans : sequence of (flows, levels)
        Each plan's steps (:attr:`dlscale.perfmodel.network.plan.CollectivePlan.flows`) and levels (the
        columns of each step's ``load``); the levels are merged (a level a plan lacks
        carries no load on its paths).

    Returns
    -------
    PackedFlows
        Plan ``j`` has ranks ``0..P - 1``, ``P`` one past the highest rank of any of
        its messages (as :func:`dlscale.perfmodel.network.stepcost.walk_s` counts them).
    """
    levels = tuple(sorted({lvl for _, lv in plans for lvl in lv}))
    flows = [st for fl, _ in plans for st in fl]
    ranks = [max(int(max(st.src.max(initial=0), st.dst.max(initial=0))) for st in fl) + 1
             for fl, _ in plans]
    per_step = np.repeat(ranks, [len(fl) for fl, _ in plans])
    recv = [st.recv[:p] for st, p in zip(flows, per_step, strict=True) if st.recv is not None]
    has = np.array([st.recv is not None for st in flows], dtype=bool)
    at = np.cumsum([0] + [len(r) for r in recv])[:-1]
    step_recv = np.full(len(flows), -1, dtype=np.int64)
    step_recv[has] = at
    width = [len(st.moves) for st in flows]
    classes = np.cumsum([0, *width])
    load = np.zeros((int(classes[-1]), len(levels)))
    row = 0
    for fl, lv in plans:
        cols = [levels.index(lvl) for lvl in lv]
        for st in fl:
            load[row:row + len(st.moves), cols] = st.load
            row += len(st.moves)
    msgs = [_fold(st, int(p)) for st, p in zip(flows, per_step, strict=True)]
    steps = ChainSteps(
        np.array(ranks, dtype=np.int64), np.cumsum([0] + [len(fl) for fl, _ in plans]),
        np.cumsum([0] + [len(m[0]) for m in msgs]), classes[:-1].astype(np.int64),
        step_recv, _cat([m[0] for m in msgs], np.int32), _cat([m[1] for m in msgs], np.int32),
        _cat([m[2] for m in msgs], np.int32), _cat(recv, np.float64), int(classes[-1]),
        _cat([m[3] for m in msgs], np.int32))
    step_plan = np.repeat(np.arange(len(plans)), [len(fl) for fl, _ in plans])
    return PackedFlows(steps, levels, load, _cat([st.inter for st in flows], np.bool_),
                       _cat([st.hops for st in flows], np.int64),
                       _cat([st.moves for st in flows], np.bool_),
                       np.repeat([float(st.size) for st in flows], width).astype(np.float64),
                       np.repeat(step_plan, width).astype(np.int64))


def _fold(st: StepFlows, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A step's messages with each exchange ``a <-> b`` folded into one record from its
    lower rank (``back``: the class of ``b -> a``, else -1); only in steps where no
    rank sends or receives twice (so each rank's one message is found by its sender,
    no sort needed)."""
    src, dst, cls = st.src, st.dst, st.cls
    if not st.distinct or not len(src):
        return src, dst, cls, np.full(len(src), -1)
    sent = np.full(p, -1, dtype=np.int64)          # the message each rank sends
    sent[src] = np.arange(len(src))
    rev = sent[dst]                                # b's message, for a -> b
    pair = (rev >= 0) & (dst[np.maximum(rev, 0)] == src) & (src != dst)
    keep = ~pair | (src < dst)
    back = np.where(pair & (src < dst), cls[np.maximum(rev, 0)], -1)
    return src[keep], dst[keep], cls[keep], back[keep]


def _cat(parts: Sequence[np.ndarray], dtype: npt.DTypeLike) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=dtype) for a in parts]) if parts else \
        np.zeros(0, dtype)
