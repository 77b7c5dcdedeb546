"""Synchronous data-parallel SGD (Horovod style), vectorized over node counts.

One iteration of one rank:

1. forward pass (sum of the per-layer roofline times, :mod:`dlscale.perfmodel.compute.roofline`);
2. backward pass from the last layer to the first; dense gradients are packed, in
   that order, into buckets of at most ``fusion_threshold_bytes`` (a layer larger
   than the threshold is a bucket on its own; threshold 0: one bucket per layer).
   A bucket is ready when the backward pass has produced its earliest layer's
   gradient (with ``overlap=False``: when the whole backward pass is done);
3. a bucket's allreduce starts when it is ready, plus the wait for the runtime's
   background cycle (half of ``runtime.cycle_s`` on average, Horovod's
   ``HOROVOD_CYCLE_TIME``; 0 for stacks without one), and when the previous
   bucket's allreduce has finished; it costs its orchestration plus the allreduce
   (``workload.collective`` over all ranks, :func:`workload_allreduce`: the steps of
   the algorithm with their loads on every level of the topology,
   :mod:`dlscale.perfmodel.network.model`);
4. sparse (IndexedSlices) gradients that are not densified are allgathered
   (values and int64 indices, ``P R (h e + 8)`` bytes in all, see :mod:`dlscale.perfmodel.compute.memory`)
   after the dense buckets, and summed into the table (``gamma`` per byte);
5. the weight update (:func:`dlscale.perfmodel.compute.roofline.update_s`) after the last message.

With ``network`` (a :class:`~dlscale.perfmodel.network.analytical.NetworkModel`, e.g. a
:class:`dlscale.simulator.network.SimulatedNetwork`), step 3's allreduces and the
graph-aware bit-vector allreduce are asked of it (``network.allreduce_s(n_bytes,
ranks, algorithm)``, once per bucket size and node count, its own reduction cost);
the rank-0 negotiation and the sparse allgather keep their closed forms.

``iteration = forward + max(backward, end of the last message) + update``, each
compute term times the expected largest noise factor over the ranks (the cluster's
``noise``, :mod:`dlscale.perfmodel.machine.noise`; 1 without noise); exposed communication = ``iteration -``
that slowest rank's ``(forward + backward + update)``; communication = per buffer (and
sparse allgather) its cycle wait, orchestration and collective, so exposed <= it.

Orchestration per bucket (Laanait et al. 2019, the Horovod design, and the cluster's
runtime, :mod:`dlscale.perfmodel.machine.runtime`):

- ``grouping="fusion"`` with a ``"rank0"`` runtime (Horovod before its response
  cache): negotiation through rank 0: a gather of the ready-tensor requests (MPICH's
  ``MPI_Gatherv`` is linear: the root takes ``P - 1`` messages, ``(P - 1) alpha``)
  and a binomial broadcast of the response (``ceil(log2 P) alpha``), with ``alpha``
  the latency of the path from the first to the last rank (:func:`negotiation_s`);
- ``grouping="fusion"`` with a ``"cache"`` runtime (Horovod 0.16.1 and later, steady
  state: every tensor's response is cached): one recursive-doubling allreduce of the
  cache bit vector (:func:`coordination_bytes`);
- ``grouping="fusion"`` with a ``"none"`` runtime (MPI, MLSL, NCCL or Gloo driven by
  the framework in a fixed order): nothing;
- ``grouping="graph-aware"``: decentralized: one recursive-doubling allreduce of a
  bit vector with one bit per gradient tensor of the model.

Examples
--------
>>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
>>> layers = tuple(Layer(f"l{i}", "fc", 10**6, 1e9, 1000) for i in range(4))
>>> w = Workload("w", Model("m", layers, (1000,), "none", 1), 1,
...              fusion_threshold_bytes=8e6)
>>> b = buckets(w)
>>> b.bytes.tolist(), b.first_layer.tolist()
([8000000.0, 8000000.0], [2, 0])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlscale.perfmodel.catalog.runtimes import HOROVOD_CYCLE_S
from dlscale.perfmodel.compute.dispatch import dispatch_s_per_op
from dlscale.perfmodel.compute.memory import sparse_gather_bytes
from dlscale.perfmodel.compute.overlap import compute_slowdown, overlap_stretch
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.noise import expected_max_factor
from dlscale.perfmodel.machine.runtime import Runtime, cache_bitvector_bytes, with_transport
from dlscale.perfmodel.network.autopolicy import choose_allreduce
from dlscale.perfmodel.network.contention import hockney_params
from dlscale.perfmodel.network.model import limiting_levels, path_hockney, time_per_node_count
from dlscale.perfmodel.network.msgfactors import message_time_s
from dlscale.perfmodel.training.rank_layout import IterationTimes, Layout
from dlscale.perfmodel.training.workload import Workload

if TYPE_CHECKING:
    from dlscale.perfmodel.network.analytical import NetworkModel

__all__ = ["HOROVOD_CYCLE_S", "Buckets", "auto_choice", "bit_vector_bytes", "buckets",
           "collective_summary", "coordination_bytes", "end_to_end_latency_s", "negotiation_s", "sync_sgd_times",
           "workload_allreduce"]


@dataclass(frozen=True)
class Buckets:
    """Gradient buckets in the order they become ready (last layer first).

    Attributes
    ----------
    bytes : ndarray
        Bytes of each bucket.
    first_layer : ndarray
        Index (model order) of the earliest layer in each bucket: the bucket is ready
        when the backward pass has finished that layer.
    tensors : int
        Dense gradient tensors in the model (bits of the graph-aware bit vector).
    """

    bytes: np.ndarray
    first_layer: np.ndarray
    tensors: int


def buckets(workload: Workload, runtime: Runtime | None = None) -> Buckets:
    """Pack dense gradients into fusion buckets, from the last layer backwards.

    Parameters
    ----------
    workload : Workload
        Model layers, precision, ``fusion_threshold_bytes`` and sparse layers.
    runtime : Runtime, optional
        Its ``fusion_cap_bytes`` caps the workload's threshold.

    Returns
    -------
    Buckets
        Bytes of each bucket, the earliest layer of each (it is ready when the
        backward pass has finished that layer), and the dense tensor count.
    """
    e = workload.bytes_per_element
    thr = workload.fusion_threshold_bytes
    if runtime is not None:
        thr = runtime.fusion_threshold(thr)
    sizes: list[float] = []
    firsts: list[int] = []
    cur, first, tensors = 0.0, -1, 0
    for i in range(len(workload.model.layers) - 1, -1, -1):
        layer = workload.model.layers[i]
        if layer.params == 0 or (layer.sparse_gradient and not workload.sparse_as_dense):
            continue
        tensors += 1
        g = float(layer.params * e)
        if cur > 0 and cur + g > thr:
            sizes.append(cur)
            firsts.append(first)
            cur = 0.0
        cur += g
        first = i
    if cur > 0:
        sizes.append(cur)
        firsts.append(first)
    return Buckets(np.array(sizes), np.array(firsts, dtype=np.int64), tensors)


def workload_allreduce(cluster: Cluster, workload: Workload, lay: Layout,
                       n_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Seconds and algorithm of the workload's gradient allreduce at each node count.

    ``n_bytes`` broadcasts against the node counts ``(N,)`` (e.g. a column ``(B, 1)``
    of bucket sizes). The workload's ``collective`` is costed by
    :func:`dlscale.perfmodel.network.model.collective_time_s` (the per-level loads of its steps on the
    cluster's topology, its links as the runtime's transport delivers them,
    :func:`dlscale.perfmodel.machine.runtime.with_transport`); ``"auto"`` is the runtime's own choice among its
    algorithms per size and rank count: MPICH's documented thresholds
    (``selection="mpich"``, :func:`dlscale.perfmodel.machine.runtime.mpich_short`) or, for a library that
    tunes by measurement or its own cost model (NCCL, Intel MPI), the least time of
    its algorithms by the same network model (``selection="model"``).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how.
    lay : Layout
        Ranks and batches per node count (:func:`dlscale.perfmodel.training.rank_layout.layout`).
    n_bytes : ndarray
        Message sizes, broadcast against ``(N,)``.

    Returns
    -------
    time_s : ndarray
        Seconds of each allreduce.
    algorithm : ndarray of str
        The algorithm costed (``"auto"``'s choice where the workload says auto).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> from dlscale.perfmodel.training.iteration import layout
    >>> c, w = get_cluster("summit"), get_workload("resnet50")
    >>> w = dataclasses.replace(w, collective="ring")
    >>> t, names = workload_allreduce(c, w, layout(c, w, [2, 64]), np.array([[1e8]]))
    >>> names.tolist(), bool(t[0, 1] > t[0, 0])
    ([['ring', 'ring']], True)
    """
    cluster = with_transport(cluster)
    rt = cluster.runtime
    gamma = hockney_params(cluster)["gamma_s_per_B"] / lay.share
    r = lay.ranks_per_node
    shape = np.broadcast_shapes(np.shape(n_bytes), np.shape(lay.nodes))
    def time_of(algorithm: str) -> np.ndarray:
        return time_per_node_count(cluster, "allreduce", algorithm, n_bytes, lay.nodes, r, gamma)

    if workload.collective == "auto":
        best, names = choose_allreduce(rt, n_bytes, lay.ranks, workload.bytes_per_element,
                                       time_of)
    else:
        best, names = time_of(workload.collective), np.asarray(workload.collective)
    return (np.broadcast_to(np.asarray(best, dtype=float), shape),
            np.broadcast_to(names, shape))


def auto_choice(cluster: Cluster, workload: Workload, lay: Layout) -> list[np.ndarray]:
    """Algorithm ``"auto"`` (the cluster's runtime's rule) picks for each gradient
    bucket (rows) at each node count.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how.
    lay : Layout
        Ranks and batches per node count (:func:`dlscale.perfmodel.training.rank_layout.layout`).

    Returns
    -------
    list of ndarray of str
        One array per bucket, one name per node count.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> from dlscale.perfmodel.training.iteration import layout
    >>> w = get_workload("resnet50")
    >>> c = get_cluster("summit")
    >>> auto_choice(c, w, layout(c, w, [1, 512]))[0].tolist()
    ['ring', 'double-binary-tree']
    """
    bk = buckets(workload, cluster.runtime)
    auto = dataclasses.replace(workload, collective="auto")
    names = workload_allreduce(cluster, auto, lay, bk.bytes[:, None])[1]
    return [np.atleast_1d(row) for row in np.atleast_2d(names)]


def collective_summary(cluster: Cluster, workload: Workload,
                       lay: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per node count: the algorithm of the largest gradient bucket's allreduce (what
    ``"auto"`` picked, or the workload's collective) and the topology level that limits
    its bandwidth time (:func:`dlscale.perfmodel.network.model.limiting_level`; ``""`` on one rank).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how.
    lay : Layout
        Ranks and batches per node count (:func:`dlscale.perfmodel.training.rank_layout.layout`).

    Returns
    -------
    algorithm, level : ndarray of str
        One per node count.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> from dlscale.perfmodel.training.iteration import layout
    >>> c, w = get_cluster("stampede2-knl"), get_workload("resnet50")
    >>> w = dataclasses.replace(w, collective="rabenseifner")
    >>> [x.tolist() for x in collective_summary(c, w, layout(c, w, [1, 2, 64]))]
    [['', 'rabenseifner', 'rabenseifner'], ['', 'host', 'host']]
    """
    cluster = with_transport(cluster)
    bk = buckets(workload, cluster.runtime)
    n = len(lay.nodes)
    if not len(bk.bytes):
        return np.full(n, "", dtype=object), np.full(n, "", dtype=object)
    big = np.array([[bk.bytes.max()]])
    names = workload_allreduce(cluster, workload, lay, big)[1][0]
    algs = [str(a) if p > 1 else "" for a, p in zip(names, lay.ranks, strict=True)]
    levels = limiting_levels(cluster, "allreduce", algs, lay.nodes, lay.ranks_per_node)
    return np.array(algs, dtype=object), np.array(levels, dtype=object)


def negotiation_s(p: np.ndarray, alpha_s: np.ndarray) -> np.ndarray:
    """Horovod's rank-0 negotiation of one bucket: ``((p - 1) + ceil(log2 p)) alpha``.

    MPICH's ``MPI_Gatherv`` is linear (the root takes ``p - 1`` messages), the
    response a binomial broadcast (``ceil(log2 p)`` latencies); ``alpha`` is the
    zero-byte latency between the first and the last rank. 0 for one rank.

    Parameters
    ----------
    p : ndarray
        Ranks, per node count.
    alpha_s : ndarray
        Zero-byte latency from the first to the last rank, per node count.

    Returns
    -------
    ndarray
        Seconds per bucket.

    Examples
    --------
    >>> (negotiation_s(np.array([1, 8]), np.array([1e-6, 1e-6])) * 1e6).round(9).tolist()
    [0.0, 10.0]
    """
    p = np.asarray(p, dtype=float)
    return np.where(p > 1, ((p - 1) + np.ceil(np.log2(np.maximum(p, 1)))) * alpha_s, 0.0)


def bit_vector_bytes(tensors: int) -> float:
    """Bytes of the graph-aware orchestration's bit vector: one bit per gradient tensor.

    Each rank marks the tensors it has ready; one recursive-doubling allreduce of the
    vector replaces Horovod's gather at rank 0 (Laanait et al., arXiv 1909.11150,
    decentralized orchestration; Horovod's response cache agrees by an allreduce of a
    bit vector: ``reference/published-results.md`` Sec. 4). At least one byte.

    Parameters
    ----------
    tensors : int
        Dense gradient tensors of the model.

    Returns
    -------
    float
        Bytes, ``ceil(max(tensors, 1) / 8)``.

    Examples
    --------
    >>> bit_vector_bytes(161), bit_vector_bytes(0)
    (21.0, 1.0)
    """
    return float(np.ceil(max(tensors, 1) / 8))


def end_to_end_latency_s(cluster: Cluster, lay: Layout) -> np.ndarray:
    """Zero-byte latency from the first to the last rank, at each node count: the
    path's latency at the network's per-size factor of a zero-byte message
    (:func:`dlscale.perfmodel.network.msgfactors.message_time_s`, as the simulator's
    ``transfer_s`` of 0 bytes has it; the path's latency without factors).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    lay : Layout
        Ranks per node count.

    Returns
    -------
    ndarray
        Seconds per node count (:func:`dlscale.perfmodel.network.model.path_hockney`, over the
        runtime's transport).
    """
    cluster = with_transport(cluster)
    factors = cluster.network.message_factors
    return np.array([message_time_s(path_hockney(cluster, int(n), lay.ranks_per_node, 0,
                                                 int(p) - 1)[0], 0.0, 0.0, factors)
                     for n, p in zip(lay.nodes, lay.ranks, strict=True)])


def coordination_bytes(workload: Workload, runtime: Runtime, tensors: int) -> float:
    """Bytes of the bit-vector allreduce that coordinates one bucket, 0 where the
    coordination is not one: graph-aware grouping (one bit per tensor, in bytes) or
    Horovod's response cache (:func:`dlscale.perfmodel.machine.runtime.cache_bitvector_bytes`).

    Parameters
    ----------
    workload : Workload
        Its grouping.
    runtime : Runtime
        Its coordination.
    tensors : int
        Dense gradient tensors of the bucket.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_runtime, get_workload
    >>> w = get_workload("resnet50")
    >>> [coordination_bytes(w, get_runtime(n), 161) for n in ("horovod-nccl", "mpi")]
    [24.0, 0.0]
    """
    if workload.grouping == "graph-aware":
        return bit_vector_bytes(tensors)
    if runtime.coordination == "cache":
        return cache_bitvector_bytes(tensors)
    return 0.0


def _network_costs(network: NetworkModel, workload: Workload, bk: Buckets, bits: float,
                   ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bucket allreduces ``(B, N)`` and bit-vector coordination ``(N,)`` from ``network``."""
    ar = np.zeros((len(bk.bytes), len(ranks)))
    neg = np.zeros(len(ranks))
    for j, p in enumerate(ranks.astype(int).tolist()):
        if p < 2:
            continue
        for b, nb in enumerate(bk.bytes.tolist()):
            ar[b, j] = network.allreduce_s(float(nb), p, workload.collective)
        if bits > 0:
            neg[j] = network.allreduce_s(bits, p, "recursive-doubling")
    return ar, neg


def _compute_phases(cluster: Cluster, workload: Workload, lay: Layout) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Forward, backward, update, per-layer backward ends (slowest rank), compute, slow,
    and one rank's backward pass summed over its layers (without noise)."""
    dev = cluster.node.device
    weak = workload.scaling == "weak"
    batch = lay.batch_per_rank[0] if weak else lay.batch_per_rank
    lt = layer_times(workload.model, dev, workload.precision, batch, lay.share,
                     lay.compute_fraction, dispatch_s_per_op(workload))
    fwd = lt.forward_s.sum(axis=-1)
    backward = np.broadcast_to(lt.backward_s.sum(axis=-1), lay.nodes.shape).astype(float)
    bwd_cum = np.cumsum(lt.backward_s[..., ::-1], axis=-1)[..., ::-1]   # time to finish layer i
    bwd = bwd_cum[..., 0]
    upd_s = update_s(workload.model.params, dev, workload.momentum > 0, lay.share)
    compute = np.broadcast_to(fwd + bwd + upd_s, lay.nodes.shape).astype(float)
    # the slowest rank sets every synchronous step: its expected compute factor over
    # the ranks (1 without noise; :mod:`dlscale.perfmodel.machine.noise`, the distribution the simulator draws)
    slow = expected_max_factor(cluster_noise(cluster), lay.ranks)
    fwd, bwd, upd = fwd * slow, bwd * slow, upd_s * slow
    bwd_cum = bwd_cum * slow[..., None]          # (N, L): per node count and layer
    return fwd, bwd, upd, bwd_cum, compute, slow, backward


def sync_sgd_times(cluster: Cluster, workload: Workload, lay: Layout, *,
                   network: NetworkModel | None = None) -> IterationTimes:
    """Iteration times of synchronous SGD for the node counts of ``lay``.

    The cluster's runtime sets the coordination of each bucket, the background cycle
    and the fusion cap (:mod:`dlscale.perfmodel.machine.runtime`). ``network``: answers the bucket and bit-vector allreduces instead of the closed
    forms (see the module docstring); it must hold ``max(lay.ranks)`` ranks.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how.
    lay : Layout
        Ranks and batches per node count (:func:`dlscale.perfmodel.training.rank_layout.layout`).
    network : NetworkModel, optional
        Who answers the allreduces (default: the closed forms of :mod:`dlscale.perfmodel.network.model`).

    Returns
    -------
    IterationTimes
        Arrays over the node counts.
    """
    cluster = with_transport(cluster)
    rt = cluster.runtime
    fwd, bwd, upd, bwd_cum, compute, slow, backward = _compute_phases(cluster, workload, lay)

    par = hockney_params(cluster)
    p = lay.ranks
    multi = p > 1
    bk = buckets(workload, rt)
    bits = coordination_bytes(workload, rt, bk.tensors)
    if network is not None:
        net_ar, neg = _network_costs(network, workload, bk, bits, np.atleast_1d(p))
    elif bits > 0:
        neg = time_per_node_count(cluster, "allreduce", "recursive-doubling", bits, lay.nodes,
                                  lay.ranks_per_node)
    if workload.grouping == "fusion" and rt.coordination == "rank0":
        neg = negotiation_s(p, end_to_end_latency_s(cluster, lay))
    elif bits == 0:
        neg = np.zeros(lay.nodes.shape)
    wait = np.where(multi, rt.cycle_wait_s, 0.0)

    end = np.zeros(lay.nodes.shape)
    comm = np.zeros(lay.nodes.shape)
    if len(bk.bytes):
        # all buckets at once, shape (B, N); the chain start_b = max(ready_b + wait,
        # end_{b-1}) unrolls to end_b = S_b + max_{k<=b}(ready_k + wait - S_{k-1}) with
        # S the running sum of the durations.
        if network is None:
            net_ar = workload_allreduce(cluster, workload, lay, bk.bytes[:, None])[0]
        dur = np.where(multi, neg + net_ar, 0.0)
        if workload.overlap:
            ready = rt.achieved_ready(
                np.moveaxis(np.atleast_2d(bwd_cum[..., bk.first_layer]), -1, 0), bwd)
            k = overlap_stretch(ready, dur, wait, bwd, compute_slowdown(cluster, workload))
            ready, compute, bwd = ready * k, compute + (k - 1) * bwd / slow, bwd * k
        else:
            ready = np.broadcast_to(bwd, lay.nodes.shape)[None, :]
        run = np.cumsum(dur, axis=0)
        end = run[-1] + np.maximum.accumulate(ready + wait - (run - dur), axis=0)[-1]
        comm = run[-1] + len(bk.bytes) * wait   # exposed <= one wait + the durations
    if workload.model.sparse_params > 0 and not workload.sparse_as_dense:
        total = np.asarray(sparse_gather_bytes(workload, p, lay.batch_per_rank), dtype=float)
        gather = time_per_node_count(cluster, "allgather", "ring", total, lay.nodes,
                                     lay.ranks_per_node)
        dur = np.where(multi, neg + gather + total * par["gamma_s_per_B"] / lay.share, 0.0)
        end = np.maximum(bwd + wait, end) + dur
        comm += wait + dur
    end = np.where(multi, end, 0.0)
    iteration = fwd + np.maximum(bwd, end) + upd
    iteration = np.broadcast_to(iteration, lay.nodes.shape).astype(float)
    # exposed: the communication after the slowest rank's compute (its wait for the
    # stragglers, (slow - 1) x compute, is neither compute nor communication)
    return IterationTimes(iteration, compute, comm, iteration - compute * slow,
                          lay.global_batch / iteration, backward_s=backward)
