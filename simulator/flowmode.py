"""Flow mode: every rank a SimPy process, every message a max-min fair flow.

A rank's step ``k`` posts its receives and its sends of that step; a message moves
(as one flow per rail, see :func:`~dlscale.simulator.routing.route`) once its
receiver has posted the receive (rendezvous protocol, as MPI uses for large
messages); the rank waits until its sends are delivered and its receives have
arrived (MPI ``sendrecv``), then reduces what it received (``gamma`` per byte).
Ranks advance independently, so a late rank delays only those that wait on it.

Examples
--------
>>> from dlscale.simulator.topology_fattree import fat_tree_graph
>>> from dlscale.simulator.linktable import LinkTable
>>> from dlscale.simulator.routing import make_router
>>> from dlscale.simulator.schedules import build_schedule
>>> from dlscale.simulator.fastmode import RouteCache
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

from .fastmode import RouteCache, phase_loads
from .flow import FlowNetwork
from .linktable import LinkTable
from .schedules import Phase

__all__ = ["run_flow"]


def _by_rank(ranks: np.ndarray, n_ranks: int) -> list[np.ndarray]:
    order = np.argsort(ranks, kind="stable")
    bounds = np.searchsorted(ranks[order], np.arange(n_ranks + 1))
    return [order[bounds[r]:bounds[r + 1]] for r in range(n_ranks)]


def run_flow(phases: list[Phase], table: LinkTable, router, rank_nodes: np.ndarray,
             cache: RouteCache, gamma_s_per_B: float = 0.0,
             on_rates: Callable[[float, np.ndarray], None] | None = None,
             record_ranks: np.ndarray | None = None) -> dict:
    """Simulate ``phases`` with per-rank processes over a :class:`FlowNetwork`.

    Returns a dict with ``time_s``, ``step_times_s``, ``phase_times_s``,
    ``link_bytes`` and ``rank_steps`` (``{rank: [(step, start_s, end_s, label)]}``
    for the ranks in ``record_ranks``).
    """
    env = simpy.Environment()
    net = FlowNetwork(env, table.bandwidth_Bps, on_rates)
    n_ranks = len(rank_nodes)
    link_bytes = np.zeros(table.n_links)
    prepared = []
    for ph in phases:
        routed = cache.get(ph, table, router, rank_nodes)
        load, sub_bytes = phase_loads(routed, ph, table.n_links)
        link_bytes += load * ph.repeat
        n_msg = len(ph.src)
        rails = len(routed.routes.pair) // max(n_msg, 1)
        prepared.append((ph, routed, sub_bytes, rails, _by_rank(ph.src, n_ranks),
                         _by_rank(ph.dst, n_ranks)))
    steps = [i for i, ph in enumerate(phases) for _ in range(ph.repeat)]
    step_end = np.zeros(len(steps))
    arrived: dict[tuple[int, int], simpy.Event] = {}
    posted: dict[tuple[int, int], simpy.Event] = {}
    record = set() if record_ranks is None else {int(r) for r in record_ranks}
    rank_steps: dict[int, list] = {r: [] for r in record}

    def message_event(k: int, m: int) -> simpy.Event:
        ev = arrived.get((k, m))
        if ev is None:
            ev = arrived[(k, m)] = env.event()
        return ev

    def post_event(k: int, m: int) -> simpy.Event:
        ev = posted.get((k, m))
        if ev is None:
            ev = posted[(k, m)] = env.event()
        return ev

    def start(k: int, pi: int, m: int) -> None:
        ph, routed, sub_bytes, rails, _, _ = prepared[pi]
        n_msg = len(ph.src)
        r = routed.routes
        subs = [net.transfer(r.links[m + j * n_msg], sub_bytes[m + j * n_msg],
                             r.latency_s[m + j * n_msg]) for j in range(rails)]
        done = subs[0] if rails == 1 else simpy.AllOf(env, subs)
        ev = message_event(k, m)
        done.callbacks.append(lambda _e: ev.succeed())

    def send(k: int, pi: int, m: int) -> simpy.Event:
        ready = posted.pop((k, m), None)
        if ready is not None and ready.triggered:
            start(k, pi, m)
        else:
            ready = ready if ready is not None else post_event(k, m)
            ready.callbacks.append(lambda _e: start(k, pi, m))
        return message_event(k, m)

    def rank(r: int):
        for k, pi in enumerate(steps):
            ph, _, _, _, outs, ins = prepared[pi]
            out_m, in_m = outs[r], ins[r]
            if len(out_m) == 0 and len(in_m) == 0:
                continue
            t_start = env.now
            for m in in_m:
                ev = posted.get((k, int(m)))
                if ev is None:
                    posted[(k, int(m))] = env.event().succeed()
                else:  # the sender is already waiting
                    del posted[(k, int(m))]
                    ev.succeed()
            waits = [send(k, pi, int(m)) for m in out_m]
            waits += [message_event(k, int(m)) for m in in_m]
            yield simpy.AllOf(env, waits)
            for m in in_m:
                arrived.pop((k, int(m)), None)
            if ph.reduce and gamma_s_per_B > 0 and len(in_m):
                yield env.timeout(gamma_s_per_B * float(ph.nbytes[in_m].sum()))
            step_end[k] = max(step_end[k], env.now)
            if r in record:
                rank_steps[r].append((k, t_start, env.now, ph.label))

    for r in range(n_ranks):
        env.process(rank(r))
    env.run()
    ends = np.maximum.accumulate(step_end) if len(step_end) else step_end
    step_times = np.diff(np.concatenate([[0.0], ends]))
    phase_times = np.zeros(len(phases))
    np.add.at(phase_times, np.asarray(steps, dtype=np.int64), step_times)
    return {"time_s": float(env.now), "step_times_s": step_times,
            "phase_times_s": phase_times, "link_bytes": link_bytes, "rank_steps": rank_steps}
