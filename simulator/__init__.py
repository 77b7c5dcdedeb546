"""Discrete-event simulation of the network: topologies, routing, collectives.

Topologies are networkx graphs (edges with ``bandwidth_Bps``, ``latency_s``,
``level``; endpoints marked ``kind="host"`` or ``"device"``); collectives are message
schedules routed over them, timed by a flow-level max-min model in SimPy (reference)
or by a vectorized lock-step fast mode (scale). :class:`SimulatedNetwork` implements
:class:`dlscale.perfmodel.network.analytical.NetworkModel`.

Examples
--------
>>> from dlscale.simulator import SimulatedNetwork, torus_graph
>>> net = SimulatedNetwork(torus_graph((4, 4)), placement="topology")
>>> net.simulate("allreduce", 1e6, 16, "ring").ranks
16
"""

from dlscale.simulator.network.result import CollectiveResult
from dlscale.simulator.network.schedules import ALGORITHMS, COLLECTIVES, Phase, build_schedule
from dlscale.simulator.network.simulated import MODES, SimulatedNetwork
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, multilevel_fat_tree_graph, xgft_graph
from dlscale.simulator.topology.graphml import endpoints, read_graphml_topology, validate_graph
from dlscale.simulator.topology.intranode import (
    knl_node_graph,
    pcie_box_graph,
    star_node_graph,
    summit_node_graph,
)
from dlscale.simulator.topology.metrics import TopologyMetrics, topology_metrics
from dlscale.simulator.topology.placement import PLACEMENTS, place
from dlscale.simulator.topology.torus import torus_graph
from dlscale.simulator.training.result import TrainingResult
from dlscale.simulator.training.run import simulate_training

#: ``dlscale.api.simulate`` calls ``dlscale.simulator.simulate``.
simulate = simulate_training

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "MODES",
    "PLACEMENTS",
    "CollectiveResult",
    "Phase",
    "SimulatedNetwork",
    "TopologyMetrics",
    "TrainingResult",
    "build_schedule",
    "cluster_graph",
    "dragonfly_graph",
    "endpoints",
    "fat_tree_graph",
    "knl_node_graph",
    "multilevel_fat_tree_graph",
    "pcie_box_graph",
    "place",
    "read_graphml_topology",
    "simulate",
    "simulate_training",
    "star_node_graph",
    "summit_node_graph",
    "topology_metrics",
    "torus_graph",
    "validate_graph",
    "xgft_graph",
]
