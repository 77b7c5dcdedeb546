"""The graph of a whole :class:`~dlscale.perfmodel.machine.hardware.Cluster`: network plus nodes.

Hosts (one per node, the NIC) are labelled ``0..nodes-1`` and link to the network
built from the cluster's topology description; with more than one device per node,
each node gets a copy of an intra-node graph (default: every device on its own
``intra_link`` to the node's NIC/host switch) whose devices are the endpoints.

Latencies: host-network links carry half the NIC's zero-byte MPI latency each (two of
them on any inter-node path), switch-switch links carry ``hop_latency_s``, and the
device-NIC links half the intra-node latency each.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
...     NetworkSpec, NodeSpec)
>>> dev = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
>>> node = NodeSpec("n", dev, 4, Link("nvl", 50e9, 1e-6), Link("ib", 12.5e9, 1e-6))
>>> c = Cluster("toy", node, NetworkSpec("net", Crossbar(8), Link("ib", 12.5e9, 1e-6)))
>>> G = cluster_graph(c, 2)
>>> sum(1 for _, k in G.nodes(data="kind") if k == "device")
8
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import networkx as nx
import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import (
    MEMORY_BUDGET_BYTES,
    SIMULATED_BYTES_PER_ELEMENT,
    check_graph,
)
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.topologies import FAMILIES
from dlscale.perfmodel.machine.topologies.family import FamilyView
from dlscale.simulator.topology.intranode import star_node_graph

__all__ = ["GRAPH_BUILDERS", "MAX_GRAPH_ELEMENTS", "check_size", "cluster_graph", "network_graph", "template_paths"]

#: Most graph elements (hosts, devices, switches, routers) a simulated network is built
#: with: :data:`dlscale.perfmodel.limits.MEMORY_BUDGET_BYTES` at
#: :data:`~dlscale.perfmodel.limits.SIMULATED_BYTES_PER_ELEMENT` each (measured), checked
#: from the sizes before anything is built. Fat trees are built only as far as the
#: nodes in use reach, dragonflies with minimal routing only for the groups holding
#: nodes (Valiant routing detours through any group: all), tori as the box of the
#: dimension-order routes between the nodes (which crosses routers that hold no node
#: of the job).
MAX_GRAPH_ELEMENTS = MEMORY_BUDGET_BYTES // SIMULATED_BYTES_PER_ELEMENT


#: Family name -> ``(graph builder, switches or routers it builds for n nodes)``:
#: ``build(cluster, topology, nodes) -> nx.Graph``, ``switches(topology, nodes) -> int``,
#: each family's ``graph`` and ``switches`` in
#: :data:`dlscale.perfmodel.machine.topologies.FAMILIES` (read when asked).
GRAPH_BUILDERS: Mapping[str, tuple[Callable[..., nx.Graph], Callable[..., int]]] = FamilyView(
    FAMILIES, lambda f: (f.graph, f.switches))


def _builder(cluster: Cluster) -> tuple[Callable[..., nx.Graph], Callable[..., int]]:
    topo = cluster.network.topology
    if topo.family not in GRAPH_BUILDERS:
        raise ConfigError(f"network.topology: unsupported family {type(topo).__name__}")
    return GRAPH_BUILDERS[topo.family]


def _switch_count(cluster: Cluster, nodes: int) -> int:
    return _builder(cluster)[1](cluster.network.topology, nodes)


def check_size(cluster: Cluster, nodes: int, per_node: int) -> None:
    """Refuse, from the sizes alone, a network of more than :data:`MAX_GRAPH_ELEMENTS`.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes : int
        Nodes to build.
    per_node : int
        Elements built inside each node besides its host (devices, switches).

    Raises
    ------
    ConfigError
        A bad node count, or hosts, their insides and the switches and routers they
        reach above the limit (:func:`dlscale.perfmodel.limits.check_graph`).
    """
    cluster.check_nodes(nodes)
    family = cluster.network.topology.family
    inside = f", {per_node:,} devices each" if per_node else ""
    check_graph(nodes * (1 + per_node) + _switch_count(cluster, nodes), "nodes",
                f"elements ({nodes:,} hosts{inside}, and the {family}'s switches)")


def network_graph(cluster: Cluster, nodes: int) -> nx.Graph:
    """The inter-node network of the first ``nodes`` nodes, hosts ``0..nodes-1``.

    Parameters
    ----------
    cluster : Cluster
        The machine; its ``network.topology`` family picks the builder.
    nodes : int
        Nodes to build, ``1..cluster.max_nodes``.

    Returns
    -------
    networkx.Graph
        Hosts ``0..nodes-1``, the switches or routers they reach, and the router's
        description in ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A bad node count, or a network too large to build (more than
        :data:`MAX_GRAPH_ELEMENTS` hosts and switches; the analytical model needs no
        graph).

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import (Cluster, Device, Link, NetworkSpec,
    ...     NodeSpec, Torus)
    >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
    >>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 12.5e9, 1e-6))
    >>> c = Cluster("t", node, NetworkSpec("net", Torus((4, 4)), Link("l", 10e9, 0.1e-6)))
    >>> network_graph(c, 16).graph["family"]
    'torus'
    """
    check_size(cluster, nodes, 0)
    return _builder(cluster)[0](cluster, cluster.network.topology, nodes)


def template_paths(node_graph: nx.Graph) -> tuple[list, np.ndarray]:
    """Order the intra-node graph's nodes (NIC first) and all-pairs hop paths between them.

    Returns the node order and an int array ``paths[i, j, :]`` of node positions
    padded by repeating the last one.

    Examples
    --------
    >>> order, paths = template_paths(star_node_graph(2, 1e9))
    >>> order, paths[1, 2].tolist()
    (['nic', 'dev0', 'dev1'], [1, 0, 2])
    """
    nics = [n for n, k in node_graph.nodes(data="kind") if k == "nic"]
    if len(nics) != 1:
        raise ConfigError(f"node_graph: needs exactly one node with kind 'nic', found {len(nics)}")
    if not any(k == "device" for _, k in node_graph.nodes(data="kind")):
        raise ConfigError("node_graph: needs at least one node with kind 'device'")
    if not nx.is_connected(node_graph):
        raise ConfigError("node_graph: must be connected")
    order = nics + [n for n in node_graph.nodes if n != nics[0]]
    pos = {n: i for i, n in enumerate(order)}
    T = len(order)
    all_paths = {s: nx.single_source_shortest_path(node_graph, s) for s in order}
    L = max(len(p) for d in all_paths.values() for p in d.values())
    paths = np.empty((T, T, L), dtype=np.int64)
    for s in order:
        for t in order:
            p = [pos[x] for x in all_paths[s][t]]
            paths[pos[s], pos[t]] = p + [p[-1]] * (L - len(p))
    return order, paths


def cluster_graph(cluster: Cluster, nodes: int, node_graph: nx.Graph | None = None) -> nx.Graph:
    """The graph of the first ``nodes`` nodes of ``cluster``.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes : int
        Nodes to include (``1..cluster.max_nodes``).
    node_graph : networkx.Graph, optional
        Intra-node graph (see :mod:`~dlscale.simulator.topology.intranode`) copied into
        every node. Default: none with one device per node (the host is the endpoint),
        otherwise :func:`~dlscale.simulator.topology.intranode.star_node_graph` on the
        node's ``intra_link``.

    Returns
    -------
    networkx.Graph
        The network of :func:`network_graph` with ``node_graph`` copied into every
        node; the endpoints (``kind="device"``, or the hosts) carry their ``node``;
        the router's description in ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A bad node count or a network too large to build.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
    ...     NetworkSpec, NodeSpec)
    >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
    >>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 12.5e9, 1e-6))
    >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(4), Link("l", 12.5e9, 1e-6)))
    >>> cluster_graph(c, 3).number_of_edges()
    3
    """
    spec = cluster.node
    per = spec.devices_per_node if node_graph is None else node_graph.number_of_nodes() - 1
    check_size(cluster, nodes, per if per > 1 else 0)
    G = network_graph(cluster, nodes)
    if node_graph is None and spec.devices_per_node > 1:
        node_graph = star_node_graph(spec.devices_per_node, spec.intra_link.bandwidth_Bps,
                                     spec.intra_link.latency_s)
    G.graph["cluster"] = cluster.name
    if node_graph is None:
        return G
    order, paths = template_paths(node_graph)
    base = G.number_of_nodes()
    per = len(order) - 1
    inner = G.graph["routing"]
    G.graph["routing"] = {"family": "cluster", "network": inner, "nodes": nodes,
                          "base": base, "per_node": per, "template_paths": paths,
                          "template_kinds": [node_graph.nodes[n].get("kind") for n in order]}
    # host nodes now only carry the NIC role
    for h in range(nodes):
        G.nodes[h]["kind"] = "nic"
    pos = {n: i for i, n in enumerate(order)}
    # every node's copy added in one call each (the same nodes and edges in the same
    # order as one add_node / add_edge at a time, without their per-call cost: 27,648
    # GPUs are 23,040 devices and 55,296 edges, issue 27 item 5)
    inside = [(pos[n] - 1, node_graph.nodes[n].get("kind", "other"), str(n)) for n in order[1:]]
    G.add_nodes_from((base + h * per + i, {"kind": kind, "node": h, "local": local})
                     for h in range(nodes) for i, kind, local in inside)
    edges = [(pos[u], pos[v], data) for u, v, data in node_graph.edges(data=True)]

    def label(h: int, p: int) -> int:
        return h if p == 0 else base + h * per + p - 1

    G.add_edges_from((label(h, a), label(h, b), data) for h in range(nodes)
                     for a, b, data in edges)
    return G
