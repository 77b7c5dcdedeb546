"""The critical path of a schedule on a fat tree, walked in one compiled pass.

A plan costed on its critical path (:mod:`dlscale.perfmodel.network.plan`: recursive
doubling, binomial trees, Rabenseifner) is built message by message: each step's
loads (:func:`dlscale.perfmodel.network.linkload.step_load`), its cost classes
(:mod:`dlscale.perfmodel.network.rowclasses`), the packed rows of the walk
(:mod:`dlscale.perfmodel.network.packedflows`), then the walk itself
(:mod:`dlscale.perfmodel.network.chainwalk`). Over a scaling curve of thousands of node
counts this building is most of the cost (issue 27: the 24-byte negotiation of
Horovod at every node count, tens of milliseconds each at thousands of ranks). On a
fat tree or a crossbar (ranks placed block-wise, D-mod-k up-ports) a message's loads
follow from counters of its step by arithmetic, so :func:`fat_walk` counts the loads
of each step, prices every message from them and advances the rank clocks in one
compiled pass, without classes or packed rows: the same sums in the same order (each
link's, host's and rank's weights added in the messages' order, as ``np.bincount``
adds them), the same cost formula (:func:`dlscale.perfmodel.network.stepcost.step_s`)
and the same clock rule, so its answers are the bits of the packed walk's. It also
gives the plan's step arrays (:func:`dlscale.perfmodel.network.plan.plan_steps`) and
whether the plan keeps its flows at all (some step's messages meet different loads).
Recursive doubling is walked pair by pair (:mod:`dlscale.perfmodel.network.pairwalk`,
the same bits); :func:`message_walk` walks it message by message, its reference.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> from dlscale.perfmodel.network.plan import plan_collective
>>> from dlscale.perfmodel.network.stepcost import critical_path_s
>>> summit = get_cluster("summit")
>>> topo = summit.network.topology.without_speeds()
>>> got, steps = fat_walk(topo, 7, 6, True, "allreduce", "recursive-doubling",
...                       [summit], np.array([24.0]), np.array([0.0]))
>>> ref = plan_collective(topo, 7, 6, True, "allreduce", "recursive-doubling")
>>> bool(got[0, 0] == critical_path_s(summit, ref, 24.0, 0.0))
True
>>> bool(np.array_equal(steps.load, ref.load)), steps.levels == ref.levels
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, FatTree, Topology
from dlscale.perfmodel.machine.topologies.fattree import xgft_params
from dlscale.perfmodel.network.linkload import level_bandwidths_Bps
from dlscale.perfmodel.network.pairwalk import pair_walk, steps_of
from dlscale.perfmodel.network.plan import CollectivePlan
from dlscale.perfmodel.network.schedules import build_schedule

__all__ = ["applies", "fat_walk", "message_walk"]

_COMPILED: list[dict[str, Callable[..., Any]]] = []


def applies(topology: Topology, collective: str, algorithm: str) -> bool:
    """Whether :func:`fat_walk` prices this plan: a fat tree or crossbar (not one with
    SimGrid's cross-traffic), every rank taking part, a flat schedule (not
    ``hierarchical``, not the pipelined double binary tree).

    Parameters
    ----------
    topology : Topology
        The plans' key (:func:`dlscale.perfmodel.network.plan.plan_key`).
    collective, algorithm : str
        The collective and its algorithm.
    """
    return (type(topology) in (FatTree, Crossbar) and algorithm != "hierarchical"
            and not (collective == "allreduce" and algorithm == "double-binary-tree"))


def _tree(topology: Topology, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """XGFT ``(m, w)`` of the nodes in use; a crossbar is one level of one plane."""
    if isinstance(topology, FatTree):
        m, w = xgft_params(topology, nodes)
        return np.array(m, dtype=np.int64), np.array(w, dtype=np.int64)
    return np.array([nodes], dtype=np.int64), np.ones(1, dtype=np.int64)


def _levels(topology: Topology, h: int) -> list[str]:
    """The kernel's level columns: ``intra``, ``host``, then the tree's switch levels."""
    return ["intra", "host", *[f"L{i - 1}-L{i}" for i in range(2, h + 1)]]


def fat_walk(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
             collective: str, algorithm: str, clusters: Sequence[Cluster], n: np.ndarray,
             g: np.ndarray, inter_algorithm: str = "ring"
             ) -> tuple[np.ndarray | None, CollectivePlan]:
    """Critical paths of one plan on several machines and sizes, and its step arrays.

    Parameters
    ----------
    topology : Topology
        A fat tree or crossbar (:func:`applies`), without link speeds.
    nodes, ranks_per_node : int
        Ranks ``0..nodes * ranks_per_node - 1``, placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    collective, algorithm : str
        The collective and its algorithm.
    clusters : sequence of Cluster
        The machines pricing it (their links as the transport delivers them).
    n, g : ndarray, shape (C,)
        Cases: vector size in bytes and reduction cost per byte.
    inter_algorithm : str
        Unused by flat schedules (kept for the plans' key).

    Returns
    -------
    (ndarray or None, CollectivePlan)
        Seconds, shape ``(len(clusters), C)``, or None when no step's messages meet
        different loads (the plan keeps no flows and is priced as the sum of its
        steps); and the plan without its flows (as
        :func:`dlscale.perfmodel.network.plan.plan_steps` gives it).
    """
    p = nodes * ranks_per_node
    m, w = _tree(topology, nodes)
    names = _levels(topology, len(m))
    if collective == "allreduce" and algorithm == "recursive-doubling":
        sizes = np.ones(steps_of(p))        # pair by pair (pairwalk): the same bits
        value, load, hops, inter, recv, uneven, red = pair_walk(
            p, ranks_per_node, device_links, m, w, _kernel("_tables")(p, ranks_per_node, m, w),
            _cases(clusters, device_links, names, n, g, sizes))
    else:
        src, dst, nb, wt, at, red, sizes = _schedule(collective, algorithm, p, inter_algorithm)
        ranks = int(max(src.max(), dst.max())) + 1
        args = _cases(clusters, device_links, names, n, g, sizes)
        value, load, hops, inter, recv, uneven = _kernel("_walk")(
            src, dst, wt, nb, at, red, sizes, ranks_per_node, device_links, m, w, ranks, *args)
    plan = _plan(names, load, hops, inter, recv, red, sizes, device_links)
    if not uneven:
        return None, plan
    return value.reshape(len(clusters), len(n)), plan


def message_walk(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
                 clusters: Sequence[Cluster], n: np.ndarray, g: np.ndarray
                 ) -> tuple[np.ndarray, ...]:
    """Recursive doubling walked message by message (:func:`_walk` on
    :func:`_doubling_of`'s arrays): the reference of :func:`~dlscale.perfmodel.network.pairwalk.pair_walk`.

    Returns
    -------
    tuple of ndarray
        ``(value, load, hops, inter, recv, uneven, red)``, ``value`` of shape
        ``(len(clusters) * len(n),)`` (machine major).
    """
    p = nodes * ranks_per_node
    src, dst, nb, at, red = _doubling_of(p)
    sizes = np.ones(len(red))
    m, w = _tree(topology, nodes)
    args = _cases(clusters, device_links, _levels(topology, len(m)), n, g, sizes)
    got = _kernel("_walk")(src, dst, nb, nb, at, red, sizes, ranks_per_node, device_links,
                           m, w, p, *args)
    return (*got, red)


def _schedule(collective: str, algorithm: str, p: int, inter_algorithm: str
              ) -> tuple[np.ndarray, ...]:
    """The schedule's messages, one step after another: ranks, bytes (in units of the
    vector), the same over the step's largest message, step bounds, reduction flags
    and largest messages."""
    phases = [ph for ph in build_schedule(collective, algorithm, p, 1.0,
                                          inter_algorithm=inter_algorithm) if len(ph.nbytes)]
    if any(ph.repeat != 1 for ph in phases):
        raise ValueError(f"{algorithm}: a repeated step keeps no flows (see plan.py)")
    sizes = np.array([float(ph.nbytes.max()) for ph in phases])
    src = np.concatenate([ph.src for ph in phases]).astype(np.int64)
    dst = np.concatenate([ph.dst for ph in phases]).astype(np.int64)
    nb = np.concatenate([ph.nbytes for ph in phases])
    wt = np.concatenate([ph.nbytes / sz for ph, sz in zip(phases, sizes, strict=True)])
    at = np.cumsum([0] + [len(ph.src) for ph in phases]).astype(np.int64)
    red = np.array([ph.reduce for ph in phases], dtype=np.bool_)
    return src, dst, nb, wt, at, red, sizes


def _doubling_of(p: int) -> tuple[np.ndarray, ...]:
    """:func:`_doubling`'s messages of ``p`` ranks, in buffers kept for the next node
    count (a curve's counts ask ever more messages: fresh arrays of megabytes each time
    cost more than filling them), and their bytes (one vector each: read-only ones)."""
    pp = 1 << (p.bit_length() - 1)
    F = 2 * (p - pp) + (pp.bit_length() - 1) * pp
    if len(_BUFFERS[0]) < F:
        _BUFFERS[:] = [np.empty(F, np.int64), np.empty(F, np.int64), np.ones(F)]
        _BUFFERS[2].flags.writeable = False
    src, dst, ones = (b[:F] for b in _BUFFERS)
    at, red = _kernel("_doubling")(p, src, dst)       # build_schedule's, compiled
    return src, dst, ones, at, red


#: The buffers of :func:`_doubling_of`: senders, receivers, ones.
_BUFFERS: list[np.ndarray] = [np.empty(0, np.int64), np.empty(0, np.int64), np.ones(0)]


def _doubling(p: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Recursive doubling's messages as :func:`dlscale.perfmodel.network.schedules.build_schedule`
    gives them (MPICH's: the first ``2 r`` ranks fold pairwise onto the odd ones, the
    ``2^k`` core ranks exchange at distances 1, 2, 4, ..., the folded ranks get the
    result back; every message one vector): ranks (written into ``src`` and ``dst``,
    ``2 r + steps * 2^k`` of them), step bounds, reduction flags."""
    pp = 1
    while pp * 2 <= p:
        pp *= 2
    r = p - pp
    steps = 0
    while (1 << steps) < pp:
        steps += 1
    S = steps + (2 if r else 0)
    at, red = np.zeros(S + 1, np.int64), np.ones(S, np.bool_)
    core = np.empty(pp, np.int64)
    for i in range(pp):
        core[i] = 2 * i + 1 if i < r else i + r
    f, s = 0, 0
    if r:
        for i in range(r):
            src[f], dst[f] = 2 * i, 2 * i + 1
            f += 1
        s += 1
        at[s] = f
    for k in range(steps):
        for i in range(pp):
            src[f], dst[f] = core[i], core[i ^ (1 << k)]
            f += 1
        s += 1
        at[s] = f
    if r:
        for i in range(r):
            src[f], dst[f] = 2 * i + 1, 2 * i
            f += 1
        red[S - 1] = False
        at[S] = f
    return at, red


def _cases(clusters: Sequence[Cluster], device_links: bool, names: list[str], n: np.ndarray,
           g: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per case (machine major, then size): the figures :func:`_walk` prices with."""
    C = len(n)
    lat0, nic, hop, betas, fl, fb = [], [], [], [], [], []
    for c in clusters:
        bw = level_bandwidths_Bps(c)
        node = c.node
        lat0 += [node.intra_link.latency_s if device_links else 0.0] * C
        nic += [node.nic.latency_s] * C
        hop += [c.network.hop_latency_s] * C
        betas += [[1.0 / bw[lvl] if lvl in bw else 0.0 for lvl in names]] * C
        f = c.network.message_factors
        if f is None:
            fl.append(np.ones((C, len(sizes))))
            fb.append(np.ones((C, len(sizes))))
        else:
            a, b = f.at(n[:, None] * sizes[None, :])
            fl.append(np.asarray(a, dtype=float))
            fb.append(np.asarray(b, dtype=float))
    plain = np.array([c.network.message_factors is None for c in clusters for _ in range(C)])
    nn = np.tile(np.asarray(n, dtype=float), len(clusters))
    kk = np.tile(np.asarray(g, dtype=float) * np.asarray(n, dtype=float), len(clusters))
    return (np.array(lat0), np.array(nic), np.array(hop), np.array(betas).reshape(-1, len(names)),
            nn, np.concatenate(fl), np.concatenate(fb), plain, kk)


def _plan(names: list[str], load: np.ndarray, hops: np.ndarray, inter: np.ndarray,
          recv: np.ndarray, red: np.ndarray, sizes: np.ndarray,
          device_links: bool) -> CollectivePlan:
    """The step arrays as :func:`dlscale.perfmodel.network.plan._assemble` builds them."""
    levels = tuple(sorted(nm for k, nm in enumerate(names) if (load[:, k] > 0).any()))
    cols = [names.index(lvl) for lvl in levels]
    arr = np.zeros((len(sizes), len(levels)))
    for i in range(len(sizes)):
        for j, k in enumerate(cols):
            arr[i, j] = load[i, k] * sizes[i]
    return CollectivePlan(
        levels, arr, np.ones(len(sizes)), inter.astype(bool), hops.astype(np.int64),
        np.array([recv[i] * sizes[i] if red[i] else 0.0 for i in range(len(sizes))]),
        device_links, 0, size=sizes.astype(float))


def _kernel(name: str) -> Callable[..., Any]:
    """:func:`_walk` or :func:`_doubling` compiled by numba (from its cache on disk), once
    per process: the walk's helpers first, put in its globals, where the compiled walk
    finds them."""
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        space = globals()
        for helper in ("_tables", "_count", "_step"):
            space[helper] = njit()(space[helper])
        _COMPILED.append({nm: njit()(space[nm]) for nm in ("_walk", "_doubling")})
        _COMPILED[0]["_tables"] = space["_tables"]
    return _COMPILED[0][name]


def _walk(src: np.ndarray, dst: np.ndarray, wt: np.ndarray, nb: np.ndarray, at: np.ndarray,
          red: np.ndarray, size: np.ndarray, rpn: int, dev: bool, m: np.ndarray, w: np.ndarray,
          p: int, lat0: np.ndarray, nic: np.ndarray, hop: np.ndarray, betas: np.ndarray,
          nn: np.ndarray, fl: np.ndarray, fb: np.ndarray, plain: np.ndarray,
          kk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                   bool]:
    """Every step: its counters (:func:`_count`), then each message's loads
    (:func:`_step`), its cost per case and the clocks (as ``chainwalk._chains``); the
    step arrays and unevenness."""
    S, B, h = len(at) - 1, len(nn), len(m)
    K = h + 1
    host, grp, base, bsel, links = _tables(p, rpn, m, w)
    cnt = np.zeros((5, p))                  # rank out, rank in, recv raw; host out, in
    clock, new = np.zeros((p, B)), np.zeros((p, B))     # rank-major: a message's cases together
    load, first = np.zeros((S, K)), np.zeros(K + 3)
    hops, inter, recv = np.zeros(S, np.int64), np.zeros(S, np.bool_), np.zeros(S)
    row, uneven = np.zeros(K + 3), False
    for s in range(S):
        _count(src, dst, wt, nb, at[s], at[s + 1], w[0], h, host, grp, base, bsel, cnt, links)
        for r in range(p):                  # new[:, :] = clock, without its shape check
            for b in range(B):
                new[r, b] = clock[r, b]
        uneven = _step(src, dst, at[s], at[s + 1], dev, h, host, grp, base, bsel, cnt, links,
                       row, first, load[s], hops[s:s + 1], inter[s:s + 1], lat0, nic, hop, betas,
                       size[s], nn, fl[:, s], fb[:, s], plain, clock, new) or uneven
        recv[s] = cnt[1].max()
        if red[s]:
            for b in range(B):
                for r in range(p):
                    new[r, b] = new[r, b] + kk[b] * cnt[2, r]
        clock, new = new, clock
        cnt[:, :] = 0.0
        links[:, :] = 0.0
    value = np.zeros(B)
    for b in range(B):
        value[b] = clock[:, b].max()
    return value, load, hops, inter, recv, uneven


def _tables(p: int, rpn: int, m: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per rank its host; per level ``i`` (2..h) and host: its level-``(i-1)`` element
    (``grp``), the first of that element's up links in the flat link table (``base``),
    and, as a destination, its D-mod-k choice among them (``bsel``,
    :func:`dlscale.perfmodel.machine.topologies.fattree.dmodk_choice`); the link table
    (up, down)."""
    h = len(m)
    H = (p - 1) // rpn + 1
    host = np.arange(p) // rpn
    grp = np.zeros((h + 1, H), np.int64)
    base = np.zeros((h + 1, H), np.int64)
    bsel = np.zeros((h + 1, H), np.int64)
    hs = np.arange(H)
    M, W, wp, top = 1, w[0], 1, 0
    for i in range(2, h + 1):
        M *= m[i - 2]                       # hosts under a level-(i-1) element
        for x in range(H):                  # element by element: no array assignment,
            grp[i, x] = hs[x] // M          # whose shape check numba compiles (1.9 s)
            bsel[i, x] = bsel[i - 1, x] + ((hs[x] // wp) % w[i - 1]) * W
        wp *= w[i - 1]
        W *= w[i - 1]                       # prod(w[:i])
        for x in range(H):
            base[i, x] = top + grp[i, x] * W
        top += ((H - 1) // M + 1) * W
    return host, grp, base, bsel, np.zeros((2, top + 1))


def _count(src: np.ndarray, dst: np.ndarray, wt: np.ndarray, nb: np.ndarray, f0: int,
           f1: int, rails: int, h: int, host: np.ndarray, grp: np.ndarray, base: np.ndarray,
           bsel: np.ndarray, cnt: np.ndarray, links: np.ndarray) -> None:
    """One step's counters, each added in the messages' order: a rank's bytes out and
    in (moving messages), its bytes received (every message, for the reduction), a
    host's bytes out and in (messages leaving their node), and each up and down link's
    share of its plane (D-mod-k)."""
    for f in range(f0, f1):
        a, d = src[f], dst[f]
        cnt[2, d] += nb[f]
        if a == d:
            continue
        cnt[0, a] += wt[f]
        cnt[1, d] += wt[f]
        hs, hd = host[a], host[d]
        if hs == hd:
            continue
        cnt[3, hs] += wt[f]
        cnt[4, hd] += wt[f]
        share = wt[f] / rails
        for i in range(2, h + 1):
            if grp[i, hs] == grp[i, hd]:
                break
            links[0, base[i, hs] + bsel[i, hd]] += share
            links[1, base[i, hd] + bsel[i, hd]] += share


def _step(src: np.ndarray, dst: np.ndarray, f0: int, f1: int, dev: bool, h: int,
          host: np.ndarray, grp: np.ndarray, base: np.ndarray, bsel: np.ndarray,
          cnt: np.ndarray, links: np.ndarray, row: np.ndarray, first: np.ndarray,
          load: np.ndarray, hops: np.ndarray, inter: np.ndarray, lat0: np.ndarray, nic: np.ndarray,
          hop: np.ndarray, betas: np.ndarray, size: float, nn: np.ndarray, fl: np.ndarray,
          fb: np.ndarray, plain: np.ndarray, clock: np.ndarray, new: np.ndarray) -> bool:
    """One step's messages: each one's loads into ``row`` (intra, host, switch levels, 0
    where it does not cross; then hops, whether it leaves its node, whether it moves),
    the step's maxima, its cost per case and the clocks; whether they differ."""
    K, B = h + 1, len(nn)
    uneven = False
    prev, costs = np.zeros(K + 3), np.zeros(B)
    for f in range(f0, f1):
        a, d = src[f], dst[f]
        for k in range(K + 3):
            row[k] = 0.0
        hs, hd = host[a], host[d]
        if a != d:
            row[K + 2] = 1.0
            if dev:
                row[0] = max(cnt[0, a], cnt[1, d])
            if hs != hd:
                row[K + 1] = 1.0
                row[1] = max(cnt[3, hs], cnt[4, hd])
                for i in range(2, h + 1):
                    if grp[i, hs] == grp[i, hd]:
                        break
                    row[K] = 2 * (i - 1)
                    row[i] = max(links[0, base[i, hs] + bsel[i, hd]],
                                 links[1, base[i, hd] + bsel[i, hd]])
        for k in range(K):
            load[k] = max(load[k], row[k])
        hp = int(row[K])
        hops[0] = max(hops[0], hp)
        inter[0] = inter[0] or row[K + 1] > 0
        for k in range(K + 3):
            if f == f0:
                first[k] = row[k]
            uneven = uneven or row[k] != first[k]
        same = f > f0                       # the message before's row: its costs
        for k in range(K + 3):
            same = same and row[k] == prev[k]
        if not same:
            for k in range(K + 3):
                prev[k] = row[k]
            for b in range(B):
                costs[b] = 0.0
                if row[K + 2] > 0:
                    lat = lat0[b] + (nic[b] if row[K + 1] > 0 else 0.0) + hp * hop[b]
                    busy = 0.0
                    for k in range(K):
                        busy = max(busy, row[k] * size * betas[b, k])
                    if plain[b]:
                        costs[b] = lat + nn[b] * busy
                    else:
                        costs[b] = fl[b] * lat + nn[b] * busy / fb[b]
        for b in range(B):
            t = max(clock[a, b], clock[d, b])
            arrive = t + costs[b]
            new[a, b] = max(new[a, b], arrive)
            new[d, b] = max(new[d, b], arrive)
    return uneven
