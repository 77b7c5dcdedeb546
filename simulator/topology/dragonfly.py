"""Dragonfly networks (Kim, Dally, Scott and Abts, ISCA 2008), as Cray Aries builds them.

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

import networkx as nx

from dlscale.perfmodel.errors import ConfigError

__all__ = ["dragonfly_global_port", "dragonfly_graph"]


def dragonfly_global_port(group: int, peer: int, c: int, groups: int, links_per_pair: int) -> int:
    """Index of the ``c``-th global port of ``group`` that faces group ``peer``.

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
