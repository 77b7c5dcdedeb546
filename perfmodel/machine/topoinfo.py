"""The network of a cluster in one line: family, taper per level, bisection bandwidth.

``predict`` prints it in its header, so that a change to a topology (a guessed
``down_up``, fewer global links) is visible even where it leaves a row's time as it
was. The bisection is that of the installed machine (``topology.max_nodes`` nodes)
cut into two halves, in closed form per family:

- fat tree (an XGFT, :func:`.linkload.xgft_params`): the least, over the levels, of
  the capacity of the links from one half's level-``i`` elements up to level
  ``i + 1`` (the host links: every node's NIC);
- dragonfly: the global links between two halves of the groups (every pair of
  groups joined by ``floor(routers x global links / (groups - 1))`` links, as
  :mod:`dlscale.simulator.topology.dragonfly` wires them), at most half the nodes'
  injection;
- torus: the links cut across the largest dimension (two per ring with wrap-around),
  at most half the nodes' injection;
- crossbar: half the nodes' injection.

For a full fat tree, torus and dragonfly this is the figure that
:func:`dlscale.simulator.topology.topology_metrics` finds on the routed graph (a test
holds them equal); for a partly built tree it is the same formula over the nodes
installed.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> network_line(get_cluster("stampede2-skx"))
'network: fat-tree, 2 levels; taper 28:20 at L1; bisection 7.75 TB/s across 1,736 nodes'
"""

from __future__ import annotations

import math

from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Dragonfly, FatTree, Torus
from dlscale.perfmodel.network.linkload import xgft_params

__all__ = ["bisection_Bps", "network_line", "tapers"]


def tapers(cluster: Cluster) -> list[tuple[int, int]]:
    """``(down, up)`` links of each fat-tree switch level from the leaves up (the
    taper is their ratio); ``[]`` for other families.

    Parameters
    ----------
    cluster : Cluster
        The machine (its network's topology and links, its nodes' NICs).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> tapers(get_cluster("summit"))
    [(18, 18), (18, 18)]
    """
    topo = cluster.network.topology
    if not isinstance(topo, FatTree):
        return []
    m = [topo.nodes_per_leaf] + [topo.down_up[i][0] for i in range(1, topo.levels - 1)]
    return [(m[i], topo.down_up[i][1]) for i in range(topo.levels - 1)]


def bisection_Bps(cluster: Cluster) -> float:
    """Bisection bandwidth of the installed machine, bytes/s (module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine (its network's topology and links, its nodes' NICs).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> bisection_Bps(get_cluster("summit")) / 1e12   # 2,304 nodes' 23 GB/s NICs
    52.992
    """
    topo = cluster.network.topology
    n = topo.max_nodes
    inject = n / 2 * cluster.node.nic.bandwidth_Bps
    link = cluster.network.link.bandwidth_Bps
    if isinstance(topo, FatTree):
        m, w = xgft_params(topo, n)
        cuts = [inject] + [n / 2 * math.prod(w[:i + 1]) / math.prod(m[:i]) * link
                           for i in range(1, len(m))]
        return float(min(cuts))
    if isinstance(topo, Dragonfly):
        g = topo.groups
        if g < 2:
            return float(inject)
        per_pair = topo.routers_per_group * topo.global_links_per_router // (g - 1)
        crossing = (g // 2) * (g - g // 2) * per_pair
        bw = topo.global_bandwidth_Bps or link
        return float(min(inject, crossing * bw))
    if isinstance(topo, Torus):
        k = max(topo.dims)
        rings = math.prod(topo.dims) // k
        return float(min(inject, (2 if k > 2 else 1) * rings * link))
    if isinstance(topo, Crossbar):
        return float(inject)
    return float("nan")  # a topology family without a closed form


def _rate(bps: float) -> str:
    return f"{bps / 1e12:.3g} TB/s" if bps >= 1e12 else f"{bps / 1e9:.3g} GB/s"


def network_line(cluster: Cluster) -> str:
    """``"network: FAMILY[, shape]; taper D:U at L1, ...; bisection X across N nodes"``.

    Parameters
    ----------
    cluster : Cluster
        The machine whose network the line describes.
    """
    topo = cluster.network.topology
    shape = ""
    if isinstance(topo, FatTree):
        shape = f", {topo.levels} levels" + (f", {topo.rails} rails" if topo.rails > 1 else "")
        levels = tapers(cluster)
        if levels:
            shape += "; taper " + ", ".join(f"{d}:{u} at L{i}"
                                            for i, (d, u) in enumerate(levels, 1))
    elif isinstance(topo, Dragonfly):
        shape = (f", {topo.groups} groups x {topo.routers_per_group} routers, "
                 f"{topo.global_links_per_router} global links per router")
    elif isinstance(topo, Torus):
        shape = ", " + "x".join(str(d) for d in topo.dims)
    bis = bisection_Bps(cluster)
    tail = f"; bisection {_rate(bis)}" if math.isfinite(bis) else ""
    return f"network: {topo.family}{shape}{tail} across {topo.max_nodes:,} nodes"
