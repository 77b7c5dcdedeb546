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
from dataclasses import dataclass, field

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
    all_links : tuple of int
        Every link of the group.
    alone_s : float
        Seconds the group takes alone (its slowest subflow).
    """

    links: tuple[np.ndarray, ...]
    nbytes: np.ndarray
    latency_s: np.ndarray
    rate_Bps: np.ndarray
    disjoint: bool
    all_links: tuple[int, ...]
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
    # capacity of each host's links into the network, against its devices' links
    host_nodes = {int(h) for h in t.node_index(np.unique(net.rank_host).tolist())}
    out_bw: dict[int, float] = {}
    for i in np.flatnonzero(~intra):
        s = int(t.src[i])
        if s in host_nodes:
            out_bw[s] = out_bw.get(s, 0.0) + float(t.bandwidth_Bps[i])
    slowest_device = float(t.bandwidth_Bps[intra].min())
    return bool(out_bw) and slowest_device >= max(out_bw.values())


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
    """

    def __init__(self, env: simpy.Environment, net: SimulatedNetwork, bundle: bool,
                 every_flow: bool = False) -> None:
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
        self._busy: dict[int, int] = {}
        self._alone: dict[int, _Alone] = {}
        self._cache: dict[tuple, Group] = {}
        #: Groups sent, groups that ran alone throughout, groups that met another.
        self.sent = 0
        self.met = 0

    def group(self, src: Sequence[int], dst: Sequence[int], nbytes: float) -> Group:
        """The routed group of messages ``src[i] -> dst[i]`` of ``nbytes`` each (cached)."""
        key = (tuple(src), tuple(dst), float(nbytes))
        g = self._cache.get(key)
        if g is None:
            g = self._cache[key] = self._build(np.asarray(src), np.asarray(dst), float(nbytes))
        return g

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
        return Group(tuple(rows), nb, la, rate, len(uniq) == len(every),
                     tuple(int(x) for x in uniq), alone)

    def send(self, g: Group) -> simpy.Event:
        """Start group ``g`` now; the event fires when its last byte has arrived."""
        done = self.env.event()
        self.sent += 1
        meets = any(link in self._busy for link in g.all_links)
        for link in g.all_links:
            self._busy[link] = self._busy.get(link, 0) + 1
        if g.disjoint and not meets and not self.every_flow:
            rec = _Alone(g, self.env.now, done)
            for link in g.all_links:
                self._alone[link] = rec
            self.env.timeout(g.alone_s).callbacks.append(lambda _e: self._alone_end(rec))
            return done
        if meets:
            self.met += 1
            for link in g.all_links:
                other = self._alone.get(link)
                if other is not None:
                    self._into_flows(other)
        self._flows(g, done, g.latency_s, g.nbytes)
        return done

    def _release(self, g: Group) -> None:
        for link in g.all_links:
            left = self._busy[link] - 1
            if left:
                self._busy[link] = left
            else:
                del self._busy[link]

    def _alone_end(self, rec: _Alone) -> None:
        if rec.moved:
            return
        for link in rec.group.all_links:
            if self._alone.get(link) is rec:
                del self._alone[link]
        self._release(rec.group)
        rec.done.succeed()

    def _into_flows(self, rec: _Alone) -> None:
        """What is left of an alone group, into the flow model from now on."""
        rec.moved = True
        g = rec.group
        for link in g.all_links:
            if self._alone.get(link) is rec:
                del self._alone[link]
        elapsed = self.env.now - rec.start - g.latency_s
        wait = np.maximum(-elapsed, 0.0)
        left = np.where(elapsed > 0, g.nbytes - g.rate_Bps * np.maximum(elapsed, 0.0),
                        g.nbytes)
        self._flows(g, rec.done, wait, np.maximum(left, 0.0))

    def _flows(self, g: Group, done: simpy.Event, wait: np.ndarray, left: np.ndarray) -> None:
        parts = [self.flows.transfer(g.links[i], float(left[i]), float(wait[i]))
                 for i in range(len(left)) if left[i] > 0 and len(g.links[i])]

        def finish(_e: simpy.Event) -> None:
            self._release(g)
            done.succeed()

        simpy.AllOf(self.env, parts).callbacks.append(finish)


@dataclass
class _Alone:
    group: Group
    start: float
    done: simpy.Event
    moved: bool = field(default=False)
