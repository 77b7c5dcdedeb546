"""The dragonfly (Kim, Dally, Scott and Abts, ISCA 2008), as Cray Aries builds it: its
description, its graph and its minimal or Valiant router -- the whole family,
registered as :data:`FAMILY`.

``groups`` groups of ``routers_per_group`` routers; the routers of a group are
connected all to all by local links; each router has ``global_links_per_router``
global ports and ``terminals_per_router`` hosts. Groups are connected all to all by
global links, ``floor(a*h / (g-1))`` per pair of groups, placed on consecutive
global ports ("consecutive" arrangement, Camarero et al. 2014). Where two global
links join the same pair of routers they are one edge with summed bandwidth and
``multiplicity`` 2 (networkx graphs hold one edge per pair).

Cori's Aries network (Cray XC40) has two local tiers (16-router chassis rows and
6-chassis columns) that this one-tier description folds into one all-to-all group of
96 routers; 4 nodes per router (Alverson et al., "Cray XC Series Network", 2012).

Node labels are integers: hosts ``0..N-1`` then routers ``N + group*a + r``.

Examples
--------
>>> G = dragonfly_graph(groups=5, routers_per_group=4, terminals_per_router=2,
...                     global_links_per_router=1)
>>> sum(1 for *_, lvl in G.edges(data="level") if lvl == "global")
10
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.topologies.family import Family
from dlscale.perfmodel.machine.topologies.linksums import per_link

if TYPE_CHECKING:
    import networkx as nx

    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["FAMILY", "Dragonfly", "DragonflyRouter", "dragonfly_global_port",
           "dragonfly_graph", "dragonfly_parallel_link"]


@dataclass(frozen=True)
class Dragonfly:
    """A dragonfly (Kim et al. 2008), as Cray Aries builds it.

    ``global_bandwidth_Bps`` and ``local_bandwidth_Bps`` are per link; ``None`` takes
    the network's link bandwidth.
    """

    groups: int
    routers_per_group: int
    terminals_per_router: int
    global_links_per_router: int
    max_nodes: int
    local_bandwidth_Bps: float | None = None
    global_bandwidth_Bps: float | None = None
    routing: str = "minimal"
    family: str = field(default="dragonfly", init=False)

    def __post_init__(self) -> None:
        for name in ("groups", "routers_per_group", "terminals_per_router",
                     "global_links_per_router", "max_nodes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"dragonfly.{name}: must be > 0, got {getattr(self, name)!r}")
        if self.routing not in ("minimal", "valiant"):
            raise ConfigError(
                f"dragonfly.routing: must be 'minimal' or 'valiant', got {self.routing!r}"
            )
        g, ports = self.groups, self.routers_per_group * self.global_links_per_router
        if g > ports + 1:   # the closed form would divide by zero links per group pair
            raise ConfigError(
                f"dragonfly.groups: {g} groups need at least {g - 1} global ports per group "
                f"for all-to-all groups, but routers_per_group*global_links_per_router = "
                f"{ports}")

    def with_link_efficiency(self, efficiency: float) -> Dragonfly:
        """The same dragonfly with its own local and global link bandwidths scaled."""
        local, glob = self.local_bandwidth_Bps, self.global_bandwidth_Bps
        return dataclasses.replace(
            self, local_bandwidth_Bps=None if local is None else local * efficiency,
            global_bandwidth_Bps=None if glob is None else glob * efficiency)

    def without_speeds(self) -> Dragonfly:
        """The same dragonfly without its own link speeds (loads do not depend on them)."""
        return dataclasses.replace(self, local_bandwidth_Bps=None, global_bandwidth_Bps=None)

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """Local (in-group) and global links; ``None`` takes the network's link."""
        return {"local": self.local_bandwidth_Bps or link_Bps,
                "global": self.global_bandwidth_Bps or link_Bps}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The global links between two halves of the groups, at most the injection."""
        g = self.groups
        if g < 2:
            return float(injection_Bps)
        per_pair = self.routers_per_group * self.global_links_per_router // (g - 1)
        crossing = (g // 2) * (g - g // 2) * per_pair
        return float(min(injection_Bps, crossing * (self.global_bandwidth_Bps or link_Bps)))

    def shape(self) -> str:
        """``", G groups x A routers, H global links per router"``."""
        return (f", {self.groups} groups x {self.routers_per_group} routers, "
                f"{self.global_links_per_router} global links per router")


def dragonfly_parallel_link(src_host: np.ndarray, dst_host: np.ndarray,
                            links_per_pair: int) -> np.ndarray:
    """Which of the parallel global links of a group pair a flow takes (a hash).

    Parameters
    ----------
    src_host, dst_host : ndarray of int
        Hosts of each flow.
    links_per_pair : int
        Parallel global links between two groups.

    Examples
    --------
    >>> dragonfly_parallel_link(np.array([0, 1]), np.array([5, 5]), 4).tolist()
    [1, 0]
    """
    return np.asarray((src_host * 7919 + dst_host) % max(links_per_pair, 1))


# -- the graph (the simulator's network) --

def dragonfly_global_port(group: int, peer: int, c: int, groups: int, links_per_pair: int) -> int:
    """Index of the ``c``-th global port of ``group`` that faces group ``peer``.

    Parameters
    ----------
    group, peer : int
        The group whose port it is and the group it faces.
    c : int
        Which of the ``links_per_pair`` parallel links between the two groups.
    groups : int
        Groups in the dragonfly.
    links_per_pair : int
        Parallel global links between two groups.

    Examples
    --------
    >>> dragonfly_global_port(0, 1, 0, groups=5, links_per_pair=1)
    0
    >>> dragonfly_global_port(1, 0, 0, groups=5, links_per_pair=1)
    3
    """
    d = (peer - group) % groups
    return (d - 1) * links_per_pair + c


def _check_dragonfly(g: int, a: int, p: int, h: int, hosts: int | None, routing: str,
                     host_bandwidth_Bps: float, local_bandwidth_Bps: float,
                     global_bandwidth_Bps: float) -> int:
    """Check the dragonfly's counts, routing, host count and bandwidths; return the host count."""
    for name, val in (("groups", g), ("routers_per_group", a),
                      ("terminals_per_router", p), ("global_links_per_router", h)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise ConfigError(f"dragonfly.{name}: must be a positive integer, got {val!r}")
    if g > a * h + 1:
        raise ConfigError(
            f"dragonfly.groups: {g} groups need at least {g - 1} global ports per group "
            f"for all-to-all groups, but routers_per_group*global_links_per_router = {a * h}"
        )
    if routing not in ("minimal", "valiant"):
        raise ConfigError(f"dragonfly.routing: must be 'minimal' or 'valiant', got {routing!r}")
    total = g * a * p
    n = total if hosts is None else hosts
    if not isinstance(n, int) or n < 1 or n > total:
        raise ConfigError(f"hosts: must be an integer in 1..{total}, got {n!r}")
    bandwidths: tuple[tuple[str, float], ...] = (
        ("host_bandwidth_Bps", host_bandwidth_Bps), ("local_bandwidth_Bps", local_bandwidth_Bps),
        ("global_bandwidth_Bps", global_bandwidth_Bps))
    for name, bw in bandwidths:
        if not bw > 0:
            raise ConfigError(f"dragonfly.{name}: must be > 0, got {bw!r}")
    return n


def _add_global_links(G: nx.Graph, n: int, built: int, g: int, a: int, h: int, lpp: int,
                      bandwidth_Bps: float, latency_s: float) -> None:
    """Join every pair of the ``built`` groups by ``lpp`` global links (merged per router pair)."""
    for gi in range(built):
        for gj in range(gi + 1, built):
            for c in range(lpp):
                ri = n + gi * a + dragonfly_global_port(gi, gj, c, g, lpp) // h
                rj = n + gj * a + dragonfly_global_port(gj, gi, c, g, lpp) // h
                if G.has_edge(ri, rj):
                    e = G.edges[ri, rj]
                    e["bandwidth_Bps"] += bandwidth_Bps
                    e["multiplicity"] += 1
                else:
                    G.add_edge(ri, rj, bandwidth_Bps=bandwidth_Bps,
                               latency_s=latency_s, level="global", multiplicity=1)


def dragonfly_graph(
    groups: int,
    routers_per_group: int,
    terminals_per_router: int,
    global_links_per_router: int,
    hosts: int | None = None,
    *,
    host_bandwidth_Bps: float = 10e9,
    local_bandwidth_Bps: float = 10e9,
    global_bandwidth_Bps: float = 10e9,
    host_latency_s: float = 0.5e-6,
    hop_latency_s: float = 100e-9,
    routing: str = "minimal",
    build_all: bool = False,
) -> nx.Graph:
    """Return a dragonfly graph with ``hosts`` hosts (default all).

    Parameters
    ----------
    groups, routers_per_group, terminals_per_router, global_links_per_router : int
        ``g``, ``a``, ``p``, ``h`` of Kim et al.; needs ``g <= a*h + 1``.
    hosts : int, optional
        Hosts attached to the first routers.
    routing : {"minimal", "valiant"}
        Recorded on the graph for :mod:`~dlscale.simulator.topology.routing`.
    build_all : bool
        Build every group. By default, with minimal routing only the groups that hold
        hosts are built (a minimal route never leaves its source and destination
        groups, so the routes and their loads are the same); Valiant routing, which
        detours through any group, always builds all.

    Returns
    -------
    networkx.Graph
        Hosts ``0..hosts-1`` (``kind="host"``) and switches or routers; edges with
        ``bandwidth_Bps``, ``latency_s`` and ``level``; the router's description in
        ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A non-positive count, an unknown ``routing``, ``hosts`` beyond what the network holds, or a bad link
        figure.

    Examples
    --------
    >>> G = dragonfly_graph(3, 2, 1, 1)
    >>> G.number_of_nodes(), G.graph["routing"]["links_per_pair"]
    (12, 1)
    >>> dragonfly_graph(3, 2, 1, 1, hosts=2).number_of_nodes()   # one group of 2 routers
    4
    """
    import networkx as nx

    n = _check_dragonfly(groups, routers_per_group, terminals_per_router,
                         global_links_per_router, hosts, routing, host_bandwidth_Bps,
                         local_bandwidth_Bps, global_bandwidth_Bps)
    g, a, p, h = groups, routers_per_group, terminals_per_router, global_links_per_router
    lpp = (a * h) // (g - 1) if g > 1 else 0
    G = nx.Graph(family="dragonfly")
    G.graph["routing"] = {"family": "dragonfly", "groups": g, "routers_per_group": a,
                          "terminals_per_router": p, "global_links_per_router": h,
                          "links_per_pair": lpp, "hosts": n, "routing": routing}
    G.add_nodes_from(range(n), kind="host")
    built = g if (build_all or routing == "valiant") else -(-n // (a * p))
    G.add_nodes_from(range(n, n + built * a), kind="router")
    for host in range(n):
        G.add_edge(host, n + host // p, bandwidth_Bps=host_bandwidth_Bps,
                   latency_s=host_latency_s, level="host", multiplicity=1)
    for grp in range(built):
        base = n + grp * a
        for r in range(a):
            for s in range(r + 1, a):
                G.add_edge(base + r, base + s, bandwidth_Bps=local_bandwidth_Bps,
                           latency_s=hop_latency_s, level="local", multiplicity=1)
    _add_global_links(G, n, built, g, a, h, lpp, global_bandwidth_Bps, hop_latency_s)
    return G



def _switches(topo: Dragonfly, nodes: int) -> int:
    per_group = topo.routers_per_group * topo.terminals_per_router
    # minimal routing: only the groups holding nodes; Valiant detours through any group
    built = topo.groups if topo.routing == "valiant" else -(-nodes // per_group)
    return built * topo.routers_per_group


def _graph(cluster: Cluster, topo: Dragonfly, nodes: int) -> nx.Graph:
    nic, link = cluster.node.nic, cluster.network.link
    return dragonfly_graph(
        topo.groups, topo.routers_per_group, topo.terminals_per_router,
        topo.global_links_per_router, nodes, host_bandwidth_Bps=nic.bandwidth_Bps,
        local_bandwidth_Bps=topo.local_bandwidth_Bps or link.bandwidth_Bps,
        global_bandwidth_Bps=topo.global_bandwidth_Bps or link.bandwidth_Bps,
        host_latency_s=nic.latency_s / 2, hop_latency_s=cluster.network.hop_latency_s,
        routing=topo.routing)



# -- the router --

class DragonflyRouter:
    """Minimal or Valiant routing on a dragonfly."""

    def __init__(self, params: dict[str, Any], seed: int = 0) -> None:
        self.p = params
        self.n = params["hosts"]
        self.rails = 1
        self.valiant = params["routing"] == "valiant"
        self.seed = seed
        # Valiant's intermediate groups are drawn for the whole batch at once
        self.pairwise = not self.valiant or params["groups"] < 3
        #: Whether the paths are drawn at random (by ``seed``): Valiant over 3+ groups.
        self.draws = not self.pairwise

    def _hop(self, gs: np.ndarray, gd: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g, a = self.p["groups"], self.p["routers_per_group"]
        h, lpp = self.p["global_links_per_router"], self.p["links_per_pair"]
        ka = ((gd - gs) % g - 1) * lpp + c
        kb = ((gs - gd) % g - 1) * lpp + c
        return self.n + gs * a + ka // h, self.n + gd * a + kb // h

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        g, a = self.p["groups"], self.p["routers_per_group"]
        tpr, lpp = self.p["terminals_per_router"], max(self.p["links_per_pair"], 1)
        rs, rd = self.n + s // tpr, self.n + t // tpr
        gs, gd = (rs - self.n) // a, (rd - self.n) // a
        c = (s * 7919 + t) % lpp
        same = gs == gd
        if not self.valiant or g < 3:
            ra, rb = self._hop(gs, gd, c)
            ra, rb = np.where(same, rs, ra), np.where(same, rd, rb)
            return np.stack([s, rs, ra, rb, rd, t], axis=1)
        rng = np.random.default_rng([self.seed, rail, len(s)])
        gi = rng.integers(0, g - 2, size=len(s))
        lo, hi = np.minimum(gs, gd), np.maximum(gs, gd)
        gi = gi + (gi >= lo)
        gi = gi + (gi >= hi)
        ra, rb = self._hop(gs, gi, c)
        rc, re = self._hop(gi, gd, c)
        cols = [s, rs, ra, rb, rc, re, rd, t]
        for k in (2, 3):
            cols[k] = np.where(same, rs, cols[k])
        for k in (4, 5):
            cols[k] = np.where(same, rd, cols[k])
        return np.stack(cols, axis=1)



#: The dragonfly's entry in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES`.
def _loads(topo: Dragonfly, nodes: int, hs: np.ndarray, hd: np.ndarray,
               wt: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A step's loads on the global and local links (the family's ``loads``): minimal
    routing over the group pair's parallel links, or Valiant's expectation."""
    g, a = topo.groups, topo.routers_per_group
    p, h = topo.terminals_per_router, topo.global_links_per_router
    lpp = (a * h) // (g - 1) if g > 1 else 0
    rs, rd = hs // p, hd // p
    gs, gd = rs // a, rd // a
    R = g * a
    n = len(hs)
    load: dict[str, np.ndarray] = {}
    hops = np.zeros(n, dtype=np.int64)
    same = gs == gd
    hops[same & (rs != rd)] = 1
    other = ~same
    if other.any() and topo.routing == "valiant" and g >= 3:
        # expectation of Valiant's two global hops: spread over the source group's and
        # the destination group's global links
        out = np.bincount(gs[other], weights=wt[other], minlength=g)
        inn = np.bincount(gd[other], weights=wt[other], minlength=g)
        glob, loc = np.zeros(n), np.zeros(n)
        glob[other] = np.maximum((out + inn)[gs[other]], (out + inn)[gd[other]]) / (a * h)
        if a > 1:
            loc[other] = np.maximum(out[gs[other]], inn[gd[other]]) / (a - 1)
        hops[other] = 5
        return {"global": glob, "local": loc}, hops
    flow = [np.flatnonzero(same)]
    loc_u, loc_v, loc_w = [rs[same]], [rd[same]], [wt[same]]
    if other.any():
        s, t, x, y = hs[other], hd[other], gs[other], gd[other]
        c = dragonfly_parallel_link(s, t, lpp)
        ka = ((y - x) % g - 1) * lpp + c
        kb = ((x - y) % g - 1) * lpp + c
        ra, rb = x * a + ka // h, y * a + kb // h
        mult = np.zeros(len(s))
        for cc in range(lpp):                      # parallel links joining ra and rb
            ja = ((y - x) % g - 1) * lpp + cc
            jb = ((x - y) % g - 1) * lpp + cc
            mult += (x * a + ja // h == ra) & (y * a + jb // h == rb)
        glob = np.zeros(n)
        glob[other] = per_link(ra * R + rb, wt[other] / mult)
        load["global"] = glob
        hops[other] = 1 + (rs[other] != ra) + (rb != rd[other])
        idx = np.flatnonzero(other)
        flow += [idx, idx]
        loc_u += [rs[other], rb]
        loc_v += [ra, rd[other]]
        loc_w += [wt[other], wt[other]]
    f, u, v, ww = (np.concatenate(x) for x in (flow, loc_u, loc_v, loc_w))
    moved = u != v
    if moved.any():
        loc = np.zeros(n)
        np.maximum.at(loc, f[moved], per_link(u[moved] * R + v[moved], ww[moved]))
        load["local"] = loc
    return load, hops


FAMILY = Family(Dragonfly, graph=_graph, switches=_switches, route=DragonflyRouter,
                loads=_loads,
                summary="groups of all-to-all routers joined by global links (Kim et al. ISCA 2008)")
