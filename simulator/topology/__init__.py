"""Topologies: the graphs of machines, where ranks sit on them, and how messages route.

One ``noun_graph`` builder per family (:func:`fat_tree_graph`, :func:`xgft_graph`,
:func:`multilevel_fat_tree_graph`, :func:`dragonfly_graph`, :func:`torus_graph`), the
intra-node graphs (:func:`summit_node_graph`, :func:`pcie_box_graph`,
:func:`knl_node_graph`, :func:`star_node_graph`), a user's GraphML file
(:func:`read_graphml_topology`), and :func:`cluster_graph`, which builds the graph a
catalog or TOML cluster describes. A graph is a networkx graph whose edges carry
``bandwidth_Bps``, ``latency_s`` and ``level`` and whose endpoints are marked
``kind="host"`` or ``"device"``. :class:`LinkTable` turns it into arrays; a
:class:`Router` (registered in :data:`ROUTERS` by the family a builder writes into
``G.graph["routing"]``) gives the paths; :func:`place` puts ranks on endpoints;
:func:`topology_metrics` measures diameter, bisection and links per level.

Examples
--------
>>> import numpy as np
>>> from dlscale.simulator.topology import make_router, torus_graph
>>> path = make_router(torus_graph((4,))).node_paths(np.array([0]), np.array([2]), 0)
>>> int(path[0, 0]), int(path[0, -1])
(0, 2)
"""

from dlscale.simulator.topology.cluster import MAX_GRAPH_ELEMENTS, cluster_graph, network_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, multilevel_fat_tree_graph, xgft_graph
from dlscale.simulator.topology.graphml import (
    ENDPOINT_KINDS,
    endpoints,
    read_graphml_topology,
    validate_graph,
)
from dlscale.simulator.topology.intranode import (
    knl_node_graph,
    pcie_box_graph,
    star_node_graph,
    summit_node_graph,
)
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.metrics import TopologyMetrics, topology_metrics
from dlscale.simulator.topology.placement import PLACEMENTS, place
from dlscale.simulator.topology.routing import ROUTERS, Router, Routes, make_router, route
from dlscale.simulator.topology.torus import torus_graph

__all__ = [
    "ENDPOINT_KINDS",
    "MAX_GRAPH_ELEMENTS",
    "PLACEMENTS",
    "ROUTERS",
    "LinkTable",
    "Router",
    "Routes",
    "TopologyMetrics",
    "cluster_graph",
    "dragonfly_graph",
    "endpoints",
    "fat_tree_graph",
    "knl_node_graph",
    "make_router",
    "multilevel_fat_tree_graph",
    "network_graph",
    "pcie_box_graph",
    "place",
    "read_graphml_topology",
    "route",
    "star_node_graph",
    "summit_node_graph",
    "topology_metrics",
    "torus_graph",
    "validate_graph",
    "xgft_graph",
]
