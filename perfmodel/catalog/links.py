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
}
