"""The network of a cluster in one line: family, taper per level, bisection bandwidth.

``predict`` prints it in its header, so that a change to a topology (a guessed
``down_up``, fewer global links) is visible even where it leaves a row's time as it
was. The bisection is that of the installed machine (``topology.max_nodes`` nodes)
cut into two halves, in closed form per family:

- fat tree (an XGFT, :func:`dlscale.perfmodel.machine.topologies.fattree.xgft_params`): the least, over the levels, of
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

from dlscale.perfmodel.machine.hardware import Cluster, FatTree

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
    return topo.tapers() if isinstance(topo, FatTree) else []


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
    inject = topo.max_nodes / 2 * cluster.node.nic.bandwidth_Bps
    return topo.bisection_Bps(inject, cluster.network.link.bandwidth_Bps)


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
    shape = topo.shape()
    bis = bisection_Bps(cluster)
    tail = f"; bisection {_rate(bis)}" if math.isfinite(bis) else ""
    return f"network: {topo.family}{shape}{tail} across {topo.max_nodes:,} nodes"
