"""Routing: valid paths, shortest where promised, deterministic, rails, metrics."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster, Device, FatTree, Link, NetworkSpec, NodeSpec
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, xgft_graph
from dlscale.simulator.topology.graphml import endpoints
from dlscale.simulator.topology.intranode import summit_node_graph
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.metrics import estimate_bisection_Bps, topology_metrics
from dlscale.simulator.topology.routing import make_router, route
from dlscale.simulator.topology.torus import torus_graph


def all_pairs(G):
    table = LinkTable.from_graph(G)
    ends = table.node_index(endpoints(G))
    s, t = np.meshgrid(ends, ends)
    s, t = s.ravel(), t.ravel()
    return table, s, t, route(table, make_router(G), s, t)


def shortest_hops(G, table, s, t):
    sp = dict(nx.all_pairs_shortest_path_length(G))
    return np.array([sp[table.nodes[a]][table.nodes[b]] for a, b in zip(s, t, strict=True)])


def paths_are_connected(table, routes, s, t):
    """Each subflow's links chain from its source to its destination."""
    for i in range(len(routes.pair)):
        row = routes.links[i][routes.links[i] >= 0]
        p = routes.pair[i]
        if s[p] == t[p]:
            assert len(row) == 0
            continue
        assert table.src[row[0]] == s[p] and table.dst[row[-1]] == t[p]
        assert np.all(table.dst[row[:-1]] == table.src[row[1:]])


@pytest.mark.parametrize("G", [fat_tree_graph(4), xgft_graph((3, 2, 3), (2, 2, 3), 17),
                               torus_graph((4, 3, 2)), torus_graph((5, 4), 13)],
                         ids=["k4", "xgft-partial-rails", "torus3d", "torus-partial"])
def test_structured_routes_are_shortest(G):
    table, s, t, r = all_pairs(G)
    paths_are_connected(table, r, s, t)
    rails = len(r.pair) // len(s)
    hops = (r.links >= 0).sum(axis=1)
    assert np.array_equal(hops, np.tile(shortest_hops(G, table, s, t), rails))


def test_dragonfly_minimal_has_one_global_hop():
    G = dragonfly_graph(3, 4, 2, 2)
    table, s, t, r = all_pairs(G)
    paths_are_connected(table, r, s, t)
    glob = (np.where(r.links >= 0, table.level[np.maximum(r.links, 0)], "") == "global").sum(axis=1)
    assert glob.max() == 1
    assert (r.links >= 0).sum(axis=1).max() <= 5


def test_dragonfly_valiant_is_seeded_and_longer():
    G = dragonfly_graph(5, 4, 2, 1, routing="valiant")
    table = LinkTable.from_graph(G)
    s, t = np.arange(40), (np.arange(40) + 17) % 40
    a = route(table, make_router(G, seed=1), s, t)
    b = route(table, make_router(G, seed=1), s, t)
    c = route(table, make_router(G, seed=2), s, t)
    assert np.array_equal(a.links, b.links) and not np.array_equal(a.links, c.links)
    glob = (np.where(a.links >= 0, table.level[np.maximum(a.links, 0)], "") == "global").sum(axis=1)
    assert glob.max() == 2
    paths_are_connected(table, a, s, t)


def test_cluster_routes_go_through_nodes_and_rails():
    dev = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
    node = NodeSpec("n", dev, 6, Link("nvl", 50e9, 2e-6), Link("ib", 23e9, 1e-6))
    c = Cluster("s", node, NetworkSpec("n", FatTree(3, 2, ((2, 2), (2, 2)), 64, rails=2),
                                       Link("ib", 12.5e9, 0.5e-6)))
    for ng in (None, summit_node_graph()):
        G = cluster_graph(c, 10, ng)
        table, s, t, r = all_pairs(G)
        paths_are_connected(table, r, s, t)
        assert np.array_equal((r.links >= 0).sum(axis=1),
                              np.tile(shortest_hops(G, table, s, t), 2))
        assert np.allclose(r.fraction, 0.5)


def test_linktable_rejects_non_adjacent():
    G = torus_graph((4,))
    table = LinkTable.from_graph(G)
    with pytest.raises(ConfigError, match="are not adjacent"):
        table.lookup([0], [1])


def test_shortest_path_router_on_user_graph():
    G = nx.cycle_graph(6)
    for n in G:
        G.nodes[n]["kind"] = "host"
    nx.set_edge_attributes(G, 1e9, "bandwidth_Bps")
    nx.set_edge_attributes(G, 0.0, "latency_s")
    table, s, t, r = all_pairs(G)
    paths_are_connected(table, r, s, t)
    assert np.array_equal((r.links >= 0).sum(axis=1), shortest_hops(G, table, s, t))


def test_metrics_exact_matches_max_flow_estimate():
    graphs = [fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9),
              xgft_graph((4, 2, 2), (2, 1, 1), host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9),
              dragonfly_graph(4, 3, 2, 1), torus_graph((4, 4)), torus_graph((4, 2, 2))]
    for G in graphs:
        m = topology_metrics(G)
        assert m.bisection_exact
        assert m.bisection_Bps == pytest.approx(estimate_bisection_Bps(G, trials=0))
        ends = endpoints(G)
        ecc = max(max(nx.single_source_shortest_path_length(G, e)[x] for x in ends) for e in ends)
        assert m.diameter_hops == ecc


def test_metrics_known_values():
    m = topology_metrics(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9))
    assert m.links_per_level == {"L1-L2": 16, "L2-L3": 16, "host": 16}
    # a 2:1 tapered leaf halves the bisection
    tap = topology_metrics(xgft_graph((4, 4), (1, 2), host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9))
    assert tap.bisection_Bps == 4e9  # 2 leaves x 2 uplinks x 1 GB/s
    # a user graph is estimated
    G = nx.path_graph(4)
    for n in G:
        G.nodes[n]["kind"] = "host"
    nx.set_edge_attributes(G, 2.0, "bandwidth_Bps")
    nx.set_edge_attributes(G, 0.0, "latency_s")
    m = topology_metrics(G)
    assert not m.bisection_exact and m.bisection_Bps == 2.0 and m.diameter_hops == 3


def _cluster_paths_numpy(r, s, t, rail):
    """The cluster router's paths as they were built with numpy (the reference)."""
    def split(x):
        dev = x >= r.base
        return (np.where(dev, (x - r.base) // r.per, x),
                np.where(dev, (x - r.base) % r.per + 1, 0))

    def label(h, pos):
        return np.where(pos == 0, h[:, None], r.base + h[:, None] * r.per + pos - 1)

    hs, ps = split(s)
    hd, pd = split(t)
    inter = np.concatenate([label(hs, r.tp[ps, 0]), r.net.node_paths(hs, hd, rail),
                            label(hd, r.tp[0, pd])], axis=1)
    same = np.flatnonzero(hs == hd)
    local = label(hs[same], r.tp[ps[same], pd[same]])
    inter[same] = np.concatenate([local, np.repeat(
        local[:, -1:], inter.shape[1] - local.shape[1], axis=1)], axis=1)
    return inter


@pytest.mark.parametrize("name,nodes", [("summit", 9), ("dgx-h100-superpod", 4),
                                        ("frontier", 3), ("pcie-8xv100", 1)])
def test_the_compiled_cluster_paths_are_the_numpy_ones(name, nodes):
    from dlscale.perfmodel.catalog import get_cluster

    G = cluster_graph(get_cluster(name), nodes)
    r = make_router(G)
    n, base = G.number_of_nodes(), G.graph["routing"]["base"]
    rng = np.random.default_rng(0)
    s, t = rng.integers(0, n, 3000), rng.integers(base, n, 3000)
    t[:500] = np.minimum(s[:500] + 1, n - 1)          # pairs inside one node
    t[500:600] = s[500:600]                            # to itself
    s[600:700] = rng.integers(0, nodes, 100)           # from a NIC
    for rail in range(r.rails):
        got = r.node_paths(s, t, rail)
        want = _cluster_paths_numpy(r, s, t, rail)
        assert got.dtype == want.dtype and np.array_equal(got, want)
