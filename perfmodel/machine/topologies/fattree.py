"""The fat tree (folded Clos, an XGFT): its description, its D-mod-k routing rule, its
graph and its router -- the whole family, registered as :data:`FAMILY`.

The graph is an extended generalized fat tree, XGFT(h; m_1..m_h; w_1..w_h)
(Ohring et al. 1995): a level-``i`` switch has ``m_i`` children and every level-``i-1``
element has ``w_i`` parents. Hosts are level 0. ``w_1`` is the number of rails
(independent planes: each host has one leaf switch per rail). Oversubscription comes
from the link counts: a leaf with ``nodes_per_leaf`` hosts and ``up`` uplinks tapers
``nodes_per_leaf : up``.

Node labels are integers: hosts ``0..N-1`` (leaf-major), then the switches level by
level, so :class:`FatTreeRouter` computes paths by arithmetic.

Examples
--------
>>> G = fat_tree_graph(4)
>>> sum(1 for _, k in G.nodes(data="kind") if k == "host"), G.number_of_edges()
(16, 48)
>>> FatTreeRouter(G.graph["routing"]).node_paths(np.array([0]), np.array([15]), 0).tolist()
[[0, 16, 25, 35, 31, 23, 15]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import MAX_RAILS, check_count
from dlscale.perfmodel.machine.topologies.family import Family

if TYPE_CHECKING:
    import networkx as nx

    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["FAMILY", "FatTree", "FatTreeRouter", "dmodk_choice",
           "fat_tree_graph", "multilevel_fat_tree_graph", "xgft_graph",
           "xgft_params"]


@dataclass(frozen=True)
class FatTree:
    """A multi-level fat tree (folded Clos).

    Parameters
    ----------
    levels : int
        Switch levels (1 = a single switch).
    nodes_per_leaf : int
        Nodes attached to one leaf (level-1) switch.
    down_up : tuple of (int, int)
        Per level from the leaves up, ``(down ports, up ports)`` of a switch; the
        ratio is the oversubscription (taper) of that level. Stampede2's leaf is
        ``(28, 20)``. Length ``levels - 1``.
    max_nodes : int
        Nodes the installed tree holds.
    rails : int
        Independent planes (Summit's dual-rail EDR is 2).
    """

    levels: int
    nodes_per_leaf: int
    down_up: tuple[tuple[int, int], ...]
    max_nodes: int
    rails: int = 1
    family: str = field(default="fat-tree", init=False)

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ConfigError(f"fat-tree.levels: must be >= 1, got {self.levels!r}")
        if len(self.down_up) != self.levels - 1:
            raise ConfigError(
                f"fat-tree.down_up: needs {self.levels - 1} (down, up) pairs for "
                f"{self.levels} levels, got {len(self.down_up)}"
            )
        for i, (down, up) in enumerate(self.down_up):
            if down <= 0 or up <= 0:
                raise ConfigError(f"fat-tree.down_up[{i}]: ports must be > 0, got {(down, up)}")
        if self.nodes_per_leaf <= 0 or self.max_nodes <= 0 or self.rails <= 0:
            raise ConfigError("fat-tree: nodes_per_leaf, max_nodes and rails must be > 0")
        check_count(self.rails, MAX_RAILS, "fat-tree.rails",
                    "network planes per node; a DGX H100 has 8 compute NICs")

    def oversubscription(self, level: int) -> float:
        """Taper ``down/up`` of switch ``level`` (1 = leaf); 1.0 is non-blocking."""
        down, up = self.down_up[level - 1]
        return down / up

    def with_link_efficiency(self, efficiency: float) -> FatTree:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> FatTree:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """``{"L1-L2": link_Bps, ...}``: every switch-to-switch level runs the network's link."""
        return {f"L{i - 1}-L{i}": link_Bps for i in range(2, self.levels + 1)}

    def tapers(self) -> list[tuple[int, int]]:
        """``(down, up)`` links of each switch level from the leaves up (the taper is
        their ratio).

        Examples
        --------
        >>> FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2).tapers()
        [(18, 18), (18, 18)]
        """
        m = [self.nodes_per_leaf] + [self.down_up[i][0] for i in range(1, self.levels - 1)]
        return [(m[i], self.down_up[i][1]) for i in range(self.levels - 1)]

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The least, over the levels, of the capacity from one half up (XGFT cut)."""
        n = self.max_nodes
        m, w = xgft_params(self, n)
        cuts = [injection_Bps] + [n / 2 * math.prod(w[:i + 1]) / math.prod(m[:i]) * link_Bps
                                  for i in range(1, len(m))]
        return float(min(cuts))

    def shape(self) -> str:
        """``", 2 levels[, 2 rails]; taper 28:20 at L1"``."""
        shape = f", {self.levels} levels" + (f", {self.rails} rails" if self.rails > 1 else "")
        levels = self.tapers()
        if levels:
            shape += "; taper " + ", ".join(f"{d}:{u} at L{i}"
                                            for i, (d, u) in enumerate(levels, 1))
        return shape


def xgft_params(tree: FatTree, nodes: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XGFT ``(m, w)`` of the first ``nodes`` nodes of a :class:`FatTree`.

    ``m[i]``: children of a level-``i+1`` switch; ``w[i]``: parents of a level-``i``
    element (``w[0]``: rails). Levels above the lowest subtree that holds all nodes
    are dropped.

    Parameters
    ----------
    tree : FatTree
        The fat tree.
    nodes : int
        Nodes in use.

    Examples
    --------
    >>> xgft_params(FatTree(2, 28, ((28, 20),), 6000), 100)
    ((28, 4), (1, 20))
    >>> xgft_params(FatTree(3, 18, ((18, 18), (18, 18)), 4608, rails=2), 4608)
    ((18, 18, 15), (2, 18, 18))
    """
    m = [tree.nodes_per_leaf] + [tree.down_up[i][0] for i in range(1, tree.levels - 1)]
    w = [tree.rails] + [tree.down_up[i][1] for i in range(tree.levels - 1)]
    h = tree.levels
    while h > 1 and nodes <= math.prod(m[: h - 1]):
        h -= 1
    m = m[: h - 1]
    m.append(-(-nodes // math.prod(m)) if m else nodes)
    return tuple(m), tuple(w[:h])


def dmodk_choice(dst: np.ndarray, w: tuple[int, ...], level: int) -> np.ndarray:
    """Index, among the parents, of the level-``level`` switch a flow to ``dst`` climbs to.

    D-mod-k (Zahavi 2010): ``B_1`` is the rail, ``B_i = B_{i-1} + ((dst // prod(w[1:i-1]))
    mod w[i-1]) prod(w[:i-1])``; this returns ``B_level`` for rail 0.

    Parameters
    ----------
    dst : ndarray of int
        Destination host of each flow.
    w : tuple of int
        XGFT parents per level (:func:`xgft_params`).
    level : int
        The level climbed to.

    Examples
    --------
    >>> dmodk_choice(np.arange(6), (1, 3, 2), 3).tolist()
    [0, 1, 2, 3, 4, 5]
    """
    b = np.zeros_like(dst)
    wp, W = 1, w[0]
    for i in range(2, level + 1):
        b = b + ((dst // wp) % w[i - 1]) * W
        wp *= w[i - 1]
        W *= w[i - 1]
    return b


# -- the graph (the simulator's network) --

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
    import networkx as nx

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



def _switches(topo: FatTree, nodes: int) -> int:
    m, w = xgft_params(topo, nodes)     # built as far as the nodes in use reach (xgft_graph)
    return sum(-(-nodes // math.prod(m[:i])) * math.prod(w[:i]) for i in range(1, len(m) + 1))


def _graph(cluster: Cluster, topo: FatTree, nodes: int) -> nx.Graph:
    nic, link = cluster.node.nic, cluster.network.link
    return multilevel_fat_tree_graph(
        topo, nodes, host_bandwidth_Bps=nic.bandwidth_Bps / topo.rails,
        link_bandwidth_Bps=link.bandwidth_Bps, host_latency_s=nic.latency_s / 2,
        hop_latency_s=cluster.network.hop_latency_s)



# -- the router --

class FatTreeRouter:
    """Up/down routing on an XGFT (see :mod:`~dlscale.simulator.topology.fattree`)."""

    def __init__(self, params: dict[str, Any], seed: int = 0) -> None:
        self.m = params["m"]
        self.w = params["w"]
        self.offset: tuple[int, ...] = params["offset"]
        self.rails = self.w[0]
        self.pairwise = True
        h = len(self.m)
        self.M = [int(np.prod(self.m[:i])) for i in range(h + 1)]
        self.W = [int(np.prod(self.w[:i])) for i in range(h + 1)]

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        h = len(self.m)
        nca = np.zeros(len(s), dtype=np.int64)
        for i in range(h, 0, -1):
            nca = np.where(s // self.M[i - 1] != t // self.M[i - 1], np.maximum(nca, i), nca)
        # B part of the level-i switch on the way up: rail, then D-mod-k choices
        B = [np.zeros_like(s)]
        b = np.full_like(s, rail)
        B.append(b)
        wp = 1
        for i in range(2, h + 1):
            choice = (t // wp) % self.w[i - 1]
            b = b + choice * self.W[i - 1]
            B.append(b)
            wp *= self.w[i - 1]

        def node(e: np.ndarray, side: np.ndarray) -> np.ndarray:
            out: np.ndarray = side.copy()
            for i in range(1, h + 1):
                sel = e == i
                lab = self.offset[i] + (side // self.M[i]) * self.W[i] + B[i]
                out = np.where(sel, lab, out)
            return out

        cols = [node(np.minimum(j, nca), s) for j in range(h + 1)]
        cols += [node(np.minimum(j, nca), t) for j in range(h - 1, -1, -1)]
        return np.stack(cols, axis=1)



#: The fat tree's entry in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES`.
FAMILY = Family(FatTree, graph=_graph, switches=_switches, route=FatTreeRouter)
