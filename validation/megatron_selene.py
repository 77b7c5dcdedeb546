"""NVIDIA Selene as Narayanan et al. (SC'21) ran it: DGX A100 80 GB nodes on HDR InfiniBand.

One place for every figure of the machine of :mod:`.case_megatron_sc21`, each with its
source. The GPU is the catalog's ``a100-sxm4-80gb``, the one description of the device
(its ResNet-50 fractions for the layer-by-layer path, its GEMM ceiling for the
transformer path); the node and the network are Selene's own (the catalog has no DGX
A100 node):

- **GPU**, NVIDIA A100 Tensor Core GPU datasheet (SXM4 80 GB): 108 SMs at 1,410 MHz
  boost, FP64 9.7 TFLOP/s, FP32 19.5, FP16/BF16 tensor 312 dense ("A100 ... peak
  device throughput of 312 teraFLOP/s", Narayanan et al. Sec. 5.1), 80 GB HBM2e at
  2,039 GB/s, 400 W;
- **GEMM ceiling** (bf16): 258 of 312 TFLOP/s = 0.827, an A100 at its 400 W power cap
  multiplying normally distributed 8192 x 8192 matrices through PyTorch's cuBLAS in
  2022 (Horace He, thonking.ai, "Strangely, Matrix Multiplications on GPUs Run Faster
  When Given 'Predictable' Data!": 257-258 TFLOP/s, 295 with zeros, the gap the power
  cap's clock throttling); the burst ceiling of a best-of search over shapes with 2025
  software is 271.2 = 0.869 (stas00/ml-engineering MAMF table, torch 2.6 / CUDA 12.6).
  Neither is a Megatron measurement; the first is of the nearer software and of the
  conditions of a training run (random data, every GPU at its cap). The GPU is the
  catalog's ``a100-sxm4-80gb``, which carries it as ``gemm_fraction_fp16``;
- **node**, Narayanan et al. Sec. 5: "8 NVIDIA 80-GB A100 GPUs connected to each
  other by NVLink and NVSwitch" and "eight NVIDIA Mellanox 200Gbps HDR Infiniband
  HCAs": NVLink 3 gives each GPU 600 GB/s in both directions together, 300 GB/s each
  way (A100 datasheet), 3 us small-message latency (the catalog's NVLink figure,
  Li et al. IEEE TPDS 2020, approx.); 8 x 25 GB/s = 200 GB/s of injection per node,
  0.6 us MPI latency (the catalog's ``ib-hdr``);
- **network**, Narayanan et al. Sec. 5: "a three-level (leaf, spine, core) fat-tree
  topology"; non-blocking 40-port HDR switches (20 down, 20 up) of the DGX SuperPOD
  reference architecture (NVIDIA, "DGX SuperPOD reference architecture", DGX A100,
  2020: rail-optimised, one plane per HCA, 20 nodes per scalable-unit leaf), 130 ns
  per switch (NVIDIA Quantum QM8700 brief); 560 nodes (Selene, TOP500 November
  2020: 4,480 A100 GPUs);
- **software**: Megatron-LM's collectives through ``torch.distributed`` with the NCCL
  backend (``megatron/arguments.py``: ``--distributed-backend``, ``default='nccl'``,
  choices nccl and gloo), the catalog's ``nccl`` runtime (NCCL's transport over
  InfiniBand, the slowdown of compute beside its collectives); the description named
  no runtime before and so ran the default ``horovod-mpi``, a stack Megatron-LM does
  not use.
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.devices import DEVICES
from dlscale.perfmodel.catalog.links import LINKS
from dlscale.perfmodel.catalog.runtimes import RUNTIMES
from dlscale.perfmodel.machine.hardware import Cluster, FatTree, Link, NetworkSpec, NodeSpec
from dlscale.perfmodel.units import ns

__all__ = ["A100_80GB", "DGX_A100", "GEMM_FRACTION", "SELENE", "SELENE_NODES"]

#: The catalog's A100 SXM4 80 GB (NVIDIA A100 datasheet; its GEMM ceiling
#: ``gemm_fraction_fp16`` = 258 / 312, its matmul rate at the power cap with random
#: inputs: ``perfmodel/catalog/devices_2020s.GEMM_FRACTIONS``),
#: the one description of the device that every case run on it uses.
A100_80GB = DEVICES["a100-sxm4-80gb"]

#: The A100's GEMM ceiling, as the catalog gives it.
GEMM_FRACTION = A100_80GB.gemm_fraction_fp16

#: NVLink 3 through NVSwitch, per GPU and direction: the catalog's ``nvlink3-x12``
#: (12 links x 25 GB/s, 600 GB/s per GPU in both directions; latency as NVLink 2).
NVLINK3 = LINKS["nvlink3-x12"]

#: 8 x HDR 200 Gb/s per node (Narayanan et al. SC'21 Sec. 5).
HDR_X8 = Link("ib-hdr-x8", 8 * LINKS["ib-hdr"].bandwidth_Bps, LINKS["ib-hdr"].latency_s,
              "Narayanan et al. SC'21 Sec. 5 (8 x 200 Gb/s HDR per node)")

#: A DGX A100 as Selene's nodes (Narayanan et al. SC'21 Sec. 5).
DGX_A100 = NodeSpec("dgx-a100-80gb", A100_80GB, 8, NVLINK3, HDR_X8,
                    source="Narayanan et al. SC'21 Sec. 5; NVIDIA DGX A100 datasheet")

#: Selene's DGX A100 nodes (TOP500 November 2020: 4,480 A100 GPUs).
SELENE_NODES = 560

SELENE = Cluster(
    "selene", DGX_A100,
    NetworkSpec("selene-hdr-fat-tree",
                FatTree(levels=3, nodes_per_leaf=20, down_up=((20, 20), (20, 20)),
                        max_nodes=SELENE_NODES, rails=8),
                LINKS["ib-hdr"], hop_latency_s=130 * ns,
                source="Narayanan et al. SC'21 Sec. 5; NVIDIA DGX SuperPOD reference "
                       "architecture (2020)"),
    runtime=RUNTIMES["nccl"],
    source="NVIDIA Selene as in Narayanan et al. SC'21 (validation/megatron_selene.py)")
