"""The double binary tree's step loads on a fat tree, counted in one compiled pass.

NCCL's double binary tree (:mod:`dlscale.perfmodel.network.schedules`) is priced from
its steady steps (every edge of both trees busy) and its filling and draining pipeline
(:mod:`dlscale.perfmodel.network.pipelined_tree`), whose steps carry the edges of a
window of depths (:mod:`dlscale.perfmodel.network.treewindows`). Both are counts: how
many of a window's messages each rank, host and link takes, the most of them per
level. :func:`tree_steps` builds the trees, counts every key's messages per depth and
takes each window's largest sum, compiled, for every node count of a long curve (the
numpy path sorts and routes each node count's edges anew: tens of milliseconds at
thousands of ranks). The counts are integers and ``1 / rails`` a power of two, so the
loads are the very ones :func:`dlscale.perfmodel.network.treewindows.windowed` and
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
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.hardware import Crossbar, FatTree, Topology
from dlscale.perfmodel.machine.topologies.fattree import xgft_params
from dlscale.perfmodel.network.linkload import StepLoad

__all__ = ["applies", "tree_steps"]

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
    if isinstance(topology, FatTree):
        m, w = (np.array(x, dtype=np.int64) for x in xgft_params(topology, nodes))
    else:
        m, w = np.array([nodes], dtype=np.int64), np.ones(1, dtype=np.int64)
    load, hops, inter, recv, depth = _kernel()(nodes * ranks_per_node, ranks_per_node,
                                               device_links, m, w, segments)
    names = ["intra", "host", *[f"L{i - 1}-L{i}" for i in range(2, len(m) + 1)]]
    steps = []
    for r in range(2):
        for j in range(load.shape[1]):
            lv = {nm: float(load[r, j, k]) for k, nm in enumerate(names)
                  if load[r, j, k] > 0 and (k or device_links)}
            steps.append(StepLoad(lv, int(hops[r, j]), bool(inter[r, j]), float(recv[r, j])))
    return steps, int(depth)


def _kernel() -> Callable[..., Any]:
    """:func:`_count` compiled by numba (from its cache on disk), once per process: its
    helpers first, put in its globals, where the compiled count finds them."""
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        space = globals()
        for helper in ("_trees", "_window_max", "_by_coord"):
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
        lower[p - 2 + r], upper[p - 2 + r] = (r + 1) % p, (parent[r] + 1) % p
        dd[r - 1] = dd[p - 2 + r] = depth[r]
    return lower, upper, dd


def _window_max(order: np.ndarray, start: np.ndarray, keys: np.ndarray, on: np.ndarray,
                K: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per window, the most messages (those ``on``) one key takes among those of
    coordinate ``lo <= c <= hi``: the windows slide (``lo`` and ``hi`` never fall), so
    each message enters and leaves once, and a histogram of the keys' counts keeps the
    largest (``order``: the messages by coordinate, ``start[c]`` where ``c``'s begin)."""
    cnt = np.zeros(K, np.int64)
    hist = np.zeros(len(order) + 2, np.int64)
    out = np.zeros(len(lo), np.int64)
    top, c_lo, c_hi = 0, 0, -1
    for j in range(len(lo)):
        while c_hi < hi[j]:
            c_hi += 1
            for x in range(start[c_hi], start[c_hi + 1]):
                f = order[x]
                if on[f]:
                    n = cnt[keys[f]]
                    hist[n] -= 1
                    hist[n + 1] += 1
                    cnt[keys[f]] = n + 1
                    top = max(top, n + 1)
        while c_lo < lo[j]:
            for x in range(start[c_lo], start[c_lo + 1]):
                f = order[x]
                if on[f]:
                    n = cnt[keys[f]]
                    hist[n] -= 1
                    hist[n - 1] += 1
                    cnt[keys[f]] = n - 1
                    if n == top and hist[n] == 0:
                        top = n - 1
            c_lo += 1
        out[j] = top
    return out


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


def _count(p: int, rpn: int, dev: bool, m: np.ndarray, w: np.ndarray,
           segments: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Per direction (reduce, broadcast) and step: each level's load (intra, host, switch
    levels), hops, whether a message leaves its node, the most a rank receives; and D."""
    lower, upper, dd = _trees(p)
    D = dd.max()
    k = max(segments, 1)
    S = k + D - 1 if segments else 1
    lo, hi = np.zeros(S, np.int64), np.full(S, D - 1, np.int64)
    if segments:
        for s in range(S):
            lo[s], hi[s] = max(s - k + 1, 0), min(s, D - 1)
    h = len(m)
    load = np.zeros((2, S, h + 1))
    hops, inter, recv = np.zeros((2, S), np.int64), np.zeros((2, S), np.bool_), np.zeros((2, S))
    H = (p - 1) // rpn + 1
    for r in range(2):
        src, dst = (lower, upper) if r == 0 else (upper, lower)
        coord = D - dd if r == 0 else dd - 1
        hs, hd = src // rpn, dst // rpn
        order, start = _by_coord(coord, D)
        every, zero = np.ones(len(src), np.bool_), np.zeros(len(src), np.int64)
        got = _window_max(order, start, dst, every, p, lo, hi)
        sent = _window_max(order, start, src, every, p, lo, hi) if dev else got
        out_ = hs != hd
        hout = _window_max(order, start, hs, out_, H, lo, hi)
        hin = _window_max(order, start, hd, out_, H, lo, hi)
        leave = _window_max(order, start, zero, out_, 1, lo, hi)
        # element by element, not row assignments (whose shape check numba compiles,
        # 2 s of a first run): the same values
        for j in range(S):
            recv[r, j] = got[j]
            if dev:
                load[r, j, 0] = max(sent[j], got[j])
            load[r, j, 1] = max(hout[j], hin[j])
            inter[r, j] = leave[j] > 0
        M, W, wp = 1, w[0], 1
        b = np.zeros(len(src), np.int64)
        for i in range(2, h + 1):
            M *= m[i - 2]
            b += ((hd // wp) % w[i - 1]) * W
            wp *= w[i - 1]
            W *= w[i - 1]
            up = (hs // M) != (hd // M)
            links = ((H - 1) // M + 1) * W
            reach = _window_max(order, start, zero, up, 1, lo, hi) > 0
            for j in range(S):
                if reach[j]:
                    hops[r, j] = 2 * (i - 1)
            most_up = _window_max(order, start, (hs // M) * W + b, up, links, lo, hi)
            most_down = _window_max(order, start, (hd // M) * W + b, up, links, lo, hi)
            for j in range(S):
                load[r, j, i] = max(most_up[j], most_down[j]) / w[0]
    return load, hops, inter, recv, D
