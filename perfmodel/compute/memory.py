"""Memory per rank and per device, and whether a configuration fits.

Per rank, for a model of ``W`` parameters, ``e`` bytes per element at the training
precision (fp16 for mixed precision), batch ``b`` and ``a`` activation elements
kept per sample:

- parameters: ``4 W`` (fp32), plus a ``2 W`` fp16 working copy in mixed precision
  (Micikevicius et al. 2018 keep fp32 master weights);
- gradients: ``e W_dense`` plus, for sparse (embedding) layers, either the
  densified ``e W_sparse`` or the local IndexedSlices ``R (h e + 8)``;
- optimizer state: ``4 W`` of momentum for sync-sgd, async-msgd and async-measgd
  (momentum > 0); the EASGD family keeps the center variable, another ``4 W``;
- activations: ``e a b``, with ``a`` the sum of ``activation_elements`` over *every*
  layer of the model (see "Activation counting rule" below);
- buffers: the Horovod fusion buffer (``fusion_threshold_bytes``, sync-sgd) and,
  for sparse gradients that are not densified, the allgather result ``P R (h e +
  8)`` (Cavdar et al. 2019), or the dense ``vocab h e`` buffer when densified.

``R = vocab + t b`` rows per rank: the table is shared with the softmax
projection, whose gradient TensorFlow turns into IndexedSlices over the whole vocab,
plus the ``t`` token rows per sample of the lookup; ``h = activation_elements /
t`` and ``vocab = params / h`` for the embedding layer; indices are int64 (8 bytes).

Activation counting rule (what frameworks keep for the backward pass): every
layer's output is kept except a ReLU's (``kind="act"`` after another layer), which
runs in place: its output overwrites its input's buffer, and its backward reads
only that output. This is what the frameworks of the cited runs do: Caffe's
prototxts write ReLU in place (``bottom`` = ``top``), PyTorch's torchvision models
build ``nn.ReLU(inplace=True)``, MXNet's memory planner shares a ReLU's output with
its input (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost",
arXiv 1604.06174, sec. 3: in-place operation and memory sharing), and TensorFlow's
allocator frees a batch-norm output once the ReLU has read it (its gradient needs
the batch-norm *input*), which keeps the same number of buffers. Batch norm, LRN,
pooling, residual adds, convolutions and fully connected layers keep their outputs.
The ``act`` layers hold 26% (ResNet-50) to 47% (VGG-16) of the catalog models'
activation elements. The upper bound (every op's output kept, TensorFlow graph mode
without its allocator) is :func:`activation_elements_kept` with ``in_place=False``,
the high end of :func:`memory_range`.

Workspace: a GPU rank also holds the cuDNN convolution workspace, one buffer reused
by every layer and capped by the framework (:data:`CUDNN_WORKSPACE`: central
MXNet's default cap of 1024 MB, low PaddlePaddle's 512 MB, high TensorFlow's
4096 MB); CPU ranks hold none.

Checked against cited runs (``tests/test_memory_cited.py``): NVIDIA
DeepLearningExamples trained ResNet-50 v1.5 for 90 epochs on a DGX-1 with 16 GB
V100s at 128 images per GPU in fp32 and 256 in mixed precision
(``TensorFlow/Classification/ConvNets/resnet50v1.5/README.md``, "Training accuracy:
NVIDIA DGX-1 (8x V100 16G)"; ``training/FP32/DGX1_RN50_FP32_90E.sh``: ``8 90 128
fp32``; ``training/AMP/DGX1_RN50_AMP_90E.sh``: ``8 90 256 amp``): both fit here, and
256 in fp32 does not (the reason the scripts halve the fp32 batch).

Capacity: a rank gets ``devices_per_node / ranks_per_node`` of a device's training
memory (MCDRAM in KNL flat mode). ``memory_per_device`` is the rank's bytes times the
ranks per device.

Examples
--------
>>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
>>> emb = Layer("emb", "embedding", 1000 * 10, 0.0, 5 * 10, sparse_gradient=True)
>>> m = Model("t", (emb,), (5,), "none", 1, sparse_rows_per_sample=5)
>>> w = Workload("t", m, batch_per_device=2, sparse_as_dense=False)
>>> sparse_gather_bytes(w, 4)   # 4 ranks x (1000 + 10 rows) x (10 x 4 + 8) bytes
193920.0
>>> dense_embedding_bytes(w)    # 1000 x 10 x 4
40000.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.cited import CitedRange, register
from dlscale.perfmodel.errors import OutOfMemoryError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import EASGD_FAMILY, MOMENTUM_ALGORITHMS, Model, Workload
from dlscale.perfmodel.units import BYTES_PER_ELEMENT, MiB

__all__ = ["CUDNN_WORKSPACE", "INDEX_BYTES", "MemoryVerdict", "activation_elements_kept",
           "dense_embedding_bytes", "memory_per_rank", "memory_range", "sparse_gather_bytes",
           "sparse_rows_per_rank"]

#: cuDNN convolution workspace one GPU rank holds (a cap the framework sets; one
#: buffer reused by every convolution).
CUDNN_WORKSPACE = CitedRange(
    "cudnn_workspace_bytes", central=1024 * MiB, low=512 * MiB, high=4096 * MiB, unit="bytes",
    source="central: MXNet Convolution operator, workspace parameter default 1024 (MB) "
           "(mxnet.symbol.Convolution docs); low: PaddlePaddle FLAGS_conv_workspace_size_limit "
           "default 512 MB (paddle/phi/core/flags.cc); high: 4096 MB, PaddlePaddle's earlier "
           "default (docs doc/fluid/flags/cudnn_en.rst) and TensorFlow's "
           "TF_CUDNN_WORKSPACE_LIMIT_IN_MB default (1 << 32 bytes, conv_ops_gpu)")
register(CUDNN_WORKSPACE)

#: Bytes of one IndexedSlices index (TensorFlow int64).
INDEX_BYTES = 8.0

#: Bytes per element of the fp32 master weights and optimizer state, and of the fp16
#: working copy of mixed precision (:data:`.units.BYTES_PER_ELEMENT`).
_FP32, _FP16 = BYTES_PER_ELEMENT["fp32"], BYTES_PER_ELEMENT["fp16"]



def _embedding_shape(workload: Workload) -> tuple[float, float]:
    """``(vocab, hidden)`` summed over sparse layers (0, 0 if there are none)."""
    model = workload.model
    vocab = hidden = 0.0
    for layer in model.layers:
        if layer.sparse_gradient and model.sparse_rows_per_sample > 0:
            h = layer.activation_elements / model.sparse_rows_per_sample
            if h > 0:
                hidden = max(hidden, h)
                vocab += layer.params / h
    return vocab, hidden


def sparse_rows_per_rank(workload: Workload, batch: ArrayLike | None = None) -> np.ndarray:
    """Rows of the IndexedSlices gradient one rank contributes: ``vocab + t b``.

    Parameters
    ----------
    workload : Workload
        Its sparse (embedding) layer: vocabulary and tokens per sample.
    batch : array_like, optional
        Samples per rank (default ``workload.batch_per_device``).

    Returns
    -------
    ndarray
        Rows per rank.
    """
    vocab, _ = _embedding_shape(workload)
    b = workload.batch_per_device if batch is None else batch
    rows = vocab + workload.model.sparse_rows_per_sample * np.asarray(b, dtype=float)
    return np.where(vocab > 0, rows, 0.0)


def sparse_gather_bytes(workload: Workload, ranks: ArrayLike,
                        batch: ArrayLike | None = None) -> float | np.ndarray:
    """Bytes of the allgathered IndexedSlices on every rank: ``P R (h e + 8)``.

    Parameters
    ----------
    workload : Workload
        Its sparse layer and precision.
    ranks : array_like
        Ranks ``P`` that contribute.
    batch : array_like, optional
        Samples per rank (default ``workload.batch_per_device``).

    Returns
    -------
    float or ndarray
        Bytes held on every rank after the allgather.
    """
    _, hidden = _embedding_shape(workload)
    row = hidden * workload.bytes_per_element + INDEX_BYTES
    out = np.asarray(ranks, dtype=float) * sparse_rows_per_rank(workload, batch) * row
    out = np.where(hidden > 0, out, 0.0)
    return float(out) if out.ndim == 0 else out


def dense_embedding_bytes(workload: Workload) -> float:
    """Bytes of the densified embedding gradient: ``vocab h e`` = sparse params x e.

    Parameters
    ----------
    workload : Workload
        Its sparse layer and precision.

    Returns
    -------
    float
        Bytes (0 without a sparse layer).
    """
    return float(workload.model.sparse_params * workload.bytes_per_element)


def activation_elements_kept(model: Model, in_place: bool = True) -> float:
    """Activation elements per sample kept for the backward pass.

    Parameters
    ----------
    model : Model
        Its layers in forward order.
    in_place : bool
        True (frameworks): a ReLU after another layer keeps no buffer of its own
        (module docstring). False: every layer's output is kept (the upper bound).

    Returns
    -------
    float
        Elements per sample.

    Examples
    --------
    >>> from dlscale.perfmodel.training.workload import Layer, Model
    >>> conv = Layer("c", "conv", 10, 100.0, 8)
    >>> relu = Layer("r", "act", 0, 8.0, 8)
    >>> m = Model("m", (conv, relu), (4,), "none", 1)
    >>> activation_elements_kept(m), activation_elements_kept(m, in_place=False)
    (8.0, 16.0)
    """
    layers = model.layers
    return float(sum(layer.activation_elements for i, layer in enumerate(layers)
                     if not (in_place and i > 0 and layer.kind == "act")))


@dataclass(frozen=True)
class MemoryVerdict:
    """Memory one rank needs, against what it has.

    Attributes
    ----------
    parameters_bytes, gradients_bytes, optimizer_bytes, activations_bytes, buffers_bytes
        Parts of the per-rank total (arrays over the rank counts asked for).
    workspace_bytes : ndarray
        The cuDNN workspace of a GPU rank (0 on CPUs), part of the total.
    total_bytes : ndarray
        Sum of the parts, per rank.
    per_device_bytes : ndarray
        ``total_bytes`` times ranks per device (one device's memory use).
    capacity_bytes : float
        Memory one rank has (its share of the device memory).
    resource : str
        Which memory that is, e.g. ``"MCDRAM of xeon-phi-7250"``.
    fits : ndarray of bool
    shortfall_bytes : ndarray
        ``max(0, total - capacity)``.
    ranks : ndarray
        Total rank counts the arrays are for.
    """

    parameters_bytes: np.ndarray
    gradients_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    activations_bytes: np.ndarray
    buffers_bytes: np.ndarray
    workspace_bytes: np.ndarray
    total_bytes: np.ndarray
    per_device_bytes: np.ndarray
    capacity_bytes: float
    resource: str
    fits: np.ndarray
    shortfall_bytes: np.ndarray
    ranks: np.ndarray

    def check(self) -> None:
        """Raise :class:`OutOfMemoryError` naming the resource if any count does not fit."""
        bad = ~self.fits
        if np.any(bad):
            i = int(np.argmax(bad))
            raise OutOfMemoryError(
                f"{self.resource}: needs {self.total_bytes[i] / 2**30:.2f} GiB per rank at "
                f"{int(self.ranks[i])} ranks, has {self.capacity_bytes / 2**30:.2f} GiB "
                f"(short by {self.shortfall_bytes[i] / 2**30:.2f} GiB)"
            )


def _grads_and_buffers(workload: Workload, r: np.ndarray,
                       b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient bytes and communication buffer bytes per rank (sparse gather or dense)."""
    model = workload.model
    e = float(workload.bytes_per_element)
    sparse = model.sparse_params > 0
    gather = workload.algorithm == "sync-sgd" and sparse and not workload.sparse_as_dense
    _, hidden = _embedding_shape(workload)
    grads: np.ndarray
    if gather:
        local = sparse_rows_per_rank(workload, b) * (hidden * e + INDEX_BYTES)
        grads = np.asarray(e * model.dense_params + local, dtype=float)
        buffers = np.asarray(sparse_gather_bytes(workload, r, b), dtype=float)
    else:
        grads = np.full(r.shape, e * float(model.params))
        dense_buf = dense_embedding_bytes(workload) if (sparse and workload.algorithm == "sync-sgd") else 0.0
        buffers = np.full(r.shape, dense_buf)
    if workload.algorithm == "sync-sgd":
        buffers = buffers + workload.fusion_threshold_bytes
    return grads, buffers


def _rank_capacity(workload: Workload, cluster: Cluster) -> tuple[float, float, str]:
    """Device share per rank, the memory capacity a rank holds and the resource's name."""
    node = cluster.node
    rpn = workload.ranks_per_node or node.devices_per_node
    share = node.devices_per_node / rpn
    dev = node.device
    capacity = dev.training_memory_bytes * share
    kind = "MCDRAM" if dev.training_memory_bytes != dev.memory_bytes else "memory"
    resource = f"{kind} of {dev.name}" + (f" (1/{rpn / node.devices_per_node:g} per rank)"
                                          if share < 1 else "")
    return share, capacity, resource


def memory_per_rank(workload: Workload, cluster: Cluster, ranks: ArrayLike,
                    batch: ArrayLike | None = None, *, end: str = "central") -> MemoryVerdict:
    """Memory verdict for ``ranks`` total ranks (scalar or 1-D array).

    ``batch`` (samples per rank, same shape as ``ranks`` or scalar) defaults to
    ``workload.batch_per_device``.

    Parameters
    ----------
    workload : Workload
        Model, precision, optimizer state, algorithm.
    cluster : Cluster
        Its device memory (MCDRAM and DDR on a KNL) and node memory.
    ranks : array_like of int
        Total ranks.
    batch : array_like, optional
        Samples per rank.
    end : {"central", "low", "high"}
        Which end of the cited figures: ``"central"`` (what every command checks),
        ``"low"`` (smallest workspace), ``"high"`` (largest workspace and every
        op's output kept).

    Returns
    -------
    MemoryVerdict
        Bytes per rank by part (parameters, gradients, optimizer, activations,
        buffers), the resource that holds them, its capacity, whether they fit and
        by how much they fall short.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import (
    ...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
    >>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
    >>> node = NodeSpec("n", gpu, 1, Link("pcie", 10e9, 5e-6), Link("ib", 10e9, 1e-6))
    >>> c = Cluster("c", node, NetworkSpec("x", Crossbar(8), Link("ib", 10e9, 1e-6)))
    >>> fc = Layer("fc", "fc", 10**9, 2e9, 1000)
    >>> w = Workload("w", Model("m", (fc,), (1000,), "none", 1), 1, fusion_threshold_bytes=0)
    >>> v = memory_per_rank(w, c, [1, 2])
    >>> (v.total_bytes / 1e9).tolist(), v.fits.tolist()   # 4 + 4 + 4 GB + 4 kB + 1 GiB
    ([13.073745824, 13.073745824], [True, True])
    """
    if end not in ("central", "low", "high"):
        raise ValueError(f"end: must be central, low or high, got {end!r}")
    r = np.atleast_1d(np.asarray(ranks, dtype=float))
    b = np.broadcast_to(np.asarray(workload.batch_per_device if batch is None else batch,
                                   dtype=float), r.shape)
    model = workload.model
    e = float(workload.bytes_per_element)
    W = float(model.params)
    params = _FP32 * W + (_FP16 * W if workload.precision == "fp16" else 0.0)
    grads, buffers = _grads_and_buffers(workload, r, b)
    opt = 0.0
    if workload.algorithm in MOMENTUM_ALGORITHMS and workload.momentum > 0:
        opt += _FP32 * W
    if workload.algorithm in EASGD_FAMILY:
        opt += _FP32 * W
    acts = e * activation_elements_kept(model, in_place=end != "high") * b
    ws = (float(getattr(CUDNN_WORKSPACE, end)) if cluster.node.device.kind == "gpu" else 0.0)
    total = params + grads + opt + acts + buffers + ws
    share, capacity, resource = _rank_capacity(workload, cluster)
    shape = r.shape
    return MemoryVerdict(
        np.full(shape, params), np.broadcast_to(grads, shape).astype(float), np.full(shape, opt),
        np.broadcast_to(acts, shape).astype(float), np.broadcast_to(buffers, shape).astype(float),
        np.full(shape, ws), total, total / share, capacity, resource, total <= capacity,
        np.maximum(total - capacity, 0.0), r,
    )


def memory_range(workload: Workload, cluster: Cluster, ranks: ArrayLike,
                 batch: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bytes per device at the low, central and high ends of the cited figures.

    Low: ReLU in place and the smallest cited workspace; central: what
    :func:`memory_per_rank` checks; high: every op's output kept and the largest
    cited workspace (:data:`CUDNN_WORKSPACE`).

    Parameters
    ----------
    workload, cluster, ranks, batch
        As for :func:`memory_per_rank`.

    Returns
    -------
    tuple of ndarray
        ``(low, central, high)`` bytes per device.
    """
    low, central, high = (memory_per_rank(workload, cluster, ranks, batch, end=end).per_device_bytes
                          for end in ("low", "central", "high"))
    return low, central, high
