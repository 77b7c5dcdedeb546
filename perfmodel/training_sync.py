"""Synchronous data-parallel SGD (Horovod style), vectorized over node counts.

One iteration of one rank:

1. forward pass (sum of the per-layer roofline times, :mod:`.compute`);
2. backward pass from the last layer to the first; dense gradients are packed, in
   that order, into buckets of at most ``fusion_threshold_bytes`` (a layer larger
   than the threshold is a bucket on its own; threshold 0: one bucket per layer).
   A bucket is ready when the backward pass has produced its earliest layer's
   gradient (with ``overlap=False``: when the whole backward pass is done);
3. a bucket's allreduce starts when it is ready, plus the wait for Horovod's
   background cycle (half of ``HOROVOD_CYCLE_S`` on average), and when the previous
   bucket's allreduce has finished; it costs its orchestration plus the allreduce
   (``workload.collective`` over all ranks, alpha/beta/gamma from
   :func:`.contention.hockney_params`, inverse bandwidth with the topology rule of
   :func:`.contention.effective_beta_s_per_B`);
4. sparse (IndexedSlices) gradients that are not densified are allgathered
   (values and int64 indices, ``P R (h e + 8)`` bytes in all, see :mod:`.memory`)
   after the dense buckets, and summed into the table (``gamma`` per byte);
5. the weight update (:func:`.compute.update_s`) after the last message.

With ``network`` (a :class:`~dlscale.perfmodel.netapi.NetworkModel`, e.g. a
:class:`dlscale.simulator.network.SimulatedNetwork`), step 3's allreduces and the
graph-aware bit-vector allreduce are asked of it (``network.allreduce_s(n_bytes,
ranks, algorithm)``, once per bucket size and node count, its own reduction cost);
the rank-0 negotiation and the sparse allgather keep their closed forms.

``iteration = forward + max(backward, end of the last message) + update``;
exposed communication = ``iteration - (forward + backward + update)``.

Orchestration per bucket (Laanait et al. 2019 and the Horovod design):

- ``grouping="fusion"``: stock Horovod negotiates through rank 0: a gather of the
  ready-tensor requests (MPICH's ``MPI_Gatherv`` is linear: the root takes ``P - 1``
  messages, ``(P - 1) alpha``) and a binomial broadcast of the response
  (``ceil(log2 P) alpha``), with ``alpha`` the inter-node path latency of
  :func:`.contention.hockney_params` (intra-node on
  one node);
- ``grouping="graph-aware"``: decentralized: one recursive-doubling allreduce of a
  bit vector with one bit per gradient tensor of the model.

Examples
--------
>>> from dlscale.perfmodel.workload import Layer, Model, Workload
>>> layers = tuple(Layer(f"l{i}", "fc", 10**6, 1e9, 1000) for i in range(4))
>>> w = Workload("w", Model("m", layers, (1000,), "none", 1), 1,
...              fusion_threshold_bytes=8e6)
>>> b = buckets(w)
>>> b.bytes.tolist(), b.first_layer.tolist()
([8000000.0, 8000000.0], [2, 0])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .collectives import ALLREDUCE, allgather_s, best_allreduce, hierarchical_allreduce_s
from .collectives import recursive_doubling_allreduce_s as _rd
from .compute import layer_times, update_s
from .contention import effective_beta_s_per_B, hockney_params
from .hardware import Cluster
from .memory import sparse_gather_bytes
from .training import IterationTimes, Layout
from .workload import Workload

if TYPE_CHECKING:
    from .netapi import NetworkModel

__all__ = ["HOROVOD_CYCLE_S", "Buckets", "auto_choice", "buckets", "sync_sgd_times"]

#: Horovod background-loop cycle: HOROVOD_CYCLE_TIME default 5 ms in Horovod up to
#: 0.20 (docs/tensor-fusion; the 0.21.0 release notes, PR #2468, lowered it to 1 ms).
#: The 2017-2019 papers this project reproduces ran the 5 ms releases.
HOROVOD_CYCLE_S = 5e-3


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


def buckets(workload: Workload) -> Buckets:
    """Pack dense gradients into fusion buckets, from the last layer backwards."""
    e = workload.bytes_per_element
    thr = workload.fusion_threshold_bytes
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


def _best_fn(cluster: Cluster, workload: Workload, lay: Layout):
    """``f(n_bytes) -> (seconds, names)`` of ``"auto"`` over the node counts.

    Every candidate of :func:`.collectives.best_allreduce` is costed as when it is
    the workload's collective: each flat one with its own effective inverse
    bandwidth (topology contention factor of its step pattern), hierarchical with
    the ring's among node leaders.
    """
    par = hockney_params(cluster)
    gamma = par["gamma_s_per_B"] / lay.share
    n, r = lay.nodes, lay.ranks_per_node
    intra = (par["intra_alpha_s"], par["intra_beta_s_per_B"])
    inter = (par["inter_alpha_s"], effective_beta_s_per_B(cluster, "ring", n, 1))
    alpha = np.where(n > 1, par["inter_alpha_s"], par["intra_alpha_s"])
    betas = {name: effective_beta_s_per_B(cluster, name, n, r) for name in ALLREDUCE}
    return lambda nb: best_allreduce(nb, lay.ranks, alpha, betas, gamma, ranks_per_node=r,
                                     intra=intra, inter=inter, inter_algorithm="ring")


def _allreduce_fn(cluster: Cluster, workload: Workload, lay: Layout):
    """``f(n_bytes) -> seconds over the node counts`` for the workload's collective."""
    if workload.collective == "auto":
        best = _best_fn(cluster, workload, lay)
        return lambda nb: best(nb)[0]
    par = hockney_params(cluster)
    gamma = par["gamma_s_per_B"] / lay.share
    n, r = lay.nodes, lay.ranks_per_node
    intra = (par["intra_alpha_s"], par["intra_beta_s_per_B"])
    if workload.collective == "hierarchical":
        beta_e = effective_beta_s_per_B(cluster, "ring", n, 1)
        inter = (par["inter_alpha_s"], beta_e)
        return lambda nb: hierarchical_allreduce_s(nb, n, r, intra, inter, gamma, "ring")
    f = ALLREDUCE[workload.collective]
    alpha = np.where(n > 1, par["inter_alpha_s"], par["intra_alpha_s"])
    beta = effective_beta_s_per_B(cluster, workload.collective, n, r)
    return lambda nb: f(nb, lay.ranks, alpha, beta, gamma)


def auto_choice(cluster: Cluster, workload: Workload, lay: Layout) -> list[np.ndarray]:
    """Algorithm ``"auto"`` picks for each gradient bucket (rows) at each node count.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> from dlscale.perfmodel.training import layout
    >>> w = get_workload("resnet50")
    >>> c = get_cluster("summit")
    >>> auto_choice(c, w, layout(c, w, [1, 4096]))[0].tolist()
    ['ring', 'double-binary-tree']
    """
    bk = buckets(workload)
    names = _best_fn(cluster, workload, lay)(bk.bytes[:, None])[1]
    return [np.atleast_1d(row) for row in np.atleast_2d(names)]


def _network_costs(network: NetworkModel, workload: Workload, bk: Buckets,
                   ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bucket allreduces ``(B, N)`` and graph-aware negotiation ``(N,)`` from ``network``."""
    ar = np.zeros((len(bk.bytes), len(ranks)))
    neg = np.zeros(len(ranks))
    bits = float(np.ceil(max(bk.tensors, 1) / 8))
    for j, p in enumerate(ranks.astype(int).tolist()):
        if p < 2:
            continue
        for b, nb in enumerate(bk.bytes.tolist()):
            ar[b, j] = network.allreduce_s(float(nb), p, workload.collective)
        if workload.grouping == "graph-aware":
            neg[j] = network.allreduce_s(bits, p, "recursive-doubling")
    return ar, neg


def sync_sgd_times(cluster: Cluster, workload: Workload, lay: Layout, *,
                   network: NetworkModel | None = None) -> IterationTimes:
    """Iteration times of synchronous SGD for the node counts of ``lay``.

    ``network``: answers the bucket and bit-vector allreduces instead of the closed
    forms (see the module docstring); it must hold ``max(lay.ranks)`` ranks.
    """
    dev = cluster.node.device
    weak = workload.scaling == "weak"
    batch = lay.batch_per_rank[0] if weak else lay.batch_per_rank
    lt = layer_times(workload.model, dev, workload.precision, batch, lay.share)
    fwd = lt.forward_s.sum(axis=-1)
    bwd_cum = np.cumsum(lt.backward_s[..., ::-1], axis=-1)[..., ::-1]   # time to finish layer i
    bwd = bwd_cum[..., 0]
    upd = update_s(workload.model.params, dev, workload.momentum > 0, lay.share)
    compute = np.broadcast_to(fwd + bwd + upd, lay.nodes.shape).astype(float)

    par = hockney_params(cluster)
    p = lay.ranks
    multi = p > 1
    alpha_c = np.where(lay.nodes > 1, par["inter_alpha_s"], par["intra_alpha_s"])
    beta_c = np.where(lay.nodes > 1, par["inter_beta_s_per_B"], par["intra_beta_s_per_B"])
    bk = buckets(workload)
    if network is not None:
        net_ar, neg = _network_costs(network, workload, bk, np.atleast_1d(p))
    if workload.grouping == "fusion":
        neg = ((p - 1) + np.ceil(np.log2(p))) * alpha_c
    elif network is None:
        neg = np.asarray(_rd(np.ceil(max(bk.tensors, 1) / 8), p, alpha_c, beta_c))
    wait = np.where(multi, HOROVOD_CYCLE_S / 2, 0.0)

    end = np.zeros(lay.nodes.shape)
    comm = np.zeros(lay.nodes.shape)
    if len(bk.bytes):
        # all buckets at once, shape (B, N); the chain start_b = max(ready_b + wait,
        # end_{b-1}) unrolls to end_b = S_b + max_{k<=b}(ready_k + wait - S_{k-1}) with
        # S the running sum of the durations.
        if network is None:
            net_ar = np.asarray(_allreduce_fn(cluster, workload, lay)(bk.bytes[:, None]))
        dur = np.where(multi, neg + net_ar, 0.0)
        if workload.overlap:
            ready = np.moveaxis(np.atleast_2d(bwd_cum[..., bk.first_layer]), -1, 0)
        else:
            ready = np.broadcast_to(bwd, lay.nodes.shape)[None, :]
        run = np.cumsum(dur, axis=0)
        end = run[-1] + np.maximum.accumulate(ready + wait - (run - dur), axis=0)[-1]
        comm = run[-1]
    if workload.model.sparse_params > 0 and not workload.sparse_as_dense:
        total = np.asarray(sparse_gather_bytes(workload, p, lay.batch_per_rank), dtype=float)
        beta_ring = effective_beta_s_per_B(cluster, "ring", lay.nodes, lay.ranks_per_node)
        gather = allgather_s(total, p, alpha_c, beta_ring)
        dur = np.where(multi, neg + gather + total * par["gamma_s_per_B"] / lay.share, 0.0)
        end = np.maximum(bwd + wait, end) + dur
        comm += dur
    end = np.where(multi, end, 0.0)
    iteration = fwd + np.maximum(bwd, end) + upd
    iteration = np.broadcast_to(iteration, lay.nodes.shape).astype(float)
    return IterationTimes(iteration, compute, comm, iteration - compute,
                          lay.global_batch / iteration)
