"""Descriptions of hardware: devices, links, nodes, networks and whole clusters.

These frozen dataclasses are what the catalogs build and what TOML cluster files
parse into. Every quantity is SI: seconds, bytes, bytes per second (per direction for
links), FLOP/s, hertz, watts. A figure in a catalog carries its public source in a
comment next to it; the ``source`` fields hold the short citation shown by
``dlscale catalog``.

Examples
--------
>>> link = Link("toy", bandwidth_Bps=10e9, latency_s=1e-6)
>>> link.transfer_s(10e9)
1.000001
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import (
    BANDWIDTH_RANGE_BPS,
    LATENCY_RANGE_S,
    MAX_DEVICES_PER_NODE,
    check_count,
    check_host_cores,
    check_range,
)
from dlscale.perfmodel.machine.runtime import Runtime
from dlscale.perfmodel.machine.topologies import (
    TOPOLOGIES,
    BuiltinTopology,
    Crossbar,
    Dragonfly,
    FatTree,
    Topology,
    Torus,
)
from dlscale.perfmodel.network.msgfactors import MessageFactors

__all__ = [
    "PRECISIONS",
    "STORAGE_PATHS",
    "TOPOLOGIES",
    "BuiltinTopology",
    "Cluster",
    "Crossbar",
    "Device",
    "Dragonfly",
    "FatTree",
    "Link",
    "NetworkSpec",
    "NodeSpec",
    "Topology",
    "Torus",
]

#: How a node's storage is read (:attr:`NodeSpec.storage_path`).
STORAGE_PATHS = ("network", "local")

#: Precisions a workload can train in. ``fp16`` means mixed precision: fp16 math
#: (on tensor cores where the device has them) and fp16 gradient messages.
PRECISIONS = ("fp64", "fp32", "fp16")


def _positive(owner: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ConfigError(f"{owner}.{name}: must be a positive number, got {value!r}")


def _non_negative(owner: str, name: str, value: float) -> None:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
        raise ConfigError(f"{owner}.{name}: must be a number >= 0, got {value!r}")


@dataclass(frozen=True)
class Device:
    """One compute device: a GPU, a CPU socket or a Xeon Phi (KNL) chip.

    Parameters
    ----------
    name : str
        Catalog name, e.g. ``"v100-sxm2"``.
    kind : {"gpu", "cpu", "knl"}
        Device family; ``"knl"`` has MCDRAM as ``fast_memory``.
    cores : int
        Cores (CPU, KNL) or streaming multiprocessors (GPU).
    clock_hz : float
        Clock used for the peak figures (base or AVX-512 clock for CPUs).
    peak_fp64_flops, peak_fp32_flops, peak_fp16_flops : float
        Peak FLOP/s per precision. ``peak_fp16_flops`` is the tensor-core peak where
        the device has tensor cores, otherwise the fp16 peak of its ALUs (equal to
        fp32 on devices without faster half precision).
    memory_bytes : float
        Capacity of the main memory the training data lives in (HBM of a GPU, DDR4
        of a CPU or KNL node).
    memory_bandwidth_Bps : float
        Peak bandwidth of that memory.
    sustained_fraction : float
        Fraction of peak FLOP/s that deep-learning training kernels sustain on this
        device in fp32 (fp64 too), from a cited measurement (roofline's compute
        ceiling in practice).
    sustained_fraction_fp16 : float
        The same in mixed precision, of ``peak_fp16_flops``; 0 means "the same as
        ``sustained_fraction``". Tensor cores reach a much smaller fraction of their
        far higher peak, so Volta needs its own figure.
    gemm_fraction_fp16 : float
        Fraction of ``peak_fp16_flops`` that large, well-shaped matrix products sustain
        in mixed precision (a measured maximum achievable matmul rate); 0: not known.
        ``sustained_fraction_fp16`` is solved from a whole network's training rate
        (ResNet-50's convolutions, normalizations and framework time), far below what
        a transformer's GEMMs reach on the same device; the transformer path prices
        its GEMMs at this ceiling (:meth:`for_gemms`).
    stream_fraction : float
        Share of the training memory's bandwidth that a streaming kernel reaches on
        this device, measured (STREAM / BabelStream triad over the datasheet figure);
        1 where ``memory_bandwidth_Bps`` is itself a STREAM figure; 0: not measured,
        the common share applies (:mod:`dlscale.perfmodel.compute.streaming`).
    fast_memory_bytes, fast_memory_bandwidth_Bps : float
        On-package memory (KNL's MCDRAM); 0 where there is none.
    memory_mode : {"", "flat", "cache"}
        KNL MCDRAM mode. In ``flat`` mode the working set must fit in MCDRAM to run
        at MCDRAM bandwidth; in ``cache`` mode MCDRAM caches DDR4.
    tdp_w : float
        Thermal design power, watts.
    source : str
        Short citation of the datasheet.
    """

    name: str
    kind: str
    cores: int
    clock_hz: float
    peak_fp64_flops: float
    peak_fp32_flops: float
    peak_fp16_flops: float
    memory_bytes: float
    memory_bandwidth_Bps: float
    sustained_fraction: float
    fast_memory_bytes: float = 0.0
    fast_memory_bandwidth_Bps: float = 0.0
    memory_mode: str = ""
    tdp_w: float = 0.0
    source: str = ""
    sustained_fraction_fp16: float = 0.0
    gemm_fraction_fp16: float = 0.0
    stream_fraction: float = 0.0

    def __post_init__(self) -> None:
        owner = f"device {self.name!r}"
        if not (isinstance(self.stream_fraction, (int, float))
                and 0 <= self.stream_fraction <= 1):
            raise ConfigError(f"{owner}.stream_fraction: must be in [0, 1] (0: not measured), "
                              f"got {self.stream_fraction!r}")
        if not (0 <= self.gemm_fraction_fp16 <= 1):
            raise ConfigError(f"{owner}.gemm_fraction_fp16: must be in [0, 1], got "
                              f"{self.gemm_fraction_fp16!r}")
        if self.kind not in ("gpu", "cpu", "knl"):
            raise ConfigError(f"{owner}.kind: must be one of gpu, cpu, knl, got {self.kind!r}")
        for name in ("clock_hz", "peak_fp64_flops", "peak_fp32_flops", "peak_fp16_flops",
                     "memory_bytes", "memory_bandwidth_Bps"):
            _positive(owner, name, getattr(self, name))
        if not (isinstance(self.cores, int) and self.cores > 0):
            raise ConfigError(f"{owner}.cores: must be a positive integer, got {self.cores!r}")
        if not (0 < self.sustained_fraction <= 1):
            raise ConfigError(
                f"{owner}.sustained_fraction: must be in (0, 1], got {self.sustained_fraction!r}"
            )
        if not (0 <= self.sustained_fraction_fp16 <= 1):
            raise ConfigError(
                f"{owner}.sustained_fraction_fp16: must be in [0, 1], "
                f"got {self.sustained_fraction_fp16!r}"
            )
        _non_negative(owner, "fast_memory_bytes", self.fast_memory_bytes)
        _non_negative(owner, "fast_memory_bandwidth_Bps", self.fast_memory_bandwidth_Bps)
        if self.memory_mode not in ("", "flat", "cache"):
            raise ConfigError(
                f"{owner}.memory_mode: must be 'flat', 'cache' or empty, got {self.memory_mode!r}"
            )

    def peak_flops(self, precision: str) -> float:
        """Peak FLOP/s in ``precision`` (one of :data:`PRECISIONS`).

        Examples
        --------
        >>> d = Device("x", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
        >>> d.peak_flops("fp16") / d.peak_flops("fp32")
        8.0
        """
        if precision == "fp64":
            return self.peak_fp64_flops
        if precision == "fp32":
            return self.peak_fp32_flops
        if precision == "fp16":
            return self.peak_fp16_flops
        raise ConfigError(f"precision: must be one of {', '.join(PRECISIONS)}, got {precision!r}")

    def sustained_fraction_for(self, precision: str) -> float:
        """Fraction of :meth:`peak_flops` that training sustains in ``precision``.

        Examples
        --------
        >>> d = Device("x", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5,
        ...            sustained_fraction_fp16=0.2)
        >>> d.sustained_fraction_for("fp32"), d.sustained_fraction_for("fp16")
        (0.5, 0.2)
        """
        self.peak_flops(precision)  # validates the name
        if precision == "fp16" and self.sustained_fraction_fp16 > 0:
            return self.sustained_fraction_fp16
        return self.sustained_fraction

    def for_gemms(self) -> Device:
        """This device as large matrix products run on it: the mixed-precision
        fraction is :attr:`gemm_fraction_fp16` where one is given (else unchanged).

        Examples
        --------
        >>> d = Device("x", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5,
        ...            sustained_fraction_fp16=0.2, gemm_fraction_fp16=0.8)
        >>> d.for_gemms().sustained_fraction_for("fp16"), d.sustained_fraction_for("fp16")
        (0.8, 0.2)
        """
        if self.gemm_fraction_fp16 <= 0:
            return self
        return replace(self, sustained_fraction_fp16=self.gemm_fraction_fp16)

    def sustained_flops(self, precision: str) -> float:
        """FLOP/s that training sustains in ``precision``: peak times the fraction."""
        return self.peak_flops(precision) * self.sustained_fraction_for(precision)

    @property
    def training_memory_bytes(self) -> float:
        """Memory the training state must fit in.

        MCDRAM in flat mode (the SC'17 runs bind everything to MCDRAM), otherwise the
        main memory.
        """
        if self.kind == "knl" and self.memory_mode == "flat" and self.fast_memory_bytes > 0:
            return self.fast_memory_bytes
        return self.memory_bytes

    @property
    def training_memory_bandwidth_Bps(self) -> float:
        """Bandwidth of the memory the training state lives in (MCDRAM on KNL)."""
        if self.kind == "knl" and self.fast_memory_bandwidth_Bps > 0:
            return self.fast_memory_bandwidth_Bps
        return self.memory_bandwidth_Bps


@dataclass(frozen=True)
class Link:
    """A point-to-point channel: bandwidth per direction and one-message latency.

    ``latency_s`` is the end-to-end zero-byte latency of a message over this link
    (software and NIC included), the Hockney ``alpha``; ``1 / bandwidth_Bps`` is the
    Hockney ``beta``.
    """

    name: str
    bandwidth_Bps: float
    latency_s: float
    source: str = ""

    def __post_init__(self) -> None:
        _positive(f"link {self.name!r}", "bandwidth_Bps", self.bandwidth_Bps)
        _non_negative(f"link {self.name!r}", "latency_s", self.latency_s)
        check_range(self.bandwidth_Bps, BANDWIDTH_RANGE_BPS, f"link {self.name!r}.bandwidth_Bps",
                    "B/s")
        check_range(self.latency_s, LATENCY_RANGE_S, f"link {self.name!r}.latency_s", "s")

    def transfer_s(self, nbytes: float) -> float:
        """Hockney time ``latency + nbytes / bandwidth`` of one message."""
        return self.latency_s + nbytes / self.bandwidth_Bps


@dataclass(frozen=True)
class NodeSpec:
    """One node: its devices, how they connect, and its network injection.

    Parameters
    ----------
    devices_per_node : int
        Accelerators per node (GPU nodes) or sockets/chips used as ranks.
    intra_link : Link
        Device-to-device channel inside the node (NVLink, PCIe, shared memory).
    nic : Link
        Injection into the network: bandwidth per direction of all rails together,
        and the inter-node zero-byte MPI latency.
    host_link : Link or None
        Host-CPU to device channel (PCIe, NVLink to POWER9) for GPU nodes.
    host_cores : int
        Host cores of a GPU node, where the input pipeline runs (0: not described).
    devices_per_host_link : int
        Devices whose traffic to the host shares one ``host_link`` uplink (GPUs under
        one PCIe switch: 2 on a DGX-1); 1: each device has its own. Where every
        device stages at once (parameter servers on the host), each gets
        ``host_link / min(this, devices_per_node)``.
    storage_read_Bps : float
        Bytes/s the node's storage read path carries at its rated speed: the link a
        shared file system is read over (the node's Ethernet or InfiniBand port, at
        its signalling rate), or a local disk's rated read rate; 0: not described (no
        storage bound). Real data read at more than it delivers bounds the node's
        samples/s (:mod:`dlscale.perfmodel.training.storage`).
    storage_path : {"network", "local"}
        ``"network"``: a shared file system over that link, delivered at the cited
        file-system share of the wire (:data:`~dlscale.perfmodel.training.storage.FS_EFFICIENCY`);
        ``"local"``: a disk in the node, delivered at its rated rate.
    """

    name: str
    device: Device
    devices_per_node: int
    intra_link: Link
    nic: Link
    host_link: Link | None = None
    memory_bytes: float = 0.0
    power_w: float = 0.0
    source: str = ""
    host_cores: int = 0
    devices_per_host_link: int = 1
    storage_read_Bps: float = 0.0
    storage_path: str = "network"

    def __post_init__(self) -> None:
        if not (isinstance(self.devices_per_host_link, int)
                and not isinstance(self.devices_per_host_link, bool)
                and 1 <= self.devices_per_host_link <= MAX_DEVICES_PER_NODE):
            raise ConfigError(
                f"node {self.name!r}.devices_per_host_link: must be an integer from 1 to "
                f"{MAX_DEVICES_PER_NODE}, got {self.devices_per_host_link!r}")
        if not (isinstance(self.devices_per_node, int) and self.devices_per_node > 0):
            raise ConfigError(
                f"node {self.name!r}.devices_per_node: must be a positive integer, "
                f"got {self.devices_per_node!r}"
            )
        check_count(self.devices_per_node, MAX_DEVICES_PER_NODE,
                    f"node {self.name!r}.devices_per_node",
                    "the largest NVLink domain built, a DGX GH200, joins 256 GPUs")
        check_host_cores(self.host_cores, f"node {self.name!r}.host_cores")
        _non_negative(f"node {self.name!r}", "storage_read_Bps", self.storage_read_Bps)
        if self.storage_read_Bps > 0:
            check_range(self.storage_read_Bps, BANDWIDTH_RANGE_BPS,
                        f"node {self.name!r}.storage_read_Bps", "B/s")
        if self.storage_path not in STORAGE_PATHS:
            raise ConfigError(f"node {self.name!r}.storage_path: must be one of "
                              f"{', '.join(STORAGE_PATHS)}, got {self.storage_path!r}")


@dataclass(frozen=True)
class NetworkSpec:
    """The interconnect between nodes: topology, switch-to-switch links, hop latency.

    ``message_factors`` (optional) are the MPI/NCCL stack's per-message-size factors
    on latency and bandwidth (:mod:`dlscale.perfmodel.network.msgfactors`), applied to every
    message in both fidelities; None means the wire's figures at every size.
    """

    name: str
    topology: BuiltinTopology
    link: Link
    hop_latency_s: float = 100e-9
    source: str = ""
    message_factors: MessageFactors | None = None

    @property
    def max_nodes(self) -> int:
        return self.topology.max_nodes


def _default_runtime() -> Runtime:
    from dlscale.perfmodel.catalog.runtimes import DEFAULT_RUNTIME

    return DEFAULT_RUNTIME


@dataclass(frozen=True)
class Cluster:
    """A machine: identical nodes on one network.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> summit = get_cluster("summit")
    >>> summit.node.devices_per_node
    6
    """

    name: str
    node: NodeSpec
    network: NetworkSpec
    price_per_node_hour: float = 0.0
    source: str = ""
    #: The software stack the machine runs (:mod:`.catalog.runtimes`); a description
    #: that names none gets :data:`~.catalog.runtimes.DEFAULT_RUNTIME`.
    runtime: Runtime = field(default_factory=_default_runtime)
    #: Per-rank compute-time noise (OS noise, stragglers, GPU-to-GPU rate spread) of the
    #: machine: ``"none"``, ``"lognormal:SIGMA"`` or ``"empirical:FILE"``
    #: (:mod:`dlscale.perfmodel.machine.noise`); empty (not described): a GPU cluster's
    #: cited rate spread, none for other devices
    #: (:func:`dlscale.perfmodel.compute.variability.cluster_noise`). ``predict``
    #: charges a synchronous iteration its expected largest factor over the ranks;
    #: ``simulate`` draws it per rank unless ``--noise`` says otherwise.
    noise: str = ""

    def __post_init__(self) -> None:
        from dlscale.perfmodel.machine.noise import make_noise

        if self.noise:
            make_noise(self.noise)  # one clear line for a bad spec, before any work

    @property
    def max_nodes(self) -> int:
        return self.network.max_nodes

    def check_nodes(self, nodes: int) -> None:
        """Raise :class:`ConfigError` if ``nodes`` is not in ``1..max_nodes``."""
        if not isinstance(nodes, (int,)) or isinstance(nodes, bool) or nodes < 1:
            raise ConfigError(f"nodes: must be a positive integer, got {nodes!r}")
        if nodes > self.max_nodes:
            raise ConfigError(
                f"nodes: {nodes} is more than cluster {self.name!r} holds "
                f"({self.network.topology.family} of {self.max_nodes} nodes)"
            )
