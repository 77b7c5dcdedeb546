"""Topology contention in the analytical model: effective inter-node beta per step.

A collective step in which every rank exchanges with the rank ``d`` places away
(ranks placed linearly: rank ``i`` on node ``i // r``) loads the network's upper
levels with many flows at once. The analytical model charges this as a slow-down
factor ``>= 1`` on the step's inverse bandwidth. The simple rules used:

Fat tree
    Level ``j`` (1 = leaf) covers ``S_1 = nodes_per_leaf`` nodes, ``S_{j+1} = S_j
    down_{j+1}`` (a level-``j+1`` switch's down ports each lead to one level-``j``
    subtree). A node-distance ``dn`` step sends a fraction ``f_j = min(1, dn / S_j)``
    of a subtree's nodes across level ``j`` (none when all nodes sit in one
    subtree). The uplinks of a level-``j`` subtree carry ``S_j / T_j`` nodes' worth
    of injection, with the cumulative taper ``T_1 = down_1 nic / (up_1 link rails)``,
    ``T_j = T_{j-1} down_j / up_j``. Factor: ``max(1, max_j f_j T_j)``.
Dragonfly
    Group of ``G = routers_per_group terminals_per_router`` nodes. A step sends
    ``f = min(1, dn / G)`` of a group's nodes to one other group. Minimal routing:
    the ``h = routers global_links_per_router / (groups - 1)`` global links between
    two groups carry it: ``max(1, f G nic / (h global_bw))``. Valiant routing
    spreads the flows over all the group's global links, each flow using two:
    ``max(1, 2 f G nic / (routers global_links_per_router global_bw))``.
Torus
    Dimension-order placement: a shift by ``dn`` nodes moves ``h = (dn // s_k) mod
    dims[k]`` hops in the highest dimension ``k`` with stride ``s_k <= dn``, so each
    link of that ring carries ``min(h, dims[k] - h)`` flows: that, times ``nic /
    link`` when the torus link is slower than injection.
Crossbar
    1 (non-blocking).

Ring allreduce with linear placement crosses each uplink with one flow only, and
the tree algorithms have at most one sender per node per step past the node level,
so they get no topology factor; recursive doubling and Rabenseifner, whose long
steps pair every rank with a distant one, do.

Examples
--------
>>> from dlscale.perfmodel.hardware import FatTree
>>> ft = FatTree(2, 28, ((28, 20),), 1000)
>>> topology_factor(ft, 300, [1, 14, 28], 12.5e9, 12.5e9).round(3).tolist()
[1.0, 1.0, 1.4]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .errors import unknown_name
from .hardware import Cluster, Crossbar, Dragonfly, FatTree, Topology, Torus

__all__ = ["STEP_PATTERNS", "effective_beta_s_per_B", "hockney_params", "topology_factor"]


def topology_factor(topology: Topology, nodes: ArrayLike, node_distance: ArrayLike,
                    nic_Bps: float, link_Bps: float) -> np.ndarray:
    """Slow-down ``>= 1`` of a step where all ``nodes`` send ``node_distance`` nodes away.

    Vectorized over ``nodes`` and ``node_distance`` (broadcast together). See the
    module docstring for the rule of each topology family.
    """
    n = np.asarray(nodes, dtype=float)
    dn = np.maximum(np.asarray(node_distance, dtype=float), 1.0)
    n, dn = np.broadcast_arrays(n, dn)
    one = np.ones(n.shape)
    if isinstance(topology, Crossbar):
        return one
    if isinstance(topology, FatTree):
        size = float(topology.nodes_per_leaf)
        taper = nic_Bps / (link_Bps * topology.rails)
        factor = one
        for level, (down, up) in enumerate(topology.down_up):
            if level > 0:
                size *= down
            taper *= down / up
            frac = np.where(n > size, np.minimum(1.0, dn / size), 0.0)
            factor = np.maximum(factor, frac * taper)
        return factor
    if isinstance(topology, Dragonfly):
        group = topology.routers_per_group * topology.terminals_per_router
        gbw = topology.global_bandwidth_Bps or link_Bps
        links = topology.routers_per_group * topology.global_links_per_router
        frac = np.where(n > group, np.minimum(1.0, dn / group), 0.0)
        if topology.routing == "minimal":
            pair_links = links / max(topology.groups - 1, 1)
            return np.maximum(one, frac * group * nic_Bps / (pair_links * gbw))
        return np.maximum(one, 2 * frac * group * nic_Bps / (links * gbw))
    if isinstance(topology, Torus):
        strides = np.cumprod((1, *topology.dims[:-1])).astype(float)
        dims = np.asarray(topology.dims, dtype=float)
        k = np.clip(np.searchsorted(strides, dn, side="right") - 1, 0, len(dims) - 1)
        hops = np.floor(dn / strides[k]) % dims[k]
        flows = np.maximum(np.minimum(hops, dims[k] - hops), 1.0)
        return np.where(n > 1, flows * max(1.0, nic_Bps / link_Bps), one)
    raise TypeError(f"topology: unsupported {type(topology).__name__}")


#: How each flat allreduce uses the network: "ring" (one flow per node and
#: direction), "tree" (one sender per node per step), "distance" (every rank pairs
#: with the one ``2^k`` away, weighted per step as noted).
STEP_PATTERNS = {
    "ring": "ring",
    "binomial-tree": "tree",
    "double-binary-tree": "tree",
    "recursive-doubling": "distance-equal",
    "rabenseifner": "distance-halving",
}


def hockney_params(cluster: Cluster) -> dict[str, float]:
    """Alpha, beta and gamma of a cluster, SI.

    ``intra``: the node's device-to-device link. ``inter``: a message between ranks
    on different nodes. Its inverse bandwidth is the NIC's (the slower of the
    intra-node link and the NIC is taken per algorithm by
    :func:`effective_beta_s_per_B`); its latency follows the path rule of a message:
    latencies add along the links a message crosses, bandwidth is that of the
    slowest (cut-through pipelining). A rank on a node with more than one device
    sits behind the intra-node link (a GPU's memory behind NVLink/PCIe: CUDA-aware
    MPI stages or GPUDirect-reads the buffer across it), so an inter-node message
    crosses device -> intra link -> NIC -> network -> NIC -> intra link -> device:
    ``inter_alpha_s = nic.latency_s + intra_link.latency_s`` (the two halves of
    the intra-node latency, one per end; the NIC's figure is the end-to-end
    zero-byte MPI latency and is charged once). With one device per node the rank
    is the host and ``inter_alpha_s = nic.latency_s``. This is the path latency
    :func:`dlscale.simulator.topology_cluster.cluster_graph` builds (half the
    intra-node latency on each device-NIC edge, half the NIC's on each host-network
    edge), so that the closed forms and the simulation agree. Switch-to-switch hops
    beyond the first switch (included in the NIC's figure) are not charged here.
    ``nic_alpha_s`` is the NIC's latency alone. ``gamma`` = 3 bytes moved (two
    reads, one write, as in STREAM's ``a = b + c``) per byte reduced, at the
    device's training-memory bandwidth.

    Examples
    --------
    >>> from dlscale.perfmodel.hardware import (
    ...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
    >>> node = NodeSpec("n", gpu, 4, Link("nvlink", 50e9, 2e-6), Link("ib", 10e9, 1e-6))
    >>> toy = Cluster("toy", node, NetworkSpec("x", Crossbar(8), Link("ib", 10e9, 1e-6)))
    >>> hockney_params(toy)["inter_beta_s_per_B"], hockney_params(toy)["gamma_s_per_B"]
    (1e-10, 3.333333333333333e-12)
    >>> round(hockney_params(toy)["inter_alpha_s"] * 1e6, 9)   # NVLink 2 us + NIC 1 us
    3.0
    """
    node = cluster.node
    behind = node.intra_link.latency_s if node.devices_per_node > 1 else 0.0
    return {
        "intra_alpha_s": node.intra_link.latency_s,
        "intra_beta_s_per_B": 1.0 / node.intra_link.bandwidth_Bps,
        "inter_alpha_s": node.nic.latency_s + behind,
        "nic_alpha_s": node.nic.latency_s,
        "inter_beta_s_per_B": 1.0 / node.nic.bandwidth_Bps,
        "gamma_s_per_B": 3.0 / node.device.training_memory_bandwidth_Bps,
    }


def effective_beta_s_per_B(cluster: Cluster, algorithm: str, nodes: ArrayLike,
                           ranks_per_node: int) -> np.ndarray:
    """Inverse bandwidth a flat ``algorithm`` sees over ``nodes x ranks_per_node`` ranks.

    Per step at rank distance ``d`` (``r = ranks_per_node``): inside one node the
    intra-node link; otherwise the NIC shared by the ``min(d, r)`` ranks of a node
    whose partners are off-node (none when ``d < r`` and ``2d`` divides ``r``, the
    XOR pairing), times :func:`topology_factor` at node distance ``max(1, d // r)``.
    A step runs at its slowest flow. "distance-equal" (recursive doubling) weights the
    ``log2 p`` steps equally, "distance-halving" (Rabenseifner) in proportion to the
    data they move (``d / (p - 1)``). "ring" and "tree": the slower of the intra-node
    link (when ``r > 1``) and the NIC, with no topology factor.

    Examples
    --------
    Four GPUs per node on a 50 GB/s intra-node link, 10 GB/s NICs, a 2:1 tapered
    two-level fat tree with 4 nodes per leaf:

    >>> from dlscale.perfmodel.hardware import (
    ...     Cluster, Device, FatTree, Link, NetworkSpec, NodeSpec)
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
    >>> node = NodeSpec("n", gpu, 4, Link("nvlink", 50e9, 2e-6), Link("ib", 10e9, 1e-6))
    >>> net = NetworkSpec("ft", FatTree(2, 4, ((4, 2),), 64), Link("ib", 10e9, 1e-6))
    >>> c = Cluster("toy", node, net)
    >>> (effective_beta_s_per_B(c, "ring", [1, 2, 64], 4) * 1e12).round(1).tolist()
    [20.0, 100.0, 100.0]

    Recursive doubling on 64 one-rank nodes: steps at distance 1, 2 stay under the
    taper (a quarter, a half of each leaf crosses: 0.5, 1.0 of the uplinks), the four
    longer ones run at half speed: ``(1 + 1 + 4 x 2) / 6`` times the NIC's beta.

    >>> (effective_beta_s_per_B(c, "recursive-doubling", [1, 64], 1) * 1e12).round(1).tolist()
    [0.0, 166.7]
    """
    try:
        pattern = STEP_PATTERNS[algorithm]
    except KeyError:
        raise unknown_name("allreduce algorithm", algorithm, STEP_PATTERNS) from None
    par = hockney_params(cluster)
    b_in, b_nic = par["intra_beta_s_per_B"], par["inter_beta_s_per_B"]
    n = np.atleast_1d(np.asarray(nodes, dtype=float))
    r = int(ranks_per_node)
    intra = b_in if r > 1 else 0.0
    if pattern in ("ring", "tree"):
        return np.where(n > 1, max(intra, b_nic), intra)
    p = n * r
    kmax = int(np.ceil(np.log2(max(float(p.max()), 2.0))))
    d = np.exp2(np.arange(kmax))[:, None]                  # (steps, 1)
    active = d < p[None, :]                                # step exists for this p
    crossing = ~((d < r) & (r % (2 * d) == 0)) & (n[None, :] > 1)
    flows = np.minimum(d, r)
    topo = topology_factor(cluster.network.topology, n[None, :], np.maximum(1.0, d // r),
                           cluster.node.nic.bandwidth_Bps, cluster.network.link.bandwidth_Bps)
    beta_step = np.where(crossing, np.maximum(intra, b_nic * flows * topo), intra)
    if pattern == "distance-equal":
        w = active.astype(float)
    else:
        w = np.where(active, d, 0.0)
    wsum = w.sum(axis=0)
    return np.where(wsum > 0, (w * beta_step).sum(axis=0) / np.where(wsum > 0, wsum, 1.0), intra)
