"""Elastic averaging SGD and asynchronous SGD baselines, vectorized over node counts.

Notation: ``t`` the local step of one worker (forward + backward + its local
update, :mod:`dlscale.perfmodel.compute.roofline`), ``W`` the bytes of the weights at the training precision,
``P`` the workers (all ranks), ``tau`` the communication period
(``workload.tau``; 1 for the SGD baselines, which exchange every step).

easgd (the original, Zhang et al. 2015 as run by You et al. 2017)
    A master process exchanges with the workers one at a time:
    :func:`dlscale.perfmodel.network.collectives.parameter_server_s` ``= P (2 alpha + 2 W beta + W u)`` per
    round, over the master's link (the node's ``host_link`` on one GPU node, where
    the master lives on the CPU; the NIC across nodes); GPU workers also copy their
    weights device -> host -> device every iteration, ``2 (alpha_h + W beta_h)`` over
    the ``host_link``. ``iteration = t + round / tau + copy``. No slowest-worker
    charge: the master serves the workers one by one, each as it is ready, so a
    worker late by less than the turns before its own costs the round nothing (the
    simulator, drawing the spread, is within 0.04% of this on 12 and 96 Summit GPUs).
sync-easgd (You et al. 2017)
    The center is a binomial-tree reduce plus broadcast of ``W`` over all ranks,
    ``ceil(log2 P)(2 alpha + 2 W beta + W gamma)``, every ``tau`` steps; weights stay
    on the devices. With ``workload.overlap`` the exchange runs during the local
    steps: ``iteration = max(t, round / tau)``, else ``t F + round / tau``: without
    overlap the round starts when the slowest worker has done its ``tau`` steps, ``F``
    the expected slowest mean factor of ``P`` workers over ``tau`` steps (the cluster's
    noise, :func:`dlscale.perfmodel.compute.variability.block_slowest_factor`; 1
    without noise). With overlap a worker waits only for the round before; the
    simulator's wait for the slowest is then within 0.3% of none (96 Summit GPUs) and
    none is charged.
async-easgd, async-measgd, hogwild-easgd, async-sgd, async-msgd, hogwild-sgd
    A master (parameter server, an extra process) serves exchanges first come first
    served. One exchange (push ``W`` bytes, pull ``W`` bytes) holds the master's link
    for ``2 (alpha + W beta)``; applying it touches ``k W`` bytes of the master's
    memory (``k = 3``: read center/weights and the message, write them back; ``5``
    for async-msgd, which also reads and writes the velocity), ``k W / bandwidth``.
    With a lock the master serves ``1 / (link + update)`` exchanges per second; the
    Hogwild variants drop the lock, so transfers and updates of different workers
    overlap: ``1 / max(2 W beta, update)`` (the shared link is busy only while bytes
    cross it; the latencies of concurrent messages overlap, as in the simulator's
    processor-sharing link). A worker waits for no other worker: its compute
    is ``t`` times its own mean factor, 1 for the mean-one noise (no slowest-rank
    charge). Noise drifts the workers out of their start-up order: a lock serves
    colliding workers one after the other, which spreads them apart again (the
    simulator's queueing under the GPUs' spread, 0.4-1% on 12 Summit GPUs, is not in
    the closed form); the Hogwild variants' shared link keeps the gaps, so with noise
    the workers demand :func:`shared_link_rate`, the random-phase steady state, in
    place of ``P / (tau t + link)``. Workers ask for ``P / (tau t + link)``
    exchanges per second; the job runs at the smaller of the two rates (the
    master-bound regime is where adding workers stops helping).
    ``iteration_s`` is the mean time between two steps of one worker.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import (
...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
>>> from dlscale.perfmodel.training.iteration import iteration_times
>>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
>>> node = NodeSpec("n", gpu, 8, Link("pcie", 10e9, 5e-6), Link("ib", 10e9, 1e-6),
...                 host_link=Link("pcie", 10e9, 5e-6))
>>> c = Cluster("toy", node, NetworkSpec("x", Crossbar(16), Link("ib", 10e9, 1e-6)))
>>> m = Model("m", (Layer("fc", "fc", 25 * 10**6, 7e9, 10**7),), (1000,), "none", 1)
>>> orig = iteration_times(c, Workload("w", m, 1, algorithm="easgd"), 1)
>>> sync = iteration_times(c, Workload("w", m, 1, algorithm="sync-easgd"), 1)
>>> bool(orig.iteration_s[0] > 3 * sync.iteration_s[0])
True
"""

from __future__ import annotations

import math
from typing import overload

import numpy as np

from dlscale.perfmodel.compute.dispatch import dispatch_s_per_op
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.compute.variability import block_slowest_factor, cluster_noise
from dlscale.perfmodel.machine.hardware import Cluster, NodeSpec
from dlscale.perfmodel.network.collectives import parameter_server_s
from dlscale.perfmodel.network.contention import hockney_params
from dlscale.perfmodel.network.model import path_hockney, time_per_node_count
from dlscale.perfmodel.network.msgfactors import effective_hockney
from dlscale.perfmodel.training.rank_layout import IterationTimes, Layout
from dlscale.perfmodel.training.workload import SGD_FAMILY, Workload

__all__ = ["MASTER_ARRAYS", "NOISE_UNPRICED", "easgd_times", "exchange_s", "host_copy_s",
           "master_link", "master_update_s_per_B", "noise_note", "period", "shared_link_rate"]

#: Arrays of ``W`` bytes the master reads or writes to apply one exchange.
MASTER_ARRAYS = {
    "easgd": 3, "async-easgd": 3, "async-measgd": 3, "hogwild-easgd": 3,
    "async-sgd": 3, "async-msgd": 5, "hogwild-sgd": 3,
}



#: Algorithms whose closed form (:func:`easgd_times`) prices no per-rank compute noise:
#: a locked master served as a deterministic fluid bound, and the original EASGD's
#: rounds. Their queueing under noise is resolved by the simulation only: no citable
#: finite-source queue formula (product form, two-moment, QNA, M/D/1//N) matched the
#: simulation near saturation (stop 41: Summit async-sgd, 2 nodes, lognormal 0.1:
#: simulate +4.66%, those formulas +0.16% to +8.2%). Hogwild's random-phase steady
#: state and Sync EASGD's slowest block do price it.
NOISE_UNPRICED = ("easgd", "async-easgd", "async-measgd", "async-sgd", "async-msgd")


def noise_note(algorithm: str, noise: str) -> str:
    """The line ``predict`` prints where ``algorithm``'s closed form does not price the
    compute noise ``noise`` (its rows are those of no noise), or ``""``.

    Parameters
    ----------
    algorithm : str
        The training algorithm.
    noise : str
        The noise in force (``"none"``, ``"lognormal:SIGMA"``, ``"empirical:FILE"``).

    Returns
    -------
    str
        The note, or ``""`` where the noise is priced or there is none.

    Examples
    --------
    >>> noise_note("hogwild-sgd", "lognormal:0.1"), noise_note("async-sgd", "none")
    ('', '')
    >>> noise_note("async-sgd", "lognormal:0.1").split(":")[0]
    'noise lognormal'
    """
    if algorithm not in NOISE_UNPRICED or noise == "none":
        return ""
    return (f"noise {noise}: not priced by {algorithm}'s closed form (its rows are those "
            f"of --noise none); the queueing it causes at the master is resolved by "
            f"dlscale simulate")


def master_link(cluster: Cluster, algorithm: str, nodes: np.ndarray,
                ranks_per_node: int,
                n_bytes: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha_s, beta_s_per_B)`` of a worker's message to the master, per node count.

    The master sits with rank 0. Across nodes: the path from the last worker to it
    (:func:`dlscale.perfmodel.network.model.path_hockney`: latencies along the path, its slowest link). On
    one node: the node's host link for the original EASGD (the master is a CPU
    process), else the intra-node link. Given the message size ``n_bytes``, across
    nodes the network's per-size factors (:mod:`dlscale.perfmodel.network.msgfactors`) are applied: the
    effective ``(f_lat(n) alpha, beta / f_bw(n))``.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    algorithm : str
        The EASGD-family or asynchronous SGD algorithm.
    nodes : ndarray of int
        Node counts.
    ranks_per_node : int
        Ranks per node.

    Returns
    -------
    alpha_s, beta_s_per_B : ndarray
        One per node count.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> a, b = master_link(get_cluster("cori-knl"), "async-easgd", np.array([1, 64]), 1)
    >>> (1 / b / 1e9).round(2).tolist()       # KNL shared memory; then an Aries local link
    [6.0, 5.25]
    """
    node = cluster.node
    local = node.host_link if (algorithm == "easgd" and node.host_link is not None) \
        else node.intra_link
    alpha, beta = [], []
    for n in np.atleast_1d(nodes).astype(int).tolist():
        if n > 1:
            a, b = path_hockney(cluster, n, ranks_per_node, n * ranks_per_node - 1, 0)
            a, b = effective_hockney(a, b, n_bytes, cluster.network.message_factors)
        else:
            a, b = local.latency_s, 1.0 / local.bandwidth_Bps
        alpha.append(a)
        beta.append(b)
    return np.array(alpha), np.array(beta)


def host_copy_s(node: NodeSpec, n_bytes: float) -> float:
    """Device -> host -> device copy of ``n_bytes`` over the node's host link.

    The original EASGD on GPU workers stages the weights through the CPU, where the
    master lives, every iteration (You et al. SC17, as in the module docstring):
    ``2 (alpha_h + n_bytes / bandwidth_h)``. The
    closed form, the simulator's training network and the SC17 case all call this.

    Parameters
    ----------
    node : NodeSpec
        The node; its ``device.kind`` and ``host_link`` decide.
    n_bytes : float
        Bytes copied each way.

    Returns
    -------
    float
        Seconds; 0.0 for a non-GPU device or a node without a host link.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> round(host_copy_s(get_cluster("k80-8gpu").node, 1e9), 4)  # PCIe 3.0 x16, twice
    0.127
    >>> host_copy_s(get_cluster("cori-knl").node, 1e9)              # a KNL: no copy
    0.0
    """
    if node.device.kind != "gpu" or node.host_link is None:
        return 0.0
    return 2 * node.host_link.transfer_s(n_bytes)


def period(workload: Workload) -> int:
    """Local steps between two exchanges: ``workload.tau``, 1 for :data:`SGD_FAMILY`.

    Parameters
    ----------
    workload : Workload
        Its algorithm and ``tau``.

    Returns
    -------
    int
        The communication period.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_workload
    >>> w = get_workload("googlenet")
    >>> import dataclasses
    >>> [period(dataclasses.replace(w, algorithm=a, tau=8)) for a in ("async-easgd", "async-sgd")]
    [8, 1]
    """
    return 1 if workload.algorithm in SGD_FAMILY else int(workload.tau)


@overload
def exchange_s(alpha_s: float, beta_s_per_B: float, n_bytes: float) -> float: ...


@overload
def exchange_s(alpha_s: np.ndarray, beta_s_per_B: np.ndarray, n_bytes: float) -> np.ndarray: ...


def exchange_s(alpha_s: float | np.ndarray, beta_s_per_B: float | np.ndarray,
               n_bytes: float) -> float | np.ndarray:
    """One worker's exchange with the master: push and pull ``n`` bytes, ``2 (alpha + n beta)``.

    The master's link is held for this long (the asynchronous family's ``link`` term;
    the simulator's workers pay it per exchange and, one after another, to join).

    Parameters
    ----------
    alpha_s, beta_s_per_B : float or ndarray
        The master link's latency (s) and inverse bandwidth (s/B), :func:`master_link`.
    n_bytes : float
        Bytes each way (the weights, ``W``).

    Returns
    -------
    float or ndarray
        Seconds.

    Examples
    --------
    >>> exchange_s(1e-6, 1e-9, 1e6)   # 2 (1 us + 1 ms)
    0.002002
    """
    return 2 * (alpha_s + n_bytes * beta_s_per_B)


def master_update_s_per_B(cluster: Cluster, algorithm: str) -> float:
    """Seconds per byte of ``W`` the master spends applying one exchange: ``k / bandwidth``.

    ``k`` arrays of ``W`` bytes (:data:`MASTER_ARRAYS`) pass through the memory of the
    device the master runs on, at its training-memory bandwidth.

    Parameters
    ----------
    cluster : Cluster
        Its device's ``training_memory_bandwidth_Bps``.
    algorithm : str
        A master-based algorithm (a key of :data:`MASTER_ARRAYS`).

    Returns
    -------
    float
        Seconds per byte.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("cori-knl")
    >>> master_update_s_per_B(c, "async-msgd") * c.node.device.training_memory_bandwidth_Bps
    5.0
    """
    return MASTER_ARRAYS[algorithm] / cluster.node.device.training_memory_bandwidth_Bps


def shared_link_rate(workers: np.ndarray, think_s: np.ndarray,
                     link_s: np.ndarray) -> np.ndarray:
    """Exchanges per second of ``workers`` lock-free workers sharing the master's link
    at random phases: the closed network of a delay station (a worker's ``think_s``
    ``Z``: its local steps and the messages' latencies) and a processor-sharing one
    (the link, ``D = link_s`` of transfer per exchange), the finite-source
    ("machine repairman") queue.

    Such a network has a product-form stationary law whatever the distributions of the
    think and transfer times (BCMP: Baskett, Chandy, Muntz, Palacios, J. ACM 22(2),
    1975): ``j`` workers on the link with probability proportional to
    ``N! / (N - j)! (D / Z)^j``, so ``X = (1 - p_0) / D``; the same as mean value
    analysis (Reiser and Lavenberg, J. ACM 27(2), 1980). One worker gets
    ``1 / (Z + D)``; many, at most ``1 / D``.

    Parameters
    ----------
    workers : ndarray of int
        Workers ``N``, per node count.
    think_s, link_s : ndarray
        ``Z`` and ``D`` per node count (seconds per exchange).

    Returns
    -------
    ndarray
        Exchanges per second of the whole job, per node count.

    Examples
    --------
    >>> shared_link_rate(np.array([1, 2]), np.array([1.0, 1.0]), np.array([1.0, 1.0]))
    array([0.5, 0.8])
    """
    P = np.atleast_1d(np.asarray(workers)).astype(int)
    Z = np.broadcast_to(np.asarray(think_s, dtype=float), P.shape)
    D = np.broadcast_to(np.asarray(link_s, dtype=float), P.shape)
    out = np.zeros(P.shape)
    for i, (n, z, d) in enumerate(zip(P.tolist(), Z.tolist(), D.tolist(), strict=True)):
        # log of N! / (N - j)! (D / Z)^j for j = 0 .. N, summed in log space
        logs = np.concatenate([[0.0], np.cumsum(np.log((n - np.arange(n)) * (d / z)))])
        top = float(logs.max())
        p0 = math.exp(-top) / float(np.exp(logs - top).sum())
        out[i] = (1.0 - p0) / d
    return out


def easgd_times(cluster: Cluster, workload: Workload, lay: Layout) -> IterationTimes:
    """Iteration times of the EASGD family and the asynchronous SGD baselines.

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
    IterationTimes
        Arrays over the node counts (see the module docstring for the model).
    """
    alg = workload.algorithm
    node, dev = cluster.node, cluster.node.device
    lt = layer_times(workload.model, dev, workload.precision, lay.batch_per_rank, lay.share,
                     lay.compute_fraction, dispatch_s_per_op(workload))
    backward = lt.backward_s.sum(axis=-1)
    fb = lt.forward_s.sum(axis=-1) + backward
    if alg in SGD_FAMILY:
        t_step = fb                       # the master applies the update
    else:
        t_step = fb + update_s(workload.model.params, dev,
                               alg == "async-measgd",
                               lay.share)
    W = workload.gradient_bytes
    P = lay.ranks
    par = hockney_params(cluster)
    tau = period(workload)

    if alg == "sync-easgd":
        gamma = par["gamma_s_per_B"] / lay.share
        r = lay.ranks_per_node
        rnd = (time_per_node_count(cluster, "reduce", "binomial", W, lay.nodes, r, gamma)
               + time_per_node_count(cluster, "broadcast", "binomial", W, lay.nodes, r))
        comm = rnd / tau
        # the slowest worker's tau-step block, per step (the simulator's max of the
        # ranks' ready times): its expected mean factor
        slow = np.array([block_slowest_factor(cluster, int(p), tau)
                         for p in np.atleast_1d(P).tolist()])
        if workload.overlap:
            iteration = np.maximum(t_step, comm)
            compute = t_step + 0 * iteration
            # exposed: the wait after the slowest worker's block, as in sync_sgd_times
            # (the faster workers' wait for it is neither compute nor communication)
            exposed = np.maximum(iteration - compute * slow, 0.0)
        else:
            # the round waits for the slowest worker's tau steps
            compute = t_step * slow
            iteration = compute + comm
            exposed = iteration - compute
        return IterationTimes(iteration, compute, comm, exposed,
                              lay.global_batch / iteration, backward_s=backward)

    alpha_m, beta_m = master_link(cluster, alg, lay.nodes, lay.ranks_per_node, W)
    u = master_update_s_per_B(cluster, alg)       # seconds per byte of W applied

    if alg == "easgd":
        rnd = np.asarray(parameter_server_s(W, P, alpha_m, beta_m, u))
        comm = rnd / tau + host_copy_s(node, W)
        iteration = t_step + comm
        return IterationTimes(iteration, t_step + 0 * iteration, comm, comm,
                              lay.global_batch / iteration, backward_s=backward)

    link = exchange_s(alpha_m, beta_m, W)
    upd = W * u
    hogwild = alg.startswith("hogwild")
    # the lock holds the master for the whole exchange; without it the shared link is
    # busy only while the 2 W bytes cross it (concurrent messages' latencies overlap)
    held = 2 * W * beta_m if hogwild else link
    service = np.maximum(held, upd) if hogwild else link + upd
    demand = P / (tau * t_step + link)
    if hogwild and cluster_noise(cluster) != "none":
        # noise drifts the lock-free workers out of their start-up order onto the
        # shared link, which nothing puts back: the random-phase steady state
        demand = shared_link_rate(P, tau * t_step + 2 * alpha_m, held)
    rate = np.minimum(demand, 1.0 / service)       # exchanges per second, whole job
    steps_per_s = rate * tau
    iteration = P / steps_per_s
    # a worker's time away from compute is its exchange, and the wait for the master
    # when the master saturates: both count as communication (exposed <= comm)
    comm = np.maximum(link / tau, iteration - t_step)
    limit = np.where(demand * service > 1.0, np.where(held >= upd, "master-link", "master-update"),
                     "")
    return IterationTimes(iteration, t_step + 0 * iteration, comm, iteration - t_step,
                          steps_per_s * lay.batch_per_rank, limit, backward)
