"""Fat trees: the k-ary fat tree and the general multi-level (tapered, multi-rail) form.

Both are built as an extended generalized fat tree, XGFT(h; m_1..m_h; w_1..w_h)
(Ohring et al. 1995): a level-``i`` switch has ``m_i`` children and every level-``i-1``
element has ``w_i`` parents. Hosts are level 0. ``w_1`` is the number of rails
(independent planes: each host has one leaf switch per rail). Oversubscription comes
from the link counts: a leaf with ``nodes_per_leaf`` hosts and ``up`` uplinks tapers
``nodes_per_leaf : up``.

Node labels are integers: hosts ``0..N-1`` (leaf-major), then the switches level by
level, so the router in :mod:`dlscale.simulator.topology.routing` computes paths by arithmetic.

Examples
--------
>>> G = fat_tree_graph(4)
>>> sum(1 for _, k in G.nodes(data="kind") if k == "host"), G.number_of_edges()
(16, 48)
"""

from __future__ import annotations

import math

import networkx as nx

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import FatTree
from dlscale.perfmodel.machine.topologies.fattree import xgft_params

__all__ = ["fat_tree_graph", "multilevel_fat_tree_graph", "xgft_graph", "xgft_params"]


def _check_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name}: must be a positive integer, got {value!r}")


def _check_positive(name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{name}: must be a positive number, got {value!r}")


def _check_xgft(m: tuple[int, ...], w: tuple[int, ...], hosts: int | None,
                host_bandwidth_Bps: float, link_bandwidth_Bps: float) -> int:
    """Check the XGFT shape, host count and bandwidths; return the host count."""
    if len(m) != len(w) or not m:
        raise ConfigError(f"xgft: m and w need the same positive length, got {m!r} and {w!r}")
    for i, (mi, wi) in enumerate(zip(m, w, strict=True)):
        _check_positive_int(f"xgft.m[{i}]", mi)
        _check_positive_int(f"xgft.w[{i}]", wi)
    total = math.prod(m)
    n = total if hosts is None else hosts
    _check_positive_int("hosts", n)
    if n > total:
        raise ConfigError(f"hosts: {n} is more than XGFT{m} holds ({total})")
    for name, val in (("host_bandwidth_Bps", host_bandwidth_Bps),
                      ("link_bandwidth_Bps", link_bandwidth_Bps)):
        _check_positive(name, val)
    return n


def xgft_graph(
    m: tuple[int, ...],
    w: tuple[int, ...],
    hosts: int | None = None,
    *,
    host_bandwidth_Bps: float = 12.5e9,
    link_bandwidth_Bps: float = 12.5e9,
    host_latency_s: float = 0.5e-6,
    hop_latency_s: float = 100e-9,
) -> nx.Graph:
    """Return the XGFT(h; m; w) graph with ``hosts`` hosts (default all ``prod(m)``).

    Parameters
    ----------
    m, w : tuple of int
        Children per level-``i`` switch and parents per level-``i-1`` element, for
        ``i = 1..h`` (``w[0]`` is the number of rails).
    hosts : int, optional
        Hosts to attach (a partial last leaf/subtree is allowed); switches whose
        subtree holds no host are left out.
    host_bandwidth_Bps, link_bandwidth_Bps : float
        Per-direction bandwidth of host-leaf links and of switch-switch links.
    host_latency_s, hop_latency_s : float
        Latency of a host-leaf link and of a switch-switch link.

    Returns
    -------
    networkx.Graph
        Hosts ``0..hosts-1`` (``kind="host"``) and switches or routers; edges with
        ``bandwidth_Bps``, ``latency_s`` and ``level``; the router's description in
        ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A non-positive count, ``hosts`` beyond what the network holds, or a bad link
        figure.

    Examples
    --------
    >>> G = xgft_graph((2, 2), (1, 2))
    >>> sorted({lvl for _, _, lvl in G.edges(data="level")})
    ['L1-L2', 'host']
    """
    n = _check_xgft(m, w, hosts, host_bandwidth_Bps, link_bandwidth_Bps)
    h = len(m)
    M = [math.prod(m[:i]) for i in range(h + 1)]  # hosts under a level-i element
    W = [math.prod(w[:i]) for i in range(h + 1)]  # parent choices below level i
    count = [n] + [-(-n // M[i]) * W[i] for i in range(1, h + 1)]
    offset = [0]
    for i in range(1, h + 1):
        offset.append(offset[-1] + count[i - 1])
    G = nx.Graph(family="fat-tree")
    G.graph["routing"] = {"family": "fat-tree", "m": tuple(m), "w": tuple(w), "hosts": n,
                          "offset": tuple(offset)}
    G.add_nodes_from(range(n), kind="host")
    for i in range(1, h + 1):
        G.add_nodes_from(range(offset[i], offset[i] + count[i]), kind="switch", level=i)
    for i in range(1, h + 1):
        bw, lat = ((host_bandwidth_Bps, host_latency_s) if i == 1
                   else (link_bandwidth_Bps, hop_latency_s))
        level = "host" if i == 1 else f"L{i - 1}-L{i}"
        for idx in range(count[i - 1]):
            a, b = divmod(idx, W[i - 1]) if i > 1 else (idx, 0)
            child = offset[i - 1] + idx
            for bi in range(w[i - 1]):
                parent = offset[i] + (a // m[i - 1]) * W[i] + b + W[i - 1] * bi
                G.add_edge(child, parent, bandwidth_Bps=bw, latency_s=lat, level=level)
    return G


def fat_tree_graph(k: int, **links: float) -> nx.Graph:
    """Return the k-ary three-level fat tree of Al-Fares et al. (2008).

    ``k`` pods of ``k/2`` edge and ``k/2`` aggregation switches, ``(k/2)**2`` core
    switches, ``k**3/4`` hosts; non-blocking. Link keyword arguments as in
    :func:`xgft_graph`.

    Parameters
    ----------
    k : int
        Switch radix, even and >= 2.
    **links : float
        ``host_bandwidth_Bps``, ``link_bandwidth_Bps``, ``host_latency_s``,
        ``hop_latency_s`` (as in :func:`xgft_graph`).

    Returns
    -------
    networkx.Graph
        Hosts ``0..k**3/4 - 1`` (``kind="host"``), switches with their ``level``;
        edges with ``bandwidth_Bps``, ``latency_s``, ``level``; the fat-tree router's
        description in ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        An odd or non-positive ``k``, or a bad link figure.

    Examples
    --------
    >>> G = fat_tree_graph(4)
    >>> sum(1 for _, lvl in G.nodes(data="level") if lvl == 3)
    4
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 2 or k % 2:
        raise ConfigError(f"k: must be an even integer >= 2, got {k!r}")
    half = k // 2
    return xgft_graph((half, half, k), (1, half, half), None, **links)


def multilevel_fat_tree_graph(
    tree: FatTree,
    nodes: int,
    *,
    host_bandwidth_Bps: float,
    link_bandwidth_Bps: float,
    host_latency_s: float = 0.5e-6,
    hop_latency_s: float = 100e-9,
) -> nx.Graph:
    """Return the fat tree a :class:`~dlscale.perfmodel.machine.hardware.FatTree` describes.

    ``host_bandwidth_Bps`` is per rail. Stampede2's Omni-Path tree (28 nodes per leaf,
    20 uplinks, Stampede2 user guide) tapers 28:20 at the leaves.

    Parameters
    ----------
    tree : FatTree
        Levels, nodes per leaf, ``(down, up)`` ports per level, rails.
    nodes : int
        Hosts to build (the tree is built as far as they reach).
    host_bandwidth_Bps, link_bandwidth_Bps : float
        Host link per rail; switch-to-switch link.
    host_latency_s, hop_latency_s : float, optional
        Latency of a host link and of a switch hop.

    Returns
    -------
    networkx.Graph
        As :func:`xgft_graph`, hosts ``0..nodes-1``.

    Raises
    ------
    ConfigError
        ``nodes`` outside ``1..tree.max_nodes`` or a bad link figure.

    Examples
    --------
    >>> t = FatTree(levels=2, nodes_per_leaf=28, down_up=((28, 20),), max_nodes=6000)
    >>> G = multilevel_fat_tree_graph(t, 56, host_bandwidth_Bps=12.5e9,
    ...                               link_bandwidth_Bps=12.5e9)
    >>> sum(1 for *_, lvl in G.edges(data="level") if lvl == "L1-L2")
    40
    """
    _check_positive_int("nodes", nodes)
    if nodes > tree.max_nodes:
        raise ConfigError(f"nodes: {nodes} is more than the fat tree holds ({tree.max_nodes})")
    m, w = xgft_params(tree, nodes)
    return xgft_graph(m, w, nodes, host_bandwidth_Bps=host_bandwidth_Bps,
                      link_bandwidth_Bps=link_bandwidth_Bps, host_latency_s=host_latency_s,
                      hop_latency_s=hop_latency_s)
