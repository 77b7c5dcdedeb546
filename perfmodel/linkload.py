"""How many of a step's concurrent flows load each level of a topology.

A step of a collective is a set of flows ``src[i] -> dst[i]`` of ``weight[i]`` bytes
between ranks placed linearly (rank ``q`` on node ``q // r``, ``r`` ranks per node,
MPI's block mapping). This module counts, by arithmetic on the placement and on
each family's deterministic routing (no graph is built), the bytes every link of a
level carries in the step, and returns, per level, the most loaded link's bytes
over that link's share of the level's capacity. The step then takes
``max_level(load_level / bandwidth_level)``: the time its most loaded link needs,
as in a max-min fair network where every flow of the step shares its bottleneck.
The same routing rules drive the routed simulation
(:mod:`dlscale.simulator.topology.routing`), which imports the choice functions from here.

Levels, and the bandwidth a level's load is divided by:

``intra``
    a device's link to its node's NIC/switch (``node.intra_link``), where a node has
    more than one device; every flow of the device crosses it, on both ends.
``host``
    the node's injection link (``node.nic``, all rails together).
fat tree ``L1-L2``, ``L2-L3``, ...
    switch-to-switch links (``network.link``), per rail plane; up-ports chosen by
    destination (D-mod-k, Zahavi 2010), so all flows to one node share a path.
dragonfly ``local`` and ``global``
    router-to-router links of a group and between groups (parallel global links
    between the same two routers form one link of summed bandwidth); minimal
    routing (local, global, local hop), parallel links of a group pair chosen by a
    hash of the endpoints. Valiant routing is counted by its expectation: every
    inter-group flow crosses two global links, spread evenly over the links of its
    source and destination groups (the simulation draws the intermediate groups, so
    its most loaded link is above this mean: see the docs).
torus ``torus``
    dimension-order routing, the shorter way round each ring (ties: ``+``); a ring of
    two routers has its two links as one of double bandwidth.

Examples
--------
Two nodes of four ranks on one switch, every rank sending 1 byte to the next rank
(a ring step): each device link and each NIC carries one flow.

>>> from dlscale.perfmodel.hardware import Crossbar
>>> q = np.arange(8)
>>> s = step_load(Crossbar(2), 2, 4, True, q, (q + 1) % 8, np.ones(8))
>>> s.load, s.hops, s.inter
({'intra': 1.0, 'host': 1.0}, 0, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .hardware import Cluster, Crossbar, Dragonfly, FatTree, Topology, Torus

__all__ = ["StepLoad", "dmodk_choice", "dragonfly_parallel_link", "level_bandwidths_Bps",
           "step_load", "xgft_params"]


@dataclass(frozen=True)
class StepLoad:
    """Link loads of one step (see module docstring).

    Attributes
    ----------
    load : dict of str to float
        Per level, the most loaded link's bytes divided by its capacity relative to
        the level's bandwidth (so ``load / bandwidth_level`` is seconds).
    hops : int
        Most switch-to-switch hops of any flow of the step.
    inter : bool
        Whether any flow leaves its node (crosses the NIC).
    recv : float
        Most bytes any rank receives in the step.
    """

    load: dict[str, float]
    hops: int
    inter: bool
    recv: float


def xgft_params(tree: FatTree, nodes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XGFT ``(m, w)`` of the first ``nodes`` nodes of a :class:`FatTree`.

    ``m[i]``: children of a level-``i+1`` switch; ``w[i]``: parents of a level-``i``
    element (``w[0]``: rails). Levels above the lowest subtree that holds all nodes
    are dropped.

    Examples
    --------
    >>> xgft_params(FatTree(2, 28, ((28, 20),), 6000), 100)
    ((28, 4), (1, 20))
    >>> xgft_params(FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2), 4608)
    ((18, 18, 15), (2, 18, 18))
    """
    m = [tree.nodes_per_leaf] + [tree.down_up[i][0] for i in range(1, tree.levels - 1)]
    w = [tree.rails] + [tree.down_up[i][1] for i in range(tree.levels - 1)]
    h = tree.levels
    while h > 1 and nodes <= math.prod(m[: h - 1]):
        h -= 1
    m = m[: h - 1]
    m.append(-(-nodes // math.prod(m)) if m else nodes)
    return tuple(m), tuple(w[:h])


def dmodk_choice(dst: np.ndarray, w: tuple[int, ...], level: int) -> np.ndarray:
    """Index, among the parents, of the level-``level`` switch a flow to ``dst`` climbs to.

    D-mod-k (Zahavi 2010): ``B_1`` is the rail, ``B_i = B_{i-1} + ((dst // prod(w[1:i-1]))
    mod w[i-1]) prod(w[:i-1])``; this returns ``B_level`` for rail 0.

    Examples
    --------
    >>> dmodk_choice(np.arange(6), (1, 3, 2), 3).tolist()
    [0, 1, 2, 3, 4, 5]
    """
    b = np.zeros_like(dst)
    wp, W = 1, w[0]
    for i in range(2, level + 1):
        b = b + ((dst // wp) % w[i - 1]) * W
        wp *= w[i - 1]
        W *= w[i - 1]
    return b


def dragonfly_parallel_link(src_host: np.ndarray, dst_host: np.ndarray,
                            links_per_pair: int) -> np.ndarray:
    """Which of the parallel global links of a group pair a flow takes (a hash).

    Examples
    --------
    >>> dragonfly_parallel_link(np.array([0, 1]), np.array([5, 5]), 4).tolist()
    [1, 0]
    """
    return np.asarray((src_host * 7919 + dst_host) % max(links_per_pair, 1))


def _max_by(keys: np.ndarray, weight: np.ndarray) -> float:
    if len(keys) == 0:
        return 0.0
    _, inv = np.unique(keys, return_inverse=True)
    return float(np.bincount(inv, weights=weight).max())


def _fat_tree(tree: FatTree | Crossbar, nodes: int, hs: np.ndarray, hd: np.ndarray,
              wt: np.ndarray) -> tuple[dict[str, float], int]:
    if isinstance(tree, Crossbar):
        return {}, 0
    m, w = xgft_params(tree, nodes)
    rails = w[0]
    load: dict[str, float] = {}
    hops = 0
    M = 1
    for i in range(2, len(m) + 1):
        M *= m[i - 2]                       # hosts under a level-(i-1) element
        up = hs // M != hd // M
        if not up.any():
            break
        hops = 2 * (i - 1)
        b = dmodk_choice(hd[up], w, i)
        Wi = math.prod(w[:i])
        share = wt[up] / rails
        load[f"L{i - 1}-L{i}"] = max(_max_by((hs[up] // M) * Wi + b, share),
                                     _max_by((hd[up] // M) * Wi + b, share))
    return load, hops


def _dragonfly(topo: Dragonfly, hs: np.ndarray, hd: np.ndarray,
               wt: np.ndarray) -> tuple[dict[str, float], int]:
    g, a = topo.groups, topo.routers_per_group
    p, h = topo.terminals_per_router, topo.global_links_per_router
    lpp = (a * h) // (g - 1) if g > 1 else 0
    rs, rd = hs // p, hd // p
    gs, gd = rs // a, rd // a
    R = g * a
    load: dict[str, float] = {}
    same = gs == gd
    loc_u, loc_v, loc_w = [rs[same]], [rd[same]], [wt[same]]
    hops = 1 if np.any(same & (rs != rd)) else 0
    other = ~same
    if other.any() and topo.routing == "valiant" and g >= 3:
        # expectation of Valiant's two global hops: spread over the source group's and
        # the destination group's global links
        out = np.bincount(gs[other], weights=wt[other], minlength=g)
        inn = np.bincount(gd[other], weights=wt[other], minlength=g)
        load["global"] = float((out + inn).max()) / (a * h)
        load["local"] = float(max(out.max(), inn.max())) / (a - 1 if a > 1 else 1) \
            if a > 1 else 0.0
        return load, 5
    if other.any():
        s, t, x, y = hs[other], hd[other], gs[other], gd[other]
        c = dragonfly_parallel_link(s, t, lpp)
        ka = ((y - x) % g - 1) * lpp + c
        kb = ((x - y) % g - 1) * lpp + c
        ra, rb = x * a + ka // h, y * a + kb // h
        mult = np.zeros(len(s))
        for cc in range(lpp):                      # parallel links joining ra and rb
            ja = ((y - x) % g - 1) * lpp + cc
            jb = ((x - y) % g - 1) * lpp + cc
            mult += (x * a + ja // h == ra) & (y * a + jb // h == rb)
        load["global"] = _max_by(ra * R + rb, wt[other] / mult)
        loc_u += [rs[other], rb]
        loc_v += [ra, rd[other]]
        loc_w += [wt[other], wt[other]]
        hops = 1 + int(np.any(rs[other] != ra)) + int(np.any(rb != rd[other]))
    u, v, ww = np.concatenate(loc_u), np.concatenate(loc_v), np.concatenate(loc_w)
    moved = u != v
    if moved.any():
        load["local"] = _max_by(u[moved] * R + v[moved], ww[moved])
    return load, hops


def _torus(topo: Torus, hs: np.ndarray, hd: np.ndarray,
           wt: np.ndarray) -> tuple[dict[str, float], int]:
    dims = topo.dims
    strides = np.cumprod((1, *dims[:-1]))
    cs = [(hs // st) % d for st, d in zip(strides, dims, strict=True)]
    cd = [(hd // st) % d for st, d in zip(strides, dims, strict=True)]
    worst = 0.0
    hops = np.zeros(len(hs), dtype=np.int64)
    for k, d in enumerate(dims):
        if d < 2:
            continue
        delta = (cd[k] - cs[k]) % d
        fwd = delta <= d // 2
        steps = np.where(fwd, delta, d - delta)
        hops += steps
        move = steps > 0
        if not move.any():
            continue
        # the ring a flow moves along: the other coordinates (dims < k already at the
        # destination's, dims > k still at the source's)
        ring = sum((cd[j] if j < k else cs[j]) * strides[j] for j in range(len(dims)) if j != k)
        mult = 2.0 if d == 2 else 1.0
        for forward in (True, False):
            sel = move & (fwd == forward)
            if not sel.any():
                continue
            # links "c -> c+1" (forward) or "c -> c-1" (backward) indexed by c; a flow
            # from c0 covers c0, c0+-1, ..., steps links; difference array per ring
            start = np.where(forward, cs[k][sel], (cs[k][sel] - steps[sel] + 1) % d)
            n = steps[sel]
            # ring ids are sparse (router ids with coordinate k zeroed): compress them
            rid = np.asarray(ring)[sel] if np.ndim(ring) else np.full(n.shape, ring)
            _, rid = np.unique(rid, return_inverse=True)
            rings = int(rid.max()) + 1
            diff = np.zeros((rings, d + 1))
            end = start + n
            wrap = end > d
            ws = wt[sel]
            np.add.at(diff, (rid, start), ws)
            np.add.at(diff, (rid, np.minimum(end, d)), -ws)
            np.add.at(diff, (rid[wrap], 0), ws[wrap])
            np.add.at(diff, (rid[wrap], end[wrap] - d), -ws[wrap])
            per = np.cumsum(diff[:, :d], axis=1)
            worst = max(worst, float(per.max()) / mult)
    load = {"torus": worst} if worst > 0 else {}
    return load, int(hops.max(initial=0))


def step_load(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
              src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> StepLoad:
    """Per-level loads of one step's flows (see the module docstring).

    Parameters
    ----------
    topology : Topology
        The network's topology description.
    nodes : int
        Nodes in use (the first ``nodes`` of the machine).
    ranks_per_node : int
        Ranks per node, placed block-wise.
    device_links : bool
        Whether ranks sit behind a device link (nodes with several devices).
    src, dst : ndarray of int
        Ranks of each flow.
    weight : ndarray of float
        Bytes of each flow (any unit: the loads come out in the same unit).

    Returns
    -------
    StepLoad
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    wt = np.asarray(weight, dtype=float)
    moves = src != dst                      # a message to oneself moves nothing
    src, dst, wt = src[moves], dst[moves], wt[moves]
    load: dict[str, float] = {}
    if len(src) == 0:
        return StepLoad(load, 0, False, 0.0)
    if device_links:
        load["intra"] = max(float(np.bincount(src, weights=wt).max()),
                            float(np.bincount(dst, weights=wt).max()))
    recv = float(np.bincount(dst, weights=wt).max())
    hs, hd = src // ranks_per_node, dst // ranks_per_node
    inter = hs != hd
    hops = 0
    if inter.any():
        hs, hd, wi = hs[inter], hd[inter], wt[inter]
        load["host"] = max(float(np.bincount(hs, weights=wi).max()),
                           float(np.bincount(hd, weights=wi).max()))
        if isinstance(topology, (FatTree, Crossbar)):
            net, hops = _fat_tree(topology, nodes, hs, hd, wi)
        elif isinstance(topology, Dragonfly):
            net, hops = _dragonfly(topology, hs, hd, wi)
        elif isinstance(topology, Torus):
            net, hops = _torus(topology, hs, hd, wi)
        else:
            raise TypeError(f"topology: unsupported {type(topology).__name__}")
        load.update(net)
    return StepLoad(load, hops, bool(inter.any()), recv)


def level_bandwidths_Bps(cluster: Cluster) -> dict[str, float]:
    """Bandwidth per direction of one link of each level of ``cluster`` (see above).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> bw = level_bandwidths_Bps(get_cluster("summit"))
    >>> bw["host"] / 1e9, bw["L1-L2"] / 1e9
    (23.0, 12.5)
    """
    topo = cluster.network.topology
    link = cluster.network.link.bandwidth_Bps
    bw = {"intra": cluster.node.intra_link.bandwidth_Bps,
          "host": cluster.node.nic.bandwidth_Bps}
    if isinstance(topo, FatTree):
        for i in range(2, topo.levels + 1):
            bw[f"L{i - 1}-L{i}"] = link
    elif isinstance(topo, Dragonfly):
        bw["local"] = topo.local_bandwidth_Bps or link
        bw["global"] = topo.global_bandwidth_Bps or link
    elif isinstance(topo, Torus):
        bw["torus"] = link
    return bw
