"""The double binary tree's step loads on a fat tree, counted in one compiled pass.

NCCL's double binary tree (:mod:`dlscale.perfmodel.network.schedules`) is priced from
its steady steps (every edge of both trees busy) and its filling and draining pipeline
(:mod:`dlscale.perfmodel.network.pipelined_tree`), whose steps carry the edges of a
window of depths (:mod:`dlscale.perfmodel.network.treewindows`). Both are counts: how
many of a window's messages each rank, host and link takes, the most of them per
level. :func:`tree_steps` builds the trees, counts every key's messages per depth and
takes each window's largest sum, compiled, for every node count of a long curve (the
numpy path sorts and routes each node count's edges anew: tens of milliseconds at
thousands of ranks). A rank's messages in each tree are of one depth (its children's,
its own), so its windows' counts come from ``(n1, c1, n2, c2)`` and the ranks' most from
their few distinct ones (:func:`_depth_codes`, :func:`_codes_max`). The counts are integers and
``1 / rails`` a power of two, so the loads are the very ones :func:`dlscale.perfmodel.network.treewindows.windowed` and
:func:`dlscale.perfmodel.network.linkload.step_load` give (tested bit for bit).

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import FatTree
>>> from dlscale.perfmodel.network.treewindows import windowed
>>> tree = FatTree(2, 4, ((4, 2),), 16)
>>> mine, _ = tree_steps(tree, 16, 2, True, 3)
>>> [(s.load, s.hops, s.inter, s.recv) for s in mine] == [
...     (s.load, s.hops, s.inter, s.recv) for s, _, _ in windowed(tree, 16, 2, True,
...                                                              np.arange(32), 3)]
True
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.hardware import Crossbar, FatTree, Topology
from dlscale.perfmodel.machine.topologies.fattree import xgft_params
from dlscale.perfmodel.network.linkload import StepLoad
from dlscale.perfmodel.sizedcache import SizedCache

__all__ = ["PIPELINE_BYTES", "applies", "tree_steps"]

_COMPILED: list[dict[str, Callable[..., Any]]] = []


def applies(topology: Topology) -> bool:
    """A fat tree (its rails a power of two: the link loads ``count / rails`` exact) or
    a crossbar, not one with SimGrid's cross-traffic.

    Parameters
    ----------
    topology : Topology
        The plans' key.
    """
    if type(topology) is Crossbar:
        return True
    return type(topology) is FatTree and not topology.rails & (topology.rails - 1)


def tree_steps(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
               segments: int) -> tuple[list[StepLoad], int]:
    """The double binary tree's steps on ``nodes x ranks_per_node`` ranks (all of them):
    with ``segments`` 0 its two steady steps (reduce, then broadcast: every edge), else
    the ``segments + D - 1`` reduce steps of the pipeline, then its broadcast steps; and
    the trees' depth ``D``.

    Parameters
    ----------
    topology : Topology
        A fat tree or crossbar (:func:`applies`).
    nodes, ranks_per_node : int
        Ranks placed block-wise (at least 2 in all).
    device_links : bool
        Ranks sit behind a device link.
    segments : int
        Pipeline segments, or 0 for the steady steps.
    """
    key = (topology, nodes, ranks_per_node, device_links)
    if not segments:
        # the steady window slides between those of the max(D - 1, 1)-segment pipeline
        # (the one pipelined_tree prices every node count with): both in one pass,
        # the pipeline's kept for when it is asked
        load, hops, inter, recv, depth = _counted(*key, -1)
        k = max(depth - 1, 1)
        _pipelines.put((*key, k), (np.delete(load, k, axis=1), np.delete(hops, k, axis=1),
                                   np.delete(inter, k, axis=1), np.delete(recv, k, axis=1),
                                   depth))
        return _steps(load[:, k:k + 1], hops[:, k:k + 1], inter[:, k:k + 1],
                      recv[:, k:k + 1], device_links), depth
    hit = _pipelines.get((*key, segments))
    load, hops, inter, recv, depth = hit if hit is not None else _counted(*key, segments)
    return _steps(load, hops, inter, recv, device_links), depth


_Counts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]


def _uncounted(*key: object) -> _Counts:
    raise KeyError(key)                      # pipelines are put, never counted on a miss


def _counts_bytes(counts: _Counts) -> int:
    return 512 + sum(x.nbytes for x in counts[:4])


#: The pipelines counted beside a steady plan (:func:`tree_steps` with ``segments``
#: 0), kept until asked: a curve asks every node count's steady plan first, then its
#: pipelines (about 3 kB each at 27,648 ranks: 4,608 node counts in 16 MB).
PIPELINE_BYTES = 32 << 20
_pipelines: SizedCache[_Counts] = SizedCache(_uncounted, PIPELINE_BYTES, _counts_bytes)


def _counted(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
             segments: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`_count` on the topology's XGFT parameters (a crossbar: one level)."""
    if isinstance(topology, FatTree):
        m, w = (np.array(x, dtype=np.int64) for x in xgft_params(topology, nodes))
    else:
        m, w = np.array([nodes], dtype=np.int64), np.ones(1, dtype=np.int64)
    F = 2 * (nodes * ranks_per_node - 1)
    if len(_WORK[1]) < F:                   # kept for the next node count: no fresh pages
        _WORK[:] = [np.empty(8 * F, np.int64), np.empty(2 * F, np.bool_)]
    load, hops, inter, recv, depth = _kernel()(nodes * ranks_per_node, ranks_per_node,
                                               device_links, m, w, segments, *_WORK)
    return load, hops, inter, recv, int(depth)


#: :func:`_count`'s work buffers: four int64 and one bool array per edge (its hosts, its
#: link keys, whether it climbs), kept between node counts.
_WORK: list[np.ndarray] = [np.empty(0, np.int64), np.empty(0, np.bool_)]


def _steps(load: np.ndarray, hops: np.ndarray, inter: np.ndarray, recv: np.ndarray,
           device_links: bool) -> list[StepLoad]:
    """Each direction's windows (reduce first) as step loads (StepLoad), their levels
    named (intra, host, then the switch levels; the intra level only behind device
    links)."""
    steps = []
    names = _names(load.shape[-1])
    first = 0 if device_links else 1
    for lr, hr, ir, rr in zip(load.tolist(), hops.tolist(), inter.tolist(), recv.tolist(),
                              strict=True):
        for row, hp, it, rc in zip(lr, hr, ir, rr, strict=True):
            lv = {names[k]: row[k] for k in range(first, len(row)) if row[k] > 0}
            steps.append(StepLoad(lv, hp, it, rc))
    return steps


@cache
def _names(K: int) -> tuple[str, ...]:
    """The level names of a step's ``K`` columns: intra, host, then the switch levels."""
    return ("intra", "host", *[f"L{k - 1}-L{k}" for k in range(2, K)])[:K]


def _kernel() -> Callable[..., Any]:
    """:func:`_count` compiled by numba (from its cache on disk), once per process: its
    helpers first, put in its globals, where the compiled count finds them."""
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        space = globals()
        for helper in ("_trees", "_window_max", "_depth_codes", "_codes_max",
                       "_subset", "_mirror", "_by_coord", "_windows"):
            space[helper] = njit()(space[helper])
        _COMPILED.append({"_count": njit()(_count)})
    return _COMPILED[0]["_count"]


def _trees(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both trees' edges (:func:`dlscale.perfmodel.network.schedules.double_binary_tree_edges`'s
    order: tree 1's children 1..p-1, then tree 2's) and each edge's child depth."""
    parent = np.full(p, -1, np.int64)
    depth = np.zeros(p, np.int64)
    for r in range(1, p):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        parent[r] = up if up < p else r ^ bit
    bit = 1
    while bit * 2 < p:
        bit *= 2
    while bit >= 1:                          # a parent's lowest bit is above its child's
        for r in range(bit, p, 2 * bit):
            depth[r] = depth[parent[r]] + 1
        bit //= 2
    lower = np.empty(2 * (p - 1), np.int64)
    upper = np.empty(2 * (p - 1), np.int64)
    dd = np.empty(2 * (p - 1), np.int64)
    for r in range(1, p):
        lower[r - 1], upper[r - 1] = r, parent[r]
        up = parent[r] + 1                  # (x + 1) % p, without a division
        lower[p - 2 + r], upper[p - 2 + r] = r + 1 if r + 1 < p else 0, up if up < p else 0
        dd[r - 1] = dd[p - 2 + r] = depth[r]
    return lower, upper, dd


def _window_max(order: np.ndarray, start: np.ndarray, ka: np.ndarray, kb: np.ndarray,
                two: bool, K: int, lo: np.ndarray, hi: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per window, the most messages one key takes among those of coordinate
    ``lo <= c <= hi``, for the keys ``ka`` and (``two``) ``kb`` of the same messages:
    the windows slide (``lo`` and ``hi`` never fall), so each message enters and leaves
    once, and a histogram of each key's counts keeps its largest (``order``: the
    messages counted, by coordinate; ``start[c]`` where ``c``'s begin)."""
    ca, cb = np.zeros(K, np.int64), np.zeros(K if two else 1, np.int64)
    ha, hb = np.zeros(len(order) + 2, np.int64), np.zeros(len(order) + 2, np.int64)
    oa, ob = np.zeros(len(lo), np.int64), np.zeros(len(lo), np.int64)
    ta, tb, c_lo, c_hi = 0, 0, 0, -1
    for j in range(len(lo)):
        while c_hi < hi[j]:
            c_hi += 1
            for x in range(start[c_hi], start[c_hi + 1]):
                f = order[x]
                n = ca[ka[f]]
                ha[n] -= 1
                ha[n + 1] += 1
                ca[ka[f]] = n + 1
                ta = max(ta, n + 1)
                if two:
                    n = cb[kb[f]]
                    hb[n] -= 1
                    hb[n + 1] += 1
                    cb[kb[f]] = n + 1
                    tb = max(tb, n + 1)
        while c_lo < lo[j]:
            for x in range(start[c_lo], start[c_lo + 1]):
                f = order[x]
                n = ca[ka[f]]
                ha[n] -= 1
                ha[n - 1] += 1
                ca[ka[f]] = n - 1
                if n == ta and ha[n] == 0:
                    ta = n - 1
                if two:
                    n = cb[kb[f]]
                    hb[n] -= 1
                    hb[n - 1] += 1
                    cb[kb[f]] = n - 1
                    if n == tb and hb[n] == 0:
                        tb = n - 1
            c_lo += 1
        oa[j], ob[j] = ta, tb
    return oa, ob


def _depth_codes(key: np.ndarray, coord: np.ndarray, T1: int, K: int, D: int
                 ) -> tuple[np.ndarray, bool]:
    """:func:`_window_max` over all messages, for rank keys, in two parts: in each tree
    (messages ``< T1``, then the rest) a rank's messages (as a child, as a parent: its
    children are one depth) share one coordinate, so a rank's count in a window is
    ``n1`` if ``c1`` is in it plus ``n2`` if ``c2`` is, and the most over the ranks is
    the most over their few distinct ``(n1, c1, n2, c2)``. Here those, coded, and
    whether each key's messages are so (at most two per tree; else the sliding count
    is the one)."""
    N = 3                                   # at most 2 messages per rank, tree and end
    n = np.zeros((2, K), np.int64)
    c = np.zeros((2, K), np.int64)
    for f in range(len(key)):
        t, x = (0 if f < T1 else 1), key[f]
        if (n[t, x] and c[t, x] != coord[f]) or n[t, x] == N - 1:
            return np.zeros(0, np.int64), False
        n[t, x] += 1
        c[t, x] = coord[f]
    seen = np.zeros(N * N * (D + 1) * (D + 1), np.bool_)
    codes = np.empty(len(seen), np.int64)
    nc = 0
    for x in range(K):
        code = ((n[0, x] * (D + 1) + c[0, x]) * N + n[1, x]) * (D + 1) + c[1, x]
        if not seen[code]:
            seen[code] = True
            codes[nc] = code
            nc += 1
    return codes[:nc], True


def _codes_max(codes: np.ndarray, D: int, lo: np.ndarray, hi: np.ndarray,
               out: np.ndarray) -> None:
    """Per window ``lo[j] <= c <= hi[j]``, the most a key of these codes takes
    (:func:`_depth_codes`), into ``out``."""
    N = 3
    for j in range(len(lo)):
        best = 0
        for q in range(len(codes)):
            code = codes[q]
            c2 = code % (D + 1)
            n2 = code // (D + 1) % N
            c1 = code // ((D + 1) * N) % (D + 1)
            n1 = code // ((D + 1) * N * (D + 1))
            v = (n1 if lo[j] <= c1 <= hi[j] else 0) + (n2 if lo[j] <= c2 <= hi[j] else 0)
            best = max(best, v)
        out[j] = best


def _subset(order: np.ndarray, start: np.ndarray, on: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The messages of ``order`` that are ``on``, in the same order, and where each
    coordinate's begin among them."""
    sub = np.empty(len(order), np.int64)
    at = np.zeros(len(start), np.int64)
    n = 0
    for c in range(len(start) - 1):
        at[c] = n
        for x in range(start[c], start[c + 1]):
            if on[order[x]]:
                sub[n] = order[x]
                n += 1
    at[len(start) - 1] = n
    return sub[:n], at


def _mirror(order: np.ndarray, start: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """Messages by coordinate (:func:`_by_coord`'s ``order`` and ``start``) by the
    coordinate ``D - 1 - c`` instead: the groups in reverse, each in its order (as
    :func:`_by_coord` and :func:`_subset` order them)."""
    out = np.empty(start[D] - start[0], np.int64)
    at = np.zeros(D + 1, np.int64)
    n = 0
    for c2 in range(D):
        at[c2] = n
        c = D - 1 - c2
        for x in range(start[c], start[c + 1]):
            out[n] = order[x]
            n += 1
    at[D] = n
    return out, at


def _by_coord(coord: np.ndarray, D: int) -> tuple[np.ndarray, np.ndarray]:
    """The messages in order of coordinate (a counting sort) and where each begins."""
    start = np.zeros(D + 1, np.int64)
    for f in range(len(coord)):
        start[coord[f] + 1] += 1
    for c in range(D):
        start[c + 1] += start[c]
    fill = start[:D].copy()
    order = np.empty(len(coord), np.int64)
    for f in range(len(coord)):
        order[fill[coord[f]]] = f
        fill[coord[f]] += 1
    return order, start


def _windows(D: int, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """The depth windows ``lo[s] <= c <= hi[s]`` of the steps: the steady step's one
    (``segments`` 0), the ``segments + D - 1`` of a pipeline, or (``segments`` -1) the
    ``max(D - 1, 1)``-segment pipeline's with the steady window after its ``k``-th,
    where it keeps both bounds from falling (its ``k``-th starts at depth 0, the next
    ends at ``D - 1``)."""
    k = max(segments, 1) if segments >= 0 else max(D - 1, 1)
    S = k + D - 1 if segments else 1
    lo, hi = np.zeros(S, np.int64), np.full(S, D - 1, np.int64)
    if segments:
        for s in range(S):
            lo[s], hi[s] = max(s - k + 1, 0), min(s, D - 1)
    if segments >= 0:
        return lo, hi
    return (np.concatenate((lo[:k], np.zeros(1, np.int64), lo[k:])),
            np.concatenate((hi[:k], np.full(1, D - 1, np.int64), hi[k:])))


def _count(p: int, rpn: int, dev: bool, m: np.ndarray, w: np.ndarray, segments: int,
           work: np.ndarray, flags: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Per direction (reduce, broadcast) and window (:func:`_windows`): each level's load
    (intra, host, switch levels), hops, whether a message leaves its node, the most a
    rank receives; and D (``work``, ``flags``: buffers of at least ``4`` and ``1`` times
    the edges, every entry written before it is read)."""
    lower, upper, dd = _trees(p)
    D = dd.max()
    lo, hi = _windows(D, segments)
    S = len(lo)
    h = len(m)
    load = np.zeros((2, S, h + 1))
    hops, inter, recv = np.zeros((2, S), np.int64), np.zeros((2, S), np.bool_), np.zeros((2, S))
    H = (p - 1) // rpn + 1
    F = len(lower)
    h_low, h_up, ka, kb = work[:F], work[F:2 * F], work[2 * F:3 * F], work[3 * F:4 * F]
    on = flags[:F]
    for f in range(F):                      # each edge's hosts, once for both directions
        h_low[f], h_up[f] = lower[f] // rpn, upper[f] // rpn
    b, gid = np.zeros(H, np.int64), np.empty(H, np.int64)
    up_codes, ok_up = _depth_codes(upper, D - dd, F // 2, p, D)
    low_codes, ok_low = _depth_codes(lower, D - dd, F // 2, p, D)
    leave, leave_at = np.empty(0, np.int64), np.empty(0, np.int64)
    for r in range(2):
        src, dst = (lower, upper) if r == 0 else (upper, lower)
        coord = D - dd if r == 0 else dd - 1
        hs, hd = (h_low, h_up) if r == 0 else (h_up, h_low)
        if r == 0 or not (ok_up and ok_low):
            order, start = _by_coord(coord, D)
        # the ranks' windows from their depths per tree, coded once for both directions
        # (the broadcast's coordinates D - 1 - the reduction's: its windows mirrored)
        got, sent = np.zeros(S, np.int64), np.zeros(S, np.int64)
        wlo, whi = (lo, hi) if r == 0 else (D - 1 - hi, D - 1 - lo)
        if ok_up and ok_low:
            _codes_max(up_codes if r == 0 else low_codes, D, wlo, whi, got)
            if dev:
                _codes_max(low_codes if r == 0 else up_codes, D, wlo, whi, sent)
        else:                               # not one depth per rank and tree: counted
            got, sent = _window_max(order, start, dst, src, dev, p, lo, hi)
        if r == 0:                          # messages leaving a node, by coordinate
            order, start = _subset(order, start, hs != hd)
            leave, leave_at = order, start
        else:                               # the same, by the reversed coordinates
            order, start = _mirror(leave, leave_at, D)
        a, b_ = _window_max(order, start, hs, hd, True, H, lo, hi)
        # element by element, not row assignments (whose shape check numba compiles,
        # 2 s of a first run): the same values
        for j in range(S):
            recv[r, j] = got[j]
            if dev:
                load[r, j, 0] = max(sent[j], got[j])
            load[r, j, 1] = max(a[j], b_[j])
            inter[r, j] = start[hi[j] + 1] > start[lo[j]]
        M, W, wp = 1, w[0], 1
        for x in range(H):                  # per host: as a destination, its up-port
            b[x] = 0
        for i in range(2, h + 1):
            M *= m[i - 2]
            for x in range(H):              # per host, not per message: H divisions
                b[x] += ((x // wp) % w[i - 1]) * W
                gid[x] = x // M
            wp *= w[i - 1]
            W *= w[i - 1]
            for x in range(len(order)):     # the messages reaching level i - 1 (the
                f = order[x]                # only ones read)
                gs, gd = gid[hs[f]], gid[hd[f]]
                on[f] = gs != gd
                ka[f] = gs * W + b[hd[f]]
                kb[f] = gd * W + b[hd[f]]
            # those reaching level i (a subset of those reaching level i - 1)
            order, start = _subset(order, start, on)
            links = ((H - 1) // M + 1) * W
            for j in range(S):
                if start[hi[j] + 1] > start[lo[j]]:
                    hops[r, j] = 2 * (i - 1)
            a, b_ = _window_max(order, start, ka, kb, True, links, lo, hi)
            for j in range(S):
                load[r, j, i] = max(a[j], b_[j]) / w[0]
    return load, hops, inter, recv, D
