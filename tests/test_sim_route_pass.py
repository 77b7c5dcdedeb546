"""One pass over a route's hops (issue 27 item 5): :meth:`LinkTable.path_links` gives the
links of every hop and each path's latency, bit for bit what looking the hops up and
summing their latencies with numpy gave (its pairwise order above seven hops), and the
same one-line errors; the cluster's graph built a node's copy at a time is the graph
built an element at a time."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.errors import ConfigError
from dlscale.simulator.network.simulated import SimulatedNetwork
from dlscale.simulator.topology.cluster import cluster_graph, network_graph, template_paths
from dlscale.simulator.topology.intranode import star_node_graph, summit_node_graph
from dlscale.simulator.topology.linktable import LinkTable


def _by_lookup(t: LinkTable, paths: np.ndarray, none: np.ndarray):
    links = t.lookup(paths[:, :-1], paths[:, 1:])
    links[none] = -1
    return links, np.where(links >= 0, t.latency_s[np.maximum(links, 0)], 0.0).sum(axis=1)


@pytest.mark.parametrize("hops", [0, 1, 5, 7, 8, 10, 17, 130])
def test_one_pass_is_the_lookup_and_numpys_sum(hops):
    rng = np.random.default_rng(hops)
    G = nx.gnm_random_graph(60, 400, seed=hops)
    for u, v in G.edges:
        G.edges[u, v].update(bandwidth_Bps=1e9, latency_s=float(rng.random()) *
                             float(rng.choice([1e-9, 1e-6, 1.0])))
    t = LinkTable.from_graph(G)
    walks = np.empty((500, hops + 1), dtype=np.int64)
    walks[:, 0] = rng.integers(0, 60, 500)
    for h in range(hops):   # random walks, some standing still (a hop to itself)
        here = walks[:, h]
        step = np.array([rng.choice([x, *G.neighbors(x)]) for x in here])
        walks[:, h + 1] = step
    none = rng.random(500) < 0.1
    got, want = t.path_links(walks, none), _by_lookup(t, walks, none)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_one_pass_refuses_what_the_lookup_refuses():
    t = LinkTable.from_graph(_path(4))
    with pytest.raises(ConfigError, match="routing: nodes 0 and 2 are not adjacent"):
        t.path_links(np.array([[0, 1], [0, 2]]), np.zeros(2, dtype=bool))
    with pytest.raises(ConfigError, match=r"routing: node indices must be in 0\.\.3"):
        t.path_links(np.array([[0, 1, 9]]), np.zeros(1, dtype=bool))


def _table_edge_by_edge(G: nx.Graph) -> LinkTable:
    """The link table as it was built: one edge, and one array element, at a time."""
    nodes = list(G.nodes)
    n, m = len(nodes), G.number_of_edges()
    src, dst = np.empty(2 * m, dtype=np.int64), np.empty(2 * m, dtype=np.int64)
    bw, lat, level = np.empty(2 * m), np.empty(2 * m), np.empty(2 * m, dtype=object)
    for e, (u, v, d) in enumerate(G.edges(data=True)):
        src[2 * e], dst[2 * e], src[2 * e + 1], dst[2 * e + 1] = u, v, v, u
        bw[2 * e] = bw[2 * e + 1] = d["bandwidth_Bps"]
        lat[2 * e] = lat[2 * e + 1] = d.get("latency_s", 0.0)
        level[2 * e] = level[2 * e + 1] = str(d.get("level", "link"))
    keys = src * n + dst
    order = np.argsort(keys, kind="stable")
    return LinkTable(nodes, src, dst, bw, lat, level, keys[order], order, None, None)


def _path(n: int) -> nx.Graph:
    G = nx.Graph()
    for i in range(n - 1):
        G.add_edge(i, i + 1, bandwidth_Bps=1e9, latency_s=1e-6)
    return G


@pytest.mark.parametrize("name,nodes,inside", [
    ("summit", 12, None), ("summit", 5, summit_node_graph(2, 3)), ("cori-knl", 7, None)])
def test_the_graph_copied_a_node_at_a_time_is_the_graph_built_edge_by_edge(name, nodes, inside):
    c = get_cluster(name)
    G = cluster_graph(c, nodes, inside)
    spec = c.node
    node_graph = inside if inside is not None else (
        star_node_graph(spec.devices_per_node, spec.intra_link.bandwidth_Bps,
                        spec.intra_link.latency_s) if spec.devices_per_node > 1 else None)
    H = network_graph(c, nodes)
    if node_graph is not None:       # the copy as it was made, one element at a time
        order, _ = template_paths(node_graph)
        base, per = H.number_of_nodes(), len(order) - 1
        for h in range(nodes):
            H.nodes[h]["kind"] = "nic"
        pos = {n: i for i, n in enumerate(order)}
        for h in range(nodes):
            for n in order[1:]:
                H.add_node(base + h * per + pos[n] - 1,
                           kind=node_graph.nodes[n].get("kind", "other"), node=h, local=str(n))
        for h in range(nodes):
            for u, v, data in node_graph.edges(data=True):
                H.add_edge(*(h if pos[x] == 0 else base + h * per + pos[x] - 1 for x in (u, v)),
                           **data)
    assert list(G.nodes(data=True)) == list(H.nodes(data=True))
    assert list(G.edges(data=True)) == list(H.edges(data=True))
    a, b = LinkTable.from_graph(G), _table_edge_by_edge(H)
    for field in ("src", "dst", "bandwidth_Bps", "latency_s", "level", "_keys", "_ids"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        assert getattr(a, field).dtype == getattr(b, field).dtype
    net = SimulatedNetwork.from_cluster(c, nodes, inside)
    assert net.allreduce_s(1e6, net.max_ranks, "ring") > 0
