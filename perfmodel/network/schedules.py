"""Collective algorithms as message schedules: lists of phases of concurrent messages.

A :class:`Phase` is a set of messages ``src[i] -> dst[i]`` of ``nbytes[i]`` that the
ranks exchange at one step of the algorithm (a rank's next phase starts when its
messages of this one are sent and received), repeated ``repeat`` times with the same
pattern (ring steps); ``reduce`` says whether the receiver reduces what it gets.
Ranks are logical, ``0..p-1``; placement onto the topology happens elsewhere.

The algorithms follow the closed forms of :mod:`dlscale.perfmodel.network.collectives`
(same step counts and message sizes), so that without contention the two agree:
ring (reduce-scatter + allgather), recursive doubling and Rabenseifner (with MPICH's
handling of non-powers of two), binomial-tree reduce + broadcast, the pipelined
double binary tree (NCCL's two complementary binary trees, each with half the data),
hierarchical (binomial reduce to a node leader, an inter-node allreduce among
leaders, binomial broadcast), MPICH's pairwise-exchange all-to-all, and parameter-server push/pull (workers served one
at a time, or ``concurrent``: all at once, sharing the server's link).

Examples
--------
>>> s = build_schedule("allreduce", "ring", 4, 4e6)
>>> [(p.label, p.repeat, float(p.nbytes[0])) for p in s]
[('reduce-scatter', 3, 1000000.0), ('allgather', 3, 1000000.0)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.network.registry import FLAT_ALLREDUCE, OPERATIONS, algorithms

__all__ = ["ALGORITHMS", "COLLECTIVES", "FLAT_ALLREDUCE", "Phase", "build_schedule",
           "double_binary_tree_edges"]


@dataclass(frozen=True, eq=False)
class Phase:
    """One step pattern of a collective (see module docstring).

    A phase whose messages are some of another's (a pipeline's filling and draining
    steps: some of its full step's) names that one in ``within`` and the positions of
    its messages there in ``rows`` (``src == within.src[rows]``, the same for ``dst``),
    so that a router whose path of a pair does not depend on the other pairs gives its
    routes as those rows of the full step's. The pipeline's steady steps, all alike,
    hold the same arrays (a phase's arrays are never changed once built).
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    reduce: bool = False
    repeat: int = 1
    label: str = ""
    within: Phase | None = None
    rows: np.ndarray | None = None

    @property
    def pattern_key(self) -> bytes:
        """Bytes identifying the (src, dst) pattern, for route caches."""
        return self.src.tobytes() + b"|" + self.dst.tobytes()


def _phase(src: ArrayLike, dst: ArrayLike, nbytes: ArrayLike, reduce: bool = False,
           repeat: int = 1, label: str = "") -> Phase:
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    nb = np.broadcast_to(np.asarray(nbytes, dtype=float), src.shape).copy()
    return Phase(src, dst, nb, reduce, repeat, label)


def _ring(ranks: np.ndarray, n: float, steps_rs: bool, steps_ag: bool) -> list[Phase]:
    p = len(ranks)
    if p < 2:
        return []
    src, dst = ranks, np.roll(ranks, -1)
    out = []
    if steps_rs:
        out.append(_phase(src, dst, n / p, True, p - 1, "reduce-scatter"))
    if steps_ag:
        out.append(_phase(src, dst, n / p, False, p - 1, "allgather"))
    return out


Pairs = list[tuple[np.ndarray, np.ndarray]]


def _pow2_parts(ranks: np.ndarray) -> tuple[np.ndarray, Pairs, Pairs]:
    """MPICH's pre/post steps: extra ranks fold onto partners; returns the core ranks."""
    p = len(ranks)
    pp = 1 << (p.bit_length() - 1)
    r = p - pp
    if r == 0:
        return ranks, [], []
    even, odd = ranks[0:2 * r:2], ranks[1:2 * r:2]
    core = np.concatenate([odd, ranks[2 * r:]])
    return core, [(even, odd)], [(odd, even)]


def _recursive_doubling(ranks: np.ndarray, n: float) -> list[Phase]:
    core, pre, post = _pow2_parts(ranks)
    out = [_phase(a, b, n, True, 1, "fold") for a, b in pre]
    k = 1
    while k < len(core):
        idx = np.arange(len(core))
        out.append(_phase(core, core[idx ^ k], n, True, 1, f"exchange d={k}"))
        k <<= 1
    out += [_phase(a, b, n, False, 1, "unfold") for a, b in post]
    return out


def _rabenseifner(ranks: np.ndarray, n: float) -> list[Phase]:
    """MPICH's order (``MPIR_Allreduce_intra_reduce_scatter_allgather``,
    src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c: the
    reduce-scatter's ``mask`` starts at 1 and doubles while the halves shrink, the
    allgather runs it back from ``pof2 / 2``); Gloo's halving-doubling
    (gloo/allreduce_halving_doubling.h: ``bitmask = 1``, first chunk ``n / 2``) and
    SMPI's copy of MPICH's do the same. The largest halves go to the nearest partners."""
    core, pre, post = _pow2_parts(ranks)
    out = [_phase(a, b, n, True, 1, "fold") for a, b in pre]
    pp = len(core)
    idx = np.arange(pp)
    rs, size, k = [], n, 1
    while k < pp:
        size /= 2
        rs.append(_phase(core, core[idx ^ k], size, True, 1, f"halving d={k}"))
        k *= 2
    ag = [_phase(ph.src, ph.dst, ph.nbytes, False, 1, ph.label.replace("halving", "doubling"))
          for ph in reversed(rs)]
    out += rs + ag + [_phase(a, b, n, False, 1, "unfold") for a, b in post]
    return out


def _pairwise_alltoall(ranks: np.ndarray, n: float) -> list[Phase]:
    """MPICH's ``MPIR_Alltoall_intra_pairwise``
    (src/mpi/coll/alltoall/alltoall_intra_pairwise.c): ``p - 1`` steps; in step ``i``
    rank ``r`` sends its ``n / p`` block to ``r ^ i`` when ``p`` is a power of two,
    else to ``r + i`` (receiving from ``r - i``), modulo ``p``."""
    p = len(ranks)
    idx = np.arange(p)
    pof2 = p & (p - 1) == 0
    return [_phase(ranks, ranks[idx ^ i if pof2 else (idx + i) % p], n / p, False, 1,
                   f"exchange {i}") for i in range(1, p)]


def _binomial_reduce(ranks: np.ndarray, n: float) -> list[Phase]:
    p = len(ranks)
    out, k = [], 1
    idx = np.arange(p)
    while k < p:
        s = idx[(idx % (2 * k) == k)]
        out.append(_phase(ranks[s], ranks[s - k], n, True, 1, f"reduce d={k}"))
        k <<= 1
    return out


def _binomial_bcast(ranks: np.ndarray, n: float) -> list[Phase]:
    return [_phase(ph.dst, ph.src, ph.nbytes, False, 1, ph.label.replace("reduce", "bcast"))
            for ph in reversed(_binomial_reduce(ranks, n))]


def _btree(p: int) -> tuple[np.ndarray, np.ndarray]:
    """Parent (``-1`` at the root 0) and depth of NCCL's binary tree on ranks 0..p-1.

    Rank ``r``'s parent is ``(r ^ b) | (b << 1)`` (``b`` its lowest set bit), or
    ``r ^ b`` where that is out of range; odd ranks are the leaves (NCCL
    ``ncclGetBtree``).
    """
    r = np.arange(p, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    parent = np.where(up < p, up, r ^ bit)
    parent[:1] = -1
    # depth: a parent's lowest set bit is above its child's, so the ranks taken by
    # falling lowest bit find their parent's depth already set (each rank once)
    depth = np.zeros(p, dtype=np.int64)
    order = np.argsort(-bit[1:], kind="stable") + 1
    cuts = np.flatnonzero(np.diff(bit[order])) + 1
    for idx in np.split(order, cuts):
        depth[idx] = depth[parent[idx]] + 1
    return parent, depth


def _two_trees(p: int) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    parent, depth = _btree(p)
    trees = [(np.arange(p), parent)]
    # tree 2: tree 1 shifted by one rank (NCCL ncclGetDtree shifts for even p; for odd p
    # NCCL mirrors, which here made inner nodes coincide, so we shift there too),
    # so that the leaves of one tree are the inner nodes of the other
    other = (np.arange(p) + 1) % p
    par2 = np.where(parent >= 0, other[np.maximum(parent, 0)], -1)
    trees.append((other, par2))
    return trees, depth


def double_binary_tree_edges(p: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(child, parent, depth)``: every edge of both trees of the double binary tree.

    In the pipeline's steady state every edge carries one segment per step (child to
    parent in the reduce, parent to child in the broadcast); ``depth`` is the trees'
    depth ``D`` (the pipeline runs ``segments + D - 1`` steps per direction).

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    child, parent : ndarray of int64
        Both trees' edges.
    depth : int
        Depth ``D`` of the trees.

    Examples
    --------
    >>> c, par, d = double_binary_tree_edges(4)
    >>> sorted(zip(c.tolist(), par.tolist())), d
    ([(0, 3), (1, 2), (2, 0), (2, 3), (3, 1), (3, 2)], 2)
    """
    if p < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64), 0
    trees, depth = _two_trees(p)
    child = np.flatnonzero(trees[0][1] >= 0)
    src = np.concatenate([node_of[child] for node_of, _ in trees])
    dst = np.concatenate([par[child] for _, par in trees])
    return src, dst, int(depth.max())


def _double_binary_tree(ranks: np.ndarray, n: float, segments: int) -> list[Phase]:
    """NCCL's pipelined double binary tree: ``k + D - 1`` reduce steps up both trees,
    then as many broadcast steps down; in step ``s`` the edge of a child at depth ``d``
    carries segment ``s - (D - d)`` up (``s - (d - 1)`` down) where that is in
    ``0..k-1``. Every step's messages are some of the full step's (every edge of both
    trees, in one order): the steady steps hold its arrays, the others name it
    (:class:`Phase` ``within``, ``rows``)."""
    p = len(ranks)
    if p < 2:
        return []
    trees, depth = _two_trees(p)
    parent = trees[0][1]
    D = int(depth.max())
    k = max(1, int(segments))
    chunk = n / 2 / k
    child = np.flatnonzero(parent >= 0)
    lower = np.concatenate([node_of[child] for node_of, _ in trees])
    upper = np.concatenate([par[child] for _, par in trees])
    edge_depth = np.tile(depth[child], len(trees))
    out = []
    for reduce, a, b, lag, label in ((True, lower, upper, D - edge_depth, "tree reduce"),
                                     (False, upper, lower, edge_depth - 1, "tree bcast")):
        full = _phase(ranks[a], ranks[b], chunk, reduce, 1, label)
        for s in range(k + D - 1):
            c = s - lag
            on = (c >= 0) & (c < k)
            if on.all():
                out.append(Phase(full.src, full.dst, full.nbytes, reduce, 1, f"{label} {s}"))
                continue
            rows = np.flatnonzero(on)
            out.append(Phase(full.src[rows], full.dst[rows], full.nbytes[rows], reduce, 1,
                             f"{label} {s}", full, rows))
    return out


def _hierarchical(groups: list[np.ndarray], n: float, inter: str, segments: int) -> list[Phase]:
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise ConfigError(f"hierarchical allreduce: every node needs the same number of ranks, "
                          f"got {sorted(sizes)}")
    out: list[Phase] = []
    r = sizes.pop()
    local_red = [_binomial_reduce(np.asarray(g), n) for g in groups]
    for step in range(len(local_red[0])):
        out.append(_merge([lr[step] for lr in local_red], "intra " + local_red[0][step].label))
    leaders = np.array([g[0] for g in groups], dtype=np.int64)
    out += [_relabel(ph, "inter ") for ph in _flat_allreduce(inter, leaders, n, segments)]
    if r > 1:
        local_bc = [_binomial_bcast(np.asarray(g), n) for g in groups]
        for step in range(len(local_bc[0])):
            out.append(_merge([lb[step] for lb in local_bc], "intra " + local_bc[0][step].label))
    return out


def _merge(phases: list[Phase], label: str) -> Phase:
    return Phase(np.concatenate([p.src for p in phases]), np.concatenate([p.dst for p in phases]),
                 np.concatenate([p.nbytes for p in phases]), phases[0].reduce, phases[0].repeat,
                 label)


def _relabel(ph: Phase, prefix: str) -> Phase:
    return Phase(ph.src, ph.dst, ph.nbytes, ph.reduce, ph.repeat, prefix + ph.label,
                 ph.within, ph.rows)


def _flat_allreduce(algorithm: str, ranks: np.ndarray, n: float, segments: int) -> list[Phase]:
    if len(ranks) < 2:
        return []
    if algorithm == "ring":
        return _ring(ranks, n, True, True)
    if algorithm == "recursive-doubling":
        return _recursive_doubling(ranks, n)
    if algorithm == "rabenseifner":
        return _rabenseifner(ranks, n)
    if algorithm == "binomial-tree":
        return _binomial_reduce(ranks, n) + _binomial_bcast(ranks, n)
    if algorithm == "double-binary-tree":
        return _double_binary_tree(ranks, n, segments)
    raise unknown_name("allreduce algorithm", algorithm, FLAT_ALLREDUCE)


#: Collective -> algorithms it can be built with (:mod:`.registry`).
ALGORITHMS: dict[str, tuple[str, ...]] = {op: algorithms(op) for op in OPERATIONS}
COLLECTIVES = OPERATIONS


def build_schedule(collective: str, algorithm: str, ranks: int, n_bytes: float, *,
                   groups: list[np.ndarray] | None = None, inter_algorithm: str = "ring",
                   segments: int = 1) -> list[Phase]:
    """The phases of ``collective`` by ``algorithm`` over ranks ``0..ranks-1``.

    Parameters
    ----------
    collective : str
        A key of :data:`ALGORITHMS`.
    algorithm : str
        One of ``ALGORITHMS[collective]``.
    ranks : int
        Number of ranks (>= 1).
    n_bytes : float
        Vector size each rank holds (allgather: the gathered total; alltoall: each
        rank's send buffer, ``n / ranks`` for each rank).
    groups : list of arrays, optional
        Ranks of each node, for ``hierarchical`` (default: one rank per node).
    inter_algorithm : str
        Flat algorithm among node leaders in ``hierarchical``.
    segments : int
        Pipeline segments per tree in ``double-binary-tree``.

    Returns
    -------
    list of Phase
        The steps in order, each a set of ``(src, dst, bytes)`` messages that run
        together (``repeat`` times, ``reduce`` when the receiver reduces).

    Raises
    ------
    ConfigError
        An unknown collective or algorithm (listing the valid ones) or a bad count.

    Examples
    --------
    >>> len(build_schedule("allreduce", "recursive-doubling", 6, 1e3))
    4
    >>> build_schedule("allreduce", "rign", 4, 1e3)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: allreduce algorithm: unknown name 'rign'; valid: binomial-tree, double-binary-tree, hierarchical, rabenseifner, recursive-doubling, ring (did you mean 'ring'?)
    """
    if collective not in ALGORITHMS:
        raise unknown_name("collective", collective, ALGORITHMS)
    if algorithm not in ALGORITHMS[collective]:
        raise unknown_name(f"{collective} algorithm", algorithm, ALGORITHMS[collective])
    if not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise ConfigError(f"ranks: must be a positive integer, got {ranks!r}")
    if not (isinstance(n_bytes, (int, float)) and math.isfinite(n_bytes) and n_bytes >= 0):
        raise ConfigError(f"n_bytes: must be a number >= 0, got {n_bytes!r}")
    r = np.arange(ranks, dtype=np.int64)
    n = float(n_bytes)
    if collective == "allreduce":
        if algorithm == "hierarchical":
            return _hierarchical(groups if groups is not None else [np.array([i]) for i in r],
                                 n, inter_algorithm, segments)
        return _flat_allreduce(algorithm, r, n, segments)
    if collective == "reduce-scatter":
        return _ring(r, n, True, False)
    if collective == "allgather":
        return _ring(r, n, False, True)
    if collective == "broadcast":
        return _binomial_bcast(r, n)
    if collective == "reduce":
        return _binomial_reduce(r, n)
    if collective == "alltoall":
        return _pairwise_alltoall(r, n)
    # parameter server: rank 0 serves, the others push then pull
    if ranks < 2:
        return []
    workers = r[1:]
    if algorithm == "concurrent":  # every worker at once, sharing the server's link
        return [_phase(workers, np.zeros_like(workers), n, True, 1, "push"),
                _phase(np.zeros_like(workers), workers, n, False, 1, "pull")]
    out = []  # served one worker at a time (blocking push/pull pairs), as the closed form
    for w in workers.tolist():
        out += [_phase([w], [0], n, True, 1, f"push {w}"), _phase([0], [w], n, False, 1, f"pull {w}")]
    return out
