"""Inside one node: GPUs on NVLink or PCIe switches, KNL as one device or in parts.

Each function returns a small graph with one node of ``kind="nic"`` (where the node
meets the network), ``kind="device"`` nodes (where ranks run) and other elements
(``"cpu"``, ``"switch"``, ``"memory"``). :func:`~dlscale.simulator.topology.cluster.cluster_graph`
copies such a graph into every node of a cluster.

Examples
--------
>>> G = summit_node_graph()
>>> sorted(n for n, k in G.nodes(data="kind") if k == "device")[:3]
['gpu0', 'gpu1', 'gpu2']
"""

from __future__ import annotations

import networkx as nx

from dlscale.perfmodel.errors import ConfigError

__all__ = ["knl_node_graph", "pcie_box_graph", "star_node_graph", "summit_node_graph"]


def _edge(G: nx.Graph, u: str, v: str, bw: float, lat: float, level: str) -> None:
    if not bw > 0:
        raise ConfigError(f"{level} bandwidth_Bps: must be > 0, got {bw!r}")
    G.add_edge(u, v, bandwidth_Bps=float(bw), latency_s=float(lat), level=level)


def star_node_graph(devices: int, link_Bps: float, latency_s: float = 0.0) -> nx.Graph:
    """``devices`` devices each on its own link to the node's NIC/host switch.

    The default node of :func:`~dlscale.simulator.topology.cluster.cluster_graph`:
    every device has ``link_Bps`` per direction to every other (through the hub) and
    to the network.

    Parameters
    ----------
    devices : int
        Devices in the node.
    link_Bps : float
        Each device's link to the hub, per direction.
    latency_s : float, optional
        Latency of that link.

    Returns
    -------
    networkx.Graph
        The node's devices (``kind="device"``), its NIC (``"nic"``) and switches;
        edges with ``bandwidth_Bps``, ``latency_s``, ``level``. A template for
        :func:`~dlscale.simulator.topology.cluster.cluster_graph`.

    Examples
    --------
    >>> star_node_graph(4, 10e9).number_of_edges()
    4
    """
    if not isinstance(devices, int) or devices < 1:
        raise ConfigError(f"devices: must be a positive integer, got {devices!r}")
    G = nx.Graph()
    G.add_node("nic", kind="nic")
    for d in range(devices):
        G.add_node(f"dev{d}", kind="device")
        _edge(G, f"dev{d}", "nic", link_Bps, latency_s / 2, "intra")
    return G


def summit_node_graph(
    sockets: int = 2,
    gpus_per_socket: int = 3,
    *,
    nvlink_Bps: float = 50e9,
    xbus_Bps: float = 64e9,
    nic_pcie_Bps: float = 16e9,
    nvlink_latency_s: float = 1e-6,
) -> nx.Graph:
    """An IBM AC922 (Summit) node: per socket a POWER9 and its GPUs all-to-all on NVLink.

    Defaults: NVLink 2.0 at 50 GB/s per direction between the GPUs of a socket and
    between each GPU and its CPU (two bricks of 25 GB/s), X-Bus 64 GB/s between the
    sockets, and the dual-port ConnectX-5 on PCIe Gen4 x8 to each socket
    ("socket direct", 16 GB/s) -- OLCF Summit User Guide, "Node architecture".

    Parameters
    ----------
    sockets, gpus_per_socket : int, optional
        POWER9 sockets and V100 GPUs on each (Summit: 2 and 3).
    nvlink_Bps, xbus_Bps, nic_pcie_Bps : float, optional
        NVLink (GPU-GPU and GPU-CPU), socket-to-socket X-Bus, and each socket's
        PCIe link to the NIC, per direction.
    nvlink_latency_s : float, optional
        Latency of an NVLink hop.

    Returns
    -------
    networkx.Graph
        The node's devices (``kind="device"``), its NIC (``"nic"``) and switches;
        edges with ``bandwidth_Bps``, ``latency_s``, ``level``. A template for
        :func:`~dlscale.simulator.topology.cluster.cluster_graph`.

    Examples
    --------
    >>> G = summit_node_graph()
    >>> G.number_of_nodes(), G.edges["gpu0", "gpu1"]["bandwidth_Bps"]
    (9, 50000000000.0)
    """
    G = nx.Graph()
    G.add_node("nic", kind="nic")
    for s in range(sockets):
        G.add_node(f"cpu{s}", kind="cpu")
        _edge(G, f"cpu{s}", "nic", nic_pcie_Bps, 0.0, "pcie")
        gpus = [f"gpu{s * gpus_per_socket + i}" for i in range(gpus_per_socket)]
        for i, g in enumerate(gpus):
            G.add_node(g, kind="device")
            _edge(G, g, f"cpu{s}", nvlink_Bps, nvlink_latency_s / 2, "nvlink")
            for h in gpus[:i]:
                _edge(G, h, g, nvlink_Bps, nvlink_latency_s, "nvlink")
    for s in range(1, sockets):
        _edge(G, f"cpu{s - 1}", f"cpu{s}", xbus_Bps, 0.0, "xbus")
    return G


def pcie_box_graph(
    gpus: int = 8,
    gpus_per_switch: int = 4,
    *,
    pcie_Bps: float = 15.75e9,
    socket_link_Bps: float = 38.4e9,
    latency_s: float = 2e-6,
) -> nx.Graph:
    """GPUs on PCIe switches, one switch per CPU socket, the NIC on the first socket.

    Defaults: PCIe 3.0 x16, 15.75 GB/s per direction (PCI-SIG), two QPI links
    of 9.6 GT/s (38.4 GB/s, Intel Xeon E5 v4 datasheet) between the sockets.

    Parameters
    ----------
    gpus, gpus_per_switch : int, optional
        GPUs, and GPUs behind each PCIe switch (one switch per socket).
    pcie_Bps, socket_link_Bps : float, optional
        PCIe link and socket-to-socket link, per direction.
    latency_s : float, optional
        Latency of a PCIe hop.

    Returns
    -------
    networkx.Graph
        The node's devices (``kind="device"``), its NIC (``"nic"``) and switches;
        edges with ``bandwidth_Bps``, ``latency_s``, ``level``. A template for
        :func:`~dlscale.simulator.topology.cluster.cluster_graph`.

    Examples
    --------
    >>> G = pcie_box_graph(4, 4)
    >>> sorted(k for _, k in G.nodes(data="kind")).count("switch")
    1
    """
    if gpus < 1 or gpus_per_switch < 1:
        raise ConfigError(f"gpus and gpus_per_switch: must be >= 1, got {gpus}, {gpus_per_switch}")
    G = nx.Graph()
    G.add_node("nic", kind="nic")
    switches = -(-gpus // gpus_per_switch)
    for s in range(switches):
        G.add_node(f"cpu{s}", kind="cpu")
        G.add_node(f"plx{s}", kind="switch")
        _edge(G, f"plx{s}", f"cpu{s}", pcie_Bps, 0.0, "pcie")
        if s > 0:
            _edge(G, f"cpu{s - 1}", f"cpu{s}", socket_link_Bps, 0.0, "qpi")
    _edge(G, "cpu0", "nic", pcie_Bps, 0.0, "pcie")
    for d in range(gpus):
        G.add_node(f"gpu{d}", kind="device")
        _edge(G, f"gpu{d}", f"plx{d // gpus_per_switch}", pcie_Bps, latency_s / 2, "pcie")
    return G


def knl_node_graph(parts: int = 1, *, mcdram_Bps: float = 450e9, nic_Bps: float = 12.5e9) -> nx.Graph:
    """A Xeon Phi (KNL) node, as one device or split into ``parts`` (quadrant/SNC) ranks.

    The parts share MCDRAM: each reaches the shared ``memory`` node on a link of
    ``mcdram_Bps / parts`` (its share; about 450 GB/s STREAM triad on a 7250,
    Intel Xeon Phi 7250 product brief). The NIC hangs off the memory node.

    Parameters
    ----------
    parts : int, optional
        Ranks the chip is split into (1, 2 or 4: all-to-all, SNC-2, quadrant/SNC-4).
    mcdram_Bps, nic_Bps : float, optional
        MCDRAM bandwidth shared by the parts, and the NIC's.

    Returns
    -------
    networkx.Graph
        The node's devices (``kind="device"``), its NIC (``"nic"``) and switches;
        edges with ``bandwidth_Bps``, ``latency_s``, ``level``. A template for
        :func:`~dlscale.simulator.topology.cluster.cluster_graph`.

    Examples
    --------
    >>> G = knl_node_graph(4)
    >>> G.edges["knl0", "mcdram"]["bandwidth_Bps"]
    112500000000.0
    """
    if parts not in (1, 2, 4):
        raise ConfigError(f"parts: must be 1, 2 or 4 (KNL cluster modes), got {parts!r}")
    G = nx.Graph()
    G.add_node("nic", kind="nic")
    G.add_node("mcdram", kind="memory")
    _edge(G, "mcdram", "nic", nic_Bps, 0.0, "pcie")
    for p in range(parts):
        G.add_node(f"knl{p}", kind="device")
        _edge(G, f"knl{p}", "mcdram", mcdram_Bps / parts, 0.0, "mcdram")
    return G
