"""Plans' per-message flows packed into flat arrays, for the compiled critical path.

A plan costed on its critical path (:attr:`.netplan.CollectivePlan.flows`) is a list of
steps, each with its messages and their cost classes. :func:`pack_flows` packs them
once, when the plan is built, into the compressed rows of
:class:`dlscale.kernels.chains.ChainSteps` plus one row per (step, class) of what
prices it (loads per level, NIC, hops, size); :func:`concat` stacks the packed plans
of a whole scaling curve, so one call of the compiled walk
(:func:`dlscale.kernels.chains.longest_chains`) prices every node count at once.
:func:`.stepcost.packed_time_s` prices them.

Examples
--------
>>> from dlscale.perfmodel.hardware import Crossbar
>>> from dlscale.perfmodel.netplan import plan_collective
>>> plan = plan_collective(Crossbar(8), 2, 3, True, "allreduce", "recursive-doubling")
>>> pk = plan.packed
>>> pk is not None and (int(pk.steps.plan_ranks[0]), len(pk.steps.step_cost))
(6, 4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dlscale.kernels.chains import ChainSteps

if TYPE_CHECKING:
    from .netplan import StepFlows

__all__ = ["PackedFlows", "concat", "pack_flows"]


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
    #: priced walks, by machine figures and sizes (:func:`.stepcost.packed_time_s`)
    priced: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict, init=False,
                                                         compare=False, repr=False)


def pack_flows(flows: Sequence[StepFlows], levels: tuple[str, ...]) -> PackedFlows:
    """One plan's flows packed (:class:`PackedFlows` with ``J = 1``).

    Parameters
    ----------
    flows : sequence of StepFlows
        The plan's steps (:attr:`.netplan.CollectivePlan.flows`).
    levels : tuple of str
        The plan's levels (the columns of each step's ``load``).

    Returns
    -------
    PackedFlows
        Ranks ``0..P - 1`` with ``P`` one past the highest rank of any message (as
        :func:`.stepcost.walk_s` counts them).
    """
    p = max(int(max(st.src.max(initial=0), st.dst.max(initial=0))) for st in flows) + 1
    classes = np.cumsum([0] + [len(st.moves) for st in flows])
    msgs = np.cumsum([0] + [len(st.src) for st in flows])
    recv = [st.recv[:p] for st in flows if st.recv is not None]
    offsets = np.cumsum([0] + [len(r) for r in recv])
    step_recv, k = [], 0
    for st in flows:
        step_recv.append(int(offsets[k]) if st.recv is not None else -1)
        k += st.recv is not None
    steps = ChainSteps(
        np.array([p], dtype=np.int64), np.array([0, len(flows)], dtype=np.int64),
        msgs.astype(np.int64), classes[:-1].astype(np.int64), np.array(step_recv, np.int64),
        _cat([st.src for st in flows], np.int32), _cat([st.dst for st in flows], np.int32),
        _cat([st.cls for st in flows], np.int32), _cat(recv, np.float64), int(classes[-1]))
    sizes = np.repeat([float(st.size) for st in flows], [len(st.moves) for st in flows])
    return PackedFlows(steps, levels, np.concatenate([st.load for st in flows]).reshape(
        -1, len(levels)), _cat([st.inter for st in flows], np.bool_),
        _cat([st.hops for st in flows], np.int64), _cat([st.moves for st in flows], np.bool_),
        sizes.astype(np.float64), np.zeros(int(classes[-1]), np.int64))


def _cat(parts: Sequence[np.ndarray], dtype: npt.DTypeLike) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=dtype) for a in parts]) if parts else \
        np.zeros(0, dtype)


def concat(packs: Sequence[PackedFlows]) -> PackedFlows:
    """Plans packed one after another (plan ``j`` of the result is ``packs[j]``).

    Parameters
    ----------
    packs : sequence of PackedFlows
        Packed single plans or stacks; their levels are merged (a level a plan lacks
        carries no load on its paths).
    """
    levels = tuple(sorted({lvl for pk in packs for lvl in pk.levels}))
    load = np.zeros((sum(len(pk.size) for pk in packs), len(levels)))
    row = 0
    for pk in packs:
        cols = [levels.index(lvl) for lvl in pk.levels]
        load[row:row + len(pk.size), cols] = pk.load
        row += len(pk.size)
    st = [pk.steps for pk in packs]
    n_steps = np.cumsum([0] + [len(s.step_cost) for s in st])
    n_msgs = np.cumsum([0] + [len(s.src) for s in st])
    n_cls = np.cumsum([0] + [s.classes for s in st])
    n_recv = np.cumsum([0] + [len(s.recv) for s in st])
    n_plans = np.cumsum([0] + [len(s.plan_ranks) for s in st])
    steps = ChainSteps(
        _cat([s.plan_ranks for s in st], np.int64),
        np.concatenate([[0]] + [s.plan_steps[1:] + o for s, o in zip(st, n_steps, strict=False)]
                       ).astype(np.int64),
        np.concatenate([[0]] + [s.step_msgs[1:] + o for s, o in zip(st, n_msgs, strict=False)]
                       ).astype(np.int64),
        _cat([s.step_cost + o for s, o in zip(st, n_cls, strict=False)], np.int64),
        _cat([np.where(s.step_recv >= 0, s.step_recv + o, -1)
              for s, o in zip(st, n_recv, strict=False)], np.int64),
        _cat([s.src for s in st], np.int32), _cat([s.dst for s in st], np.int32),
        _cat([s.cls for s in st], np.int32), _cat([s.recv for s in st], np.float64),
        int(n_cls[-1]))
    return PackedFlows(steps, levels, load, _cat([pk.inter for pk in packs], np.bool_),
                       _cat([pk.hops for pk in packs], np.int64),
                       _cat([pk.moves for pk in packs], np.bool_),
                       _cat([pk.size for pk in packs], np.float64),
                       _cat([pk.plan + o for pk, o in zip(packs, n_plans, strict=False)],
                            np.int64))
