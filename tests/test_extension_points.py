"""The typed extension points: Topology, Router, NetworkModel.

Every shipped implementation satisfies its Protocol, and an object that lacks a
member is turned away with one line naming what is missing.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.catalog.clusters import CLUSTERS
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Crossbar, Topology, Torus
from dlscale.perfmodel.network.analytical import AnalyticalNetwork, NetworkModel
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.routing import ROUTERS, EcmpRouter, Router, make_router, route
from dlscale.simulator.topology.torus import torus_graph
from dlscale.simulator.training.net import make_training_network


def test_every_catalog_topology_is_a_topology():
    for name in CLUSTERS:
        topo = get_cluster(name).network.topology
        assert isinstance(topo, Topology), name
        assert topo.max_nodes >= 1 and isinstance(topo.family, str)
        hash(topo)
    assert not isinstance("torus", Topology)


@pytest.mark.parametrize("G", [
    fat_tree_graph(4),
    torus_graph((4, 2)),
    dragonfly_graph(groups=3, routers_per_group=2, terminals_per_router=2,
                    global_links_per_router=1),
    cluster_graph(get_cluster("summit"), 2),
], ids=["fat-tree", "torus", "dragonfly", "cluster"])
def test_every_router_is_a_router_and_routes(G):
    r = make_router(G, seed=1)
    assert isinstance(r, Router)
    assert type(r) in ROUTERS.values()
    table = LinkTable.from_graph(G)
    routes = route(table, r, np.array([0]), np.array([1]))
    assert (routes.links >= 0).any() and routes.fraction.sum() == pytest.approx(1.0)


def test_a_graph_without_routing_gets_the_ecmp_router():
    G = fat_tree_graph(4)
    del G.graph["routing"]
    assert isinstance(make_router(G), EcmpRouter)
    assert isinstance(make_router(G), Router)


def test_both_network_models_are_network_models():
    c = get_cluster("summit")
    assert isinstance(AnalyticalNetwork(c), NetworkModel)
    assert isinstance(SimulatedNetwork.from_cluster(c, 2), NetworkModel)
    assert not isinstance(nx.Graph(), NetworkModel)


def test_training_network_turns_away_a_partial_network_model():
    class NoCollective:
        max_ranks = 64

        def allreduce_s(self, n_bytes, ranks, algorithm="ring"):
            return 0.0

        def transfer_s(self, src, dst, n_bytes):
            return 0.0

    with pytest.raises(ConfigError, match=r"^network: an object must have max_ranks, "
                                          r"allreduce_s, collective_s and transfer_s"):
        make_training_network(get_cluster("summit"), get_workload("resnet50"), 2,
                              NoCollective())


def test_topology_protocol_members_on_hand_built_specs():
    assert Torus((2, 3)).max_nodes == 6 and Torus((2, 3)).family == "torus"
    assert isinstance(Crossbar(8), Topology)
