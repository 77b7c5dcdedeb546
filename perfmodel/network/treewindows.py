"""The steps of the pipelined double binary tree on a fat tree, by depth windows.

A pipeline of ``k`` segments through the two trees of depth ``D``
(:func:`.schedules.build_schedule`, ``double-binary-tree``) runs ``k + D - 1`` steps
per direction; at step ``s`` the edges whose children sit at the depths of one
window carry one segment each. Every message of the pipeline has the same size, so
a link's load in a step is the number of the step's messages it carries, times
``1 / rails`` on the switch levels: counted per depth once (a matrix depth x link) and
summed over each step's window by a cumulative sum, instead of every step's
messages routed anew (:func:`.linkload.step_load`). The counts are integers and
``1 / rails`` a power of two here (:func:`windowed`: otherwise None), so the sums are
exact and the loads, hops and receives the very ones :func:`.linkload.step_load`
gives.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import FatTree
>>> from dlscale.perfmodel.network.linkload import step_load
>>> tree = FatTree(2, 4, ((4, 2),), 16)
>>> steps = windowed(tree, 16, 2, True, np.arange(32), 3)
>>> len(steps), sorted(steps[0][0].load)
(14, ['L1-L2', 'host', 'intra'])
"""

from __future__ import annotations

import math

import numpy as np

from dlscale.perfmodel.machine.hardware import Crossbar, FatTree, Topology
from dlscale.perfmodel.machine.topologies.fattree import dmodk_choice, xgft_params
from dlscale.perfmodel.network.linkload import StepLoad
from dlscale.perfmodel.network.schedules import _two_trees

__all__ = ["windowed"]


def _window_max(coord: np.ndarray, keys: np.ndarray, D: int, lo: np.ndarray,
                hi: np.ndarray) -> np.ndarray:
    """Per step, the most messages one key (link, rank, node) takes: messages of
    coordinate ``c`` with ``lo[s] <= c <= hi[s]``, counted per key. Keys whose counts
    per depth are the same count the same in every window: each such class once."""
    if not len(keys):
        return np.zeros(len(lo), dtype=np.int64)
    top = int(keys.max())
    if top < 4 * len(keys) + (1 << 16):
        inv, K = keys, top + 1
    else:
        _, inv = np.unique(keys, return_inverse=True)
        K = int(inv.max()) + 1
    per = np.bincount(coord * K + inv, minlength=D * K).reshape(D, K)
    bits = max(int(per.max()).bit_length(), 1)
    if bits * D <= 62:                  # each key's counts per depth, packed exactly
        code = np.zeros(K, dtype=np.int64)
        for d in range(D):
            code = (code << bits) | per[d]
        _, first = np.unique(code, return_index=True)
        per = per[:, first]
    cum = np.concatenate([np.zeros((1, per.shape[1]), dtype=np.int64),
                          np.cumsum(per, axis=0)])
    return np.asarray((cum[hi + 1] - cum[lo]).max(axis=1))


def _window_any(coord: np.ndarray, D: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per step, whether any message of the mask's coordinates is in its window."""
    cum = np.concatenate([[0], np.cumsum(np.bincount(coord, minlength=D))])
    return np.asarray(cum[hi + 1] - cum[lo] > 0)


def _direction(tree: FatTree | Crossbar, nodes: int, rpn: int, dev: bool, src: np.ndarray,
               dst: np.ndarray, coord: np.ndarray, D: int, lo: np.ndarray,
               hi: np.ndarray) -> list[StepLoad]:
    """The step loads of one direction (messages ``src -> dst`` at ``coord``)."""
    S = len(lo)
    load: dict[str, np.ndarray] = {}
    moves = src != dst
    s, d, c = src[moves], dst[moves], coord[moves]
    recv = _window_max(c, d, D, lo, hi)
    if dev:
        load["intra"] = np.maximum(_window_max(c, s, D, lo, hi), recv).astype(float)
    hs, hd = s // rpn, d // rpn
    inter = hs != hd
    hs, hd, c = hs[inter], hd[inter], c[inter]
    any_inter = _window_any(c, D, lo, hi)
    load["host"] = np.maximum(_window_max(c, hs, D, lo, hi),
                              _window_max(c, hd, D, lo, hi)).astype(float)
    hops = np.zeros(S, dtype=np.int64)
    if isinstance(tree, FatTree):
        m, w = xgft_params(tree, nodes)
        M = 1
        for i in range(2, len(m) + 1):
            M *= m[i - 2]
            up = hs // M != hd // M
            reach = _window_any(c[up], D, lo, hi)
            hops = np.where(reach, 2 * (i - 1), hops)
            b = dmodk_choice(hd[up], w, i)
            Wi = math.prod(w[:i])
            most = np.maximum(_window_max(c[up], (hs[up] // M) * Wi + b, D, lo, hi),
                              _window_max(c[up], (hd[up] // M) * Wi + b, D, lo, hi))
            load[f"L{i - 1}-L{i}"] = most / w[0]
    out = []
    for j in range(S):
        step = {lvl: float(v[j]) for lvl, v in load.items() if v[j] > 0}
        out.append(StepLoad(step, int(hops[j]), bool(any_inter[j]), float(recv[j])))
    return out


def windowed(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
             ids: np.ndarray, segments: int) -> list[tuple[StepLoad, bool, float]] | None:
    """The pipeline's steps (reduce steps, then broadcast steps), each as its loads,
    whether it reduces and its message size in units of the vector; None where this
    does not apply (not a fat tree or a crossbar, rails not a power of two).

    Parameters
    ----------
    topology : Topology
        The network's topology.
    nodes, ranks_per_node : int
        Ranks placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    ids : ndarray of int
        The rank id of each of the collective's ranks.
    segments : int
        Pipeline segments ``k``.
    """
    if not isinstance(topology, (FatTree, Crossbar)):
        return None
    rails = topology.rails if isinstance(topology, FatTree) else 1
    p = len(ids)
    if rails & (rails - 1) or p < 2:
        return None
    trees, depth = _two_trees(p)
    child = np.flatnonzero(trees[0][1] >= 0)
    D = int(depth.max())
    k = max(1, int(segments))
    lower = np.concatenate([ids[node_of[child]] for node_of, _ in trees])
    upper = np.concatenate([ids[par[child]] for _, par in trees])
    dd = np.concatenate([depth[child]] * 2)
    steps = np.arange(k + D - 1)
    lo, hi = np.maximum(steps - k + 1, 0), np.minimum(steps, D - 1)
    chunk = 1.0 / 2 / k
    red = _direction(topology, nodes, ranks_per_node, device_links, lower, upper, D - dd, D,
                     lo, hi)
    bc = _direction(topology, nodes, ranks_per_node, device_links, upper, lower, dd - 1, D,
                    lo, hi)
    return [(s, True, chunk) for s in red] + [(s, False, chunk) for s in bc]
