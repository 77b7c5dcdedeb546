"""Point-to-point links: bandwidth per direction and zero-byte message latency.

Bandwidth is the per-direction data rate after line encoding, from the standard or
datasheet (``Gb/s / 8``); measured large-message MPI bandwidth on these links is
typically 90-97% of it. Latency is the end-to-end zero-byte MPI (or CUDA
peer-to-peer) latency, the Hockney alpha: software, NIC and one switch included.
Latencies are approximate published figures and are marked so; they are the kind of
value ``dlscale calibrate`` replaces with a measurement.

Examples
--------
>>> LINKS["ib-edr"].bandwidth_Bps / 1e9
12.5
>>> LINKS["nvlink2-x2"].bandwidth_Bps / 1e9     # Summit GPU-GPU within a socket
50.0
"""

from __future__ import annotations

from dlscale.perfmodel.machine.hardware import Link
from dlscale.perfmodel.units import GB_per_s, Gbit_per_s, us

__all__ = ["LINKS"]


def _link(name: str, bandwidth_Bps: float, latency_s: float, source: str) -> Link:
    return Link(name, bandwidth_Bps, latency_s, source)


# assumption: kernel TCP ~10 us half round trip (the order of netperf TCP_RR figures,
# ~20 us round trip, on 10-100 GbE); no single published measurement is cited
_ETH_TCP_LAT = 10 * us
# Mellanox ConnectX-4 Lx EN product brief (2016): "sub microsecond latency" in the
# adapter; 1.5 us end to end through verbs/MPI and one switch is an assumption
_ETH_ROCE_LAT = 1.5 * us

LINKS: dict[str, Link] = {
    # PCI Express 3.0 base spec: 8 GT/s per lane, 128b/130b encoding -> 0.985 GB/s per
    # lane per direction, x16 = 15.75 GB/s. Latency of a small GPU peer-to-peer copy
    # across a PCIe switch: ~5 us (cudaMemcpy launch dominated; order of the figures in
    # Li et al., "Evaluating modern GPU interconnect", IEEE TPDS 2020), approx.
    "pcie-gen3-x16": _link("pcie-gen3-x16", 16 * 8e9 * 128 / 130 / 8, 5 * us,
                           "PCI-SIG PCIe 3.0 spec; Li et al. IEEE TPDS 2020 (latency)"),
    # NVLink 1.0 (P100, Pascal whitepaper): 4 links per GPU, 20 GB/s per direction
    # each (160 GB/s bidirectional in all). In DGX-1 (P100) each GPU pair of the
    # hybrid cube mesh is joined by one link. Latency ~3 us (Li et al. 2020), approx.
    "nvlink1": _link("nvlink1", 20 * GB_per_s, 3 * us,
                     "NVIDIA Pascal GP100 whitepaper; Li et al. IEEE TPDS 2020"),
    "nvlink1-x4": _link("nvlink1-x4", 80 * GB_per_s, 3 * us,
                        "NVIDIA Pascal GP100 whitepaper (4 links per GPU)"),
    # NVLink 2.0 (V100, Volta whitepaper): 6 links per GPU, 25 GB/s per direction each
    # (300 GB/s bidirectional in all). Summit: 2 bricks CPU-GPU and GPU-GPU within a
    # socket triplet = 50 GB/s per direction (OLCF Summit user guide).
    "nvlink2": _link("nvlink2", 25 * GB_per_s, 3 * us,
                     "NVIDIA Volta GV100 whitepaper; Li et al. IEEE TPDS 2020"),
    "nvlink2-x2": _link("nvlink2-x2", 50 * GB_per_s, 3 * us,
                        "OLCF Summit user guide (2 NVLink 2.0 bricks)"),
    "nvlink2-x6": _link("nvlink2-x6", 150 * GB_per_s, 3 * us,
                        "NVIDIA Volta GV100 whitepaper (6 links per GPU)"),
    # Intel Omni-Path 100: 100 Gb/s per direction = 12.5 GB/s; MPI latency ~1 us on
    # Xeon hosts (Intel OPA 100 Series product brief; Birrittella et al., Hot
    # Interconnects 2015), approx. (higher, ~2-3 us, from a KNL core).
    "omnipath-100": _link("omnipath-100", 100 * Gbit_per_s, 1.0 * us,
                          "Intel OPA 100 product brief; Birrittella et al. HOTI 2015"),
    # Cray Aries (XC series): NIC on PCIe gen3 x16, ~10 GB/s injection per node per
    # direction; MPI latency ~1.3 us (Alverson et al., "Cray XC series network", Cray
    # whitepaper 2012), approx. Router-to-router links: electrical 5.25 GB/s and
    # optical 4.7 GB/s per direction (same whitepaper; see "aries-local"/"aries-global").
    "aries": _link("aries", 10 * GB_per_s, 1.3 * us, "Alverson et al., Cray XC network, 2012"),
    "aries-local": _link("aries-local", 5.25 * GB_per_s, 0.1 * us,
                         "Alverson et al. 2012 (electrical rank-1/2 link, 3 x 14 Gb/s lanes)"),
    "aries-global": _link("aries-global", 4.7 * GB_per_s, 0.1 * us,
                          "Alverson et al. 2012 (optical rank-3 link, 3 x 12.5 Gb/s lanes)"),
    # InfiniBand (IBTA): FDR 4x 14.0625 Gb/s 64b/66b = 54.5 Gb/s = 6.8 GB/s; EDR 100
    # Gb/s = 12.5 GB/s; HDR 200 Gb/s = 25 GB/s. MPI zero-byte latency ~0.7 us (FDR,
    # ConnectX-3), ~0.6 us (EDR ConnectX-4, HDR ConnectX-6) per the Mellanox product
    # briefs and OSU MVAPICH2 published results, approx.
    "ib-fdr": _link("ib-fdr", 4 * 14.0625e9 * 64 / 66 / 8, 0.7 * us,
                    "IBTA spec; Mellanox ConnectX-3 brief; OSU MVAPICH2 results"),
    "ib-edr": _link("ib-edr", 100 * Gbit_per_s, 0.6 * us,
                    "IBTA spec; Mellanox ConnectX-4 brief; OSU MVAPICH2 results"),
    "ib-hdr": _link("ib-hdr", 200 * Gbit_per_s, 0.6 * us,
                    "IBTA spec; Mellanox ConnectX-6 brief"),
    # Summit node injection: dual-rail EDR (2 x 12.5 GB/s) delivering 23 GB/s per node
    # per the OLCF Summit user guide; EDR latency as above.
    "ib-edr-dual-rail": _link("ib-edr-dual-rail", 23 * GB_per_s, 0.6 * us,
                              "OLCF Summit user guide (23 GB/s node injection)"),
    # NVIDIA DGX-1 (P100 and V100) datasheets: 4 x InfiniBand EDR ports per server.
    "ib-edr-x4": _link("ib-edr-x4", 4 * 100 * Gbit_per_s, 0.6 * us,
                       "NVIDIA DGX-1 datasheet (4 x IB EDR)"),
    # Ethernet (IEEE 802.3 standard: 802.3ae 10G, 802.3by 25G, 802.3cd 50G, 802.3bj
    # 100G): line rate / 8.
    "eth-10g-tcp": _link("eth-10g-tcp", 10 * Gbit_per_s, _ETH_TCP_LAT, "IEEE 802.3; TCP latency approx."),
    "eth-25g-tcp": _link("eth-25g-tcp", 25 * Gbit_per_s, _ETH_TCP_LAT, "IEEE 802.3by; TCP latency approx."),
    "eth-50g-tcp": _link("eth-50g-tcp", 50 * Gbit_per_s, _ETH_TCP_LAT, "IEEE 802.3cd; TCP latency approx."),
    "eth-100g-tcp": _link("eth-100g-tcp", 100 * Gbit_per_s, _ETH_TCP_LAT, "IEEE 802.3bj; TCP latency approx."),
    "eth-10g-roce": _link("eth-10g-roce", 10 * Gbit_per_s, _ETH_ROCE_LAT, "IEEE 802.3; Mellanox RoCE brief"),
    "eth-25g-roce": _link("eth-25g-roce", 25 * Gbit_per_s, _ETH_ROCE_LAT, "IEEE 802.3by; Mellanox RoCE brief"),
    "eth-50g-roce": _link("eth-50g-roce", 50 * Gbit_per_s, _ETH_ROCE_LAT, "IEEE 802.3cd; Mellanox RoCE brief"),
    "eth-100g-roce": _link("eth-100g-roce", 100 * Gbit_per_s, _ETH_ROCE_LAT, "IEEE 802.3bj; Mellanox RoCE brief"),
    # Intra-node MPI through shared memory (assumption: no single measurement cited).
    # KNL: ~1 us latency and ~6 GB/s large-message bandwidth (one slow core copies; the
    # order of OSU intranode figures on KNL in TACC/NERSC training material), approx.
    # Skylake Xeon: ~0.3 us and ~10 GB/s (single-core copy), approx.
    "knl-shm": _link("knl-shm", 6 * GB_per_s, 1.0 * us, "OSU intranode on KNL (approx.)"),
    "xeon-shm": _link("xeon-shm", 10 * GB_per_s, 0.3 * us,  # assumption, as above
                      "OSU intranode on Skylake (approx.)"),
    # --- links of the 2020s ---------------------------------------------------------
    # PCI Express 4.0 / 5.0 base specs: 16 / 32 GT/s per lane, 128b/130b -> x16 = 31.5 /
    # 63 GB/s per direction; latency as gen3 (Li et al. 2020 order), approx.
    "pcie-gen4-x16": _link("pcie-gen4-x16", 16 * 16e9 * 128 / 130 / 8, 5 * us,
                           "PCI-SIG PCIe 4.0 spec; latency approx. as gen3"),
    "pcie-gen5-x16": _link("pcie-gen5-x16", 16 * 32e9 * 128 / 130 / 8, 5 * us,
                           "PCI-SIG PCIe 5.0 spec; latency approx. as gen3"),
    # NVLink 3 (A100, NVIDIA Ampere GA100 whitepaper 2020): 12 links per GPU, 25 GB/s per
    # direction each, 600 GB/s per GPU in all (both directions). "nvlink3-x12" is one
    # GPU's whole NVLink through NVSwitch (DGX/HGX A100: six NVSwitches, any pair at
    # the full 600 GB/s, same whitepaper). "nvlink3-x4": the 4 A100 of a Perlmutter
    # node are all-to-all connected (docs.nersc.gov node-types figure: "Each GPU is
    # connected to each other GPU"), 12 links / 3 peers = 4 links = 100 GB/s per
    # direction per pair (derived). Latency ~3 us as NVLink 2 (Li et al. IEEE TPDS 2020
    # measured V100; assumed unchanged for later generations), approx.
    "nvlink3-x4": _link("nvlink3-x4", 4 * 25 * GB_per_s, 3 * us,
                        "NVIDIA Ampere GA100 whitepaper 2020; docs.nersc.gov (4 links/pair)"),
    "nvlink3-x12": _link("nvlink3-x12", 12 * 25 * GB_per_s, 3 * us,
                         "NVIDIA Ampere GA100 whitepaper 2020 (600 GB/s per GPU, NVSwitch)"),
    # NVLink 4 (H100/H200, NVIDIA H100 datasheet "NVLink: 900GB/s"; Hopper whitepaper
    # 2022: 18 links x 25 GB/s per direction) through third-generation NVSwitch (DGX
    # H100: any GPU pair at the full rate): 450 GB/s per direction. Latency as above.
    "nvlink4-x18": _link("nvlink4-x18", 18 * 25 * GB_per_s, 3 * us,
                         "NVIDIA H100 datasheet / Hopper whitepaper 2022 (900 GB/s, NVSwitch)"),
    # NVLink 5 (B200, NVIDIA Blackwell datasheet "1.8 TB/s" NVLink per GPU; 18 links x
    # 50 GB/s per direction) through the fourth-generation NVSwitch of HGX B200 (secondary:
    # docs.vultr.com HGX B200 page, "1.8 TB/s bidirectional bandwidth between any two
    # GPUs"): 900 GB/s per direction. Latency as above.
    "nvlink5-x18": _link("nvlink5-x18", 18 * 50 * GB_per_s, 3 * us,
                         "NVIDIA Blackwell datasheet (1.8 TB/s per GPU, NVSwitch)"),
    # AMD Infinity Fabric, MI250X (ROCm docs, "AMD Instinct MI250 microarchitecture":
    # each GPU link "25 GT/sec ... 50 GB/sec for a 16-wide link"). OLCF Frontier user
    # guide: the 2 GCDs of one MI250X at "a peak bandwidth of 200 GB/s" (4 links); GCDs
    # of different MI250X at "50-100 GB/s based on the number of Infinity Fabric
    # connections" (1 or 2 links). "infinity-fabric-x1" is the one-link pair, the
    # slowest step a ring through the 8 GCDs of a node takes; CPU-GCD "36+36 GB/s".
    # Latency taken as PCIe-attached GPU peer copies, ~5 us, approx. (assumption: no
    # published figure found).
    "infinity-fabric-x1": _link("infinity-fabric-x1", 50 * GB_per_s, 5 * us,
                                "ROCm MI250 microarchitecture docs; OLCF Frontier user guide"),
    "infinity-fabric-x4": _link("infinity-fabric-x4", 200 * GB_per_s, 5 * us,
                                "OLCF Frontier user guide (2 GCDs of one MI250X)"),
    "infinity-fabric-cpu-gcd": _link("infinity-fabric-cpu-gcd", 36 * GB_per_s, 5 * us,
                                     "OLCF Frontier user guide (CPU-GCD 36+36 GB/s)"),
    # MI300X platform: 8 GPUs fully connected by Infinity Fabric, one link per pair at
    # 128 GB/s bidirectional = 64 GB/s per direction, 7 links = 896 GB/s per GPU (AMD
    # Instinct MI300X platform data sheet; secondary gpu.blog MI300X page "896 GB/s",
    # "Fully-connected 8-GPU xGMI mesh"). Latency as above, approx. (assumption).
    "infinity-fabric-mi300x": _link("infinity-fabric-mi300x", 64 * GB_per_s, 5 * us,
                                    "AMD MI300X platform data sheet (64 GB/s per pair)"),
    # InfiniBand (IBTA spec): NDR 400 Gb/s = 50 GB/s, XDR 800 Gb/s = 100 GB/s per port
    # (NVIDIA ConnectX-7 / ConnectX-8 product briefs). MPI latency taken as HDR's 0.6 us
    # (ConnectX-6 brief), approx. (assumption: no NDR/XDR MPI figure cited here).
    "ib-ndr": _link("ib-ndr", 400 * Gbit_per_s, 0.6 * us, "IBTA spec; NVIDIA ConnectX-7 brief"),
    "ib-xdr": _link("ib-xdr", 800 * Gbit_per_s, 0.6 * us, "IBTA spec; NVIDIA ConnectX-8 brief"),
    # NVIDIA DGX H100 datasheet: 8 single-port ConnectX-7 at 400 Gb/s InfiniBand for the
    # compute fabric, one per GPU (rail-optimized, DGX SuperPOD reference architecture
    # RA-11333-001, 2023) = 400 GB/s node injection.
    "ib-ndr-x8": _link("ib-ndr-x8", 8 * 400 * Gbit_per_s, 0.6 * us,
                       "NVIDIA DGX H100 datasheet (8 x ConnectX-7 NDR 400)"),
    # RoCE over 200 / 400 GbE (IEEE 802.3bs-2017): line rate / 8; latency as the RoCE
    # entries above (assumption).
    "eth-200g-roce": _link("eth-200g-roce", 200 * Gbit_per_s, _ETH_ROCE_LAT,
                           "IEEE 802.3bs-2017; Mellanox RoCE brief"),
    "eth-400g-roce": _link("eth-400g-roce", 400 * Gbit_per_s, _ETH_ROCE_LAT,
                           "IEEE 802.3bs-2017; Mellanox RoCE brief"),
    # HPE Slingshot-11: Rosetta switch, 64 ports at 200 Gb/s per direction, Cassini NIC
    # 200 Gb/s (De Sensi et al., "An In-Depth Analysis of the Slingshot Interconnect",
    # SC'20, arXiv 2008.08886) = 25 GB/s per link. MPI zero-byte latency ~2 us, approx.
    # (assumption: the order of the OSU latencies Slingshot sites report; no single
    # figure cited here). Perlmutter GPU and Frontier nodes have 4 NICs each
    # (docs.nersc.gov Perlmutter architecture: "4x HPE Slingshot 11"; OLCF Frontier
    # user guide) = 100 GB/s injection ("slingshot-11-x4").
    "slingshot-11": _link("slingshot-11", 200 * Gbit_per_s, 2 * us,
                          "De Sensi et al. SC'20 (200 Gb/s); latency approx."),
    "slingshot-11-x4": _link("slingshot-11-x4", 4 * 200 * Gbit_per_s, 2 * us,
                             "docs.nersc.gov Perlmutter architecture (4 NICs); SC'20"),
}
