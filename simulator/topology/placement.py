"""Rank placement: which endpoint of the topology each rank runs on.

- ``linear``: rank ``r`` on the ``r``-th endpoint in node order (MPI's default block
  mapping: consecutive ranks fill a node, then its leaf switch, ...).
- ``random``: a seeded random permutation of the endpoints.
- ``topology``: endpoints in a locality order: the hosts' ``order`` attribute where
  the generator sets one (torus snake walk), otherwise a depth-first walk of the
  graph from the first endpoint, so that consecutive ranks are near each other.

Examples
--------
>>> from dlscale.simulator.topology.torus import torus_graph
>>> G = torus_graph((3, 2))
>>> place(G, "topology").tolist()
[0, 1, 2, 5, 4, 3]
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx
import numpy as np

from dlscale.perfmodel.errors import unknown_name
from dlscale.simulator.topology.graphml import endpoints

__all__ = ["PLACEMENTS", "node_of", "place"]

#: Placement policies.
PLACEMENTS = ("linear", "random", "topology")


def _locality_order(G: nx.Graph, ends: list) -> list:
    attr = dict(G.nodes(data="order"))
    host = dict(zip(ends, node_of(G, ends).tolist(), strict=True))
    if any(attr.get(host[e]) is not None for e in ends):
        def key(item: tuple[int, object]) -> tuple:
            i, e = item
            o = attr.get(host[e])
            return (i if o is None else o, i)
        return [e for _, e in sorted(enumerate(ends), key=key)]
    if G.graph.get("routing") is not None:
        return list(ends)  # generators number endpoints leaf-, router- or node-major
    wanted = set(ends)
    return [x for x in nx.dfs_preorder_nodes(G, ends[0]) if x in wanted]


def place(G: nx.Graph, policy: str = "linear", seed: int | None = 0) -> np.ndarray:
    """Node labels of the endpoints in rank order (rank ``r`` runs on ``out[r]``).

    Parameters
    ----------
    G : networkx.Graph
        A topology graph.
    policy : str, optional
        One of :data:`PLACEMENTS`: ``linear``, ``random`` or ``topology``.
    seed : int or None, optional
        Seed of the ``random`` policy.

    Returns
    -------
    ndarray
        Endpoint labels in rank order.

    Raises
    ------
    ConfigError
        An unknown policy (listing the valid ones).

    Examples
    --------
    >>> from dlscale.simulator.topology.torus import torus_graph
    >>> place(torus_graph((6,)), "random", seed=2).tolist()
    [3, 5, 2, 4, 0, 1]
    """
    ends = endpoints(G)
    if policy == "linear":
        out = list(ends)
    elif policy == "random":
        perm = np.random.default_rng(seed).permutation(len(ends))
        out = [ends[i] for i in perm]
    elif policy == "topology":
        out = _locality_order(G, ends)
    else:
        raise unknown_name("placement", policy, PLACEMENTS)
    if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in out):
        return np.asarray(out, dtype=np.int64)
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return arr


def node_of(G: nx.Graph, labels: Iterable) -> np.ndarray:
    """Physical node (host) of each endpoint label: its ``node`` attribute, else itself.

    Examples
    --------
    >>> from dlscale.simulator.topology.torus import torus_graph
    >>> node_of(torus_graph((2,)), [1, 0]).tolist()
    [1, 0]
    """
    attr = dict(G.nodes(data="node"))
    return np.array([attr.get(x) if attr.get(x) is not None else x for x in labels])
