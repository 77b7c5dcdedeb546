"""Nodes: which devices, how many, and how they connect inside and out.

Examples
--------
>>> n = NODES["summit"]
>>> n.devices_per_node, n.intra_link.name, n.nic.bandwidth_Bps / 1e9
(6, 'nvlink2-x2', 23.0)
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.devices import DEVICES
from dlscale.perfmodel.catalog.links import LINKS
from dlscale.perfmodel.machine.hardware import NodeSpec
from dlscale.perfmodel.units import GB, GiB

__all__ = ["NODES"]


def _node(name: str, device: str, count: int, intra: str, nic: str, host: str | None,
          memory_gb: float, source: str, host_cores: int = 0,
          devices_per_host_link: int = 1) -> NodeSpec:
    return NodeSpec(name=name, device=DEVICES[device], devices_per_node=count,
                    intra_link=LINKS[intra], nic=LINKS[nic],
                    host_link=LINKS[host] if host else None,
                    memory_bytes=memory_gb * GB, source=source, host_cores=host_cores,
                    devices_per_host_link=devices_per_host_link)


NODES: dict[str, NodeSpec] = {
    # Cori KNL node (NERSC Cori configuration page, docs.nersc.gov/systems/cori/): one
    # Xeon Phi 7250, 96 GB DDR4, 16 GB MCDRAM, Cray Aries NIC. Default mode quad-cache;
    # flat mode on request.
    "cori-knl": _node("cori-knl", "xeon-phi-7250-cache", 1, "knl-shm", "aries", None, 96,
                      "NERSC Cori KNL configuration"),
    # the same node in flat mode (docs.nersc.gov/systems/cori/)
    "cori-knl-flat": _node("cori-knl-flat", "xeon-phi-7250-flat", 1, "knl-shm", "aries", None,
                           96, "NERSC Cori KNL configuration (flat mode)"),
    # Stampede2 KNL node (TACC user guide): Xeon Phi 7250, 68 cores, 96 GB DDR4 + 16 GB
    # MCDRAM; cache-quad in the default queues; 100 Gb/s Omni-Path.
    "stampede2-knl": _node("stampede2-knl", "xeon-phi-7250-cache", 1, "knl-shm",
                           "omnipath-100", None, 96, "TACC Stampede2 user guide"),
    # Stampede2 SKX node (TACC user guide): 2 x Xeon Platinum 8160 (48 cores), 192 GB.
    "stampede2-skx": _node("stampede2-skx", "xeon-8160", 2, "xeon-shm", "omnipath-100", None,
                           192, "TACC Stampede2 user guide"),
    # Summit node (OLCF user guide): 2 POWER9 + 6 V100 16 GB; NVLink 2.0 two bricks
    # (50 GB/s per direction) GPU-GPU within a socket and CPU-GPU; 512 GB DDR4;
    # dual-rail EDR, 23 GB/s injection.
    # Host cores: 2 x 22-core POWER9, of which 1 per socket is kept for the system (OLCF
    # Summit user guide: 42 cores available to jobs per node).
    "summit": _node("summit", "v100-sxm2", 6, "nvlink2-x2", "ib-edr-dual-rail", "nvlink2-x2",
                    512, "OLCF Summit user guide", host_cores=42),
    # SC'17 K80 box (You, Buluc, Demmel): 4 K80 boards = 8 GK210 GPUs (12 GB each) on
    # PCIe gen3 switches; the host CPU is the EASGD master, reached over PCIe. Its
    # network port is unused in one-node runs (10 GbE assumed, not stated).
    "k80-8gpu": _node("k80-8gpu", "k80", 8, "pcie-gen3-x16", "eth-10g-tcp", "pcie-gen3-x16",
                      0, "You, Buluc, Demmel SC'17; NVIDIA K80 datasheet"),
    # Generic GPU node: 4 x P100 PCIe on PCIe gen3, one EDR InfiniBand port (assumption:
    # a typical configuration, not a particular machine; host memory unset = 0).
    "p100-4x-edr": _node("p100-4x-edr", "p100-pcie", 4, "pcie-gen3-x16", "ib-edr",
                         "pcie-gen3-x16", 0, "generic 4 x P100 PCIe + EDR node"),
    # NVIDIA DGX-1 (P100) datasheet: 8 x P100 SXM2 in a hybrid cube mesh of NVLink 1.0
    # (one link per GPU pair, 20 GB/s per direction), 4 x EDR, 512 GB.
    # Host: 2 x 20-core Xeon E5-2698 v4 (both DGX-1 datasheets): 40 cores.
    # Host uplinks: two GPUs under one PCIe switch with one x16 gen3 uplink to the CPU
    # (a DGX-1 V100's NCCL topology dump, github.com/NVIDIA/nccl/issues/671: PCIe
    # switch 10b5:8764 at 0000:03:00.0, "8 GT/s" x16, holding GPU 0 and GPU 1); the
    # P100 DGX-1 is taken to have the same system board [assumption].
    "dgx1-p100": _node("dgx1-p100", "p100-sxm2", 8, "nvlink1", "ib-edr-x4", "pcie-gen3-x16",
                       512, "NVIDIA DGX-1 (P100) datasheet", host_cores=40,
                       devices_per_host_link=2),
    # NVIDIA DGX-1 (V100) datasheet: 8 x V100 SXM2 in a hybrid cube mesh of NVLink 2.0;
    # pairs are joined by one or two links -> one link (25 GB/s) taken per pair.
    "dgx1-v100": _node("dgx1-v100", "v100-sxm2", 8, "nvlink2", "ib-edr-x4", "pcie-gen3-x16",
                       512, "NVIDIA DGX-1 (V100) datasheet", host_cores=40,
                       devices_per_host_link=2),
    # Generic PCIe servers: GPUs on PCIe gen3 x16 switches, 100 Gb/s EDR port (assumption:
    # typical 4- and 8-GPU configurations, not particular machines; host memory unset).
    "pcie-4xp100": _node("pcie-4xp100", "p100-pcie", 4, "pcie-gen3-x16", "ib-edr",
                         "pcie-gen3-x16", 0, "generic 4 x P100 PCIe server"),
    "pcie-8xp100": _node("pcie-8xp100", "p100-pcie", 8, "pcie-gen3-x16", "ib-edr",  # assumption
                         "pcie-gen3-x16", 0, "generic 8 x P100 PCIe server"),
    "pcie-4xv100": _node("pcie-4xv100", "v100-pcie", 4, "pcie-gen3-x16", "ib-edr",  # assumption
                         "pcie-gen3-x16", 0, "generic 4 x V100 PCIe server"),
    "pcie-8xv100": _node("pcie-8xv100", "v100-pcie", 8, "pcie-gen3-x16", "ib-edr",  # assumption
                         "pcie-gen3-x16", 0, "generic 8 x V100 PCIe server"),
    # --- nodes of the 2020s ---------------------------------------------------------
    # Perlmutter GPU node (docs.nersc.gov/systems/perlmutter/architecture): 1 AMD EPYC
    # 7763 (64 cores), 4 NVIDIA A100 (40GB), "4x HPE Slingshot 11"; 256 GB host memory
    # (docs.nersc.gov node-types figure, "Memory per Node: 256 GB"); the 4 GPUs all-to-all
    # on NVLink 3 (4 links per pair, links.py); GPU-CPU on PCIe 4.0 x16 (A100 datasheet;
    # secondary glennklockwood.com A100 page: "32+32 GB/s PCIe Gen4 (H2D)").
    "perlmutter-gpu": _node("perlmutter-gpu", "a100-sxm4-40gb", 4, "nvlink3-x4",
                            "slingshot-11-x4", "pcie-gen4-x16", 256,
                            "docs.nersc.gov Perlmutter architecture (GPU node)", host_cores=64),
    # Frontier node (OLCF Frontier user guide, docs.olcf.ornl.gov): one 64-core AMD EPYC
    # with 512 GB DDR4, 4 MI250X = 8 GCDs ("8 separate GPUs", 64 GB HBM2E each),
    # CPU-GCD Infinity Fabric 36+36 GB/s, GCD-GCD 200 GB/s in a package and 50-100 GB/s
    # across (the 50 GB/s pair taken, links.py), 4 Slingshot-11 NICs. The OS's reserved
    # cores of the low-noise mode are not subtracted (assumption: all 64 counted).
    "frontier": _node("frontier", "mi250x-gcd", 8, "infinity-fabric-x1", "slingshot-11-x4",
                      "infinity-fabric-cpu-gcd", 512, "OLCF Frontier user guide",
                      host_cores=64),
    # NVIDIA DGX H100 and DGX H200 (DGX BasePOD reference architecture, docs.nvidia.com,
    # "Key specifications of the DGX H200 and H100 system"): 8 GPUs, four NVSwitch chips,
    # "Dual Intel Xeon Platinum 8480C processors, 112 cores total", "2 TB of DDR5 system
    # memory", eight single-port ConnectX-7 up to 400 Gb/s (one per GPU, compute fabric).
    "dgx-h100": _node("dgx-h100", "h100-sxm", 8, "nvlink4-x18", "ib-ndr-x8", "pcie-gen5-x16",
                      2048, "NVIDIA DGX BasePOD RA, docs.nvidia.com (DGX H100)", host_cores=112),
    "dgx-h200": _node("dgx-h200", "h200-sxm", 8, "nvlink4-x18", "ib-ndr-x8", "pcie-gen5-x16",
                      2048, "NVIDIA DGX BasePOD RA, docs.nvidia.com (DGX H200)", host_cores=112),
    # NVIDIA DGX B200 (same RA): 8 B200 on NVLink 5 / NVSwitch, "8x single-port NVIDIA
    # ConnectX-7 ... Up to 400Gb/s"; host memory and cores not given there (unset = 0).
    "dgx-b200": _node("dgx-b200", "b200", 8, "nvlink5-x18", "ib-ndr-x8", "pcie-gen5-x16", 0,
                      "NVIDIA DGX BasePOD RA, docs.nvidia.com (DGX B200)"),
    # 8 x MI300X platform on Azure ND MI300X v5 (MicrosoftDocs azure-docs, nd-mi300x-v5-
    # series.md: "8 MI300X", "Infiniband: Supported, GPUDirect RDMA, 8x400 Gigabit NDR",
    # 96 vCPU, "Memory: GiB 1850"): GPUs fully connected by Infinity Fabric (links.py);
    # host cores: 96 vCPU counted as 96 (assumption: the VM's vCPUs).
    "mi300x-8gpu": _node("mi300x-8gpu", "mi300x", 8, "infinity-fabric-mi300x", "ib-ndr-x8",
                         "pcie-gen5-x16", 1850 * GiB / GB,
                         "Azure ND MI300X v5 docs, learn.microsoft.com", host_cores=96),
}
