"""Software stacks: each runtime's terms with the public source of every figure.

See :mod:`dlscale.perfmodel.machine.runtime` for what each term means. Which stack each
machine ran is in :mod:`.clusters` (``Cluster.runtime``), with its citation.

Sources used below:

- Horovod cycle: ``HOROVOD_CYCLE_TIME`` default 5 ms up to 0.20 (docs/tensor-fusion;
  the 0.21.0 release notes, PR #2468, lowered it to 1 ms). The 2017-2019 papers this
  project reproduces ran the 5 ms releases.
- Horovod fusion: ``HOROVOD_FUSION_THRESHOLD`` default 64 MiB (docs/tensor-fusion);
  the workload's ``fusion_threshold_bytes`` is that setting, so no cap here.
- Horovod coordination: through rank 0 (Sergeev & Del Balso, arXiv 1802.05799,
  section 4; ``MPI_Gatherv`` of requests, ``MPI_Bcast`` of responses) until the
  response cache, PR #902 "Enable faster worker coordination via response caching"
  (merged March 2019, Horovod 0.16.1; default ``HOROVOD_CACHE_CAPACITY`` 1024): once a
  tensor's response is cached, "the only communication you need to do ... is perform
  a bitwise AND" across workers (maintainer, horovod issue #2202), an
  ``MPI_Allreduce`` with ``MPI_BAND`` (``MPIController::CrossRankBitwiseAnd``).
- NCCL algorithms: ring, and double binary trees from NCCL 2.4 (NVIDIA developer blog,
  "Massively scale your deep learning training with NCCL 2.4", Feb 2019); NCCL picks
  per size and rank count by its own latency/bandwidth model of each algorithm
  (src/graph/tuning.cc), which this project stands in for with its network model.
- RCCL (``rccl``): ROCm's collective library implements NCCL's API with "Ring and
  Tree algorithms" (ROCm/rccl docs/index.rst) and chooses between them per size by
  the latency/bandwidth model it keeps from NCCL (src/graph/tuning.cc,
  ``ncclTopoTuneModel``); registered as its own library
  (:data:`~dlscale.perfmodel.network.registry.LIBRARIES`), the same two algorithms.
  Driven by PyTorch DDP's 25 MB buckets, as ``nccl`` (assumed for the AMD machines).
- MPICH allreduce selection: ``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`` default 2048 bytes;
  recursive doubling at or below it (or with fewer elements than the largest power
  of two of ranks), Rabenseifner's reduce-scatter + allgather above
  (src/mpi/coll/allreduce.c, MPICH 3.x; Thakur, Rabenseifner, Gropp, IJHPCA 2005).
  Cray MPICH and MVAPICH2 derive from it.
- Intel MPI: ``I_MPI_ADJUST_ALLREDUCE`` offers recursive doubling, Rabenseifner,
  reduce + broadcast, topology-aware variants, binomial and ring (Intel MPI Library
  developer reference, "I_MPI_ADJUST family"); its default selection tables are
  tuned by measurement and not published, so the model's least time among these
  stands in for them (assumed).
- Intel MLSL: built on Intel MPI, driven by the framework per learnable layer (Intel
  Caffe's multinode mode issues one MLSL operation per layer's gradient, with no
  coordinator and no cycle; Intel MLSL developer guide, 2017-2018), assumed from
  its documentation, not measured.
- PyTorch DistributedDataParallel: 25 MB buckets (``bucket_cap_mb=25``, PyTorch
  docs, torch.nn.parallel.DistributedDataParallel), gradients reduced in a fixed
  order with no coordinator or background cycle.
- Gloo (Caffe2, PyTorch's gloo backend): ring and recursive halving-doubling
  allreduce (gloo/allreduce_ring.h, allreduce_halving_doubling.h; Goyal et al.,
  arXiv 1706.02677, section 4, halving/doubling between servers); TCP transport
  (Gloo's default ``gloo/transport/tcp``; an ibverbs transport exists but is not the
  default).
- TensorFlow 1.x parameter servers (``parameter-server``): variables on ``ps`` tasks
  by ``tf.train.replica_device_setter`` (round-robin, ``_RoundRobinStrategy``,
  tensorflow/python/training/device_setter.py) or
  ``tf.contrib.training.GreedyLoadBalancingStrategy`` with ``byte_size_load_fn``
  (tensorflow/contrib/training/python/training/device_setter.py); each worker reads
  every variable and sends one gradient per variable per step
  (tensorflow/benchmarks ``scripts/tf_cnn_benchmarks/variable_mgr.py``,
  ``VariableMgrDistributedFetchFromPS``, ``VariableMgrDistributedReplicated``); gRPC
  over TCP (``--server_protocol`` default ``grpc``, benchmark_cnn.py). One server
  per worker node, co-located, round-robin by default: the TensorFlow benchmarks'
  distributed K80 runs ("Equal numbers of parameter servers and worker servers",
  "EC2 instances ... running worker servers also ran parameter servers", r1 guide
  performance/benchmarks.md).

- Compute slowed beside communication (``overlap_slowdown``, NCCL stacks on GPUs):
  Lee et al., "Characterizing Compute-Communication Overlap in GPU-Accelerated
  Distributed Deep Learning: Performance and Power Implications", arXiv 2507.03114
  (2025), abstract: compute overlapped with communication is slowed by 18.9 % on
  average and by 40.0 % at most against the same compute alone (4 x A100, H100,
  MI250, MI210; GPT and LLaMA training). The abstract's figures pool the four GPUs;
  the text read here gives no AMD-only figure, so RCCL on MI250X takes the same
  range (MI250 is one of the four measured). Central 0.189, high 0.40; low 0, the
  interference-free case the paper measures against (its least slowdown is not
  stated). Agrawal et al., "Optimizing ML Concurrent Computation and Communication
  with GPU DMA Engines", arXiv 2412.14335, see the same interference (overlap reaches
  21 % of its ideal speed-up on average) without a per-kernel figure. NCCL runs its collectives as kernels on the SMs (one block per channel),
  which is why an NVIDIA developer-forum report ("Compute-Communication Overlap Causes
  Severe GEMM Performance Degradation because of Tail Effect", H100: a 132-block GEMM
  next to a 24-block all-gather, about 80 % of peak falling to about 47 %) sees a
  second wave. MPI and Gloo stacks: no cited figure, none charged.

Examples
--------
>>> RUNTIMES["horovod-nccl"].algorithms
('ring', 'double-binary-tree')
>>> get_runtime("hvd")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: runtime: unknown name 'hvd'; valid: gloo, horovod-intel-mpi, horovod-legacy-mpi, horovod-legacy-nccl, horovod-mpi, horovod-nccl, mlsl, mpi, nccl, parameter-server, rccl
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.machine.runtime import (
    TRANSPORT_EFFICIENCY,
    TRANSPORT_EFFICIENCY_RANGE,
    Runtime,
)
from dlscale.perfmodel.network.registry import offered_by

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["DEFAULT_RUNTIME", "RUNTIMES", "apply_runtime", "get_runtime", "runtime_rows"]

INF = math.inf
#: Horovod's background-loop cycle in the 2017-2019 releases (docs/tensor-fusion).
HOROVOD_CYCLE_S = 5e-3
NCCL_ALGS = offered_by("nccl")
RCCL_ALGS = offered_by("rccl")
MPICH_ALGS = offered_by("mpich")
INTEL_MPI_ALGS = offered_by("intel-mpi")
GLOO_ALGS = offered_by("gloo")

_HVD = "Horovod docs/tensor-fusion (5 ms cycle, 64 MiB fusion)"
_CACHE = "Horovod PR #902 response cache (0.16.1, 2019), issue #2202"
_RANK0 = "Sergeev & Del Balso 2018 (rank-0 coordination)"
_NCCL = "NCCL 2.4 blog (ring + double binary tree), src/graph/tuning.cc"
_MPICH = "MPICH src/mpi/coll/allreduce.c (short msg 2048 B)"
#: NCCL's collective kernels beside compute on a GPU: (kind, central, low, high) of
#: the slowdown, arXiv 2507.03114 (mean 18.9 %, maximum 40.0 %; see above)
NCCL_SLOWDOWN = (("gpu", 0.189, 0.0, 0.40),)
_OVERLAP = "arXiv 2507.03114 (compute beside communication: 18.9 % mean, 40 % max)"

RUNTIMES: dict[str, Runtime] = {r.name: r for r in (
    Runtime("horovod-nccl", "Horovod >= 0.16.1 (response cache) + NCCL >= 2.4", "cache",
            HOROVOD_CYCLE_S, INF, NCCL_ALGS, "model", "rdma",
            source=f"{_HVD}; {_CACHE}; {_NCCL}; {_OVERLAP}", overlap_slowdown=NCCL_SLOWDOWN),
    Runtime("horovod-mpi", "Horovod >= 0.16.1 (response cache) + MPICH-family MPI",
            "cache", HOROVOD_CYCLE_S, INF, MPICH_ALGS, "mpich", "rdma",
            source=f"{_HVD}; {_CACHE}; {_MPICH}"),
    Runtime("horovod-intel-mpi", "Horovod >= 0.16.1 (response cache) + Intel MPI", "cache",
            HOROVOD_CYCLE_S, INF, INTEL_MPI_ALGS, "model", "rdma",
            source=f"{_HVD}; {_CACHE}; Intel MPI I_MPI_ADJUST_ALLREDUCE (tables not "
                   "public: model's fastest, assumed)"),
    Runtime("horovod-legacy-nccl", "Horovod <= 0.16.0 (rank-0 negotiation) + NCCL >= 2.4",
            "rank0", HOROVOD_CYCLE_S, INF, NCCL_ALGS, "model", "rdma",
            source=f"{_HVD}; {_RANK0}; {_NCCL}; {_OVERLAP}", overlap_slowdown=NCCL_SLOWDOWN),
    Runtime("horovod-legacy-mpi", "Horovod <= 0.16.0 (rank-0 negotiation) + MPICH-family MPI",
            "rank0", HOROVOD_CYCLE_S, INF, MPICH_ALGS, "mpich", "rdma",
            source=f"{_HVD}; {_RANK0}; {_MPICH}"),
    # PyTorch DistributedDataParallel's default bucket_cap_mb=25 (pytorch.org/docs,
    # torch.nn.parallel.DistributedDataParallel)
    Runtime("nccl", "framework-driven NCCL >= 2.4 (PyTorch DDP, 25 MB buckets)", "none",
            0.0, 25 * 1024**2, NCCL_ALGS, "model", "rdma",
            source=f"PyTorch DDP docs (bucket_cap_mb=25); {_NCCL}; {_OVERLAP}",
            overlap_slowdown=NCCL_SLOWDOWN),
    # RCCL on AMD GPUs (Frontier's MI250X), driven by PyTorch DDP's 25 MB buckets
    Runtime("rccl", "framework-driven RCCL (ROCm's NCCL; PyTorch DDP, 25 MB buckets)",
            "none", 0.0, 25 * 1024**2, RCCL_ALGS, "model", "rdma",
            source="PyTorch DDP docs (bucket_cap_mb=25); ROCm/rccl docs/index.rst (Ring "
                   "and Tree), src/graph/tuning.cc; arXiv 2507.03114 (18.9 % mean, 40 % "
                   "max over A100, H100, MI250, MI210)",
            overlap_slowdown=NCCL_SLOWDOWN),
    Runtime("mpi", "MPI_Allreduce called by the application (MPICH, Cray MPICH, MVAPICH2)",
            "none", 0.0, INF, MPICH_ALGS, "mpich", "rdma", source=_MPICH),
    Runtime("mlsl", "Intel MLSL on Intel MPI (Intel Caffe multinode, one message per layer)",
            "none", 0.0, 0.0, INTEL_MPI_ALGS, "model", "rdma",
            source="Intel MLSL developer guide; Intel MPI I_MPI_ADJUST_ALLREDUCE "
                   "(tables not public: model's fastest, assumed); Intel Caffe "
                   "scripts/run_intelcaffe.sh (MLSL_NUM_SERVERS)",
            # MLSL endpoint servers pinned to their own cores, per process: Intel Caffe's
            # multinode launcher (github.com/intel/caffe, scripts/run_intelcaffe.sh,
            # num_mlsl_servers default: 4 on KNL/KNM, 2 otherwise; OMP_NUM_THREADS =
            # cores - servers; MLSL_NUM_SERVERS in the Intel MLSL developer guide)
            progress_cores=(("cpu", 2.0), ("knl", 4.0))),
    Runtime("gloo", "Gloo over TCP (Caffe2, PyTorch gloo backend)", "none", 0.0, INF,
            GLOO_ALGS, "model", "tcp",
            source="gloo allreduce_ring / allreduce_halving_doubling; Goyal et al. 2017 "
                   "sec. 4; gloo/transport/tcp"),
    # the allreduce terms do not apply (no coordinator, no cycle, no fusion); the
    # baseline's "auto" never runs an allreduce under it (training_ps.check_ps)
    Runtime("parameter-server", "TensorFlow 1.x synchronous parameter servers (gRPC over TCP)",
            "none", 0.0, 0.0, ("ring",), "model", "tcp",
            source="TF device_setter.py (_RoundRobinStrategy), contrib "
                   "GreedyLoadBalancingStrategy; tf_cnn_benchmarks variable_mgr.py; TF r1 "
                   "benchmarks.md (equal numbers of ps and workers)",
            exchange="parameter-server", ps_servers=0, ps_placement="colocated",
            ps_strategy="round-robin"),
)}

#: The stack of a cluster description that names none (a user's TOML file without a
#: ``runtime`` key and without a ``base``): Horovod over MPI, the most common stack
#: of the published HPC runs this project reproduces (assumed).
DEFAULT_RUNTIME = RUNTIMES["horovod-mpi"]


def get_runtime(name: str) -> Runtime:
    """The runtime called ``name`` (see :data:`RUNTIMES`).

    Parameters
    ----------
    name : str
        A key of :data:`RUNTIMES`.
    """
    if name not in RUNTIMES:
        raise unknown_name("runtime", name, RUNTIMES)
    return RUNTIMES[name]


def _span(central: float, low: float, high: float) -> str:
    """``0.97 [0.96-0.976]``: a central value and its cited range."""
    return f"{central:.3g} [{low:.3g}-{high:.3g}]"


def runtime_rows() -> list[dict[str, Any]]:
    """One row per runtime, every term with its figure (``dlscale catalog runtimes``).

    Examples
    --------
    >>> row = runtime_rows()[0]
    >>> row["name"], row["cycle_ms"], row["auto_rule"]
    ('horovod-nccl', 5.0, 'model fastest of ring, double-binary-tree')
    """
    rows = []
    for rt in RUNTIMES.values():
        cap = rt.fusion_cap_bytes
        rule = (f"mpich (<= {rt.short_msg_bytes:g} B: recursive-doubling, else rabenseifner)"
                if rt.selection == "mpich" else f"model fastest of {', '.join(rt.algorithms)}")
        if rt.parameter_server:
            rule = "no allreduce: one push and one pull per variable"
        rows.append({
            "name": rt.name, "stack": rt.stack, "coordination": rt.coordination,
            "cycle_ms": rt.cycle_s * 1e3,
            "fusion_cap": "workload's" if math.isinf(cap) else
                          ("per layer" if cap == 0 else f"{cap / 1024**2:g} MiB"),
            "auto_rule": rule, "transport": rt.transport,
            "transport_efficiency": round(TRANSPORT_EFFICIENCY[rt.transport], 3),
            "transport_efficiency_low": round(TRANSPORT_EFFICIENCY_RANGE[rt.transport][0], 3),
            "transport_efficiency_high": round(TRANSPORT_EFFICIENCY_RANGE[rt.transport][1], 3),
            "progress_cores": ", ".join(f"{k} {c:g}" for k, c in rt.progress_cores) or "0",
            "compute_slowdown": ", ".join(f"{k} {_span(c, lo, hi)}"
                                          for k, c, lo, hi in rt.overlap_slowdown) or "none",
            "exchange": rt.exchange if not rt.parameter_server else
                        f"parameter-server ({rt.ps_servers or 'one per node'}, "
                        f"{rt.ps_placement}, {rt.ps_strategy})",
            "source": rt.source})
    return rows



def apply_runtime(cluster: Cluster, name: str | None, field: str = "runtime") -> Cluster:
    """``cluster`` running the stack ``name`` (unchanged for ``None``); an unknown
    name is refused with ``field`` named.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    name : str or None
        A runtime of :data:`RUNTIMES` (None: unchanged).
    field : str
        How the caller names the setting in an error.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> apply_runtime(get_cluster("summit"), "gloo").runtime.name
    'gloo'
    """
    if name is None:
        return cluster
    try:
        rt = get_runtime(name)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("runtime:", f"{field}:", 1)) from None
    # measured link figures (a calibrate profile) stay measured under another stack, and
    # the values `dlscale fit` fitted stay with the runtime they were fitted for
    old = cluster.runtime
    return dataclasses.replace(cluster, runtime=dataclasses.replace(
        rt, links_measured=old.links_measured, fitted=old.fitted, fitted_for=old.fitted_for))
