"""Collectives that many groups of ranks run at once on one job's nodes.

A parallel layout's groups of one kind (the data-parallel replicas of every stage,
the expert-parallel groups, the pipeline's stage-to-stage hand-overs) run the same
communication at the same time. Each step of it is then the union of every group's
messages: their loads on every level of the topology (the devices' links, the
NICs, each fat-tree level with its taper and rails, a dragonfly's local and global
links, a torus's rings) are counted together on the job's placement (rank ``q`` on
node ``q // ranks_per_node``) by :func:`~dlscale.perfmodel.network.linkload.step_load`,
and the steps priced by :func:`~dlscale.perfmodel.network.stepcost.plan_time_s`: the
same loads, latencies and per-size factors as every other collective of the closed
form. A step takes its most loaded link's time (every flow of the step at its
bottleneck's share, as in a max-min fair network).

The groups are ``size`` ranks ``stride`` apart, in blocks of ``size x stride``
consecutive ranks (:func:`strided_groups`): Megatron's numbering (tensor fastest,
then data, then pipeline) gives every group kind of a layout this shape. Groups that
do not run at the same time (those of different pipeline stages: 1F1B staggers the
stages' last backward passes by a slot, and with them their exchanges) are counted
in sets apart, each step taking its most loaded set's loads.

Examples
--------
Two groups of two ranks, each rank alone on a node of a two-level tree of two nodes
per leaf: ranks 0 and 2 (on leaves 0 and 1) and ranks 1 and 3. Both rings leave each
leaf at once: on a 2:1 taper they share its one uplink and take twice as long as on
the non-blocking tree, where each has its own.

>>> from dlscale.perfmodel.catalog import get_cluster
>>> from dlscale.perfmodel.machine.hardware import FatTree
>>> import dataclasses
>>> c = get_cluster("stampede2-knl")
>>> tree = FatTree(levels=2, nodes_per_leaf=2, down_up=((2, 1),), max_nodes=4)
>>> c = dataclasses.replace(c, network=dataclasses.replace(c.network, topology=tree))
>>> strided_groups(4, 2, 2).tolist()
[[0, 2], [1, 3]]
>>> both = groups_time_s(c, "allreduce", "ring", 1e8, 4, 1, 2, 2)
>>> wide = dataclasses.replace(c, network=dataclasses.replace(c.network,
...     topology=FatTree(levels=2, nodes_per_leaf=2, down_up=((2, 2),), max_nodes=4)))
>>> round(both / groups_time_s(wide, "allreduce", "ring", 1e8, 4, 1, 2, 2), 2)
2.0
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.machine.hardware import Cluster, Topology
from dlscale.perfmodel.network.linkload import StepLoad, step_load
from dlscale.perfmodel.network.plan import CollectivePlan, assemble_plan, plan_key
from dlscale.perfmodel.network.schedules import ALGORITHMS, build_schedule
from dlscale.perfmodel.network.stepcost import device_links, plan_time_s

__all__ = ["groups_time_s", "shift_time_s", "strided_groups"]


def strided_groups(ranks: int, size: int, stride: int) -> np.ndarray:
    """Rank ids of every group of ``size`` ranks ``stride`` apart among ``ranks``.

    Parameters
    ----------
    ranks : int
        Ranks ``0..ranks - 1``; a multiple of ``size x stride``.
    size, stride : int
        Ranks per group and the distance between a group's neighbours.

    Returns
    -------
    ndarray of int, shape (groups, size)
        Group ``g``'s ranks in its row, in the collective's order.

    Examples
    --------
    >>> strided_groups(8, 2, 2).tolist()
    [[0, 2], [1, 3], [4, 6], [5, 7]]
    """
    block = size * stride
    if size < 1 or stride < 1 or ranks < block or ranks % block:
        raise ConfigError(f"groups: {ranks} ranks do not split into groups of {size} "
                          f"ranks {stride} apart (need a multiple of {block})")
    r = np.arange(ranks, dtype=np.int64).reshape(ranks // block, size, stride)
    return np.asarray(r.transpose(0, 2, 1).reshape(-1, size))


def _load(topology: Topology, nodes: int, rpn: int, dev: bool, src: np.ndarray,
          dst: np.ndarray, weight: np.ndarray) -> StepLoad:
    return step_load(topology, nodes, rpn, dev, src, dst, weight, per_flow=False)


def _most(loads: list[StepLoad]) -> StepLoad:
    """The step of sets that do not meet: each level's most loaded set, the longest path."""
    if len(loads) == 1:
        return loads[0]
    levels = {lvl for st in loads for lvl in st.load}
    return StepLoad({lvl: max(st.load.get(lvl, 0.0) for st in loads) for lvl in levels},
                    max(st.hops for st in loads), any(st.inter for st in loads),
                    max(st.recv for st in loads))


def _sets_load(topology: Topology, nodes: int, rpn: int, dev: bool, src: np.ndarray,
               dst: np.ndarray, weight: np.ndarray, sets: int) -> StepLoad:
    """One step's loads, its flows in ``sets`` equal consecutive sets counted apart."""
    if sets == 1:
        return _load(topology, nodes, rpn, dev, src, dst, weight)
    per = len(src) // sets
    return _most([_load(topology, nodes, rpn, dev, src[k * per:(k + 1) * per],
                        dst[k * per:(k + 1) * per], weight[k * per:(k + 1) * per])
                  for k in range(sets)])


@lru_cache(maxsize=4096)
def _groups_plan(topology: Topology, nodes: int, rpn: int, dev: bool, collective: str,
                 algorithm: str, ranks: int, size: int, stride: int,
                 apart: int) -> CollectivePlan:
    """The loads of every step of every group's collective, the groups of each
    ``apart`` consecutive ranks together and those sets apart."""
    ids = strided_groups(ranks, size, stride)
    sets = ranks // apart
    memo: dict[bytes, StepLoad] = {}
    loads, repeat, reduce, scale = [], [], [], []
    for ph in build_schedule(collective, algorithm, size, 1.0):
        if not len(ph.nbytes):
            continue
        top = float(ph.nbytes.max())
        key = ph.pattern_key + ph.nbytes.tobytes()
        if key not in memo:
            weight = np.tile(ph.nbytes / top, len(ids))
            memo[key] = _sets_load(topology, nodes, rpn, dev, ids[:, ph.src].ravel(),
                                   ids[:, ph.dst].ravel(), weight, sets)
        loads.append(memo[key])
        repeat.append(ph.repeat)
        reduce.append(ph.reduce)
        scale.append(top)
    return assemble_plan(loads, repeat, reduce, scale, dev)


def groups_time_s(cluster: Cluster, collective: str, algorithm: str, n_bytes: float,
                  ranks: int, ranks_per_node: int, size: int, stride: int,
                  apart: int | None = None) -> float:
    """Seconds of ``collective`` run at once by every group of ``size`` ranks
    ``stride`` apart among ``ranks`` (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine: its links, topology and message factors price the steps.
    collective, algorithm : str
        A collective and one of its scheduled algorithms (``ring``, ``pairwise``, ...;
        not the pipelined double binary tree).
    n_bytes : float
        Bytes of each rank's vector (of the gathered result for allgather).
    ranks, ranks_per_node : int
        The job's ranks, placed block-wise on its first nodes.
    size, stride : int
        The groups (:func:`strided_groups`).
    apart : int, optional
        The groups of each ``apart`` consecutive ranks (a multiple of ``size x
        stride`` dividing ``ranks``) run together, those of different sets at other
        times (a pipeline's stages): each step takes its most loaded set's loads.
        Default: all at once.

    Returns
    -------
    float
        Seconds (0 for groups of one rank).
    """
    if collective not in ALGORITHMS:
        raise unknown_name("collective", collective, ALGORITHMS)
    if algorithm not in ALGORITHMS[collective] or algorithm == "double-binary-tree":
        allowed = [a for a in ALGORITHMS[collective] if a != "double-binary-tree"]
        raise unknown_name(f"{collective} algorithm of concurrent groups", algorithm, allowed)
    if size < 2:
        return 0.0
    apart = ranks if apart is None else apart
    if apart < 1 or ranks % apart or apart % (size * stride):
        raise ConfigError(f"apart: {apart} must divide {ranks} ranks and be a multiple of "
                          f"{size * stride}")
    nodes = -(-ranks // ranks_per_node)
    cluster.check_nodes(nodes)
    plan = _groups_plan(plan_key(cluster), nodes, ranks_per_node,
                        device_links(cluster, ranks_per_node), collective, algorithm,
                        ranks, size, stride, apart)
    return float(plan_time_s(cluster, plan, n_bytes, 0.0))


@lru_cache(maxsize=4096)
def _shift_plan(topology: Topology, nodes: int, rpn: int, dev: bool, ranks: int,
                offset: int) -> CollectivePlan:
    src = np.arange(ranks - offset, dtype=np.int64)
    load = _sets_load(topology, nodes, rpn, dev, src, src + offset, np.ones(len(src)),
                      len(src) // offset)
    return assemble_plan([load], [1], [False], [1.0], dev)


def shift_time_s(cluster: Cluster, n_bytes: float, ranks: int, ranks_per_node: int,
                 offset: int) -> float:
    """Seconds of one step in which each block of ``offset`` consecutive ranks sends
    ``n_bytes`` from every rank ``q`` to ``q + offset`` at once (a pipeline's hand-over
    from one stage to the next, every replica and tensor rank of it), priced as a
    collective's step (see the module docstring); the blocks (the pipeline's
    boundaries) apart, the step their slowest.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    n_bytes : float
        Bytes of each message.
    ranks, ranks_per_node : int
        The job's ranks, placed block-wise on its first nodes.
    offset : int
        Distance from each sender to its receiver (``1 <= offset < ranks``).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("stampede2-knl")
    >>> round(shift_time_s(c, 1e8, 2, 1, 1) * 1e3, 3)    # alpha + n / 12.5 GB/s
    8.001
    """
    if not 1 <= offset < ranks:
        raise ConfigError(f"offset: must be in 1..{ranks - 1}, got {offset}")
    nodes = -(-ranks // ranks_per_node)
    cluster.check_nodes(nodes)
    plan = _shift_plan(plan_key(cluster), nodes, ranks_per_node,
                       device_links(cluster, ranks_per_node), ranks, offset)
    return float(plan_time_s(cluster, plan, n_bytes, 0.0))
