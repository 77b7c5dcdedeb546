"""Recursive doubling's critical path on a fat tree, walked pair by pair.

:func:`dlscale.perfmodel.network.fatwalk.fat_walk` walks any flat schedule message by
message from arrays of its senders and receivers. Recursive doubling (Horovod's
negotiation at every node count of a curve: most of a 4,608-count curve, issue 27) has
more structure, which :func:`pair_walk` uses without changing one sum:

- its messages are generated where they are walked (MPICH's order, as
  :func:`dlscale.perfmodel.network.fatwalk._doubling` writes them), not kept in arrays;
- in every step each rank sends at most one message and receives at most one (one
  vector each), so a rank's bytes out, in and received are 1 or 0 and its device
  link's load is 1: no rank counters are counted;
- a step's messages meet in disjoint pairs of ranks (a core pair's two messages, a
  folded rank's one), so the clocks are advanced in place, pair by pair: each rank's
  clock takes the same maxima of the same sums as the message walk's (``max`` is exact
  and commutative), and the reduction's ``+ kk * count`` is added to every rank as
  there (``kk * 0.0`` to a rank that receives nothing).

The host and link counters are added in the messages' order, the rows and costs are
the message walk's (:func:`dlscale.perfmodel.network.fatwalk._step`'s formula), so the
answers are its bits (tested on random trees, rails, ranks and cases).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> from dlscale.perfmodel.network import fatwalk
>>> summit = get_cluster("summit")
>>> topo = summit.network.topology.without_speeds()
>>> got, _ = fatwalk.fat_walk(topo, 7, 6, True, "allreduce", "recursive-doubling",
...                           [summit], np.array([24.0]), np.array([0.0]))
>>> ref = fatwalk.message_walk(topo, 7, 6, True, [summit], np.array([24.0]),
...                            np.array([0.0]))
>>> bool(got[0, 0] == ref[0][0])
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["pair_walk"]

_COMPILED: list[Callable[..., Any]] = []


def pair_walk(p: int, rpn: int, dev: bool, m: np.ndarray, w: np.ndarray,
              tables: tuple[np.ndarray, ...], cases: tuple[np.ndarray, ...]
              ) -> tuple[np.ndarray, ...]:
    """Recursive doubling's walk over ``p`` ranks (at least 2), compiled.

    Parameters
    ----------
    p, rpn : int
        Ranks, placed block-wise, ``rpn`` per node.
    dev : bool
        Ranks sit behind a device link.
    m, w : ndarray of int64
        The XGFT parameters of the nodes in use.
    tables : tuple of ndarray
        ``(host, grp, base, bsel, links)`` of :func:`dlscale.perfmodel.network.fatwalk._tables`.
    cases : tuple of ndarray
        :func:`dlscale.perfmodel.network.fatwalk._cases`'s figures (its factors for the
        ``steps`` messages of one vector).

    Returns
    -------
    tuple of ndarray
        ``(value, load, hops, inter, recv, uneven, red)``: as
        :func:`dlscale.perfmodel.network.fatwalk._walk` gives them, and the reduction flags.
    """
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        space = globals()
        for helper in ("_message", "_costs", "_count", "_rows", "_clocks"):
            space[helper] = njit()(space[helper])
        _COMPILED.append(njit()(_pairs))
    B, pp = len(cases[0]), 1 << (p.bit_length() - 1)
    if len(_WORK[0]) < 2 * p * B or len(_WORK[1]) < pp:   # kept for the next node count
        _WORK[:] = [np.empty(4 * p * B), np.empty(2 * p, np.int64)]  # (a curve's grow)
    clock = _WORK[0][:p * B].reshape(p, B)
    cost = _WORK[0][p * B:(p + pp) * B].reshape(pp, B)
    return tuple(_COMPILED[0](p, rpn, dev, m, w, *tables, *cases, clock, cost, _WORK[1][:pp]))


#: The walk's work buffers (:func:`pair_walk`): clocks, then each message's costs (every
#: one written before it is read); core ranks.
_WORK: list[np.ndarray] = [np.empty(0), np.empty(0, np.int64)]


def steps_of(p: int) -> int:
    """Recursive doubling's steps on ``p`` ranks: ``log2`` of the largest power of two
    ``pp <= p``, and the fold and unfold when ``p > pp``.

    >>> steps_of(8), steps_of(7), steps_of(2)
    (3, 4, 1)
    """
    pp = 1 << (p.bit_length() - 1)
    return pp.bit_length() - 1 + (2 if p > pp else 0)


def _pairs(p: int, rpn: int, dev: bool, m: np.ndarray, w: np.ndarray, host: np.ndarray,
           grp: np.ndarray, base: np.ndarray, bsel: np.ndarray, links: np.ndarray,
           lat0: np.ndarray, nic: np.ndarray, hop: np.ndarray, betas: np.ndarray,
           nn: np.ndarray, fl: np.ndarray, fb: np.ndarray, plain: np.ndarray,
           kk: np.ndarray, clock: np.ndarray, cost: np.ndarray, core: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray, bool, np.ndarray]:
    """The walk (module docstring): per step its host and link counters in the
    messages' order (:func:`_count`), each message's row and costs (:func:`_rows`),
    then each pair's clocks (:func:`_clocks`)."""
    pp = 1
    while pp * 2 <= p:
        pp *= 2
    r, steps = p - pp, 0
    while (1 << steps) < pp:
        steps += 1
    S, h, B = steps + (2 if r else 0), len(m), len(nn)
    for i in range(pp):
        core[i] = 2 * i + 1 if i < r else i + r
    hio = np.zeros((2, (p - 1) // rpn + 1))
    for x in range(p):                      # the buffers (pair_walk's): clocks from 0
        for b in range(B):
            clock[x, b] = 0.0
    load, red = np.zeros((S, h + 1)), np.ones(S, np.bool_)
    hops, inter, recv = np.zeros(S, np.int64), np.zeros(S, np.bool_), np.ones(S)
    uneven = False
    for s in range(S):
        kind = 1 if r > 0 and s == 0 else 2 if r > 0 and s == S - 1 else 0
        bit = 1 << (s - (1 if r else 0)) if kind == 0 else 0
        n_msg = pp if kind == 0 else r
        red[s] = kind != 2
        _count(kind, bit, n_msg, core, h, 1.0 / w[0], host, grp, base, bsel, hio, links)
        uneven = _rows(kind, bit, n_msg, core, s, dev, h, host, grp, base, bsel, hio, links,
                       load[s], hops[s:s + 1], inter[s:s + 1], lat0, nic, hop, betas, nn,
                       fl, fb, plain, cost) or uneven
        _clocks(kind, bit, n_msg, core, r, p, red[s], kk, cost, clock)
        hio[:, :] = 0.0
        links[:, :] = 0.0
    value = np.zeros(B)
    for b in range(B):
        value[b] = clock[:, b].max()
    return value, load, hops, inter, recv, uneven, red


def _message(kind: int, bit: int, f: int, core: np.ndarray) -> tuple[int, int]:
    """Message ``f`` of a step (``kind`` 0: the core's exchange at distance ``bit``, 1:
    the fold, 2: the unfold): sender, receiver."""
    if kind == 1:
        return 2 * f, 2 * f + 1
    if kind == 2:
        return 2 * f + 1, 2 * f
    return core[f], core[f ^ bit]


def _count(kind: int, bit: int, n_msg: int, core: np.ndarray, h: int, share: float,
           host: np.ndarray, grp: np.ndarray, base: np.ndarray, bsel: np.ndarray,
           hio: np.ndarray, links: np.ndarray) -> None:
    """A step's host (out, in) and link (up, down) counters, in the messages' order
    (``fatwalk._count``'s sums; a rank's own are 1)."""
    for f in range(n_msg):
        a, d = _message(kind, bit, f, core)
        hs, hd = host[a], host[d]
        if hs == hd:
            continue
        hio[0, hs] += 1.0
        hio[1, hd] += 1.0
        for i in range(2, h + 1):
            if grp[i, hs] == grp[i, hd]:
                break
            links[0, base[i, hs] + bsel[i, hd]] += share
            links[1, base[i, hd] + bsel[i, hd]] += share


def _rows(kind: int, bit: int, n_msg: int, core: np.ndarray, s: int, dev: bool, h: int,
          host: np.ndarray, grp: np.ndarray, base: np.ndarray, bsel: np.ndarray,
          hio: np.ndarray, links: np.ndarray, load: np.ndarray, hops: np.ndarray,
          inter: np.ndarray, lat0: np.ndarray, nic: np.ndarray, hop: np.ndarray,
          betas: np.ndarray, nn: np.ndarray, fl: np.ndarray, fb: np.ndarray,
          plain: np.ndarray, cost: np.ndarray) -> bool:
    """Each message's row (``fatwalk._step``'s: intra, host, switch levels, hops, leaves
    its node, moves), the step's maxima and each message's costs (``cost[f]``); whether
    the rows differ. A message between the hosts of the one before has its row."""
    K, B = h + 1, len(nn)
    row, prev, first = np.zeros(K + 3), np.zeros(K + 3), np.zeros(K + 3)
    have, uneven, last_s, last_d = False, False, -1, -1
    for f in range(n_msg):
        a, d = _message(kind, bit, f, core)
        hs, hd = host[a], host[d]
        if have and hs == last_s and hd == last_d:
            for b in range(B):              # its hosts' row again: counted, costed
                cost[f, b] = cost[f - 1, b]
            continue
        last_s, last_d = hs, hd
        for k in range(K + 3):
            row[k] = 0.0
        row[K + 2] = 1.0
        if dev:
            row[0] = 1.0
        if hs != hd:
            row[K + 1] = 1.0
            row[1] = max(hio[0, hs], hio[1, hd])
            for i in range(2, h + 1):
                if grp[i, hs] == grp[i, hd]:
                    break
                row[K] = 2 * (i - 1)
                row[i] = max(links[0, base[i, hs] + bsel[i, hd]],
                             links[1, base[i, hd] + bsel[i, hd]])
        for k in range(K):
            load[k] = max(load[k], row[k])
        hops[0] = max(hops[0], int(row[K]))
        inter[0] = inter[0] or row[K + 1] > 0
        same = have
        for k in range(K + 3):
            if not have:
                first[k] = row[k]
            uneven = uneven or row[k] != first[k]
            same = same and row[k] == prev[k]
        if same:
            for b in range(B):
                cost[f, b] = cost[f - 1, b]
        else:
            for k in range(K + 3):
                prev[k] = row[k]
            _costs(row, K, s, lat0, nic, hop, betas, nn, fl, fb, plain, cost[f])
        have = True
    return uneven


def _clocks(kind: int, bit: int, n_msg: int, core: np.ndarray, r: int, p: int, red: bool,
            kk: np.ndarray, cost: np.ndarray, clock: np.ndarray) -> None:
    """A step's clocks, in place, pair by pair: each message's arrival from the step's
    old clocks (``fatwalk._step``'s rule), then the reduction's ``kk`` times what each
    rank receives (1 or 0: every rank, as ``fatwalk._walk`` adds it)."""
    B = clock.shape[1]
    for f in range(n_msg):
        if kind == 0 and f & bit:
            continue                        # the pair's other message: with its first
        a, d = _message(kind, bit, f, core)
        for b in range(B):
            t = max(clock[a, b], clock[d, b])
            ta = t + cost[f, b]
            na, nd = max(clock[a, b], ta), max(clock[d, b], ta)
            if kind == 0:
                tb = t + cost[f ^ bit, b]
                na, nd = max(na, tb), max(nd, tb)
            if red:                         # a core rank receives one; a folded one none
                na = na + kk[b] * (1.0 if kind == 0 else 0.0)
                nd = nd + kk[b] * 1.0
            clock[a, b], clock[d, b] = na, nd
    if not red:
        return
    for x in range(2 * r if kind == 1 else p, p):   # the ranks the step leaves alone
        for b in range(B):
            clock[x, b] = clock[x, b] + kk[b] * 0.0
    for i in range(r if kind == 0 else 0):
        for b in range(B):
            clock[2 * i, b] = clock[2 * i, b] + kk[b] * 0.0


def _costs(row: np.ndarray, K: int, s: int, lat0: np.ndarray, nic: np.ndarray,
           hop: np.ndarray, betas: np.ndarray, nn: np.ndarray, fl: np.ndarray,
           fb: np.ndarray, plain: np.ndarray, costs: np.ndarray) -> None:
    """A moving message's cost per case from its row (``fatwalk._step``'s formula, the
    step's largest message one vector)."""
    hp = int(row[K])
    for b in range(len(nn)):
        lat = lat0[b] + (nic[b] if row[K + 1] > 0 else 0.0) + hp * hop[b]
        busy = 0.0
        for k in range(K):
            busy = max(busy, row[k] * 1.0 * betas[b, k])
        if plain[b]:
            costs[b] = lat + nn[b] * busy
        else:
            costs[b] = fl[b, s] * lat + nn[b] * busy / fb[b, s]
