"""One module per topology family, registered in one table (issue 28).

A family registered in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES` without
its closed-form loads, its graph builder or its router fails here, before any user
meets the ``unsupported family`` error; and a new family, registered there alone (one
``Family`` line, nothing in another module), is priced by ``predict`` and routed by
``simulate``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
import pytest

from dlscale import api
from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import NetworkSpec
from dlscale.perfmodel.machine.topologies import FAMILIES, TOPOLOGIES, Family, Topology
from dlscale.perfmodel.network.linkload import LEVEL_LOADS, level_bandwidths_Bps, step_load
from dlscale.simulator.topology.cluster import GRAPH_BUILDERS, network_graph
from dlscale.simulator.topology.routing import ROUTERS, make_router

SMALL = {"fat-tree": dict(levels=2, nodes_per_leaf=4, down_up=((4, 2),), max_nodes=16),
         "dragonfly": dict(groups=3, routers_per_group=2, terminals_per_router=2,
                           global_links_per_router=1, max_nodes=12),
         "torus": dict(dims=(4, 4)), "crossbar": dict(max_nodes=16)}


def _cluster(family):
    base = get_cluster("stampede2-skx")
    topo = FAMILIES[family].description(**SMALL[family])
    return dataclasses.replace(base, network=NetworkSpec("n", topo, base.network.link))


def test_every_family_is_in_every_table():
    assert TOPOLOGIES == tuple(FAMILIES) and set(SMALL) == set(FAMILIES)
    assert set(LEVEL_LOADS) == set(FAMILIES)   # the built-in families' loads, for now
    assert set(GRAPH_BUILDERS) == set(FAMILIES)
    assert set(ROUTERS) == {*FAMILIES, "cluster"}
    for name, family in FAMILIES.items():
        assert family.name == name and family.description.__module__ == family.graph.__module__
        assert GRAPH_BUILDERS[name] == (family.graph, family.switches)
        assert ROUTERS[name] is family.route


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_prices_builds_and_routes(family):
    cluster = _cluster(family)
    topo = cluster.network.topology
    assert isinstance(topo, Topology) and topo.family == family
    assert topo.without_speeds().family == family
    assert topo.with_link_efficiency(0.5).max_nodes == topo.max_nodes
    nodes = min(topo.max_nodes, 8)
    q = np.arange(nodes)
    s = step_load(topo, nodes, 1, False, q, (q + nodes // 2) % nodes, np.ones(nodes))
    assert s.inter and s.load["host"] == 1.0
    assert set(s.load) <= set(level_bandwidths_Bps(cluster))
    G = network_graph(cluster, nodes)
    router = make_router(G)
    assert router is not None and G.number_of_nodes() > nodes
    inject = topo.max_nodes / 2 * cluster.node.nic.bandwidth_Bps
    assert 0 < topo.bisection_Bps(inject, cluster.network.link.bandwidth_Bps) <= inject


# -- a new family, in this file alone: hosts on a line of routers (no wrap-around) --

@dataclass(frozen=True)
class Line:
    """``max_nodes`` routers in a line, one node on each."""

    max_nodes: int
    family: str = field(default="line", init=False)

    def with_link_efficiency(self, efficiency: float) -> Line:
        return self

    def without_speeds(self) -> Line:
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        return {"line": link_Bps}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        return float(min(injection_Bps, link_Bps))    # one link joins the two halves

    def shape(self) -> str:
        return f", {self.max_nodes} routers in a line"


ASKED = {"loads": 0, "graph": 0, "paths": 0}


def _line_graph(cluster: Any, topo: Line, nodes: int) -> nx.Graph:
    ASKED["graph"] += 1
    nic, link = cluster.node.nic, cluster.network.link
    G = nx.Graph(family="line")
    G.graph["routing"] = {"family": "line", "hosts": nodes}
    G.add_nodes_from(range(nodes), kind="host")
    G.add_nodes_from(range(nodes, 2 * nodes), kind="router")
    for i in range(nodes):
        G.add_edge(i, nodes + i, bandwidth_Bps=nic.bandwidth_Bps, latency_s=nic.latency_s / 2,
                   level="host")
    for i in range(nodes - 1):
        G.add_edge(nodes + i, nodes + i + 1, bandwidth_Bps=link.bandwidth_Bps,
                   latency_s=cluster.network.hop_latency_s, level="line")
    return G


class LineRouter:
    """Along the line; paths padded to ``hosts + 2`` (a repeated node is no hop)."""

    def __init__(self, params: dict[str, Any], seed: int = 0) -> None:
        self.n, self.rails, self.pairwise = params["hosts"], 1, True

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        ASKED["paths"] += 1
        sign, steps = np.sign(t - s), np.abs(t - s)
        cols = [s] + [self.n + s + sign * np.minimum(j, steps) for j in range(self.n)] + [t]
        return np.stack(cols, axis=1)


def _line_loads(topo: Line, nodes: int, hs: np.ndarray, hd: np.ndarray,
                wt: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per flow, the most loaded directed link between its routers; hops: links crossed."""
    ASKED["loads"] += 1
    lo, hi = np.minimum(hs, hd), np.maximum(hs, hd)
    worst = np.zeros(len(hs))
    for way in (hd > hs, hd < hs):
        diff = np.zeros(nodes + 1)
        np.add.at(diff, lo[way], wt[way])
        np.add.at(diff, hi[way], -wt[way])
        per_link = np.cumsum(diff)[:nodes]
        for f in np.flatnonzero(way):
            worst[f] = per_link[lo[f]:hi[f]].max()
    return ({"line": worst} if worst.max(initial=0.0) > 0 else {}), hi - lo


LINE = Family(Line, graph=_line_graph, switches=lambda topo, nodes: nodes, route=LineRouter,
              loads=_line_loads)


def test_a_family_registered_in_the_table_alone_reaches_predict_and_simulate(monkeypatch):
    monkeypatch.setitem(FAMILIES, "line", LINE)        # the registry line, nothing else
    base = get_cluster("stampede2-skx")
    line = dataclasses.replace(base, network=NetworkSpec("n", Line(8), base.network.link))
    flat = dataclasses.replace(base, network=NetworkSpec(
        "n", FAMILIES["crossbar"].description(8), base.network.link))
    assert GRAPH_BUILDERS["line"] == (_line_graph, LINE.switches) and ROUTERS["line"] is LineRouter
    ASKED.update(dict.fromkeys(ASKED, 0))
    on_line = api.predict(line, "resnet50", [1, 8], workload_overrides={"collective": "ring"})
    on_switch = api.predict(flat, "resnet50", [1, 8], workload_overrides={"collective": "ring"})
    assert ASKED["loads"] > 0 and ASKED["graph"] == ASKED["paths"] == 0
    # a ring over a line: the wrap-around message crosses all seven router links (a hop's
    # latency each), where the crossbar has no switch-to-switch hop
    assert on_line.rows[1]["comm_s"] > on_switch.rows[1]["comm_s"]
    assert on_line.rows[0]["comm_s"] == on_switch.rows[0]["comm_s"]     # one node: no network
    sim = api.simulate(line, "resnet50", [8], iterations=2, efficiency=False,
                       workload_overrides={"collective": "ring"})
    assert ASKED["graph"] >= 1 and ASKED["paths"] > 0
    assert sim.rows[0]["nodes"] == 8
    flat_sim = api.simulate(flat, "resnet50", [8], iterations=2, efficiency=False,
                            workload_overrides={"collective": "ring"})
    assert sim.rows[0]["comm_s"] > flat_sim.rows[0]["comm_s"]       # the line's hops again
