"""n-dimensional tori with wrap-around links and one host per router.

Router ``i`` has mixed-radix coordinates with dimension 0 varying fastest. A dimension
of size 2 has its two links (the + and the - port reach the same neighbour) as one
edge of twice the bandwidth and ``multiplicity`` 2; a dimension of size 1 has none.
Hosts carry a ``order`` attribute: their position on a boustrophedon ("snake")
walk of the torus, so consecutive positions are neighbours (topology-aware placement).

Examples
--------
>>> G = torus_graph((4, 4))
>>> G.number_of_nodes(), sum(1 for *_, lvl in G.edges(data="level") if lvl == "torus")
(32, 32)
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from dlscale.perfmodel.errors import ConfigError

__all__ = ["snake_order", "torus_graph"]


def snake_order(dims: tuple[int, ...]) -> np.ndarray:
    """Position of each router on a boustrophedon walk (dimension 0 fastest).

    Consecutive positions are neighbours on the mesh, so a ring in this order uses
    one hop per step.

    Examples
    --------
    >>> snake_order((3, 2)).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    seq = [0]
    stride = 1
    for d in dims:
        prev = seq
        seq = []
        for c in range(d):
            part = prev if c % 2 == 0 else prev[::-1]
            seq.extend(x + c * stride for x in part)
        stride *= d
    pos = np.empty(len(seq), dtype=np.int64)
    pos[np.asarray(seq)] = np.arange(len(seq))
    return pos


def torus_graph(
    dims: tuple[int, ...],
    hosts: int | None = None,
    *,
    host_bandwidth_Bps: float = 12.5e9,
    link_bandwidth_Bps: float = 12.5e9,
    host_latency_s: float = 0.5e-6,
    hop_latency_s: float = 100e-9,
) -> nx.Graph:
    """Return the torus with dimensions ``dims`` and ``hosts`` hosts (default all).

    Host ``i`` attaches to router ``N_hosts + i``; all routers are built.

    Parameters
    ----------
    dims : tuple of int
        Routers per dimension (a ring of 2 is one link of multiplicity 2).
    hosts : int, optional
        Hosts to attach, in snake order (default: one per router).
    host_bandwidth_Bps, link_bandwidth_Bps : float, optional
        Host link and router-to-router link, per direction.
    host_latency_s, hop_latency_s : float, optional
        Latency of a host link and of a router hop.

    Returns
    -------
    networkx.Graph
        Hosts ``0..hosts-1`` and routers; edges with ``bandwidth_Bps``,
        ``latency_s``, ``level`` (``"host"``, ``"torus"``); the dimension-order
        router's description in ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A non-positive dimension, ``hosts`` outside ``1..prod(dims)``, or a bad link
        figure.

    Examples
    --------
    >>> G = torus_graph((2, 3), hosts=4)
    >>> G.number_of_nodes(), G.edges[4, 5]["multiplicity"]
    (10, 2)
    """
    dims = tuple(dims)
    if not dims or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise ConfigError(f"torus.dims: must be positive integers, got {dims!r}")
    total = math.prod(dims)
    n = total if hosts is None else hosts
    if not isinstance(n, int) or n < 1 or n > total:
        raise ConfigError(f"hosts: must be an integer in 1..{total}, got {n!r}")
    if not (host_bandwidth_Bps > 0 and link_bandwidth_Bps > 0):
        raise ConfigError("torus: host_bandwidth_Bps and link_bandwidth_Bps must be > 0")
    G = nx.Graph(family="torus")
    G.graph["routing"] = {"family": "torus", "dims": dims, "hosts": n}
    order = snake_order(dims)
    for i in range(n):
        G.add_node(i, kind="host", order=int(order[i]))
    G.add_nodes_from(range(n, n + total), kind="router")
    for i in range(n):
        G.add_edge(i, n + i, bandwidth_Bps=host_bandwidth_Bps, latency_s=host_latency_s,
                   level="host", multiplicity=1)
    stride = 1
    for d in dims:
        if d > 1:
            for r in range(total):
                c = (r // stride) % d
                nb = r + (((c + 1) % d) - c) * stride
                u, v = n + r, n + nb
                if G.has_edge(u, v):
                    G.edges[u, v]["bandwidth_Bps"] += link_bandwidth_Bps
                    G.edges[u, v]["multiplicity"] += 1
                else:
                    G.add_edge(u, v, bandwidth_Bps=link_bandwidth_Bps, latency_s=hop_latency_s,
                               level="torus", multiplicity=1)
        stride *= d
    return G
