"""Compiled flow-mode engine: rank progress and max-min fair flows in one numba loop.

The SimPy engine's model (:mod:`dlscale.simulator.network.flowmode`: ranks advance on
their own; a message starts once both ends reached its step, waits its latency, then
moves at its max-min fair share of its links; a rank ends a step when its messages
are through, then reduces) as one compiled event loop: a 1,024-rank ring (2 million
messages) takes seconds.

Three things keep it fast without changing the answer:

- **Incremental max-min.** A max-min fair allocation splits over the connected
  components of the flows-sharing-links graph, so when flows start or end at an
  instant only the components of the links they touch are refilled; the other flows
  keep their rates and their pending completion events.
- **One instant, one refill.** All events at the same simulated time are applied
  before the rates are recomputed.
- **Independent messages without events** (:mod:`dlscale.simulator.network.flowsteps`):
  where no two messages that can be in flight together share a link (a ring on a
  linear placement), each message takes what it takes alone, and the steps are
  evaluated rank by rank without an event queue.

Completion events carry a version number (a flow whose rate changed gets a new one).
Every few milliseconds of work the loop returns to Python for a moment
(:mod:`dlscale.simulator.network.flowwatch`: progress, Ctrl-C and SIGTERM).

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> from dlscale.simulator.topology.linktable import LinkTable
>>> from dlscale.simulator.topology.routing import make_router
>>> from dlscale.simulator.network.schedules import build_schedule
>>> from dlscale.simulator.network.fastmode import RouteCache
>>> from dlscale.simulator.network.flowmode import prepare_flow
>>> G = fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9, host_latency_s=0.0,
...                    hop_latency_s=0.0)
>>> prep = prepare_flow(build_schedule("allreduce", "ring", 16, 16e6), LinkTable.from_graph(G),
...                     make_router(G), np.arange(16), RouteCache())
>>> end, steps = run_compiled(prep, 16, LinkTable.from_graph(G).bandwidth_Bps)
>>> round(end, 6), len(steps)
(0.03, 30)
"""

from __future__ import annotations

import dataclasses
import heapq
from dataclasses import dataclass

import numpy as np
from numba import objmode

from dlscale.kernels.jit import njit
from dlscale.simulator.network import flowwatch

__all__ = ["CompiledSchedule", "message_durations", "run_compiled", "total_messages"]

_START, _FINISH, _READY = 0, 1, 2
_EMPTY = 1e-9  # summed weights at or below this: no unfrozen flow on the link (rounding)

@dataclass(frozen=True)
class CompiledSchedule:
    """A routed schedule flattened to arrays for :func:`run_compiled`.

    Attributes
    ----------
    step_phase : ndarray of int64, shape (K,)
        Phase of each step (phases expanded by their repeat count).
    msg_off : ndarray of int64, shape (P + 1,)
        Messages of phase ``p`` are ``msg_off[p]:msg_off[p + 1]`` of ``msg_src``/``msg_dst``.
    msg_src, msg_dst : ndarray of int64
        Sender and receiver rank of each message.
    sub_off : ndarray of int64, shape (P + 1,)
        Subflows of phase ``p`` are ``sub_off[p]:sub_off[p + 1]``.
    sub_msg : ndarray of int64
        Message (index within its phase) of each subflow.
    sub_links : ndarray of int64, shape (S, H)
        Link ids of each subflow, ``-1`` padding.
    sub_bytes, sub_latency_s : ndarray of float64
        Bytes (per-size factors applied) and path latency of each subflow.
    sub_weight, sub_penalty : ndarray of float64, shapes (S, H) and (S,), or None (1)
        Share of a subflow's rate each link carries (1 on its route, then its back
        route's at SimGrid's cross-traffic share) and its sharing penalty (weight-S):
        flows filled together get ``level / penalty``, a link holds ``sum(w x) <= C``
        (SimGrid's lmm; :class:`~dlscale.perfmodel.network.msgfactors.MessageFactors`).
    rank_off : ndarray of int64, shape (P * (R + 1),)
        For phase ``p`` and rank ``r``, the rank's messages (sent, then received) are
        ``rank_msg[rank_off[p * (R + 1) + r]:rank_off[p * (R + 1) + r + 1]]``.
    rank_msg : ndarray of int64
        Message indices (within the phase).
    reduce_s : ndarray of float64, shape (P, R)
        Seconds rank ``r`` reduces after phase ``p``'s step (0 where nothing).
    pool : int
        Most subflows in flight at once (sizes the engine's flow table).
    """

    step_phase: np.ndarray
    msg_off: np.ndarray
    msg_src: np.ndarray
    msg_dst: np.ndarray
    sub_off: np.ndarray
    sub_msg: np.ndarray
    sub_links: np.ndarray
    sub_bytes: np.ndarray
    sub_latency_s: np.ndarray
    rank_off: np.ndarray
    rank_msg: np.ndarray
    reduce_s: np.ndarray
    pool: int
    sub_weight: np.ndarray | None = None
    sub_penalty: np.ndarray | None = None

    def weights(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sub_weight, sub_penalty)``, 1 where None."""
        return (np.ones(self.sub_links.shape) if self.sub_weight is None else self.sub_weight,
                np.ones(len(self.sub_links)) if self.sub_penalty is None else self.sub_penalty)


def total_messages(sched: CompiledSchedule) -> int:
    """Messages of every step of ``sched``."""
    return int(np.diff(sched.msg_off)[sched.step_phase].sum()) if len(sched.step_phase) else 0


def run_compiled(sched: CompiledSchedule, n_ranks: int,
                 capacity_Bps: np.ndarray) -> tuple[float, np.ndarray]:
    """Run ``sched``; returns the end time and each step's latest end (seconds).

    Interruptible as :func:`~dlscale.simulator.network.flowwatch.watched` says.
    """
    with flowwatch.watched(total_messages(sched)):
        end, step_end, _ = _run_sched(sched, n_ranks, capacity_Bps, False)
    return end, step_end


def _run_sched(sched: CompiledSchedule, n_ranks: int, capacity_Bps: np.ndarray,
               want_done: bool) -> tuple[float, np.ndarray, np.ndarray]:
    return _run(sched.step_phase, sched.msg_off, sched.msg_src, sched.msg_dst,
                sched.sub_off, sched.sub_msg, sched.sub_links, *sched.weights(),
                sched.sub_bytes,
                sched.sub_latency_s, sched.rank_off, sched.rank_msg, sched.reduce_s,
                int(n_ranks), np.asarray(capacity_Bps, dtype=np.float64),
                max(int(sched.pool), 1), flowwatch.POLL_WORK, want_done)


def message_durations(sched: CompiledSchedule, n_ranks: int,
                      capacity_Bps: np.ndarray) -> np.ndarray:
    """Seconds each message of each phase takes (index ``msg_off[p] + m``) in one step
    of that phase alone, every rank entering at time 0 (messages that share no link
    with another message of their step take this in any step of that phase)."""
    out = np.zeros(int(sched.msg_off[-1]))
    seen: dict[bytes, np.ndarray] = {}
    for p in range(len(sched.msg_off) - 1):
        a, b = int(sched.sub_off[p]), int(sched.sub_off[p + 1])
        key = b"".join(x.tobytes() for x in (
            sched.msg_src[sched.msg_off[p]:sched.msg_off[p + 1]],
            sched.msg_dst[sched.msg_off[p]:sched.msg_off[p + 1]], sched.sub_msg[a:b],
            sched.sub_links[a:b], *(w[a:b] for w in sched.weights()), sched.sub_bytes[a:b],
            sched.sub_latency_s[a:b]))
        if key not in seen:
            one = dataclasses.replace(sched, step_phase=np.array([p], dtype=np.int64))
            seen[key] = _run_sched(one, n_ranks, capacity_Bps, True)[2]
        out[sched.msg_off[p]:sched.msg_off[p + 1]] = seen[key]
    return out


@njit()
def _index_messages(step_phase, msg_off, sub_off, sub_msg, n_msgs):
    """Global message ids per step (``msg_base``) and each message's subflows (CSR)."""
    K = len(step_phase)
    msg_base = np.zeros(K + 1, dtype=np.int64)
    for k in range(K):
        p = step_phase[k]
        msg_base[k + 1] = msg_base[k] + msg_off[p + 1] - msg_off[p]
    P = len(msg_off) - 1
    msub_off = np.zeros(n_msgs + 1, dtype=np.int64)
    for p in range(P):
        for s in range(sub_off[p], sub_off[p + 1]):
            msub_off[msg_off[p] + sub_msg[s] + 1] += 1
    for i in range(n_msgs):
        msub_off[i + 1] += msub_off[i]
    msub = np.zeros(len(sub_msg), dtype=np.int64)
    fill = msub_off[:-1].copy()
    for p in range(P):
        for s in range(sub_off[p], sub_off[p + 1]):
            gm = msg_off[p] + sub_msg[s]
            msub[fill[gm]] = s
            fill[gm] += 1
    return msg_base, msub_off, msub


@njit()
def _flow_table(pool, H, L):
    """The flow slots (``f_*``, free list) and the per-link lists of their entries."""
    f_sub, f_msg = np.zeros(pool, dtype=np.int64), np.zeros(pool, dtype=np.int64)
    f_ver, f_stamp = np.zeros(pool, dtype=np.int64), np.zeros(pool, dtype=np.int64)
    f_rem, f_rate, f_tupd = np.zeros(pool), np.zeros(pool), np.zeros(pool)
    f_frozen = np.zeros(pool, dtype=np.bool_)
    free = np.arange(pool - 1, -1, -1).astype(np.int64)
    head = np.full(L, -1, dtype=np.int64)
    e_next, e_prev = np.full(pool * H, -1, dtype=np.int64), np.full(pool * H, -1, dtype=np.int64)
    return (f_sub, f_msg, f_ver, f_stamp, f_rem, f_rate, f_tupd, f_frozen, free, head, e_next,
            e_prev)


@njit(inline="always")
def _enter(r, k, now, heap, seq, n_free, K, R, step_phase, rank_off, rank_msg, msg_off,
           msg_base, msub_off, msub, posted, msg_left, rank_step, pending, free, f_sub, f_msg, f_ver, f_stamp,
           sub_lat):
    """Rank ``r`` enters its first step from ``k`` on that has messages of its own:
    post them; a message both ends posted starts its subflows after their latency.
    Returns ``(seq, n_free)``."""
    while k < K:
        p = step_phase[k]
        if rank_off[p * (R + 1) + r + 1] > rank_off[p * (R + 1) + r]:
            break
        k += 1
    rank_step[r] = k
    if k >= K:
        return seq, n_free
    p = step_phase[k]
    a = rank_off[p * (R + 1) + r]
    b = rank_off[p * (R + 1) + r + 1]
    pending[r] = b - a
    for i in range(a, b):
        m = rank_msg[i]
        g = msg_base[k] + m
        posted[g] += 1
        if posted[g] == 2:  # both ends are here (a message to oneself: listed twice)
            gm = msg_off[p] + m
            msg_left[g] = msub_off[gm + 1] - msub_off[gm]
            for j in range(msub_off[gm], msub_off[gm + 1]):
                s = msub[j]
                n_free -= 1
                slot = free[n_free]
                f_sub[slot] = s
                f_msg[slot] = g
                f_ver[slot] += 1
                seq += 1
                heapq.heappush(heap, (now + sub_lat[s], seq, _START, slot, f_ver[slot]))
    return seq, n_free


@njit(inline="always")
def _component(dirty, n_dirty, stamp, l_stamp, lstack, l_local, comp_l, comp_f, c_cap, c_cnt,
               cap, head, e_next, e_prev, H, f_sub, f_msg, f_ver, f_stamp, sub_links):
    """The links and flows connected to the dirty links (marked with ``stamp``);
    returns ``(flows, links)`` counts in ``comp_f`` and ``comp_l``."""
    nf = 0
    nl = 0
    top = 0
    for i in range(n_dirty):
        l0 = dirty[i]
        if l_stamp[l0] != stamp:
            l_stamp[l0] = stamp
            lstack[top] = l0
            top += 1
    while top > 0:
        top -= 1
        l0 = lstack[top]
        l_local[l0] = nl
        comp_l[nl] = l0
        c_cap[nl] = cap[l0]
        c_cnt[nl] = 0
        nl += 1
        e = head[l0]
        while e >= 0:
            f = e // H
            if f_stamp[f] != stamp:
                f_stamp[f] = stamp
                comp_f[nf] = f
                nf += 1
                for h in range(H):
                    l1 = sub_links[f_sub[f], h]
                    if l1 >= 0 and l_stamp[l1] != stamp:
                        l_stamp[l1] = stamp
                        lstack[top] = l1
                        top += 1
            e = e_next[e]
    return nf, nl


@njit(inline="always")
def _fill(nf, nl, now, comp_f, comp_l, l_local, c_cap, c_cnt, head, e_next, e_prev, H, f_sub, f_msg, f_ver, f_stamp, f_rem, f_rate, f_tupd,
          f_frozen, sub_links, sub_w, sub_pen):
    """Max-min fair rates of a component's flows by progressive filling (their bytes
    brought up to ``now`` first), weighted as :class:`CompiledSchedule` says."""
    for i in range(nf):
        f = comp_f[i]
        f_rem[f] = max(f_rem[f] - f_rate[f] * (now - f_tupd[f]), 0.0)
        f_tupd[f] = now
        f_frozen[f] = False
        for h in range(H):
            l1 = sub_links[f_sub[f], h]
            if l1 >= 0:
                c_cnt[l_local[l1]] += sub_w[f_sub[f], h] / sub_pen[f_sub[f]]
    left = nf
    work = nf * H
    while left > 0:
        work += 2 * nl
        m_share = np.inf
        for j in range(nl):
            if c_cnt[j] > _EMPTY:
                m_share = min(m_share, c_cap[j] / c_cnt[j])
        lim = m_share * (1.0 + 1e-12)
        for j in range(nl):
            if c_cnt[j] > _EMPTY and c_cap[j] / c_cnt[j] <= lim:
                e = head[comp_l[j]]
                while e >= 0:
                    f = e // H
                    if not f_frozen[f]:
                        f_frozen[f] = True
                        f_rate[f] = m_share / sub_pen[f_sub[f]]
                        left -= 1
                        for h in range(H):
                            l1 = sub_links[f_sub[f], h]
                            if l1 >= 0:
                                q, w = l_local[l1], sub_w[f_sub[f], h]
                                c_cap[q] = max(c_cap[q] - f_rate[f] * w, 0.0)
                                c_cnt[q] -= w / sub_pen[f_sub[f]]
                    e = e_next[e]
    return work


@njit(inline="always")
def _attach(x, s, now, sub_links, sub_bytes, head, e_next, e_prev, H, f_rem, f_rate, f_tupd, dirty, n_dirty, d_mark,
            d_gen):
    """A subflow whose latency has passed joins its links; returns ``(joined, dirty
    count)`` (a subflow of no bytes or no link is delivered at once)."""
    has_link = False
    for h in range(H):
        if sub_links[s, h] >= 0:
            has_link = True
    if not (sub_bytes[s] > 0.0 and has_link):
        return False, n_dirty
    f_rem[x] = sub_bytes[s]
    f_rate[x] = 0.0
    f_tupd[x] = now
    for h in range(H):
        l1 = sub_links[s, h]
        if l1 >= 0:
            e = x * H + h
            e_prev[e] = -1
            e_next[e] = head[l1]
            if head[l1] >= 0:
                e_prev[head[l1]] = e
            head[l1] = e
            if d_mark[l1] != d_gen:  # mark the link for a refill at this instant
                d_mark[l1] = d_gen
                dirty[n_dirty] = l1
                n_dirty += 1
    return True, n_dirty


@njit(inline="always")
def _detach(x, s, sub_links, head, e_next, e_prev, H, dirty, n_dirty, d_mark, d_gen):
    """A finished subflow leaves its links; returns the dirty count."""
    for h in range(H):
        l1 = sub_links[s, h]
        if l1 >= 0:
            e = x * H + h
            if e_prev[e] >= 0:
                e_next[e_prev[e]] = e_next[e]
            else:
                head[l1] = e_next[e]
            if e_next[e] >= 0:
                e_prev[e_next[e]] = e_prev[e]
            if d_mark[l1] != d_gen:  # mark the link for a refill at this instant
                d_mark[l1] = d_gen
                dirty[n_dirty] = l1
                n_dirty += 1
    return n_dirty


@njit(inline="always")
def _delivered(g, now, heap, seq, n_r, rstack, K, msg_base, step_phase, msg_off, msg_src,
               msg_dst, pending, reduce_s, step_end):
    """Message ``g`` is delivered: its sender and receiver may finish their step
    (then reduce, or enter the next one). Returns ``(seq, n_r)``."""
    lo = 0
    hi = K
    while hi - lo > 1:  # the step of global message g
        mid = (lo + hi) // 2
        if msg_base[mid] <= g:
            lo = mid
        else:
            hi = mid
    k = lo
    p = step_phase[k]
    gm = msg_off[p] + (g - msg_base[k])
    for who in range(2):
        r = msg_src[gm] if who == 0 else msg_dst[gm]
        pending[r] -= 1
        if pending[r] == 0:
            red = reduce_s[p, r]
            if red > 0.0:
                seq += 1
                heapq.heappush(heap, (now + red, seq, _READY, r, 0))
            else:
                step_end[k] = max(step_end[k], now)
                rstack[n_r] = r
                rstack[n_r + 1] = k + 1
                n_r += 2
    return seq, n_r


@njit()
def _scratch(pool, L):
    """Per-link and per-flow work arrays of the component refills."""
    z = np.zeros
    return (z(L, np.int64), z(L, np.int64), z(L, np.int64), z(L, np.int64), z(pool, np.int64),
            z(L, np.int64), z(L), z(L), z(L, np.int64))


@njit()
def _stop_requested(delivered):
    """Progress shown, and whether to stop (:func:`~dlscale.simulator.network.flowwatch.poll`)."""
    with objmode(stop="int64"):
        stop = flowwatch.poll(delivered)
    return stop


@njit()
def _run(step_phase, msg_off, msg_src, msg_dst, sub_off, sub_msg, sub_links, sub_w, sub_pen,
         sub_bytes, sub_lat, rank_off, rank_msg, reduce_s, R, cap, pool, poll_work, want_done):
    K, H, L = len(step_phase), sub_links.shape[1], len(cap)
    msg_base, msub_off, msub = _index_messages(step_phase, msg_off, sub_off, sub_msg,
                                               len(msg_src))
    posted, msg_left = np.zeros(msg_base[K], dtype=np.int8), np.zeros(msg_base[K], dtype=np.int32)
    done_at = np.zeros(msg_base[K] if want_done else 0)   # each message's delivery
    rank_step, pending = np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64)
    step_end = np.zeros(K)
    (f_sub, f_msg, f_ver, f_stamp, f_rem, f_rate, f_tupd, f_frozen, free, head, e_next,
     e_prev) = _flow_table(pool, H, L)
    l_stamp, l_local, dirty, d_mark, comp_f, comp_l, c_cap, c_cnt, lstack = _scratch(pool, L)
    d_gen, n_dirty, stamp, seq, now, delivered, work, n_free = 1, 0, 0, 0, 0.0, 0, 0, pool
    heap = [(0.0, 0, 0, 0, 0)][:0]
    rstack, n_r = np.zeros(2 * R + 2, dtype=np.int64), 2 * R  # (rank, first step) pairs
    rstack[0:2 * R:2] = np.arange(R)                # every rank enters at time 0
    while True:
        while n_r > 0:
            n_r -= 2
            seq, n_free = _enter(rstack[n_r], rstack[n_r + 1], now, heap, seq, n_free, K, R,
                                 step_phase, rank_off, rank_msg, msg_off, msg_base, msub_off,
                                 msub, posted, msg_left, rank_step, pending, free, f_sub, f_msg, f_ver, f_stamp,
                                 sub_lat)
        if n_dirty > 0:  # rates of the components touched at this instant
            stamp += 1
            nf, nl = _component(dirty, n_dirty, stamp, l_stamp, lstack, l_local, comp_l,
                                comp_f, c_cap, c_cnt, cap, head, e_next, e_prev, H, f_sub, f_msg, f_ver, f_stamp, sub_links)
            work += nf + nl + _fill(nf, nl, now, comp_f, comp_l, l_local, c_cap, c_cnt, head, e_next, e_prev, H, f_sub, f_msg, f_ver, f_stamp,
                  f_rem, f_rate, f_tupd, f_frozen, sub_links, sub_w, sub_pen)
            for i in range(nf):
                f = comp_f[i]
                f_ver[f] += 1
                seq += 1
                heapq.heappush(heap, (now + f_rem[f] / f_rate[f], seq, _FINISH, f,
                                      f_ver[f]))
            n_dirty = 0
            d_gen += 1
        work += 1
        if work >= poll_work:  # progress, and a chance to stop (Ctrl-C, SIGTERM)
            work = 0
            with objmode(stop="int64"):
                stop = flowwatch.poll(delivered)
            if stop:
                break
        if len(heap) == 0:
            break
        now = heap[0][0]
        while len(heap) > 0 and heap[0][0] <= now:  # every event of the next instant
            t, _, kind, x, ver = heapq.heappop(heap)
            work += 1
            if kind == _READY:
                step_end[rank_step[x]] = max(step_end[rank_step[x]], t)
                rstack[n_r] = x
                rstack[n_r + 1] = rank_step[x] + 1
                n_r += 2
                continue
            if f_ver[x] != ver:
                continue  # superseded completion
            s = f_sub[x]
            if kind == _START:
                joined, n_dirty = _attach(x, s, now, sub_links, sub_bytes, head, e_next, e_prev, H,
                                          f_rem, f_rate, f_tupd, dirty, n_dirty, d_mark, d_gen)
                if joined:
                    continue
            else:
                n_dirty = _detach(x, s, sub_links, head, e_next, e_prev, H, dirty, n_dirty, d_mark,
                                  d_gen)
            g = f_msg[x]                  # the subflow is delivered
            f_ver[x] += 1
            free[n_free] = x
            n_free += 1
            msg_left[g] -= 1
            if msg_left[g] > 0:
                continue
            delivered += 1
            if want_done:
                done_at[g] = now
            seq, n_r = _delivered(g, now, heap, seq, n_r, rstack, K, msg_base, step_phase,
                                  msg_off, msg_src, msg_dst, pending, reduce_s, step_end)
    return now, step_end, done_at
