"""User topologies: any graph from GraphML (or built in Python), validated.

A topology graph is an undirected :class:`networkx.Graph` whose edges carry
``bandwidth_Bps`` (per direction, > 0) and ``latency_s`` (>= 0), optionally ``level``
(a label used in reports), and whose nodes where ranks can run are marked
``kind="host"`` or ``kind="device"``. Routing on such a graph is shortest path in hops.

Examples
--------
>>> import networkx as nx
>>> G = nx.Graph()
>>> G.add_node("a", kind="host"); G.add_node("b", kind="host")
>>> G.add_edge("a", "b", bandwidth_Bps=1e9, latency_s=1e-6)
>>> validate_graph(G) is G
True
"""

from __future__ import annotations

import math
import os

import networkx as nx

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import check_graph

__all__ = ["ENDPOINT_KINDS", "endpoints", "read_graphml_topology", "validate_graph"]

#: Node kinds ranks can be placed on; ``device`` nodes are preferred where present.
ENDPOINT_KINDS = ("device", "host")


def endpoints(G: nx.Graph) -> list:
    """Nodes ranks run on: the ``device`` nodes if any, else the ``host`` nodes, in order.

    Parameters
    ----------
    G : networkx.Graph
        A topology graph.

    Returns
    -------
    list
        Node labels, in the graph's node order.

    Examples
    --------
    >>> from dlscale.simulator.topology.torus import torus_graph
    >>> endpoints(torus_graph((3,)))
    [0, 1, 2]
    """
    kinds = dict(G.nodes(data="kind"))
    for kind in ENDPOINT_KINDS:
        found = [n for n, k in kinds.items() if k == kind]
        if found:
            return found
    return []


def validate_graph(G: nx.Graph) -> nx.Graph:
    """Check a topology graph; return it, or raise :class:`ConfigError` naming the fault.

    Checks: undirected simple graph, at least two nodes of kind host or device,
    connected, every edge with a finite ``bandwidth_Bps > 0`` and ``latency_s >= 0``.
    A missing ``level`` is set to ``"link"``.

    Parameters
    ----------
    G : networkx.Graph
        A topology graph.

    Returns
    -------
    networkx.Graph
        ``G`` itself, with missing edge levels filled in.

    Raises
    ------
    ConfigError
        The first fault found, naming the node or edge and the attribute.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.path_graph(3)
    >>> validate_graph(G)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: topology: needs at least 2 nodes with kind 'host' or 'device', found 0
    """
    if not isinstance(G, nx.Graph) or G.is_directed() or G.is_multigraph():
        raise ConfigError(
            f"topology: must be an undirected networkx.Graph (links are full duplex), "
            f"got {type(G).__name__}"
        )
    ends = endpoints(G)
    if len(ends) < 2:
        raise ConfigError(
            f"topology: needs at least 2 nodes with kind 'host' or 'device', found {len(ends)}"
        )
    for u, v, data in G.edges(data=True):
        bw = data.get("bandwidth_Bps")
        if not isinstance(bw, (int, float)) or not math.isfinite(bw) or bw <= 0:
            raise ConfigError(f"topology: edge ({u!r}, {v!r}) bandwidth_Bps must be a "
                              f"positive number, got {bw!r}")
        lat = data.get("latency_s")
        if not isinstance(lat, (int, float)) or not math.isfinite(lat) or lat < 0:
            raise ConfigError(f"topology: edge ({u!r}, {v!r}) latency_s must be a "
                              f"number >= 0, got {lat!r}")
        data.setdefault("level", "link")
    if not nx.is_connected(G):
        parts = nx.number_connected_components(G)
        raise ConfigError(f"topology: graph must be connected, it has {parts} components")
    return G


def read_graphml_topology(path: str | os.PathLike) -> nx.Graph:
    """Read a GraphML topology and validate it.

    Edge attributes ``bandwidth_Bps`` and ``latency_s`` may be stored as strings or
    numbers; they are converted to float. Routing uses shortest paths.

    Parameters
    ----------
    path : str or PathLike
        A GraphML file: nodes with ``kind`` (``host``, ``device``, ``switch``),
        edges with ``bandwidth_Bps`` and ``latency_s`` (``level`` optional).

    Returns
    -------
    networkx.Graph
        The validated graph (:func:`validate_graph`); routed by equal-cost
        multipath.

    Raises
    ------
    ConfigError
        An unreadable or malformed file, or a graph :func:`validate_graph` refuses.

    Examples
    --------
    >>> import networkx as nx, tempfile, os
    >>> G = nx.Graph()
    >>> G.add_node("h0", kind="host"); G.add_node("h1", kind="host"); G.add_node("s", kind="switch")
    >>> G.add_edge("h0", "s", bandwidth_Bps=1e9, latency_s=1e-6)
    >>> G.add_edge("h1", "s", bandwidth_Bps=1e9, latency_s=1e-6)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     nx.write_graphml(G, os.path.join(d, "t.graphml"))
    ...     H = read_graphml_topology(os.path.join(d, "t.graphml"))
    >>> H.number_of_edges()
    2
    """
    if not os.path.exists(path):
        raise ConfigError(f"topology: GraphML file {str(path)!r} does not exist")
    _check_node_count(path)
    try:
        G = nx.read_graphml(path)
    except Exception as exc:  # parser errors of several kinds
        raise ConfigError(f"topology: cannot read GraphML {str(path)!r}: {exc}") from exc
    if G.is_directed():
        _check_directed_pairs(G)
        G = nx.Graph(G)
    if G.is_multigraph():
        raise ConfigError("topology: parallel edges are not supported; merge them into one "
                          "edge with the summed bandwidth_Bps")
    for u, v, data in G.edges(data=True):
        for key in ("bandwidth_Bps", "latency_s"):
            if key in data:
                try:
                    data[key] = float(data[key])
                except (TypeError, ValueError):
                    raise ConfigError(f"topology: edge ({u!r}, {v!r}) {key} must be a "
                                      f"number, got {data[key]!r}") from None
    G.graph.pop("routing", None)
    check_graph(G.number_of_nodes(), "topology", f"nodes (hosts, devices and switches of "
                f"{str(path)!r})", hint="")
    return validate_graph(G)


def _check_node_count(path: str | os.PathLike[str]) -> None:
    """Refuse a GraphML file of more nodes than a simulation holds, counted in its text
    (``<node`` elements, read in blocks) before the parser builds anything."""
    count, tail = 0, b""
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                data = tail + block
                count += data.count(b"<node ") + data.count(b"<node>") + data.count(b"<node\n")
                tail = data[-6:]
                count -= tail.count(b"<node ") + tail.count(b"<node>") + tail.count(b"<node\n")
    except OSError as exc:
        raise ConfigError(f"topology: cannot read GraphML {str(path)!r}: {exc.strerror}") from None
    check_graph(count, "topology", f"nodes (hosts, devices and switches of {str(path)!r})",
                hint="")


def _check_directed_pairs(G: nx.DiGraph) -> None:
    """Refuse a directed pair ``u -> v``, ``v -> u`` whose attributes differ: links are
    full duplex with one ``bandwidth_Bps`` per direction, so the pair must agree."""
    for u, v, data in G.edges(data=True):
        if u != v and G.has_edge(v, u):
            back = G.edges[v, u]
            for key in ("bandwidth_Bps", "latency_s"):
                if str(data.get(key)) != str(back.get(key)):
                    raise ConfigError(
                        f"topology: edges {u!r} -> {v!r} and {v!r} -> {u!r} have different "
                        f"{key} ({data.get(key)} and {back.get(key)}); links are full duplex "
                        "with one figure per direction: give one edge, or equal figures")
