"""Fast mode: each step of a collective is one vectorized event.

Every message of a step takes its path latency plus the time the most loaded link on
its path needs to carry all the bytes the step routes over it (``load / capacity``);
a receiver then reduces what it got (``gamma * bytes``). Link loads of a routed pattern are computed once with
``np.bincount`` and the routes are cached per pattern, so the ``2(p-1)`` identical
steps of a ring cost one computation.

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> from dlscale.simulator.topology.linktable import LinkTable
>>> from dlscale.simulator.topology.routing import make_router
>>> from dlscale.simulator.network.schedules import build_schedule
>>> G = fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9, host_latency_s=0.0,
...                    hop_latency_s=0.0)
>>> out = run_fast(build_schedule("allreduce", "ring", 16, 16e6), LinkTable.from_graph(G),
...                make_router(G), np.arange(16), RouteCache())
>>> round(out["time_s"], 6)  # 2 (p-1)/p n / B
0.03
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlscale.kernels.jit import njit
from dlscale.perfmodel.network.msgfactors import MessageFactors
from dlscale.simulator.network.schedules import Phase
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.routing import PairRoutes, Routes, route

__all__ = ["PhaseLinkTime", "RouteCache", "message_costs", "phase_loads", "run_fast"]


def reversed_phase(phase: Phase) -> Phase:
    """``phase`` with every message's ends swapped: its messages' back routes, which
    SimGrid's cross-traffic loads (:attr:`MessageFactors.cross_traffic`)."""
    return Phase(phase.dst, phase.src, phase.nbytes, phase.reduce, phase.repeat, phase.label)


@dataclass
class _Routed:
    routes: Routes
    valid: np.ndarray


@dataclass
class _Priced:
    """What one repetition of a phase costs (:func:`run_fast`), for one set of sizes."""

    factors: MessageFactors | None
    load: np.ndarray
    eff: np.ndarray
    msg_s: np.ndarray


class RouteCache:
    """Routes of each (src, dst) pattern, for one placement of ranks on one topology,
    and what each (pattern, sizes) costs in fast mode (the same every iteration, every
    bucket of one size and every pipeline step of one segment size)."""

    def __init__(self) -> None:
        self._store: dict[bytes, _Routed] = {}
        self._priced: dict[bytes, _Priced] = {}
        self._pairs: PairRoutes | None = None
        # keys of the phases asked for last, by the identity of their arrays (a
        # pipeline's steady steps share theirs): no hashing of the same arrays again
        self._keys: dict[tuple[int, ...], tuple[tuple[np.ndarray, ...], bytes]] = {}

    #: Phases whose keys are kept by the identity of their arrays (which they hold).
    KEYS = 4

    def _key(self, arrays: tuple[np.ndarray, ...], digest: bool) -> bytes:
        """The key of ``arrays`` (a pattern's ``src, dst``, or with ``nbytes``): their
        bytes, or their blake2b digest; remembered for the last :data:`KEYS` sets of
        arrays by identity."""
        ident = (*map(id, arrays), digest)
        hit = self._keys.get(ident)
        if hit is not None and all(a is b for a, b in zip(hit[0], arrays, strict=True)):
            return hit[1]
        if digest:
            h = hashlib.blake2b(digest_size=20)
            for a in arrays:
                h.update(np.ascontiguousarray(a).data)
                h.update(b"|")
            key = h.digest()
        else:
            key = b"|".join(a.tobytes() for a in arrays)
        if len(self._keys) >= self.KEYS:
            self._keys.pop(next(iter(self._keys)))
        self._keys[ident] = (arrays, key)
        return key

    #: Patterns whose routes are kept where the router's routes are kept pair by pair
    #: (:class:`~dlscale.simulator.topology.routing.PairRoutes`); all of them otherwise.
    KEEP = 4
    #: Priced (pattern, sizes) kept, the most recent: a pipeline's steady steps repeat
    #: one after another (each holds two floats per link: 3 MB on 27,648 GPUs).
    PRICED = 32

    def back(self, phase: Phase, table: LinkTable, router, rank_nodes: np.ndarray) -> Routes:
        """Routes of ``phase``'s messages from receiver to sender, row for row with
        :meth:`get`'s (the same rails in the same order)."""
        return self.get(reversed_phase(phase), table, router, rank_nodes).routes

    def get(self, phase: Phase, table: LinkTable, router, rank_nodes: np.ndarray) -> _Routed:
        if phase.within is not None and phase.rows is not None \
                and getattr(router, "pairwise", False):
            # some of a full step's pairs, each routed as on its own: those rows of its
            # routes, bit for bit what routing them gives
            return _rows_of(self.get(phase.within, table, router, rank_nodes), phase.rows,
                            len(phase.within.src), router.rails)
        key = self._key((phase.src, phase.dst), digest=False)
        hit = self._store.get(key)
        if hit is None:
            src, dst = rank_nodes[phase.src], rank_nodes[phase.dst]
            if getattr(router, "pairwise", False):
                if self._pairs is None or self._pairs.router is not router \
                        or self._pairs.table is not table:
                    self._pairs = PairRoutes(table, router)
                r = self._pairs.route(src, dst)
            else:
                r = route(table, router, src, dst)
            valid = r.links >= 0
            hit = _Routed(r, valid)
            if self._pairs is not None and len(self._store) >= self.KEEP:
                # gathered again from the pairs' routes when asked for (bounded memory)
                self._store.pop(next(iter(self._store)))
            self._store[key] = hit
        return hit

    def priced(self, phase: Phase, table: LinkTable, router, rank_nodes: np.ndarray,
               factors: MessageFactors | None) -> _Priced:
        """``(load, eff, msg_s)`` of one repetition of ``phase`` (computed once per
        pattern, sizes and factors): the bytes on every link, the same weighted by the
        per-size factors, and each message's seconds.

        A pipeline's filling and draining step (some rows of its full step, on a
        pairwise router) is priced where it is met and not kept: each is met once per
        collective (a training run asks each size once), and the digest of its arrays
        that a cache needs cost as much as pricing it (issue 27 item 5)."""
        rows_of_full = phase.within is not None and phase.rows is not None \
            and getattr(router, "pairwise", False)
        key = b""
        if not rows_of_full:
            key = self._key((phase.src, phase.dst, phase.nbytes), digest=True)
            hit = self._priced.get(key)
            if hit is not None and hit.factors is factors:
                return hit
        if phase.within is not None and phase.rows is not None and rows_of_full:
            # some of a full step's pairs: walk those rows of its routes (the same rows,
            # in the same order, as the routes of these pairs alone; not copied)
            r = self.get(phase.within, table, router, rank_nodes).routes
            at = _subflow_rows(phase.rows, len(phase.within.src), router.rails)
            pair = np.tile(np.arange(len(phase.rows)), router.rails)
            fraction, latency_s = r.fraction[at], r.latency_s[at]
        else:
            r = self.get(phase, table, router, rank_nodes).routes
            at = np.arange(len(r.pair))
            pair, fraction, latency_s = r.pair, r.fraction, r.latency_s
        sub_bytes = phase.nbytes[pair] * fraction
        load = _link_sums(r.links, at, sub_bytes, table.n_links)
        eff = load
        if factors is not None:                    # as message_costs weighs them
            fl, fb = factors.at(phase.nbytes[pair])
            eff, latency_s = _link_sums(r.links, at, sub_bytes / fb, table.n_links), latency_s * fl
            if factors.cross_traffic:              # each message's back route, in part
                back = self.back(phase, table, router, rank_nodes)   # row for row with at's
                eff = eff + _link_sums(back.links, np.arange(len(back.pair)),
                                       factors.cross_traffic * sub_bytes / fb, table.n_links)
        msg_s = _message_s(r.links, at, eff / table.bandwidth_Bps, latency_s, pair,
                           len(phase.src))
        hit = _Priced(factors, load, eff, msg_s)
        if rows_of_full:
            return hit
        if len(self._priced) >= self.PRICED:
            self._priced.pop(next(iter(self._priced)))
        self._priced[key] = hit
        return hit

    def __len__(self) -> int:
        return len(self._store)


def _subflow_rows(rows: np.ndarray, n_pairs: int, rails: int) -> np.ndarray:
    """The subflows of pairs ``rows`` of a routed pattern of ``n_pairs`` pairs: rail by
    rail, as :func:`~dlscale.simulator.topology.routing.route` lays them out."""
    return (np.arange(rails, dtype=np.int64)[:, None] * n_pairs + rows[None, :]).ravel()


def _rows_of(routed: _Routed, rows: np.ndarray, n_pairs: int, rails: int) -> _Routed:
    """The routes of pairs ``rows`` of a routed pattern of ``n_pairs`` pairs."""
    at = _subflow_rows(rows, n_pairs, rails)
    r = routed.routes
    sub = Routes(r.links[at], np.tile(np.arange(len(rows)), rails), r.fraction[at],
                 r.latency_s[at])
    return _Routed(sub, routed.valid[at])


@njit()
def _link_sums(links: np.ndarray, rows: np.ndarray, weights: np.ndarray,
               n_links: int) -> np.ndarray:
    """``np.bincount(links[rows][links[rows] >= 0], weights of each row)``: the same
    additions in the same order (row by row, hop by hop), without the copies."""
    out = np.zeros(n_links)
    for f in range(len(rows)):
        w = weights[f]
        for h in range(links.shape[1]):
            link = links[rows[f], h]
            if link >= 0:
                out[link] += w
    return out


@njit()
def _message_s(links: np.ndarray, rows: np.ndarray, busy: np.ndarray, latency_s: np.ndarray,
               pair: np.ndarray, n_msg: int) -> np.ndarray:
    """Each message's seconds: the slowest of its subflows (``rows`` of ``links``), each
    its latency plus the busiest link on its path (0 without a hop)."""
    out = np.zeros(n_msg)
    for f in range(len(rows)):
        top = 0.0
        for h in range(links.shape[1]):
            link = links[rows[f], h]
            if link >= 0 and busy[link] > top:
                top = busy[link]
        t = latency_s[f] + top
        if t > out[pair[f]]:
            out[pair[f]] = t
    return out


@njit()
def _advance(clock: np.ndarray, src: np.ndarray, dst: np.ndarray,
             msg_s: np.ndarray) -> np.ndarray:
    """:func:`~dlscale.perfmodel.network.rendezvous.advance_clocks` of one set of clocks
    (before the reductions), in one pass: each message arrives at the later of its
    ranks' clocks plus its seconds, and each of its ranks is done no earlier. The same
    values, bit for bit (a maximum of the same sums, in any order), without the
    ``np.maximum.at`` of a step whose ranks send or receive twice (a pipelined tree's
    55,294 messages on 27,648 GPUs, over 500 times a training iteration)."""
    new = clock.copy()
    for f in range(len(src)):
        s, d = src[f], dst[f]
        a = (clock[s] if clock[s] >= clock[d] else clock[d]) + msg_s[f]
        if a > new[s]:
            new[s] = a
        if a > new[d]:
            new[d] = a
    return new


def phase_loads(routed: _Routed, phase: Phase, n_links: int) -> tuple[np.ndarray, np.ndarray]:
    """Bytes on every link, and bytes of each subflow, of one repetition of ``phase``."""
    r = routed.routes
    sub_bytes = phase.nbytes[r.pair] * r.fraction
    weights = np.broadcast_to(sub_bytes[:, None], r.links.shape)[routed.valid]
    load = np.bincount(r.links[routed.valid], weights=weights, minlength=n_links)
    return load, sub_bytes


def message_costs(routed: _Routed, phase: Phase, load: np.ndarray, sub_bytes: np.ndarray,
                  factors: MessageFactors | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What one repetition of ``phase`` costs the network, per-size factors applied to
    its :func:`phase_loads` ``(load, sub_bytes)``.

    Returns ``(load, sub_bytes, latency_s)``: the bytes every link carries, each
    subflow's bytes and each subflow's latency. With ``factors``
    (:class:`~dlscale.perfmodel.network.msgfactors.MessageFactors`) a message of ``n`` bytes
    weighs ``n / f_bw(n)`` bytes and waits ``f_lat(n)`` times its path latency, the
    same rule as the analytical model's; ``n`` is the whole message's size, not a
    rail's share of it.
    """
    r = routed.routes
    if factors is None:
        return load, sub_bytes, r.latency_s
    fl, fb = factors.at(phase.nbytes[r.pair])
    sub_eff = sub_bytes / fb
    weights = np.broadcast_to(sub_eff[:, None], r.links.shape)[routed.valid]
    eff = np.bincount(r.links[routed.valid], weights=weights, minlength=len(load))
    return eff, sub_eff, r.latency_s * fl


class PhaseLinkTime(Sequence[tuple[int, float, float, np.ndarray]]):
    """``(phase index, start_s, duration_s, link load / capacity per second of the
    step)`` of each phase, the last computed when read (a trace reads them; a run
    that writes none keeps one array per priced pattern, not one per phase)."""

    def __init__(self, capacity_Bps: np.ndarray) -> None:
        self.capacity_Bps = capacity_Bps
        self._rows: list[tuple[int, float, float, np.ndarray, float]] = []

    def add(self, i: int, start_s: float, duration_s: float, eff: np.ndarray,
            unit: float) -> None:
        """One phase: ``eff`` the bytes on each link (per-size factors applied) of one
        of its steps, ``unit`` the seconds of one step."""
        self._rows.append((i, start_s, duration_s, eff, unit))

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        i, start, dur, eff, unit = self._rows[k]
        return i, start, dur, eff / self.capacity_Bps / unit


def run_fast(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
             cache: RouteCache, gamma_s_per_B: float = 0.0,
             factors: MessageFactors | None = None) -> dict:
    """Simulate ``phases`` step by step; returns times, link bytes and per-phase loads.

    Contention is that of the whole step's pattern at once; each rank keeps its own
    clock, so ranks that do not wait on each other do not wait for the slowest pair
    (as in flow mode; the rule is :func:`~dlscale.perfmodel.network.rendezvous.advance_clocks`,
    which the analytical model applies too). A repeated phase is iterated until the per-step advance of the
    clocks repeats, then extrapolated (exact for the periodic regime of a ring).

    Returns a dict with ``time_s``, ``phase_times_s`` (per phase, repetitions
    included), ``step_times_s`` (one per step), ``link_bytes`` and ``phase_link_time``
    (list of ``(phase index, start_s, duration_s, link load / capacity per second of
    the step)`` for traces).
    """
    cap = table.bandwidth_Bps
    n_ranks = len(rank_nodes)
    clock = np.zeros(n_ranks)
    link_bytes = np.zeros(table.n_links)
    phase_times = np.zeros(len(phases))
    step_times = []
    per_phase = PhaseLinkTime(cap)
    for i, ph in enumerate(phases):
        priced = cache.priced(ph, table, router, rank_nodes, factors)
        # contiguous: one compiled signature of the clock step (a strided view, as
        # some schedules' steps are, compiled a second one: 0.3 s of a first run)
        src, dst = np.ascontiguousarray(ph.src), np.ascontiguousarray(ph.dst)
        load, msg_s = priced.load, priced.msg_s
        reduce_s = None
        if ph.reduce and gamma_s_per_B > 0 and len(ph.dst):
            reduce_s = gamma_s_per_B * np.bincount(ph.dst, weights=ph.nbytes, minlength=n_ranks)
        t0 = float(clock.max(initial=0.0))
        ends = []
        prev_inc = None
        rep = 0
        while rep < ph.repeat:
            new = _advance(clock, src, dst, msg_s)
            if reduce_s is not None:
                new += reduce_s
            inc = new - clock
            clock = new
            ends.append(float(clock.max(initial=0.0)))
            rep += 1
            if prev_inc is not None and np.allclose(inc, prev_inc, rtol=1e-12, atol=1e-18):
                left = ph.repeat - rep
                clock = clock + inc * left
                last = ends[-1]
                step = float(inc.max(initial=0.0))
                ends.extend(last + step * np.arange(1, left + 1))
                break
            prev_inc = inc
        ends_arr = np.asarray(ends)
        steps = np.diff(np.concatenate([[t0], ends_arr]))
        step_times.append(steps)
        dur = float(ends_arr[-1] - t0) if len(ends_arr) else 0.0
        phase_times[i] = dur
        link_bytes += load * ph.repeat
        unit = dur / ph.repeat if dur > 0 else 1.0
        per_phase.add(i, t0, dur, priced.eff, unit)
    return {"time_s": float(clock.max(initial=0.0)), "phase_times_s": phase_times,
            "step_times_s": np.concatenate(step_times) if step_times else np.empty(0),
            "link_bytes": link_bytes, "phase_link_time": per_phase}
