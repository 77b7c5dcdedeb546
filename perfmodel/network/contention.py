"""Hockney parameters of a cluster: latency, inverse bandwidth and reduction cost.

The network model itself (each step of a collective costed from the loads its flows
put on every level of the topology) is :mod:`dlscale.perfmodel.network.model`; this module gives the
per-link figures the training models and the tuners quote: the intra-node and the
inter-node message's latency and inverse bandwidth, and the reduction cost.
"""

from __future__ import annotations

from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["hockney_params"]


def hockney_params(cluster: Cluster) -> dict[str, float]:
    """Alpha, beta and gamma of a cluster, SI.

    ``intra``: the node's device-to-device link. ``inter``: a message between ranks
    on different nodes. Its inverse bandwidth is the NIC's; its latency follows the path rule of a message:
    latencies add along the links a message crosses, bandwidth is that of the
    slowest (cut-through pipelining). A rank on a node with more than one device
    sits behind the intra-node link (a GPU's memory behind NVLink/PCIe: CUDA-aware
    MPI stages or GPUDirect-reads the buffer across it), so an inter-node message
    crosses device -> intra link -> NIC -> network -> NIC -> intra link -> device:
    ``inter_alpha_s = nic.latency_s + intra_link.latency_s`` (the two halves of
    the intra-node latency, one per end; the NIC's figure is the end-to-end
    zero-byte MPI latency and is charged once). With one device per node the rank
    is the host and ``inter_alpha_s = nic.latency_s``. This is the path latency
    :func:`dlscale.simulator.topology.cluster.cluster_graph` builds (half the
    intra-node latency on each device-NIC edge, half the NIC's on each host-network
    edge), so that the closed forms and the simulation agree. Switch-to-switch hops
    beyond the first switch (included in the NIC's figure) are not charged here.
    ``nic_alpha_s`` is the NIC's latency alone. ``gamma`` = 3 bytes moved (two
    reads, one write, as in STREAM's ``a = b + c``) per byte reduced, at the
    device's training-memory bandwidth.

    Parameters
    ----------
    cluster : Cluster
        The machine.

    Returns
    -------
    dict of str to float
        ``intra_alpha_s``, ``intra_beta_s_per_B``, ``inter_alpha_s``,
        ``nic_alpha_s``, ``inter_beta_s_per_B`` and ``gamma_s_per_B``.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import (
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
