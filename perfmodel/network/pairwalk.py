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
  there (``kk * 0.0`` to a rank that receives nothing, left out where it is a no-op:
  clocks are ``>= +0.0``). The clocks are kept in core order, so a step's pairs are
  ``(f, f + bit)``;
- every message adds the same share to a host or link counter, so a counter's sum is
  its count's (``k`` shares added one by one, as the message walk adds them): the
  counters are counted, as integers, per run of consecutive messages between the same
  two hosts (about two runs per host and step, not one per message);
- a run's messages share their row (their hosts' counters), and a row is a function
  of its integer key (host count, each level's link count): each run's key is looked
  up in a small hash table of the step's distinct rows (6 to 40 on Summit), and each
  distinct row is built, folded into the step's maxima and costed once.

The rows and costs are the message walk's (:func:`dlscale.perfmodel.network.fatwalk._step`'s
formula), so the answers are its bits (tested on random trees, rails, ranks and cases,
and past the hash table's slots). At 27,648 ranks (Summit's 4,608 nodes) a walk takes
about 3.5 ms of CPU (6.2 ms when each message was counted and rowed on its own).

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
        for helper in ("_costs", "_same", "_add", "_row", "_runs", "_count", "_rows",
                       "_clocks"):
            space[helper] = njit()(space[helper])
        _COMPILED.append(njit()(_pairs))
    fneed, ineed = _needs(p, rpn, len(cases[0]), len(m), tables[4].shape[1])
    if len(_WORK[0]) < fneed:               # kept for the next node count (a curve's
        _WORK[0] = np.empty(2 * fneed)      # grow): no fresh pages; each buffer checked on
    if len(_WORK[1]) < ineed:               # its own (B cases and tree tables vary)
        _WORK[1] = np.empty(2 * ineed, np.int64)
    return tuple(_COMPILED[0](p, rpn, dev, m, w, *tables, *cases, _WORK[0], _WORK[1]))


#: The walk's work buffers (:func:`pair_walk`): floats (clocks, the distinct rows'
#: costs, the rows, the link loads by count) and integers (each core rank's host, each
#: message's cost row, the step's host-pair runs, the host and link counters).
_WORK: list[np.ndarray] = [np.empty(0), np.empty(0, np.int64)]


def _needs(p: int, rpn: int, B: int, h: int, L: int) -> tuple[int, int]:
    """The floats and integers :func:`_pairs` works in: for ``p`` ranks (``rpn`` per
    node), ``B`` cases, ``h`` tree levels and ``L`` links per direction."""
    pp = 1 << (p.bit_length() - 1)
    H = (p - 1) // rpn + 1
    R = h + 4                               # a row: intra, host, levels, hops, leaves, moves
    return (p + pp) * B + pp * R + pp + 2, 5 * pp + 1 + 2 * H + 2 * L + pp * h


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
           kk: np.ndarray, fwork: np.ndarray, iwork: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                      np.ndarray, bool, np.ndarray]:
    """The walk (module docstring): per step the runs of its messages between the same
    two hosts (:func:`_runs`), their host and link counts (:func:`_count`), each run's
    row and its costs, once per distinct row (:func:`_rows`), then each pair's clocks
    (:func:`_clocks`). Clocks are kept in core order (row ``i`` core rank ``i``, rows
    ``pp + i`` the folded ranks ``2 i``), so a step's pairs are ``(f, f + bit)``."""
    pp = 1
    while pp * 2 <= p:
        pp *= 2
    r, steps = p - pp, 0
    while (1 << steps) < pp:
        steps += 1
    S, h, B = steps + (2 if r else 0), len(m), len(nn)
    R, H, L = h + 4, (p - 1) // rpn + 1, links.shape[1]
    o = 0
    clock = fwork[o:o + p * B].reshape(p, B)
    o += p * B
    cost = fwork[o:o + pp * B].reshape(pp, B)
    o += pp * B
    rows = fwork[o:o + pp * R].reshape(pp, R)
    o += pp * R
    rep = fwork[o:o + pp + 2]
    chost, cid = iwork[:pp], iwork[pp:2 * pp]
    run_at, run_s, run_d = iwork[2 * pp:3 * pp + 1], iwork[3 * pp + 1:4 * pp + 1], \
        iwork[4 * pp + 1:5 * pp + 1]
    cnt = iwork[5 * pp + 1:5 * pp + 1 + 2 * H + 2 * L]
    o = 5 * pp + 1 + 2 * H + 2 * L
    keys = iwork[o:o + pp * h].reshape(pp, h)
    for i in range(pp):                     # each core rank's host
        chost[i] = host[2 * i + 1 if i < r else i + r]
    for x in range(len(cnt)):
        cnt[x] = 0
    share = 1.0 / w[0]
    rep[0] = 0.0                            # a link's load after k messages: k shares
    for k in range(1, pp + 2):              # added one by one (the message walk's sum)
        rep[k] = rep[k - 1] + share
    for x in range(p):                      # clocks from 0
        for b in range(B):
            clock[x, b] = 0.0
    zero = True                             # x + kk * 0.0 is x for the clocks (>= +0.0)
    for b in range(B):
        zero = zero and kk[b] * 0.0 == 0.0
    load, red = np.zeros((S, h + 1)), np.ones(S, np.bool_)
    hops, inter, recv = np.zeros(S, np.int64), np.zeros(S, np.bool_), np.ones(S)
    uneven = False
    for s in range(S):
        kind = 1 if r > 0 and s == 0 else 2 if r > 0 and s == S - 1 else 0
        bit = 1 << (s - (1 if r else 0)) if kind == 0 else 0
        n_msg = pp if kind == 0 else r
        red[s] = kind != 2
        nr = _runs(kind, bit, n_msg, chost, host, run_at, run_s, run_d, h, H, L, grp, base,
                   bsel, cnt)
        uneven = _rows(nr, run_at, run_s, run_d, s, dev, h, H, L, grp, base, bsel, cnt, rep,
                       load, hops, inter, lat0, nic, hop, betas, nn, fl, fb, plain, rows,
                       keys, cost, cid) or uneven
        if len(cnt) <= 8 * nr:              # counters zeroed for the next step: all at
            cnt[:] = 0                      # once, or run by run where they are many
        else:
            _count(nr, -1, run_at, run_s, run_d, h, H, L, grp, base, bsel, cnt)
        _clocks(kind, bit, n_msg, r, pp, red[s], zero, kk, cost, cid, clock)
    value = np.zeros(B)
    for b in range(B):
        value[b] = clock[:, b].max()
    return value, load, hops, inter, recv, uneven, red


def _runs(kind: int, bit: int, n_msg: int, chost: np.ndarray, host: np.ndarray,
          run_at: np.ndarray, run_s: np.ndarray, run_d: np.ndarray, h: int, H: int, L: int,
          grp: np.ndarray, base: np.ndarray, bsel: np.ndarray, cnt: np.ndarray) -> int:
    """A step's messages (``kind`` 0: core message ``f`` to ``f ^ bit``, 1: the fold
    ``2 f`` to ``2 f + 1``, 2: the unfold) as runs of consecutive messages between the
    same two hosts: run ``q`` is messages ``run_at[q]..run_at[q + 1] - 1`` from host
    ``run_s[q]`` to ``run_d[q]``, counted as each run ends (:func:`_count`); how many
    runs."""
    nr, ls, ld = 0, -1, -1
    for f in range(n_msg):
        if kind == 0:
            hs, hd = chost[f], chost[f ^ bit]
        elif kind == 1:
            hs, hd = host[2 * f], host[2 * f + 1]
        else:
            hs, hd = host[2 * f + 1], host[2 * f]
        if hs == ls and hd == ld:
            continue
        if nr and ls != ld:
            _add(ls, ld, f - run_at[nr - 1], h, H, L, grp, base, bsel, cnt)
        run_at[nr], run_s[nr], run_d[nr] = f, hs, hd
        nr += 1
        ls, ld = hs, hd
    if nr and ls != ld:
        _add(ls, ld, n_msg - run_at[nr - 1], h, H, L, grp, base, bsel, cnt)
    run_at[nr] = n_msg
    return nr


def _add(hs: int, hd: int, n: int, h: int, H: int, L: int, grp: np.ndarray,
         base: np.ndarray, bsel: np.ndarray, cnt: np.ndarray) -> None:
    """``n`` messages from host ``hs`` to host ``hd`` (another) added to the counters
    (:func:`_count`'s)."""
    cnt[hs] += n
    cnt[H + hd] += n
    for i in range(2, h + 1):
        if grp[i, hs] == grp[i, hd]:
            break
        cnt[2 * H + base[i, hs] + bsel[i, hd]] += n
        cnt[2 * H + L + base[i, hd] + bsel[i, hd]] += n


def _count(nr: int, sign: int, run_at: np.ndarray, run_s: np.ndarray, run_d: np.ndarray,
           h: int, H: int, L: int, grp: np.ndarray, base: np.ndarray, bsel: np.ndarray,
           cnt: np.ndarray) -> None:
    """A step's host (out ``cnt[hs]``, in ``cnt[H + hd]``) and link (up ``cnt[2 H + k]``,
    down ``cnt[2 H + L + k]``) message counts, run by run (``sign`` -1: taken back, to
    zero them for the next step). Counts, not sums: every message adds the same share,
    so a counter's load is its count's (``rep``, the message walk's sum in order)."""
    for q in range(nr):
        hs, hd = run_s[q], run_d[q]
        if hs == hd:
            continue
        _add(hs, hd, sign * (run_at[q + 1] - run_at[q]), h, H, L, grp, base, bsel, cnt)


def _rows(nr: int, run_at: np.ndarray, run_s: np.ndarray, run_d: np.ndarray, s: int,
          dev: bool, h: int, H: int, L: int, grp: np.ndarray, base: np.ndarray,
          bsel: np.ndarray, cnt: np.ndarray, rep: np.ndarray, load: np.ndarray,
          hops: np.ndarray, inter: np.ndarray, lat0: np.ndarray, nic: np.ndarray,
          hop: np.ndarray, betas: np.ndarray, nn: np.ndarray, fl: np.ndarray, fb: np.ndarray,
          plain: np.ndarray, rows: np.ndarray, keys: np.ndarray, cost: np.ndarray,
          cid: np.ndarray) -> bool:
    """Each message's row among the step's distinct ones (``cid``; ``fatwalk._step``'s
    row: intra, host, switch levels, hops, leaves its node, moves), each distinct row
    costed once (``cost``), and the step's maxima; whether the rows differ. A run's
    messages share their hosts and counters, so a run has one row, and a row is its
    key's (``keys``): the host count, then each level's link count, 0 past the levels
    it crosses (all 0 within a node). The maxima over the distinct rows are the
    maxima over all."""
    K = h + 1
    uneven, nd, last = False, 0, -1
    slots = np.full(_SLOTS, -1, np.int64)   # the distinct rows, by a hash of their keys
    key = np.zeros(h, np.int64)
    for q in range(nr):
        hs, hd = run_s[q], run_d[q]
        for i in range(h):
            key[i] = 0
        if hs != hd:
            key[0] = max(cnt[hs], cnt[H + hd])
            for i in range(2, h + 1):
                if grp[i, hs] == grp[i, hd]:
                    break
                key[i - 1] = max(cnt[2 * H + base[i, hs] + bsel[i, hd]],
                                 cnt[2 * H + L + base[i, hd] + bsel[i, hd]])
        got = -1
        if last >= 0 and _same(key, keys, last, h):
            got = last
        else:
            mix = 0
            for i in range(h):
                mix = mix * 1000003 + key[i]
            at = (mix * 40503) & (_SLOTS - 1)
            while slots[at] >= 0:           # open addressing: the keys themselves compared
                if _same(key, keys, slots[at], h):
                    got = slots[at]
                    break
                at = (at + 1) & (_SLOTS - 1)
            if got < 0 and nd < _SLOTS // 2:    # past half full, a new row is costed
                slots[at] = nd              # whenever met (the same bits)
        if got < 0:
            for i in range(h):
                keys[nd, i] = key[i]
            _row(key, h, dev, rep, rows, nd)
            for k in range(K):
                load[s, k] = max(load[s, k], rows[nd, k])
            hops[s] = max(hops[s], int(rows[nd, K]))
            inter[s] = inter[s] or rows[nd, K + 1] > 0
            for k in range(K + 3):
                uneven = uneven or rows[nd, k] != rows[0, k]
            _costs(rows, nd, K, s, lat0, nic, hop, betas, nn, fl, fb, plain, cost)
            got = nd
            nd += 1
        last = got
        for f in range(run_at[q], run_at[q + 1]):
            cid[f] = got
    return uneven


def _row(key: np.ndarray, h: int, dev: bool, rep: np.ndarray, rows: np.ndarray,
         j: int) -> None:
    """Row ``j`` (:func:`_rows`) from its key: intra (``dev``), host (the count), each
    level's load (its count's, ``rep``), hops (two per level crossed), whether it
    leaves its node, that it moves."""
    K = h + 1
    for k in range(K + 3):
        rows[j, k] = 0.0
    rows[j, K + 2] = 1.0
    if dev:
        rows[j, 0] = 1.0
    if key[0] > 0:
        rows[j, K + 1] = 1.0
        rows[j, 1] = float(key[0])
        for i in range(2, h + 1):
            if key[i - 1] == 0:
                break
            rows[j, K] = 2 * (i - 1)
            rows[j, i] = rep[key[i - 1]]


#: Slots of :func:`_rows`' table of a step's distinct rows (a power of two).
_SLOTS = 256


def _same(key: np.ndarray, keys: np.ndarray, j: int, n: int) -> bool:
    """Whether ``key`` is ``keys[j]`` (its first ``n`` entries)."""
    for k in range(n):
        if key[k] != keys[j, k]:
            return False
    return True


def _clocks(kind: int, bit: int, n_msg: int, r: int, pp: int, red: bool, zero: bool,
            kk: np.ndarray, cost: np.ndarray, cid: np.ndarray, clock: np.ndarray) -> None:
    """A step's clocks (core order), in place, pair by pair: each message's arrival
    from the step's old clocks (``fatwalk._step``'s rule), then the reduction's ``kk``
    times what each rank receives (1 or 0: every rank, as ``fatwalk._walk`` adds it;
    ``+ kk * 0.0`` left out where it is a no-op, ``zero``)."""
    B = clock.shape[1]
    if kind == 0:
        for blk in range(0, n_msg, 2 * bit):
            for f in range(blk, blk + bit):
                g = f + bit
                c1, c2 = cid[f], cid[g]
                for b in range(B):
                    ca, cd = clock[f, b], clock[g, b]
                    t = max(ca, cd)
                    ta, tb = t + cost[c1, b], t + cost[c2, b]
                    na, nd = max(max(ca, ta), tb), max(max(cd, ta), tb)
                    if red:
                        na = na + kk[b] * 1.0
                        nd = nd + kk[b] * 1.0
                    clock[f, b], clock[g, b] = na, nd
    else:                                   # the fold (2 f to core f) or the unfold
        for f in range(n_msg):
            c1 = cid[f]
            for b in range(B):
                ca, cd = (clock[pp + f, b], clock[f, b]) if kind == 1 else \
                    (clock[f, b], clock[pp + f, b])
                t = max(ca, cd)
                ta = t + cost[c1, b]
                na, nd = max(ca, ta), max(cd, ta)
                if red:                     # the fold: a folded rank receives none
                    na = na + kk[b] * 0.0
                    nd = nd + kk[b] * 1.0
                if kind == 1:
                    clock[pp + f, b], clock[f, b] = na, nd
                else:
                    clock[f, b], clock[pp + f, b] = na, nd
    if not red or zero:
        return
    for x in range(r if kind == 1 else pp, pp if kind == 1 else pp + r):
        for b in range(B):                  # the ranks the step leaves alone
            clock[x, b] = clock[x, b] + kk[b] * 0.0


def _costs(rows: np.ndarray, j: int, K: int, s: int, lat0: np.ndarray, nic: np.ndarray,
           hop: np.ndarray, betas: np.ndarray, nn: np.ndarray, fl: np.ndarray,
           fb: np.ndarray, plain: np.ndarray, costs: np.ndarray) -> None:
    """A moving message's cost per case (``costs[j]``) from its row (``rows[j]``;
    ``fatwalk._step``'s formula, the step's largest message one vector)."""
    hp = int(rows[j, K])
    for b in range(len(nn)):
        lat = lat0[b] + (nic[b] if rows[j, K + 1] > 0 else 0.0) + hp * hop[b]
        busy = 0.0
        for k in range(K):
            busy = max(busy, rows[j, k] * 1.0 * betas[b, k])
        if plain[b]:
            costs[j, b] = lat + nn[b] * busy
        else:
            costs[j, b] = fl[b, s] * lat + nn[b] * busy / fb[b, s]
