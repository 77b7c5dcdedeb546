"""A user's GraphML topology routes by equal-cost multipath, as the built-in families do."""

import networkx as nx
import numpy as np
import pytest

from dlscale.perfmodel.machine.hardware import FatTree
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.topology.fattree import fat_tree_graph, multilevel_fat_tree_graph
from dlscale.simulator.topology.graphml import read_graphml_topology
from dlscale.simulator.topology.routing import EcmpRouter


def _graphml_copy(G, tmp_path):
    H = nx.Graph()
    for n, d in G.nodes(data=True):
        H.add_node(n, **{k: v for k, v in d.items() if isinstance(v, (int, float, str))})
    for u, v, d in G.edges(data=True):
        H.add_edge(u, v, **{k: v for k, v in d.items() if isinstance(v, (int, float, str))})
    path = tmp_path / "copy.graphml"
    nx.write_graphml(H, path)
    return read_graphml_topology(path)


TREES = {
    "k-ary-4": lambda: fat_tree_graph(4, host_bandwidth_Bps=10e9, link_bandwidth_Bps=10e9,
                                       host_latency_s=0.5e-6, hop_latency_s=0.1e-6),
    "tapered-28:20": lambda: multilevel_fat_tree_graph(
        FatTree(2, 28, ((28, 20),), 6000), 112, host_bandwidth_Bps=12.5e9,
        link_bandwidth_Bps=12.5e9),
    "three-level-2:1": lambda: multilevel_fat_tree_graph(
        FatTree(3, 8, ((8, 4), (8, 8)), 4096), 128, host_bandwidth_Bps=12.5e9,
        link_bandwidth_Bps=12.5e9),
}


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("algorithm", ["ring", "recursive-doubling", "rabenseifner",
                                       "binomial-tree", "double-binary-tree"])
def test_graphml_copy_of_a_builtin_fat_tree_gives_the_same_times(tree, algorithm, tmp_path):
    G = TREES[tree]()
    copy = _graphml_copy(G, tmp_path)
    built, user = SimulatedNetwork(G), SimulatedNetwork(copy)
    assert isinstance(user.router, EcmpRouter)
    p = built.max_ranks
    for n_bytes in (1e3, 64e6):
        a = built.allreduce_s(n_bytes, p, algorithm)
        b = user.allreduce_s(n_bytes, p, algorithm)
        assert b == pytest.approx(a, rel=0.02), (n_bytes, a, b)


def test_ecmp_spreads_inter_leaf_traffic_over_the_spines(tmp_path):
    # all-to-one-leaf shift: with one path per pair (ties by node order) every flow
    # between two leaves took the same spine; ECMP spreads them by destination
    G = TREES["tapered-28:20"]()
    used = []
    for net in (SimulatedNetwork(G), SimulatedNetwork(_graphml_copy(G, tmp_path))):
        res = net.simulate("allreduce", 8e6, 112, "rabenseifner")
        spine = np.asarray(res.link_level) == "L1-L2"
        used.append(np.count_nonzero(np.asarray(res.link_bytes)[spine]))
    assert used[1] == used[0] > 80        # 4 leaves x 20 up-links, both directions


def test_ecmp_router_paths_are_shortest_and_deterministic():
    G = fat_tree_graph(4)
    r1, r2 = EcmpRouter(G), EcmpRouter(G)
    s, t = np.arange(16), (np.arange(16) * 5 + 3) % 16
    p1, p2 = r1.node_paths(s, t, 0), r2.node_paths(s, t, 0)
    assert np.array_equal(p1, p2)
    hops = [len(set(map(int, row))) - 1 for row in p1]
    want = [nx.shortest_path_length(G, int(a), int(b)) for a, b in zip(s, t, strict=True)]
    assert hops == want
