"""A collective's plan: its steps' loads on each level of a topology, independent of speeds.

A collective's algorithm is a schedule of steps (:mod:`dlscale.perfmodel.network.schedules`, the same steps the
simulator routes); :func:`plan_collective` counts, for the ranks placed block-wise,
the load every step puts on each level (:func:`dlscale.perfmodel.network.linkload.step_load`), in units of
the vector size. The loads do not depend on the bytes or the link speeds, so a plan
is computed once per (topology shape, nodes, ranks per node, algorithm) and cached;
:mod:`dlscale.perfmodel.network.model` prices it for a machine and a size.

A schedule of distinct steps (trees, recursive doubling and halving) whose flows
meet different loads within a step also keeps each flow's own loads
(:class:`StepFlows`): its time is then the longest chain of messages through the
ranks (:mod:`dlscale.perfmodel.network.rendezvous`), not the sum of each step's slowest message. A repeated
step (a ring's shift) reaches a regime in which every repetition advances by its
slowest message, where the two agree, so it keeps only the step's loads; so does a
pipeline (the double binary tree's segments): the sum of its steps is an upper bound
of the routed rendezvous, by at most +6.8% on the preset families at 2-4,096 nodes
(``benchmarks/run.py whatif``; torus, 1,000 nodes, 1 MB), where its critical path
would cost a pass over every rank for each of its ``k + D - 1`` steps.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import Crossbar
>>> plan = plan_collective(Crossbar(4), 4, 1, False, "allreduce", "ring")
>>> plan.levels, plan.repeat.tolist(), plan.flows is None
(('host',), [3.0, 3.0], True)
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from dlscale.perfmodel.machine.hardware import Cluster, Topology
from dlscale.perfmodel.network.linkload import CrossTraffic, StepLoad, step_load
from dlscale.perfmodel.network.packedflows import PackedFlows, pack_flows
from dlscale.perfmodel.network.rowclasses import unique_rows
from dlscale.perfmodel.network.schedules import Phase, build_schedule, double_binary_tree_edges
from dlscale.perfmodel.network.treekernel import applies as tree_applies
from dlscale.perfmodel.network.treekernel import tree_steps
from dlscale.perfmodel.network.treewindows import windowed
from dlscale.perfmodel.sizedcache import SizedCache

__all__ = [
    "CHUNK_MESSAGES",
    "PACKED_BYTES",
    "PLAN_BYTES",
    "STEPS_BYTES",
    "CollectivePlan",
    "StepFlows",
    "assemble_plan",
    "keep_steps",
    "packed_curve",
    "plan_collective",
    "plan_curve",
    "plan_key",
    "plan_steps",
    "shape_key",
]


@dataclass(frozen=True)
class StepFlows:
    """One step's messages, each with the cost class of what its own path meets.

    Attributes
    ----------
    src, dst : ndarray of int
        Sender and receiver (the collective's rank indices) of each message.
    cls : ndarray of int
        Each message's class: an index into the class arrays below.
    load : ndarray, shape (C, L)
        Per class, the most loaded link of each of the plan's levels on the path, in
        units of ``n`` (as :attr:`CollectivePlan.load`).
    inter : ndarray of bool, shape (C,)
        Per class, whether the path leaves the node.
    hops : ndarray of int, shape (C,)
        Per class, switch-to-switch hops.
    moves : ndarray of bool, shape (C,)
        Per class, whether the message leaves its rank (a message to oneself costs 0).
    size : float
        The step's largest message, in units of the vector size ``n``.
    recv : ndarray or None, shape (P,)
        In a reduction step, what each rank receives (units of ``n``); else None.
    distinct : bool
        No rank sends twice and none receives twice in the step.
    """

    src: np.ndarray
    dst: np.ndarray
    cls: np.ndarray
    load: np.ndarray
    inter: np.ndarray
    hops: np.ndarray
    moves: np.ndarray
    size: float
    recv: np.ndarray | None
    distinct: bool


def _step_flows(s: StepLoad, levels: tuple[str, ...], src: np.ndarray, dst: np.ndarray,
                size: float, recv: np.ndarray | None) -> StepFlows:
    f = s.flows
    assert f is not None
    F = len(src)
    cols = [f.load.get(lvl, np.zeros(F)) for lvl in levels]
    rows = np.column_stack([*cols, f.hops, f.inter, src != dst]) if F else np.zeros((0, 3))
    uniq, cls = _unique_rows(rows)
    L = len(levels)
    return StepFlows(src, dst, cls, uniq[:, :L] * size, uniq[:, L + 1].astype(bool),
                     uniq[:, L].astype(np.int64), uniq[:, L + 2].astype(bool), size, recv,
                     _once_each(src) and _once_each(dst))


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of finite float rows
    (:func:`dlscale.perfmodel.network.rowclasses.unique_rows`)."""
    return unique_rows(rows)


def _once_each(ranks: np.ndarray) -> bool:
    """No rank appears twice (ranks are >= 0)."""
    return not len(ranks) or int(np.bincount(ranks).max()) <= 1


def _uneven(s: StepLoad, src: np.ndarray, dst: np.ndarray) -> bool:
    """Whether the step's messages meet different loads, hops or ends."""
    f = s.flows
    assert f is not None
    rows = [*f.load.values(), f.hops, f.inter, src != dst]
    return any(len(r) and bool((r != r[0]).any()) for r in rows)


@dataclass(frozen=True)
class CollectivePlan:
    """A collective's steps with their loads, in units of the vector size ``n``.

    Attributes
    ----------
    levels : tuple of str
        Levels that carry load in some step.
    load : ndarray, shape (S, L)
        Per step, the most loaded link of each level, in units of ``n`` bytes.
    repeat : ndarray, shape (S,)
        How many times each step runs.
    inter : ndarray of bool, shape (S,)
        Whether the step leaves a node (NIC latency).
    hops : ndarray of int, shape (S,)
        Most switch-to-switch hops of the step.
    recv : ndarray, shape (S,)
        Most a rank reduces in the step (units of ``n``; 0 in steps without reduction).
    device_links : bool
        Ranks sit behind a device link (intra-node latency on every path).
    dbt_depth : int
        Depth of the double binary tree (0: not a pipelined tree; then each step's
        load is per pipeline segment of ``n / (2 segments)`` bytes).
    ranks : ndarray or None
        For the plans of a whole curve stacked (arrays with a leading node-count
        axis): the rank count of each node count.
    size : ndarray or None, shape (S,)
        Largest message of each step in units of ``n`` (for the per-size factors of
        :mod:`dlscale.perfmodel.network.msgfactors`); None: every message ``n`` bytes.
    flows : tuple of StepFlows or None
        Each step's messages with their own loads, for a schedule costed on its
        critical path (see the module docstring); None: the sum of the steps.
    """

    levels: tuple[str, ...]
    load: np.ndarray
    repeat: np.ndarray
    inter: np.ndarray
    hops: np.ndarray
    recv: np.ndarray
    device_links: bool
    dbt_depth: int = 0
    ranks: np.ndarray | None = None
    size: np.ndarray | None = None
    flows: tuple[StepFlows, ...] | None = None
    #: priced critical paths of this plan, by machine figures and sizes (see
    #: :func:`dlscale.perfmodel.network.stepcost.critical_path_s`); not copied by ``dataclasses.replace``
    priced: dict[tuple[object, ...], np.ndarray] = field(default_factory=dict, init=False,
                                                         compare=False, repr=False)
    #: ``flows`` packed for the compiled walk, once asked for (:meth:`packed`)
    packing: list[PackedFlows] = field(default_factory=list, init=False, compare=False,
                                       repr=False)

    def packed(self) -> PackedFlows | None:
        """``flows`` packed for the compiled walk (:mod:`dlscale.perfmodel.network.packedflows`; built on first
        use and kept; None without flows). The plans of a curve are packed together
        instead (:func:`packed_curve`), not one by one."""
        if self.flows is None:
            return None
        if not self.packing:
            self.packing.append(pack_flows([(self.flows, self.levels)]))
        return self.packing[0]


def shape_key(topology: Topology) -> Topology:
    """The topology without its link speeds (loads do not depend on them): the cache key.

    Parameters
    ----------
    topology : Topology
        A topology description.
    """
    return topology.without_speeds()


def plan_key(cluster: Cluster) -> Topology:
    """The key of ``cluster``'s plans: its topology without link speeds, wrapped in
    :class:`~dlscale.perfmodel.network.linkload.CrossTraffic` where its message factors ask
    for SimGrid's cross-traffic (``smpi-default``)."""
    topo = shape_key(cluster.network.topology)
    f = cluster.network.message_factors
    return CrossTraffic(topo, f.cross_traffic) if f is not None and f.cross_traffic else topo


def _assemble(loads: list[StepLoad], repeat: list[int], reduce: list[bool], scale: list[float],
              device_links: bool, dbt_depth: int = 0) -> CollectivePlan:
    levels = tuple(sorted({lvl for s in loads for lvl in s.load}))
    S = len(loads)
    arr = np.array([[s.load.get(lvl, 0.0) * scale[i] for lvl in levels]     # the same
                    for i, s in enumerate(loads)], dtype=float).reshape(S, len(levels))
    return CollectivePlan(
        levels, arr, np.asarray(repeat, dtype=float),
        np.array([s.inter for s in loads], dtype=bool),
        np.array([s.hops for s in loads], dtype=np.int64),
        np.array([s.recv * sc if red else 0.0 for s, red, sc in zip(loads, reduce, scale,
                                                                    strict=True)]),
        device_links, dbt_depth, size=np.asarray(scale, dtype=float))


def assemble_plan(loads: list[StepLoad], repeat: list[int], reduce: list[bool],
                  scale: list[float], device_links: bool) -> CollectivePlan:
    """A plan of steps from their loads (per unit of their largest message), how many
    times each runs, whether it reduces, and its largest message (units of ``n``).

    Parameters
    ----------
    loads : list of StepLoad
        Each step's loads (:func:`~dlscale.perfmodel.network.linkload.step_load`).
    repeat : list of int
    reduce : list of bool
    scale : list of float
    device_links : bool
        Ranks sit behind a device link.
    """
    return _assemble(loads, repeat, reduce, scale, device_links)


def _plan_collective(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
                    collective: str, algorithm: str,
                    inter_algorithm: str = "ring",
                    ranks: int | tuple[int, ...] | None = None,
                    segments: int = 0) -> CollectivePlan:
    """The per-step loads of ``collective`` by ``algorithm`` (cached; see module docstring).

    Parameters
    ----------
    topology : Topology
        The network's topology (its link speeds are ignored).
    nodes, ranks_per_node : int
        Ranks ``0..nodes * ranks_per_node - 1``, placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    collective, algorithm : str
        A collective and one of its algorithms (:data:`dlscale.perfmodel.network.schedules.ALGORITHMS`).
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.
    ranks : int or tuple of int, optional
        Only the first ``ranks`` ranks take part, or the ranks of these ids (the
        collective's rank ``i`` is ``ranks[i]``). Default: all.
    segments : int
        For the double binary tree: 0 for its steady state (every edge busy, see the
        module docstring), else every step of the pipeline with this many segments.
    """
    topology = shape_key(topology)
    if isinstance(ranks, tuple):
        ids = np.asarray(ranks, dtype=np.int64)
    else:
        ids = np.arange(nodes * ranks_per_node if ranks is None else ranks, dtype=np.int64)
    p = len(ids)
    if (collective == "allreduce" and algorithm == "double-binary-tree" and ranks is None
            and _compiled_tree(topology, p)):
        return _tree_plan(topology, nodes, ranks_per_node, device_links, segments)
    if collective == "allreduce" and algorithm == "double-binary-tree" and not segments:
        child, parent, depth = double_binary_tree_edges(p)
        child, parent = ids[child], ids[parent]
        unit = np.ones(len(child))
        red = step_load(topology, nodes, ranks_per_node, device_links, child, parent, unit,
                        per_flow=False)
        bc = step_load(topology, nodes, ranks_per_node, device_links, parent, child, unit,
                       per_flow=False)
        return _assemble([red, bc], [1, 1], [True, False], [1.0, 1.0], device_links, depth)
    if collective == "allreduce" and algorithm == "double-binary-tree":
        steps = windowed(topology, nodes, ranks_per_node, device_links, ids, segments)
        if steps is not None:       # the pipeline's steps by depth windows: the same loads
            return _assemble([st for st, _, _ in steps], [1] * len(steps),
                             [red for _, red, _ in steps], [sz for _, _, sz in steps],
                             device_links)
    groups = None
    if algorithm == "hierarchical":
        host = ids // ranks_per_node
        _, first, inverse = np.unique(host, return_index=True, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in np.argsort(first)]
    phases = build_schedule(collective, algorithm, p, 1.0, groups=groups,
                            inter_algorithm=inter_algorithm, segments=max(segments, 1))
    phases = [ph for ph in phases if len(ph.nbytes)]
    memo: dict[tuple[int, bytes], list[tuple[Phase, StepLoad]]] = {}
    loads, repeat, reduce, scale = [], [], [], []
    # a repeated step or a pipeline is priced by its step loads only (see below):
    # each message's own loads are not needed
    per_flow = not (segments or max((ph.repeat for ph in phases), default=1) > 1)
    for ph in phases:
        size = float(ph.nbytes.max())
        # a step whose (src, dst) pattern came before takes its loads (a sample of the
        # pattern finds the candidates, the whole pattern decides)
        seen = memo.setdefault(_pattern_sample(ph), [])
        hit = next((st for old, st in seen if np.array_equal(old.src, ph.src)
                    and np.array_equal(old.dst, ph.dst)), None)
        if hit is None:
            hit = step_load(topology, nodes, ranks_per_node, device_links, ids[ph.src],
                            ids[ph.dst], ph.nbytes / size, per_flow)
            seen.append((ph, hit))
        loads.append(hit)
        repeat.append(ph.repeat)
        reduce.append(ph.reduce)
        scale.append(size)
    plan = _assemble(loads, repeat, reduce, scale, device_links)
    if max(repeat, default=1) > 1 or segments or not any(
            _uneven(s, ph.src, ph.dst) for s, ph in zip(loads, phases, strict=True)):
        return plan
    flows = tuple(_step_flows(s, plan.levels, ph.src, ph.dst, sz,
                              np.bincount(ph.dst, weights=ph.nbytes, minlength=p)
                              if ph.reduce else None)
                  for s, ph, sz in zip(loads, phases, scale, strict=True))
    return dataclasses.replace(plan, flows=flows)




def _compiled_tree(topology: Topology, p: int) -> bool:
    """Whether the double binary tree's plan is counted compiled
    (:mod:`dlscale.perfmodel.network.treekernel`; the same loads): once numba is loaded
    (by a long curve's walks), never loading it for one plan (about 0.9 s of CPU)."""
    return p >= 2 and tree_applies(topology) and "numba" in sys.modules


def _tree_plan(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
               segments: int) -> CollectivePlan:
    """The double binary tree's steady plan (``segments`` 0) or pipeline by
    :func:`dlscale.perfmodel.network.treekernel.tree_steps`, assembled as the numpy
    path assembles it."""
    steps, depth = tree_steps(topology, nodes, ranks_per_node, device_links, segments)
    if not segments:
        return _assemble(steps, [1, 1], [True, False], [1.0, 1.0], device_links, depth)
    half, chunk = len(steps) // 2, 1.0 / 2 / max(1, int(segments))
    return _assemble(steps, [1] * len(steps), [True] * half + [False] * half,
                     [chunk] * len(steps), device_links)


def _pattern_sample(ph: Phase) -> tuple[int, bytes]:
    """A few of a step's (src, dst) pairs, spread over it: equal for equal patterns."""
    at = slice(None, None, max(len(ph.src) // 32, 1))
    return len(ph.src), ph.src[at].tobytes() + ph.dst[at].tobytes()


def _plan_bytes(plan: CollectivePlan) -> int:
    """Bytes a plan holds (its arrays and its flows' arrays)."""
    arrays = [plan.load, plan.repeat, plan.inter, plan.hops, plan.recv, plan.size, plan.ranks]
    for st in plan.flows or ():
        arrays += [st.src, st.dst, st.cls, st.load, st.inter, st.hops, st.moves, st.recv]
    return 512 + sum(a.nbytes for a in arrays if a is not None)


#: The plans (:func:`plan_collective`) kept are bounded by their bytes, not their count:
#: a 27,648-rank plan that keeps its flows holds about 10 MB, so a curve of thousands
#: of node counts would otherwise keep gigabytes (issue 27: 11 MB per node count). A
#: curve asks each such plan once (its walks are kept, :mod:`dlscale.perfmodel.network.walkmemo`), so
#: this and :data:`PACKED_BYTES` serve a curve asked again at other sizes; together with
#: numba (about 90 MB) and the chunk being built they keep a 4,608-count curve under 1 GB.
PLAN_BYTES = 128 << 20

plan_collective = SizedCache(_plan_collective, PLAN_BYTES, _plan_bytes)


@lru_cache(maxsize=1024)
def plan_curve(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int,
               device_links: bool, collective: str, algorithm: str,
               inter_algorithm: str) -> CollectivePlan:
    """The plans of every node count of a curve, padded to one array each (steps past a
    plan's end repeat 0 times), for one vectorized evaluation (cached).

    Parameters
    ----------
    topology : Topology
        The network's topology (its link speeds are ignored).
    nodes : tuple of int
        The node counts.
    ranks_per_node : int
        Ranks per node, placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    collective, algorithm, inter_algorithm : str
        As in :func:`plan_collective`.
    """
    # each node count's step arrays, not its plan: a plan that keeps its flows holds
    # megabytes, and a curve of thousands of node counts must not keep them all alive
    plans = [plan_steps(topology, nd, ranks_per_node, device_links, collective, algorithm,
                        inter_algorithm) if nd * ranks_per_node > 1 else None for nd in nodes]
    levels = tuple(sorted({lvl for pl in plans if pl is not None for lvl in pl.levels}))
    S = max([len(pl.repeat) for pl in plans if pl is not None], default=1)
    N, L = len(nodes), len(levels)
    load, repeat = np.zeros((N, S, L)), np.zeros((N, S))
    inter, hops, recv = np.zeros((N, S), bool), np.zeros((N, S), np.int64), np.zeros((N, S))
    size = np.ones((N, S))
    for j, pl in enumerate(plans):
        if pl is None:
            continue
        k = len(pl.repeat)
        cols = [levels.index(lvl) for lvl in pl.levels]
        load[j, :k][:, cols] = pl.load
        repeat[j, :k], inter[j, :k], hops[j, :k], recv[j, :k] = (pl.repeat, pl.inter,
                                                                 pl.hops, pl.recv)
        if pl.size is not None:
            size[j, :k] = pl.size
    return CollectivePlan(levels, load, repeat, inter, hops, recv, device_links,
                          ranks=np.array(nodes) * ranks_per_node, size=size)


def _steps_of(plan: CollectivePlan) -> CollectivePlan:
    """``plan`` without its flows (its step arrays only)."""
    return plan if plan.flows is None else dataclasses.replace(plan, flows=None)


def _unplanned(*key: object) -> CollectivePlan:
    raise KeyError(key)                      # step arrays are put, never computed on a miss


#: Plans' step arrays without their flows (kilobytes each), kept apart from the plans:
#: a curve's plans that keep their flows are built once, for their critical paths
#: (:func:`packed_curve`), which leaves their steps here for :func:`plan_curve`.
STEPS_BYTES = 64 << 20
_steps: SizedCache[CollectivePlan] = SizedCache(_unplanned, STEPS_BYTES, _plan_bytes)


def plan_steps(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
               collective: str, algorithm: str, inter_algorithm: str) -> CollectivePlan:
    """:func:`plan_collective` without its flows (the same step arrays; cached apart).

    Parameters
    ----------
    topology, nodes, ranks_per_node, device_links, collective, algorithm, inter_algorithm
        As in :func:`plan_collective`.
    """
    key = (topology, nodes, ranks_per_node, device_links, collective, algorithm,
           inter_algorithm)
    hit = _steps.get(key)
    if hit is None:
        hit = _steps_of(plan_collective(*key))
        _steps.put(key, hit)
    return hit


def _packed_bytes(packed: PackedFlows) -> int:
    st = packed.steps
    arrays = [st.plan_ranks, st.plan_steps, st.step_msgs, st.step_cost, st.step_recv, st.src,
              st.dst, st.cls, st.recv, st.back, packed.load, packed.inter, packed.hops,
              packed.moves, packed.size, packed.plan]
    return 512 + sum(a.nbytes for a in arrays)


#: Packed chunks of curves kept (:func:`packed_curve`), bounded by their bytes.
PACKED_BYTES = 128 << 20
#: Messages of the plans packed together in one chunk of a curve (a chunk of 4 M
#: messages holds about 70 MB): a curve's memory is bounded by the chunk being priced
#: and the caches, not by its length.
CHUNK_MESSAGES = 4_000_000

def _unpacked(*key: object) -> PackedFlows:
    raise KeyError(key)                      # chunks are put, never computed on a miss


_packed: SizedCache[PackedFlows] = SizedCache(_unpacked, PACKED_BYTES, _packed_bytes)
_layout: dict[tuple[object, ...], tuple[tuple[int, ...], ...]] = {}


def packed_curve(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int,
                 device_links: bool, collective: str, algorithm: str,
                 inter_algorithm: str) -> Iterator[tuple[PackedFlows, tuple[int, ...]]]:
    """The plans of a curve's node counts that are costed on their critical path,
    packed one after another in chunks of at most :data:`CHUNK_MESSAGES` messages
    (each chunk kept, by bytes), with the positions of its node counts in ``nodes``.

    Parameters
    ----------
    topology : Topology
        The network's topology (its link speeds are ignored).
    nodes : tuple of int
        The node counts.
    ranks_per_node : int
        Ranks per node, placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    collective, algorithm, inter_algorithm : str
        As in :func:`plan_collective`.

    Yields
    ------
    (PackedFlows, tuple of int)
        A chunk and the positions of its node counts in ``nodes``.
    """
    args = (ranks_per_node, device_links, collective, algorithm, inter_algorithm)
    curve = (topology, nodes, *args)
    known = _layout.get(curve)
    for cols in known or ():
        key = (topology, tuple(nodes[c] for c in cols), *args)
        hit = _packed.get(key)
        if hit is None:
            hit = pack_flows([_flows_of(topology, nodes[c], *args) for c in cols])
            _packed.put(key, hit)
        yield hit, cols
    if known is not None:
        return
    layout: list[tuple[int, ...]] = []
    packs: list[tuple[tuple[StepFlows, ...], tuple[str, ...]]] = []
    cols_now: list[int] = []
    messages = 0
    for j, nd in enumerate(nodes):
        if nd * ranks_per_node > 1:
            pl = plan_collective(topology, nd, *args)
            _keep_steps((topology, nd, *args), pl)
            if pl.flows is not None:
                packs.append((pl.flows, pl.levels))
                cols_now.append(j)
                messages += sum(len(st.src) for st in pl.flows)
        if packs and (messages >= CHUNK_MESSAGES or j == len(nodes) - 1):
            chunk = pack_flows(packs)
            cols = tuple(cols_now)
            _packed.put((topology, tuple(nodes[c] for c in cols), *args), chunk)
            layout.append(cols)
            packs, cols_now, messages = [], [], 0
            yield chunk, cols
    if len(_layout) >= 1024:
        _layout.pop(next(iter(_layout)))
    _layout[curve] = tuple(layout)


def _flows_of(topology: Topology, nodes: int, *args: object
              ) -> tuple[tuple[StepFlows, ...], tuple[str, ...]]:
    pl = plan_collective(topology, nodes, *args)
    _keep_steps((topology, nodes, *args), pl)
    assert pl.flows is not None
    return pl.flows, pl.levels


def _keep_steps(key: tuple[object, ...], plan: CollectivePlan) -> None:
    """Leave ``plan``'s step arrays for :func:`plan_steps` (if not there yet)."""
    if _steps.get(key) is None:
        _steps.put(key, _steps_of(plan))


def keep_steps(key: tuple[object, ...], plan: CollectivePlan) -> None:
    """Leave a plan's step arrays, built without its flows (for instance by
    :func:`dlscale.perfmodel.network.fatwalk.fat_walk`), for :func:`plan_steps`.

    Parameters
    ----------
    key : tuple
        ``(topology, nodes, ranks_per_node, device_links, collective, algorithm,
        inter_algorithm)``, as :func:`plan_steps` takes them.
    plan : CollectivePlan
        The plan's step arrays.
    """
    _keep_steps(key, plan)
