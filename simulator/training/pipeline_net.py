"""The pipeline's and the data-parallel groups' messages on the routed network, as flows.

Every message of :mod:`~dlscale.simulator.training.pipeline` (a stage's activations or
their gradient to its neighbour stage, a step of a data-parallel ring) is routed
between the real ranks' devices by the cluster's router
(:func:`~dlscale.simulator.topology.routing.route`, one subflow per rail, as every
simulated collective is) and moves as max-min fair flows on the one flow model,
:class:`~dlscale.simulator.network.flow.FlowNetwork`, with the per-size factors of
:func:`~dlscale.simulator.network.fastmode.message_costs`. Two things keep a run of
thousands of ranks and a million messages short without changing the answer:

- **A message group alone runs without the flow model.** A group (the messages that
  start together: a stage's ``tp`` ranks sending to their peers) whose subflows share
  no link with each other or with any group in flight takes what a
  :class:`FlowNetwork` would give it alone: each subflow its path's latency, then its
  bytes at its slowest link's rate. If a later group meets it (shares a link while it
  is in flight), what is left of it (bytes at that instant, or latency not yet
  waited) moves into the :class:`FlowNetwork` beside the newcomer, which shares the
  links from then on. The test holds this equal to every group in the flow model.
- **The tensor-parallel ranks of a group send as one flow per rail** where that is
  exact: when every message of the run crosses the network (none stays inside a
  node) and a device's link to its node is at least as fast as the node's links
  into the network. Then every flow on a device link also crosses one of its node's
  network links, so the device link is never the one that limits it, and the
  ``tp`` messages between the same two nodes, on the same links of each rail, are
  one flow of their bytes together. Otherwise each rank's message is its own flows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import simpy

from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.network.flow import FlowNetwork
from dlscale.simulator.network.simulated import SimulatedNetwork
from dlscale.simulator.topology.routing import route

__all__ = ["Group", "GroupFlows", "bundling_exact"]


@dataclass(frozen=True)
class Group:
    """A routed group of messages that start together.

    Attributes
    ----------
    links : tuple of ndarray
        Valid link ids of each subflow.
    nbytes : ndarray
        Bytes of each subflow (per-size factors applied).
    latency_s : ndarray
        Path latency of each subflow (factors applied).
    rate_Bps : ndarray
        Each subflow's rate alone: its slowest link's bandwidth.
    disjoint : bool
        No two subflows share a link.
    all_links : ndarray of int64
        Every link of the group, once each.
    alone_s : float
        Seconds the group takes alone (its slowest subflow).
    """

    links: tuple[np.ndarray, ...]
    nbytes: np.ndarray
    latency_s: np.ndarray
    rate_Bps: np.ndarray
    disjoint: bool
    all_links: np.ndarray
    alone_s: float


def bundling_exact(net: SimulatedNetwork, pairs: np.ndarray) -> bool:
    """Whether the ``tp`` ranks' messages may travel as one flow per rail (module docstring).

    ``pairs``: every ``(src rank, dst rank)`` the run sends between.
    """
    host = net.rank_host
    if len(pairs) == 0 or bool(np.any(host[pairs[:, 0]] == host[pairs[:, 1]])):
        return False
    t = net.table
    intra = t.level == "intra"
    if not intra.any():
        return False
    # capacity of each host's links into and out of the network, against its devices'
    host_nodes = {int(h) for h in t.node_index(np.unique(net.rank_host).tolist())}
    out_bw: dict[int, float] = {}
    in_bw: dict[int, float] = {}
    for i in np.flatnonzero(~intra):
        s, d = int(t.src[i]), int(t.dst[i])
        if s in host_nodes:
            out_bw[s] = out_bw.get(s, 0.0) + float(t.bandwidth_Bps[i])
        if d in host_nodes:
            in_bw[d] = in_bw.get(d, 0.0) + float(t.bandwidth_Bps[i])
    if not out_bw or not in_bw:
        return False
    slowest_device = float(t.bandwidth_Bps[intra].min())
    return slowest_device >= max(*out_bw.values(), *in_bw.values())


class GroupFlows:
    """Message groups on one network, alone or as flows (module docstring).

    Parameters
    ----------
    env : simpy.Environment
    net : SimulatedNetwork
        The cluster's routed network (:meth:`SimulatedNetwork.from_cluster`).
    bundle : bool
        Send the ``tp`` messages of a group as one flow per rail (only where
        :func:`bundling_exact`).
    every_flow : bool
        Put every group into the flow model (for tests: the answer must not change).
    keep_log : bool
        Keep ``(group id, sent s, delivered s)`` of every group in :attr:`log` (tests).
    """

    def __init__(self, env: simpy.Environment, net: SimulatedNetwork, bundle: bool,
                 every_flow: bool = False, keep_log: bool = False) -> None:
        f = net.message_factors
        if f is not None and (f.cross_traffic or f.weight_S_bytes):
            raise ConfigError(f"network.message_factors: {f.name!r} has SimGrid's cross-"
                              f"traffic or weight-S sharing, which the pipeline simulation "
                              f"does not model; use factors without them")
        self.env = env
        self.net = net
        self.bundle = bundle
        self.every_flow = every_flow
        self.flows = FlowNetwork(env, net.table.bandwidth_Bps)
        self._intra = net.table.level == "intra"
        # per group id: the groups sharing a link with it (itself too), how many of
        # it are in flight, and which of those run alone
        self._groups: list[Group] = []
        self._conflicts: list[list[int]] = []
        self._in_flight: list[int] = []
        self._alone: list[list[_Alone]] = []
        self._on_link: dict[int, list[int]] = {}
        self._cache: dict[tuple, int] = {}
        #: Groups sent, groups that ran alone throughout, groups that met another.
        self.sent = 0
        self.met = 0
        self.log: list[tuple[int, float, float]] | None = [] if keep_log else None

    def group(self, src: Sequence[int], dst: Sequence[int], nbytes: float) -> int:
        """The id of the routed group of messages ``src[i] -> dst[i]`` of ``nbytes``
        each (built once)."""
        key = (tuple(src), tuple(dst), float(nbytes))
        gid = self._cache.get(key)
        if gid is None:
            g = self._build(np.asarray(src), np.asarray(dst), float(nbytes))
            gid = self._cache[key] = len(self._groups)
            self._groups.append(g)
            self._in_flight.append(0)
            self._alone.append([])
            mine = {gid}
            for link in g.all_links.tolist():
                others = self._on_link.setdefault(link, [])
                mine.update(others)
                others.append(gid)
            for h in mine - {gid}:
                self._conflicts[h].append(gid)
            self._conflicts.append(sorted(mine))
        return gid

    def __getitem__(self, gid: int) -> Group:
        return self._groups[gid]

    def _build(self, src: np.ndarray, dst: np.ndarray, nbytes: float) -> Group:
        net, table = self.net, self.net.table
        r = route(table, net.router, net.rank_nodes[src], net.rank_nodes[dst])
        n = len(src)
        lat = r.latency_s.copy()
        eff = np.full(len(r.pair), nbytes) * r.fraction
        f = net.message_factors
        if f is not None:
            fl, fb = f.at(np.full(len(r.pair), nbytes))
            lat, eff = lat * fl, eff / fb
        rails = len(r.pair) // max(n, 1)
        rows: list[np.ndarray] = []
        sub_bytes: list[float] = []
        sub_lat: list[float] = []
        for rail in range(rails):
            idx = rail * n + np.arange(n)
            paths = [r.links[i][r.links[i] >= 0] for i in idx]
            if self.bundle and n > 1:
                nets = [p[~self._intra[p]] for p in paths]
                if all(np.array_equal(nets[0], q) for q in nets[1:]):
                    rows.append(nets[0])
                    sub_bytes.append(float(eff[idx].sum()))
                    sub_lat.append(float(lat[idx].max()))
                    continue
            rows.extend(paths)
            sub_bytes.extend(float(x) for x in eff[idx])
            sub_lat.extend(float(x) for x in lat[idx])
        cap = table.bandwidth_Bps
        nb, la = np.asarray(sub_bytes), np.asarray(sub_lat)
        rate = np.array([float(cap[p].min()) if len(p) else np.inf for p in rows])
        every = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        uniq = np.unique(every)
        alone = float(np.max(la + np.where(np.isfinite(rate), nb / rate, 0.0), initial=0.0))
        return Group(tuple(rows), nb, la, rate, len(uniq) == len(every), uniq, alone)

    def send(self, gid: int) -> simpy.Event:
        """Start group ``gid`` now; the event fires when its last byte has arrived."""
        done = self.env.event()
        self.sent += 1
        if self.log is not None:
            log, now = self.log, self.env.now
            done.callbacks.append(lambda _e: log.append((gid, now, self.env.now)))
        g = self._groups[gid]
        conflicts = self._conflicts[gid]
        flying = self._in_flight
        meets = any(flying[h] for h in conflicts)
        flying[gid] += 1
        if g.disjoint and not meets and not self.every_flow:
            rec = _Alone(self, gid, self.env.now, done)
            self._alone[gid].append(rec)
            self.env.timeout(g.alone_s).callbacks.append(rec)
            return done
        if meets:
            self.met += 1
            for h in conflicts:
                for other in list(self._alone[h]):
                    self._into_flows(other)
        self._flows(gid, done, g.latency_s, g.nbytes)
        return done

    def _alone_end(self, rec: _Alone) -> None:
        if rec.moved:
            return
        self._alone[rec.gid].remove(rec)
        self._in_flight[rec.gid] -= 1
        rec.done.succeed()

    def _into_flows(self, rec: _Alone) -> None:
        """What is left of an alone group, into the flow model from now on."""
        rec.moved = True
        self._alone[rec.gid].remove(rec)
        g = self._groups[rec.gid]
        elapsed = self.env.now - rec.start - g.latency_s
        wait = np.maximum(-elapsed, 0.0)
        left = np.where(elapsed > 0, g.nbytes - g.rate_Bps * np.maximum(elapsed, 0.0),
                        g.nbytes)
        self._flows(rec.gid, rec.done, wait, np.maximum(left, 0.0))

    def _flows(self, gid: int, done: simpy.Event, wait: np.ndarray, left: np.ndarray) -> None:
        g = self._groups[gid]
        parts = [self.flows.transfer(g.links[i], float(left[i]), float(wait[i]))
                 for i in range(len(left)) if left[i] > 0 and len(g.links[i])]

        def finish(_e: simpy.Event) -> None:
            self._in_flight[gid] -= 1
            done.succeed()

        simpy.AllOf(self.env, parts).callbacks.append(finish)


class _Alone:
    """A group in flight alone; called when its time alone is up."""

    __slots__ = ("done", "gid", "moved", "owner", "start")

    def __init__(self, owner: GroupFlows, gid: int, start: float, done: simpy.Event) -> None:
        self.owner, self.gid, self.start, self.done = owner, gid, start, done
        self.moved = False

    def __call__(self, _event: simpy.Event) -> None:
        self.owner._alone_end(self)
