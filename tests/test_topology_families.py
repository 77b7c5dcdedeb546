"""One module per topology family, and one table per layer that keys on its name.

A family registered in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES` without
its closed-form loads, its graph builder or its router fails here, before any user
meets the ``unsupported family`` error.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import NetworkSpec
from dlscale.perfmodel.machine.topologies import FAMILIES, TOPOLOGIES, Topology
from dlscale.perfmodel.network.linkload import LEVEL_LOADS, level_bandwidths_Bps, step_load
from dlscale.simulator.topology.cluster import GRAPH_BUILDERS, network_graph
from dlscale.simulator.topology.routing import make_router

SMALL = {"fat-tree": dict(levels=2, nodes_per_leaf=4, down_up=((4, 2),), max_nodes=16),
         "dragonfly": dict(groups=3, routers_per_group=2, terminals_per_router=2,
                           global_links_per_router=1, max_nodes=12),
         "torus": dict(dims=(4, 4)), "crossbar": dict(max_nodes=16)}


def _cluster(family):
    base = get_cluster("stampede2-skx")
    topo = FAMILIES[family](**SMALL[family])
    return dataclasses.replace(base, network=NetworkSpec("n", topo, base.network.link))


def test_every_family_is_in_every_table():
    assert TOPOLOGIES == tuple(FAMILIES) and set(SMALL) == set(FAMILIES)
    assert set(LEVEL_LOADS) == set(FAMILIES)
    assert set(GRAPH_BUILDERS) == set(FAMILIES)


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
