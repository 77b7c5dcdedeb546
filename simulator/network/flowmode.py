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

from ..topology.linktable import LinkTable
from .fastmode import RouteCache, phase_loads
from .flow import FlowNetwork
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
        rt = routed.routes
        rails = len(rt.pair) // max(n_msg, 1)
        # per message: its subflows as (clean link ids, bytes, latency)
        subflows = [[(rt.links[m + j * n_msg][rt.links[m + j * n_msg] >= 0],
                      float(sub_bytes[m + j * n_msg]), float(rt.latency_s[m + j * n_msg]))
                     for j in range(rails)] for m in range(n_msg)]
        outs = [x.tolist() for x in _by_rank(ph.src, n_ranks)]
        ins = [x.tolist() for x in _by_rank(ph.dst, n_ranks)]
        prepared.append((ph, subflows, outs, ins))
    steps = [i for i, ph in enumerate(phases) for _ in range(ph.repeat)]
    step_end = np.zeros(len(steps))
    arrived: dict[tuple[int, int], simpy.Event] = {}
    posted: dict[tuple[int, int], int] = {}  # receiver posted first: -1; sender waiting: phase
    record = set() if record_ranks is None else {int(r) for r in record_ranks}
    rank_steps: dict[int, list] = {r: [] for r in record}

    def message_event(key: tuple[int, int]) -> simpy.Event:
        ev = arrived.get(key)
        if ev is None:
            ev = arrived[key] = env.event()
        return ev

    def start(key: tuple[int, int], pi: int) -> None:
        subs = prepared[pi][1][key[1]]
        ev = message_event(key)
        if len(subs) == 1:
            links, nbytes, lat = subs[0]
            net.send(links, nbytes, lat, ev)
            return
        parts = [net.transfer(links, nbytes, lat) for links, nbytes, lat in subs]
        def deliver(_e: simpy.Event) -> None:
            ev.succeed()

        simpy.AllOf(env, parts).callbacks.append(deliver)

    def rank(r: int):
        for k, pi in enumerate(steps):
            ph, _, outs, ins = prepared[pi]
            out_m, in_m = outs[r], ins[r]
            if not out_m and not in_m:
                continue
            t_start = env.now
            for m in in_m:  # post the receives (rendezvous)
                key = (k, m)
                waiting = posted.pop(key, None)
                if waiting is None:
                    posted[key] = -1
                else:  # the sender is already there
                    start(key, waiting)
            for m in out_m:
                key = (k, m)
                if posted.pop(key, None) == -1:
                    start(key, pi)
                else:
                    posted[key] = pi
            waits = [message_event((k, m)) for m in out_m]
            waits += [message_event((k, m)) for m in in_m]
            yield from waits  # one at a time: done when all have fired
            for m in in_m:  # the receiver forgets the message (the sender holds its event)
                arrived.pop((k, m), None)
            if ph.reduce and gamma_s_per_B > 0 and in_m:
                yield env.timeout(gamma_s_per_B * float(ph.nbytes[in_m].sum()))
            if env.now > step_end[k]:
                step_end[k] = env.now
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
