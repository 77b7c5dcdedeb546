"""Flow mode: every rank a SimPy process, every message a max-min fair flow.

A rank's step ``k`` posts its receives and its sends of that step; a message moves
(as one flow per rail, see :func:`~dlscale.simulator.topology.routing.route`) once its
receiver has posted the receive (rendezvous protocol, as MPI uses for large
messages); the rank waits until its sends are delivered and its receives have
arrived (MPI ``sendrecv``), then reduces what it received (``gamma`` per byte).
Ranks advance independently, so a late rank delays only those that wait on it.

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> from dlscale.simulator.topology.linktable import LinkTable
>>> from dlscale.simulator.topology.routing import make_router
>>> from dlscale.simulator.network.schedules import build_schedule
>>> from dlscale.simulator.network.fastmode import RouteCache
>>> G = fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9, host_latency_s=0.0,
...                    hop_latency_s=0.0)
>>> out = run_flow(build_schedule("allreduce", "ring", 16, 16e6), LinkTable.from_graph(G),
...                make_router(G), np.arange(16), RouteCache())
>>> round(out["time_s"], 6)
0.03
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.msgfactors import MessageFactors
from dlscale.simulator.network import flowwatch
from dlscale.simulator.network.fastmode import RouteCache, message_costs, phase_loads
from dlscale.simulator.network.flow import FlowNetwork
from dlscale.simulator.network.flowengine import (
    CompiledSchedule,
    message_durations,
    run_compiled,
    total_messages,
)
from dlscale.simulator.network.flowsteps import independent, phase_ranks, run_steps
from dlscale.simulator.network.schedules import Phase
from dlscale.simulator.topology.linktable import LinkTable

__all__ = ["prepare_flow", "run_flow"]


def _by_rank(ranks: np.ndarray, n_ranks: int) -> list[np.ndarray]:
    order = np.argsort(ranks, kind="stable")
    bounds = np.searchsorted(ranks[order], np.arange(n_ranks + 1))
    return [order[bounds[r]:bounds[r + 1]] for r in range(n_ranks)]


def prepare_flow(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
                 cache: RouteCache, gamma_s_per_B: float = 0.0,
                 factors: MessageFactors | None = None) -> CompiledSchedule:
    """Route ``phases`` and flatten them for the compiled engine
    (:func:`~dlscale.simulator.network.flowengine.run_compiled`)."""
    n_ranks = len(rank_nodes)
    msg_off, sub_off, rank_off = [0], [0], [0]
    src, dst, sub_msg, links, sub_bytes, sub_lat, rank_msg, reduce_s = ([] for _ in range(8))
    weights: list[np.ndarray] = []
    penalties: list[np.ndarray] = []
    H, pool = 1, np.zeros(n_ranks, dtype=np.int64)
    for ph in phases:
        routed = cache.get(ph, table, router, rank_nodes)
        _, sb, lat = message_costs(routed, ph, *phase_loads(routed, ph, table.n_links), factors)
        rt = routed.routes
        lk, w = _with_back_routes(rt.links, ph, table, router, rank_nodes, cache, factors)
        n_msg = len(ph.src)
        src.append(ph.src)
        dst.append(ph.dst)
        msg_off.append(msg_off[-1] + n_msg)
        sub_msg.append(rt.pair)
        links.append(lk)
        weights.append(w)
        penalties.append(sharing_penalty(rt.links, rt.latency_s, table, factors))
        H = max(H, lk.shape[1])
        sub_bytes.append(sb)
        sub_lat.append(lat)
        sub_off.append(sub_off[-1] + len(rt.pair))
        # each rank's messages: the ones it sends, then the ones it receives
        outs, ins = _by_rank(ph.src, n_ranks), _by_rank(ph.dst, n_ranks)
        for r in range(n_ranks):
            rank_msg.append(outs[r])
            rank_msg.append(ins[r])
            rank_off.append(rank_off[-1] + len(outs[r]) + len(ins[r]))
        # a sender waits for its messages' delivery: at most its sends of one step
        # are in flight, each as its subflows
        subs = np.bincount(rt.pair, minlength=n_msg)
        pool = np.maximum(pool, np.bincount(ph.src, weights=subs, minlength=n_ranks)
                          .astype(np.int64))
        red: np.ndarray = np.zeros(n_ranks)
        if ph.reduce and gamma_s_per_B > 0 and n_msg:
            red = gamma_s_per_B * np.bincount(ph.dst, weights=ph.nbytes, minlength=n_ranks)
        reduce_s.append(red)
    pad = [np.pad(lk, ((0, 0), (0, H - lk.shape[1])), constant_values=-1) for lk in links]
    wpad = [np.pad(w, ((0, 0), (0, H - w.shape[1]))) for w in weights]
    def cat(xs: list, dt: type) -> np.ndarray:
        return np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)

    return CompiledSchedule(
        step_phase=sched_steps(phases),
        msg_off=np.asarray(msg_off, dtype=np.int64), msg_src=cat(src, np.int64),
        msg_dst=cat(dst, np.int64), sub_off=np.asarray(sub_off, dtype=np.int64),
        sub_msg=cat(sub_msg, np.int64),
        sub_links=(np.concatenate(pad).astype(np.int64) if pad
                   else np.zeros((0, 1), np.int64)),
        sub_bytes=cat(sub_bytes, np.float64), sub_latency_s=cat(sub_lat, np.float64),
        rank_off=_rank_offsets(rank_off, len(phases), n_ranks),
        rank_msg=cat(rank_msg, np.int64),
        reduce_s=(np.stack(reduce_s) if reduce_s else np.zeros((0, n_ranks))),
        pool=int(pool.sum()),
        sub_weight=(np.concatenate(wpad).astype(np.float64) if wpad
                    else np.zeros((0, 1), np.float64)),
        sub_penalty=cat(penalties, np.float64))


def sharing_penalty(links: np.ndarray, latency_s: np.ndarray, table: LinkTable,
                    factors: MessageFactors | None) -> np.ndarray:
    """Each subflow's sharing penalty: 1, or with SimGrid's weight-S
    (:attr:`MessageFactors.weight_S_bytes`) its route's latency plus ``weight_S`` over
    each link's bandwidth (``NetworkCm02Model::communicate``); a route of no link: 1."""
    if factors is None or not factors.weight_S_bytes:
        return np.ones(len(links))
    inv = np.where(links >= 0, 1.0 / table.bandwidth_Bps[np.maximum(links, 0)], 0.0)
    pen = latency_s + factors.weight_S_bytes * inv.sum(axis=1)
    return np.where(pen > 0, pen, 1.0)


def _with_back_routes(links: np.ndarray, ph: Phase, table: LinkTable, router,
                      rank_nodes: np.ndarray, cache: RouteCache,
                      factors: MessageFactors | None) -> tuple[np.ndarray, np.ndarray]:
    """Each subflow's links and their weights: 1 on its route, then, with SimGrid's
    cross-traffic (:attr:`MessageFactors.cross_traffic`), the links of its message's
    back route at that share."""
    w = (links >= 0).astype(np.float64)
    if factors is None or not factors.cross_traffic:
        return links, w
    back = cache.back(ph, table, router, rank_nodes).links
    return (np.concatenate([links, back], axis=1),
            np.concatenate([w, np.where(back >= 0, factors.cross_traffic, 0.0)], axis=1))


def _run_compiled(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
                  cache: RouteCache, gamma_s_per_B: float,
                  factors: MessageFactors | None, events: bool = False) -> dict:
    """The compiled engine; without events where messages cannot meet (unless
    ``events``: the event loop for every schedule, for tests)."""
    sched = prepare_flow(phases, table, router, rank_nodes, cache, gamma_s_per_B, factors)
    if not events and independent(sched.msg_off, sched.msg_src, sched.msg_dst, sched.sub_off,
                                  sched.sub_msg, sched.sub_links, sched.sub_bytes):
        dur = message_durations(sched, len(rank_nodes), table.bandwidth_Bps)
        with flowwatch.watched(total_messages(sched)):
            step_end = run_steps(sched.step_phase, sched.msg_off, sched.msg_src, sched.msg_dst,
                                 dur, sched.reduce_s,
                                 *phase_ranks(sched.rank_off, len(phases), len(rank_nodes)),
                                 flowwatch.POLL_WORK)
    else:
        _, step_end = run_compiled(sched, len(rank_nodes), table.bandwidth_Bps)
    end = float(step_end.max(initial=0.0))  # the last rank's last step (not a stale event)
    link_bytes = np.zeros(table.n_links)
    for ph in phases:
        link_bytes += phase_loads(cache.get(ph, table, router, rank_nodes), ph,
                                  table.n_links)[0] * ph.repeat
    return _result(phases, float(end), step_end, link_bytes, {})


def _result(phases: list[Phase], end_s: float, step_end: np.ndarray, link_bytes: np.ndarray,
            rank_steps: dict) -> dict:
    steps = sched_steps(phases)
    ends = np.maximum.accumulate(step_end) if len(step_end) else step_end
    step_times = np.diff(np.concatenate([[0.0], ends]))
    phase_times = np.zeros(len(phases))
    np.add.at(phase_times, steps, step_times)
    return {"time_s": end_s, "step_times_s": step_times, "phase_times_s": phase_times,
            "link_bytes": link_bytes, "rank_steps": rank_steps}


def sched_steps(phases: list[Phase]) -> np.ndarray:
    """Phase index of every step (phases expanded by their repeat count)."""
    return np.repeat(np.arange(len(phases)), [ph.repeat for ph in phases]).astype(np.int64)


def _rank_offsets(flat: list[int], n_phases: int, n_ranks: int) -> np.ndarray:
    """Offsets ``[p * (R + 1) + r]`` from one running count over (phase, rank)."""
    out = np.zeros(n_phases * (n_ranks + 1), dtype=np.int64)
    for p in range(n_phases):
        out[p * (n_ranks + 1):(p + 1) * (n_ranks + 1)] = flat[p * n_ranks:(p + 1) * n_ranks + 1]
    return out


def run_flow(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
             cache: RouteCache, gamma_s_per_B: float = 0.0,
             on_rates: Callable[[float, np.ndarray], None] | None = None,
             record_ranks: np.ndarray | None = None,
             factors: MessageFactors | None = None, engine: str = "auto") -> dict:
    """Simulate ``phases`` with per-rank processes over a :class:`FlowNetwork`.

    Returns a dict with ``time_s``, ``step_times_s``, ``phase_times_s``,
    ``link_bytes`` and ``rank_steps`` (``{rank: [(step, start_s, end_s, label)]}``
    for the ranks in ``record_ranks``).

    ``engine``: ``"simpy"`` runs one SimPy process per rank (and is the one that can
    report link rates and per-rank steps for traces); ``"compiled"`` runs the same
    model as one numba loop (:mod:`dlscale.simulator.network.flowengine`); ``"auto"`` takes the compiled one
    unless a trace is asked for. Both give the same times (tested).
    """
    if engine not in ("auto", "simpy", "compiled"):
        raise ConfigError(f"engine: unknown value {engine!r}; valid: auto, simpy, compiled")
    tracing = on_rates is not None or record_ranks is not None
    if engine == "compiled" or (engine == "auto" and not tracing):
        return _run_compiled(phases, table, router, rank_nodes, cache, gamma_s_per_B, factors)
    link_bytes, prepared = _prepare_simpy(phases, table, router, rank_nodes, cache, factors)
    run = _SimpyRun(phases, prepared, len(rank_nodes), table.bandwidth_Bps, gamma_s_per_B,
                    on_rates, record_ranks)
    return _result(phases, run.run(), run.step_end, link_bytes, run.rank_steps)


def _prepare_simpy(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
                   cache: RouteCache, factors: MessageFactors | None
                   ) -> tuple[np.ndarray, list[tuple]]:
    """Bytes on every link, and per phase ``(phase, subflows per message, messages sent
    by each rank, messages received by each rank)``, each subflow as
    ``(link ids, bytes, latency)``."""
    n_ranks = len(rank_nodes)
    link_bytes = np.zeros(table.n_links)
    prepared = []
    for ph in phases:
        routed = cache.get(ph, table, router, rank_nodes)
        load, sub_bytes = phase_loads(routed, ph, table.n_links)
        link_bytes += load * ph.repeat
        _, sub_bytes, latency_s = message_costs(routed, ph, load, sub_bytes, factors)
        n_msg = len(ph.src)
        rt = routed.routes
        links, weights = _with_back_routes(rt.links, ph, table, router, rank_nodes, cache,
                                           factors)
        rails = len(rt.pair) // max(n_msg, 1)
        pen = sharing_penalty(rt.links, rt.latency_s, table, factors)
        subflows = [[(links[i][links[i] >= 0], float(sub_bytes[i]), float(latency_s[i]),
                      weights[i][links[i] >= 0], float(pen[i]))
                     for i in (m + j * n_msg for j in range(rails))] for m in range(n_msg)]
        outs = [x.tolist() for x in _by_rank(ph.src, n_ranks)]
        ins = [x.tolist() for x in _by_rank(ph.dst, n_ranks)]
        prepared.append((ph, subflows, outs, ins))
    return link_bytes, prepared


class _SimpyRun:
    """One SimPy process per rank over a :class:`FlowNetwork` (rendezvous messages)."""

    def __init__(self, phases: list[Phase], prepared: list[tuple], n_ranks: int,
                 capacity_Bps: np.ndarray, gamma_s_per_B: float,
                 on_rates: Callable[[float, np.ndarray], None] | None,
                 record_ranks: np.ndarray | None) -> None:
        self.env = simpy.Environment()
        self.net = FlowNetwork(self.env, capacity_Bps, on_rates)
        self.prepared = prepared
        self.n_ranks = n_ranks
        self.gamma_s_per_B = gamma_s_per_B
        self.steps = [i for i, ph in enumerate(phases) for _ in range(ph.repeat)]
        self.step_end = np.zeros(len(self.steps))
        self.arrived: dict[tuple[int, int], simpy.Event] = {}
        # receiver posted first: -1; sender waiting: its phase
        self.posted: dict[tuple[int, int], int] = {}
        self.record = set() if record_ranks is None else {int(r) for r in record_ranks}
        self.rank_steps: dict[int, list] = {r: [] for r in self.record}

    def run(self) -> float:
        """Run every rank to its last step; returns the end time."""
        for r in range(self.n_ranks):
            self.env.process(self._rank(r))
        self.env.run()
        return float(self.env.now)

    def _event(self, key: tuple[int, int]) -> simpy.Event:
        ev = self.arrived.get(key)
        if ev is None:
            ev = self.arrived[key] = self.env.event()
        return ev

    def _start(self, key: tuple[int, int], pi: int) -> None:
        subs = self.prepared[pi][1][key[1]]
        ev = self._event(key)
        if len(subs) == 1:
            links, nbytes, lat, w, pen = subs[0]
            self.net.send(links, nbytes, lat, ev, w, pen)
            return
        parts = [self.net.transfer(links, nbytes, lat, w, pen)
                 for links, nbytes, lat, w, pen in subs]

        def deliver(_e: simpy.Event) -> None:
            ev.succeed()

        simpy.AllOf(self.env, parts).callbacks.append(deliver)

    def _post(self, k: int, pi: int, out_m: list[int], in_m: list[int]) -> None:
        """Post a step's receives and sends; a message starts once both ends posted."""
        for m in in_m:
            key = (k, m)
            waiting = self.posted.pop(key, None)
            if waiting is None:
                self.posted[key] = -1
            else:  # the sender is already there
                self._start(key, waiting)
        for m in out_m:
            key = (k, m)
            if self.posted.pop(key, None) == -1:
                self._start(key, pi)
            else:
                self.posted[key] = pi

    def _rank(self, r: int):
        env = self.env
        for k, pi in enumerate(self.steps):
            ph, _, outs, ins = self.prepared[pi]
            out_m, in_m = outs[r], ins[r]
            if not out_m and not in_m:
                continue
            t_start = env.now
            self._post(k, pi, out_m, in_m)
            waits = [self._event((k, m)) for m in out_m + in_m]
            yield from waits  # one at a time: done when all have fired
            for m in in_m:  # the receiver forgets the message (the sender holds its event)
                self.arrived.pop((k, m), None)
            if ph.reduce and self.gamma_s_per_B > 0 and in_m:
                yield env.timeout(self.gamma_s_per_B * float(ph.nbytes[in_m].sum()))
            if env.now > self.step_end[k]:
                self.step_end[k] = env.now
            if r in self.record:
                self.rank_steps[r].append((k, t_start, env.now, ph.label))
