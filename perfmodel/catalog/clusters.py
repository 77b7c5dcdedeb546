"""Machines: identical nodes on one network, with the sizes of the cited systems.

``price_per_node_hour`` is set only where a public on-demand price of an equivalent
cloud instance exists; elsewhere (centre machines, generic servers) it is 0.0,
meaning "no public price".

Examples
--------
>>> CLUSTERS["stampede2-skx"].network.topology.oversubscription(1)
1.4
>>> CLUSTERS["summit"].max_nodes, CLUSTERS["cori-knl"].max_nodes
(4608, 9688)
"""

from __future__ import annotations

import dataclasses
import math

from dlscale.perfmodel.catalog.links import LINKS
from dlscale.perfmodel.catalog.nodes import NODES
from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Dragonfly, FatTree, NetworkSpec
from dlscale.perfmodel.units import ns

__all__ = ["CLUSTERS", "NETWORKS"]

# --- Summit -------------------------------------------------------------------------
# OLCF Summit user guide: 4,608 nodes; Mellanox EDR InfiniBand, non-blocking fat tree,
# dual rail (one plane per ConnectX-5 port). 36-port EDR switches: 18 down, 18 up at
# each non-top level (non-blocking). Switch-IB 2 port-to-port latency ~90 ns (Mellanox
# SB7800 brief). TOP500 (June 2018, #1): 4,608 nodes.
SUMMIT_NET = NetworkSpec(
    "summit-edr-fat-tree",
    FatTree(levels=3, nodes_per_leaf=18, down_up=((18, 18), (18, 18)), max_nodes=4608, rails=2),
    LINKS["ib-edr"], hop_latency_s=90 * ns,
    source="OLCF Summit user guide; TOP500 June 2018")

# --- Cori KNL -----------------------------------------------------------------------
# Cray XC40 Aries dragonfly (Alverson et al. 2012; NERSC Cori docs): 4 nodes per Aries
# router, 96 routers per two-cabinet group (16 x 6: all-to-all electrical links within
# a chassis row and column), up to 10 optical global ports per router. Cori's KNL
# partition: 9,688 nodes (TOP500 Nov 2016 entry and NERSC configuration page); 384
# nodes per group -> ceil(9688 / 384) = 26 groups hold it (derived; the Haswell
# partition's groups share the same network and are not modelled). Aries router
# latency ~100 ns per hop (Alverson et al. 2012), approx.
CORI_KNL_NODES = 9688
CORI_NET = NetworkSpec(
    "cori-aries-dragonfly",
    Dragonfly(groups=math.ceil(CORI_KNL_NODES / 384), routers_per_group=96,
              terminals_per_router=4, global_links_per_router=10, max_nodes=CORI_KNL_NODES,
              local_bandwidth_Bps=LINKS["aries-local"].bandwidth_Bps,
              global_bandwidth_Bps=LINKS["aries-global"].bandwidth_Bps),
    LINKS["aries-local"], hop_latency_s=100 * ns,
    source="Alverson et al., Cray XC network 2012; NERSC Cori configuration; TOP500 Nov 2016")

# --- Stampede2 ----------------------------------------------------------------------
# TACC Stampede2 user guide: one 100 Gb/s Omni-Path fat tree for both partitions;
# 48-port leaf switches with 28 nodes and 20 uplinks (28:20 = 1.4 oversubscribed) to
# core director switches. Intel OPA switch port-to-port latency ~110 ns (OPA 100
# Series edge switch brief). Described once; each partition gets the same tree with
# its own node count: KNL 4,200 nodes, SKX 1,736 nodes (TACC user guide).
STAMPEDE2_FABRIC = NetworkSpec(
    "stampede2-opa-fat-tree",
    FatTree(levels=2, nodes_per_leaf=28, down_up=((28, 20),), max_nodes=4200 + 1736),
    LINKS["omnipath-100"], hop_latency_s=110 * ns,
    source="TACC Stampede2 user guide; Intel OPA 100 switch brief")


def _partition(network: NetworkSpec, nodes: int) -> NetworkSpec:
    """The same network restricted to a partition of ``nodes`` nodes."""
    topology = network.topology
    if not isinstance(topology, FatTree):
        raise TypeError(f"partition: expected a fat tree, got {topology.family}")
    return dataclasses.replace(network, topology=dataclasses.replace(topology, max_nodes=nodes))


# --- generic GPU cluster --------------------------------------------------------------
# A two-level non-blocking fat tree of 36-port EDR switches holds 36 x 18 = 648 nodes
# (18 down / 18 up per leaf, 36 leaves per 36-port spine set); size derived from the
# switch radix (Mellanox SB7800 datasheet: 36 EDR ports, 90 ns port-to-port latency),
# not from a particular installation.
GPU_EDR_NET = NetworkSpec(
    "edr-2-level-fat-tree",
    FatTree(levels=2, nodes_per_leaf=18, down_up=((18, 18),), max_nodes=36 * 18),
    LINKS["ib-edr"], hop_latency_s=90 * ns, source="Mellanox SB7800 36-port EDR switch")


def _server(name: str) -> NetworkSpec:
    return NetworkSpec(f"{name}-single-node", Crossbar(max_nodes=1), NODES[name].nic,
                       source="single server")


# --- software stacks (runtime) ----------------------------------------------------------
# Summit: Horovod over NCCL, the stack OLCF documents for distributed deep learning on
# Summit (OLCF Summit user guide, "Deep learning": IBM Watson ML CE / Horovod with
# NCCL) and the one Laanait et al. 2019 (arXiv 1909.11150) ran and extended; its
# response cache came from that work (Horovod PR #902, 2019).
SUMMIT_STACK = RUNTIMES["horovod-nccl"]
# Stampede2: Horovod over Intel MPI, TACC's default MPI (TACC Stampede2 user guide,
# "impi" default module); Cavdar et al. ISC 2019 (arXiv 1905.04035) ran Horovod there.
# Codreanu et al. 2017 ran Intel Caffe + MLSL on the SKX nodes (authors' run notes):
# ``--runtime mlsl`` for that stack.
STAMPEDE2_STACK = RUNTIMES["horovod-intel-mpi"]
# Cori KNL and the K80 server: You, Buluc, Demmel SC'17 (arXiv 1708.02983) wrote their
# own MPI code, no framework coordinator: Cray MPICH on Cori (NERSC Cori docs); on the
# K80 server MPI between the GPUs' host processes (assumed: the paper's GPU runs name
# no communication library).
CORI_STACK = RUNTIMES["mpi"]
# Generic GPU servers and clusters: Horovod over NCCL, NVIDIA's recommended
# multi-GPU data-parallel stack of the V100/P100 era (NVIDIA NGC TensorFlow container
# docs, Horovod + NCCL), assumed.
GPU_STACK = RUNTIMES["horovod-nccl"]

# --- machines of the 2020s ----------------------------------------------------------
# HPE Slingshot-11 dragonflies (Perlmutter, Frontier). Rosetta switch: 64 ports at 200
# Gb/s (De Sensi et al., SC 2020, arXiv 2008.08886); a GPU cabinet of the HPE Cray EX is
# one dragonfly group: "8 chassis, each containing 8 compute blades and 4 switch
# blades", "A GPU compute blade contains 2 GPU-accelerated nodes", "one Dragonfly group
# per cabinet, with 32 switch blades" (docs.nersc.gov/systems/perlmutter/architecture)
# -> 128 nodes and 32 switches per group, 128 / 32 = 4 nodes per switch (derived; each
# node's 4 NICs = 16 edge ports per switch); "A full all-to-all electrical network is
# provided within each group" (NERSC Perlmutter interconnect page) -> 31 local ports.
# Global ports per switch: 64 - 16 edge - 31 local = 17 at most (derived); how many of
# them are cabled is not published (assumption: all 17). Switch latency ~350 ns per hop
# (assumption: the order De Sensi et al. report for Rosetta; not re-read here).
_EX_GROUP_NODES = 128                          # docs.nersc.gov (8 chassis x 8 blades x 2)
_EX_SWITCHES = 32                              # docs.nersc.gov ("32 switch blades")
# derived: 64-port Rosetta (De Sensi et al. 2020) - 16 edge - 31 local ports
_EX_GLOBAL = 64 - 16 - (_EX_SWITCHES - 1)
_SLINGSHOT_HOP = 350 * ns                      # assumption, see above


def _slingshot(name: str, nodes: int, source: str) -> NetworkSpec:
    """A Cray EX Slingshot-11 dragonfly of ``nodes`` GPU nodes (128 per group)."""
    bw = LINKS["slingshot-11"].bandwidth_Bps
    return NetworkSpec(
        name, Dragonfly(groups=math.ceil(nodes / _EX_GROUP_NODES),
                        routers_per_group=_EX_SWITCHES,
                        terminals_per_router=_EX_GROUP_NODES // _EX_SWITCHES,
                        global_links_per_router=_EX_GLOBAL, max_nodes=nodes,
                        local_bandwidth_Bps=bw, global_bandwidth_Bps=bw),
        LINKS["slingshot-11"], hop_latency_s=_SLINGSHOT_HOP, source=source)


# Perlmutter GPU partition, A100 40 GB nodes: 1,536 (docs.nersc.gov Perlmutter
# architecture, "GPU 1536 ... 4x NVIDIA A100 (40GB)"); 12 groups of 128 (derived).
PERLMUTTER_NET = _slingshot("perlmutter-slingshot-dragonfly", 1536,
                            "docs.nersc.gov Perlmutter architecture; De Sensi et al. SC'20")
# Frontier: "77 Olympus rack HPE cabinets, each with 128 AMD compute nodes, and a total
# of 9,856 AMD compute nodes" (OLCF Frontier user guide, docs.olcf.ornl.gov); one group
# per cabinet as on Perlmutter's EX cabinets (assumption: same cabinet design).
FRONTIER_NET = _slingshot("frontier-slingshot-dragonfly", 9856,
                          "OLCF Frontier user guide; De Sensi et al. SC'20")
# DGX H100 SuperPOD (NVIDIA DGX SuperPOD reference architecture with DGX H100,
# RA-11333-001 V11, 2023-09-22): scalable units of 32 DGX H100; "Major components of
# the 4 SU, 127-node DGX SuperPOD": 127 GPU nodes; NDR 400 Gb/s InfiniBand compute
# fabric, rail-optimized: each of a node's 8 ConnectX-7 on its own rail (plane); the
# 4-SU table (same layout in the B200 RA's "4 | 128 | 1024 | 32 | 16" row, docs.nvidia.
# com): 32 leaf and 16 spine switches, 1,024 node-leaf and 1,024 leaf-spine cables ->
# per leaf 32 down, 32 up (non-blocking, two levels). QM9700 switch port-to-port
# latency ~130 ns (assumption: the NVIDIA Quantum-2 brief's order; not re-read here).
SUPERPOD_H100_NET = NetworkSpec(
    "dgx-h100-superpod-ndr-rail-fat-tree",
    FatTree(levels=2, nodes_per_leaf=32, down_up=((32, 32),), max_nodes=127, rails=8),
    LINKS["ib-ndr"], hop_latency_s=130 * ns,
    source="NVIDIA DGX SuperPOD RA (DGX H100) RA-11333-001, 2023")
# Software: PyTorch DDP over NCCL, the stack NERSC documents for distributed training
# on Perlmutter (docs.nersc.gov machine learning pages, assumed) and NVIDIA for DGX
# (NGC PyTorch containers, assumed). On Frontier's MI250X the collectives are RCCL's,
# ROCm's port of NCCL (ROCm/rccl docs/index.rst), under the same PyTorch DDP (assumed,
# as on the NVIDIA machines).
DDP_STACK = RUNTIMES["nccl"]
AMD_DDP_STACK = RUNTIMES["rccl"]

NETWORKS: dict[str, NetworkSpec] = {
    net.name: net for net in (SUMMIT_NET, CORI_NET, STAMPEDE2_FABRIC, GPU_EDR_NET,
                              PERLMUTTER_NET, FRONTIER_NET, SUPERPOD_H100_NET)
}

CLUSTERS: dict[str, Cluster] = {
    "summit": Cluster("summit", NODES["summit"], SUMMIT_NET,
                      source="OLCF Summit user guide; TOP500 June 2018", runtime=SUMMIT_STACK),
    "cori-knl": Cluster("cori-knl", NODES["cori-knl"], CORI_NET,
                        source="NERSC Cori KNL configuration; TOP500 Nov 2016",
                        runtime=CORI_STACK),
    "cori-knl-flat": Cluster("cori-knl-flat", NODES["cori-knl-flat"], CORI_NET,
                             source="NERSC Cori KNL configuration (flat mode)",
                             runtime=CORI_STACK),
    "stampede2-knl": Cluster("stampede2-knl", NODES["stampede2-knl"],
                             _partition(STAMPEDE2_FABRIC, 4200),
                             source="TACC Stampede2 user guide (4,200 KNL nodes)",
                             runtime=STAMPEDE2_STACK),
    "stampede2-skx": Cluster("stampede2-skx", NODES["stampede2-skx"],
                             _partition(STAMPEDE2_FABRIC, 1736),
                             source="TACC Stampede2 user guide (1,736 SKX nodes)",
                             runtime=STAMPEDE2_STACK),
    # AWS EC2 p2.8xlarge: 8 K80 GPUs (4 boards), $7.20 per hour on demand (us-east-1,
    # AWS EC2 pricing page, 2017).
    "k80-8gpu": Cluster("k80-8gpu", NODES["k80-8gpu"], _server("k80-8gpu"),
                        price_per_node_hour=7.20,
                        source="You, Buluc, Demmel SC'17; price: AWS p2.8xlarge on demand",
                        runtime=CORI_STACK),
    "p100-cluster": Cluster("p100-cluster", NODES["p100-4x-edr"], GPU_EDR_NET,
                            source="generic 4 x P100 + EDR nodes; 648-node 2-level fat tree",
                            runtime=GPU_STACK),
    "dgx1-p100": Cluster("dgx1-p100", NODES["dgx1-p100"], _server("dgx1-p100"),
                         source="NVIDIA DGX-1 (P100) datasheet", runtime=GPU_STACK),
    # AWS EC2 p3.16xlarge: 8 V100 SXM2 16 GB with NVLink, $24.48 per hour on demand
    # (us-east-1, AWS EC2 pricing page, 2018).
    "dgx1-v100": Cluster("dgx1-v100", NODES["dgx1-v100"], _server("dgx1-v100"),
                         price_per_node_hour=24.48,
                         source="NVIDIA DGX-1 (V100) datasheet; price: AWS p3.16xlarge on demand",
                         runtime=GPU_STACK),
    "pcie-4xp100": Cluster("pcie-4xp100", NODES["pcie-4xp100"], _server("pcie-4xp100"),
                           source="generic 4 x P100 PCIe server",
                           runtime=GPU_STACK),
    "pcie-8xp100": Cluster("pcie-8xp100", NODES["pcie-8xp100"], _server("pcie-8xp100"),
                           source="generic 8 x P100 PCIe server",
                           runtime=GPU_STACK),
    "pcie-4xv100": Cluster("pcie-4xv100", NODES["pcie-4xv100"], _server("pcie-4xv100"),
                           source="generic 4 x V100 PCIe server",
                           runtime=GPU_STACK),
    "pcie-8xv100": Cluster("pcie-8xv100", NODES["pcie-8xv100"], _server("pcie-8xv100"),
                           source="generic 8 x V100 PCIe server",
                           runtime=GPU_STACK),
    "perlmutter": Cluster("perlmutter", NODES["perlmutter-gpu"], PERLMUTTER_NET,
                          source="docs.nersc.gov Perlmutter architecture (1,536 A100 40GB "
                                 "nodes)", runtime=DDP_STACK),
    "frontier": Cluster("frontier", NODES["frontier"], FRONTIER_NET,
                        source="OLCF Frontier user guide (9,856 nodes, 8 GCDs each)",
                        runtime=AMD_DDP_STACK),
    "dgx-h100-superpod": Cluster("dgx-h100-superpod", NODES["dgx-h100"], SUPERPOD_H100_NET,
                                 source="NVIDIA DGX SuperPOD RA (DGX H100), 4 SU, 127 nodes",
                                 runtime=DDP_STACK),
}
