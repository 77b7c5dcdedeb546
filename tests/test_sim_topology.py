"""Topology generators: structure, attributes, validation, cluster graphs."""

from __future__ import annotations

import networkx as nx
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Dragonfly,
    FatTree,
    Link,
    NetworkSpec,
    NodeSpec,
    Torus,
)
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import (
    fat_tree_graph,
    multilevel_fat_tree_graph,
    xgft_graph,
    xgft_params,
)
from dlscale.simulator.topology.graphml import endpoints, read_graphml_topology, validate_graph
from dlscale.simulator.topology.intranode import knl_node_graph, pcie_box_graph, summit_node_graph
from dlscale.simulator.topology.torus import snake_order, torus_graph

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)


def make_cluster(topology, devices=1, nic_Bps=12.5e9):
    node = NodeSpec("n", GPU, devices, Link("nvl", 50e9, 2e-6), Link("ib", nic_Bps, 1e-6))
    return Cluster("toy", node, NetworkSpec("net", topology, Link("sw", 12.5e9, 0.5e-6), 1e-7))


def kinds(G, kind):
    return [n for n, k in G.nodes(data="kind") if k == kind]


def test_k_ary_fat_tree_counts():
    for k in (2, 4, 6):
        G = fat_tree_graph(k)
        assert len(kinds(G, "host")) == k**3 // 4
        assert len(kinds(G, "switch")) == 5 * k**2 // 4
        assert G.number_of_edges() == 3 * k**3 // 4
        assert all({"bandwidth_Bps", "latency_s", "level"} <= set(d) for *_, d in G.edges(data=True))
        assert nx.is_connected(G)


def test_fat_tree_rejects_odd_k():
    with pytest.raises(ConfigError, match="k: must be an even integer"):
        fat_tree_graph(3)


def test_tapered_leaf_has_fewer_uplinks_than_hosts():
    tree = FatTree(2, 28, ((28, 20),), 6000)
    G = multilevel_fat_tree_graph(tree, 100, host_bandwidth_Bps=12.5e9, link_bandwidth_Bps=12.5e9)
    leaf = next(n for n, lvl in G.nodes(data="level") if lvl == 1)
    levels = [G.edges[leaf, nb]["level"] for nb in G[leaf]]
    assert levels.count("host") == 28 and levels.count("L1-L2") == 20


def test_multirail_hosts_have_one_leaf_per_rail():
    tree = FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2)
    assert xgft_params(tree, 4608) == ((18, 18, 15), (2, 18, 18))
    G = multilevel_fat_tree_graph(tree, 40, host_bandwidth_Bps=11.5e9, link_bandwidth_Bps=12.5e9)
    assert G.degree(0) == 2
    assert len({G.nodes[nb]["level"] for nb in G[0]}) == 1


def test_partial_fat_tree_drops_unused_levels():
    tree = FatTree(3, 18, ((18, 18), (18, 18)), 4608)
    G = multilevel_fat_tree_graph(tree, 10, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9)
    assert {lvl for _, lvl in G.nodes(data="level") if lvl} == {1}
    with pytest.raises(ConfigError, match="more than the fat tree holds"):
        multilevel_fat_tree_graph(tree, 5000, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9)


def test_small_xgft_edges_pinned():
    # XGFT(2; 2,2; 1,2): hosts 0-3, leaves 4-5, two spines 6-7, every leaf to both
    G = xgft_graph((2, 2), (1, 2), host_bandwidth_Bps=3e9, link_bandwidth_Bps=5e9,
                   host_latency_s=1e-6, hop_latency_s=2e-7)
    assert sorted(G.edges(data="level")) == [
        (0, 4, "host"), (1, 4, "host"), (2, 5, "host"), (3, 5, "host"),
        (4, 6, "L1-L2"), (4, 7, "L1-L2"), (5, 6, "L1-L2"), (5, 7, "L1-L2")]
    assert G.edges[0, 4] == {"bandwidth_Bps": 3e9, "latency_s": 1e-6, "level": "host"}
    assert G.edges[5, 7] == {"bandwidth_Bps": 5e9, "latency_s": 2e-7, "level": "L1-L2"}
    assert [G.nodes[v].get("level") for v in range(8)] == [None] * 4 + [1, 1, 2, 2]
    assert G.graph["routing"] == {"family": "fat-tree", "m": (2, 2), "w": (1, 2), "hosts": 4,
                                  "offset": (0, 4, 6)}
    # three hosts of XGFT(2; 2,2; 2,1): two rails, a partial second leaf per rail
    P = xgft_graph((2, 2), (2, 1), 3)
    assert sorted(P.edges()) == [(0, 3), (0, 4), (1, 3), (1, 4), (2, 5), (2, 6),
                                 (3, 7), (4, 8), (5, 7), (6, 8)]


def test_small_dragonfly_edges_pinned():
    # g=3, a=2, p=1, h=1: hosts 0-5 on routers 6-11, one global link per pair of
    # groups on consecutive ports
    G = dragonfly_graph(3, 2, 1, 1, host_bandwidth_Bps=1e9, local_bandwidth_Bps=2e9,
                        global_bandwidth_Bps=3e9, host_latency_s=1e-6, hop_latency_s=2e-7)
    assert sorted(G.edges(data="level")) == [(h, 6 + h, "host") for h in range(6)] + [
        (6, 7, "local"), (6, 9, "global"), (7, 10, "global"), (8, 9, "local"),
        (8, 11, "global"), (10, 11, "local")]
    assert G.edges[7, 10] == {"bandwidth_Bps": 3e9, "latency_s": 2e-7, "level": "global",
                              "multiplicity": 1}
    assert G.edges[8, 9]["bandwidth_Bps"] == 2e9 and G.edges[0, 6]["latency_s"] == 1e-6
    # two global links between the same two routers are one edge of twice the bandwidth
    M = dragonfly_graph(2, 1, 1, 2, global_bandwidth_Bps=3e9)
    assert M.edges[2, 3] == {"bandwidth_Bps": 6e9, "latency_s": 1e-7, "level": "global",
                             "multiplicity": 2}


def test_xgft_rejects_bad_shapes():
    with pytest.raises(ConfigError, match="same positive length"):
        xgft_graph((2, 2), (1,))
    with pytest.raises(ConfigError, match=r"xgft.w\[1\]: must be a positive integer"):
        xgft_graph((2, 2), (1, 0))


def test_dragonfly_structure():
    g, a, p, h = 5, 4, 2, 1
    G = dragonfly_graph(g, a, p, h)
    assert len(kinds(G, "host")) == g * a * p and len(kinds(G, "router")) == g * a
    levels = [lvl for *_, lvl in G.edges(data="level")]
    assert levels.count("local") == g * a * (a - 1) // 2
    assert levels.count("global") == g * (g - 1) // 2
    # every router has at most h global ports
    for r in kinds(G, "router"):
        glob = sum(G.edges[r, nb]["multiplicity"] for nb in G[r] if G.edges[r, nb]["level"] == "global")
        assert glob <= h


def test_dragonfly_rejects_too_many_groups():
    with pytest.raises(ConfigError, match=r"dragonfly.groups: 10 groups need at least 9"):
        dragonfly_graph(10, 2, 1, 2)
    with pytest.raises(ConfigError, match=r"dragonfly.routing"):
        dragonfly_graph(3, 2, 1, 1, routing="ugal")


def test_torus_wraps_and_snake_is_neighbourly():
    G = torus_graph((4, 3))
    routers = kinds(G, "router")
    assert all(G.degree(r) == 5 for r in routers)  # 4 torus + 1 host
    order = snake_order((4, 3, 2))
    inv = {int(pos): i for i, pos in enumerate(order)}
    H = torus_graph((4, 3, 2))
    n = 24
    for pos in range(n - 1):
        assert H.has_edge(n + inv[pos], n + inv[pos + 1])


def test_torus_rejects_bad_dims():
    with pytest.raises(ConfigError, match=r"torus.dims"):
        torus_graph((4, 0))


def test_intranode_graphs():
    G = summit_node_graph()
    assert len(kinds(G, "device")) == 6 and len(kinds(G, "nic")) == 1
    assert G.has_edge("gpu0", "gpu2") and not G.has_edge("gpu0", "gpu3")
    assert len(kinds(pcie_box_graph(8, 4), "switch")) == 2
    knl = knl_node_graph(4, mcdram_Bps=400e9)
    assert knl.edges["knl1", "mcdram"]["bandwidth_Bps"] == 100e9
    with pytest.raises(ConfigError, match="parts: must be 1, 2 or 4"):
        knl_node_graph(3)


def test_validate_graph_errors():
    G = nx.Graph()
    G.add_node("a", kind="host")
    G.add_node("b", kind="host")
    G.add_edge("a", "b", bandwidth_Bps=0.0, latency_s=1e-6)
    with pytest.raises(ConfigError, match=r"edge \('a', 'b'\) bandwidth_Bps must be a positive"):
        validate_graph(G)
    G.edges["a", "b"]["bandwidth_Bps"] = 1e9
    G.add_node("c", kind="host")
    with pytest.raises(ConfigError, match="must be connected, it has 2 components"):
        validate_graph(G)
    with pytest.raises(ConfigError, match="undirected"):
        validate_graph(nx.DiGraph())


def test_graphml_roundtrip(tmp_path):
    G = nx.Graph()
    for h in range(3):
        G.add_node(f"h{h}", kind="host")
        G.add_edge(f"h{h}", "sw", bandwidth_Bps=1e9, latency_s=1e-6, level="edge")
    G.nodes["sw"]["kind"] = "switch"
    path = tmp_path / "t.graphml"
    nx.write_graphml(G, path)
    H = read_graphml_topology(path)
    assert endpoints(H) == ["h0", "h1", "h2"]
    assert H.edges["h0", "sw"]["bandwidth_Bps"] == 1e9
    with pytest.raises(ConfigError, match="does not exist"):
        read_graphml_topology(tmp_path / "missing.graphml")


def test_cluster_graph_families_and_devices():
    for topo in (FatTree(2, 4, ((4, 2),), 32), Dragonfly(3, 2, 2, 1, 12), Torus((3, 3)),
                 Crossbar(8)):
        c = make_cluster(topo, devices=1)
        G = cluster_graph(c, 6)
        assert len(endpoints(G)) == 6
        assert nx.is_connected(G)
    c = make_cluster(Crossbar(8), devices=4)
    G = cluster_graph(c, 3)
    ends = endpoints(G)
    assert len(ends) == 12 and G.nodes[ends[5]]["node"] == 1
    G = cluster_graph(make_cluster(Crossbar(8), devices=6), 2, summit_node_graph())
    assert len(endpoints(G)) == 12
    with pytest.raises(ConfigError, match="nodes: 9 is more than cluster"):
        cluster_graph(c, 9)


@pytest.mark.parametrize("hosts", [2, 9, 17, 40])
def test_minimal_dragonfly_builds_only_the_groups_in_use(hosts):
    # 5 groups of 4 routers x 2 hosts: a minimal route stays in its source and
    # destination groups, so the partial graph routes every collective the same
    from dlscale.simulator.network import SimulatedNetwork

    part = dragonfly_graph(5, 4, 2, 1, hosts)
    full = dragonfly_graph(5, 4, 2, 1, hosts, build_all=True)
    groups = -(-hosts // 8)
    assert sum(1 for _, k in part.nodes(data="kind") if k == "router") == groups * 4
    assert sum(1 for _, k in full.nodes(data="kind") if k == "router") == 20
    for alg in ("ring", "rabenseifner", "binomial-tree"):
        for mode in ("fast", "flow"):
            a = SimulatedNetwork(part, mode=mode).allreduce_s(1e6, hosts, alg)
            b = SimulatedNetwork(full, mode=mode).allreduce_s(1e6, hosts, alg)
            assert a == b, (alg, mode)
    assert dragonfly_graph(5, 4, 2, 1, hosts, routing="valiant").number_of_nodes() == hosts + 20


def test_a_torus_is_built_only_as_far_as_the_routes_of_its_hosts_reach():
    import numpy as np

    from dlscale.simulator.network import SimulatedNetwork
    from dlscale.simulator.topology.torus import snake_order, snake_position, torus_extent

    dims = (6, 5, 4)
    for hosts in (2, 7, 13, 31, 120):
        part = torus_graph(dims, hosts)
        box = [c.tolist() for c in torus_extent(dims, hosts)]
        assert part.number_of_nodes() == hosts + int(np.prod([len(c) for c in box]))
        # the same collective on the first hosts of the whole torus, and on the box
        whole = SimulatedNetwork(torus_graph(dims), mode="fast")
        boxed = SimulatedNetwork(part, mode="fast")
        for alg in ("ring", "recursive-doubling", "binomial-tree"):
            assert boxed.allreduce_s(1e6, hosts, alg) == whole.allreduce_s(1e6, hosts, alg)
    # three hosts on a 5-ring: the shorter arcs between 0, 1 and 2 stay on 0..2
    assert [c.tolist() for c in torus_extent((5, 3), 3)] == [[0, 1, 2], [0]]
    assert snake_position(np.arange(120), dims).tolist() == snake_order(dims).tolist()
