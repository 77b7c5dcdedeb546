"""Time per iteration of distributed training, vectorized over node counts.

:func:`iteration_times` dispatches on ``workload.algorithm`` to the synchronous
data-parallel SGD model (:mod:`.sync`) or to the EASGD / asynchronous
family (:mod:`.easgd`). Both take a :class:`~.rank_layout.Layout` (how ranks, devices
and batches follow from the node counts, :mod:`.rank_layout`) and return
:class:`~.rank_layout.IterationTimes`, arrays over the node counts.

Scaling efficiency (weak and strong alike) is ``samples_per_s(N) / (N
samples_per_s(1))``: the throughput of ``N`` nodes against ``N`` times one node's.
In strong scaling the global batch is fixed, so this is the speed-up over one node
divided by ``N``.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import (
...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
>>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
>>> node = NodeSpec("n", gpu, 4, Link("nvlink", 50e9, 2e-6), Link("ib", 10e9, 1e-6))
>>> c = Cluster("toy", node, NetworkSpec("x", Crossbar(64), Link("ib", 10e9, 1e-6)))
>>> fc = Layer("fc", "fc", 10**6, 7e9, 1000)
>>> w = Workload("w", Model("m", (fc,), (1000,), "none", 1), 10)
>>> t = iteration_times(c, w, [1, 2, 8])
>>> bool(np.all(t.iteration_s >= t.compute_s))
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.rank_layout import IterationTimes, Layout, layout
from dlscale.perfmodel.training.workload import Workload

if TYPE_CHECKING:
    from dlscale.perfmodel.network.analytical import NetworkModel

__all__ = ["efficiency", "iteration_times", "layout_times"]


def iteration_times(cluster: Cluster, workload: Workload, nodes: ArrayLike, *,
                    network: NetworkModel | None = None) -> IterationTimes:
    """Per-iteration times of ``workload`` on ``cluster`` for each node count.

    ``nodes`` is an int or a 1-D array; the result holds arrays of the same length.
    ``network`` (a :class:`~dlscale.perfmodel.network.analytical.NetworkModel`): synchronous SGD
    asks it for its bucket and bit-vector allreduces (see
    :func:`~dlscale.perfmodel.training.sync.sync_sgd_times`); the EASGD family does
    not take one (:class:`ConfigError`). Inter-node links are charged as the
    cluster's runtime's transport delivers them (:func:`dlscale.perfmodel.machine.runtime.with_transport`).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how (its ``algorithm`` picks the model).
    nodes : int or array_like of int
        Node counts.
    network : NetworkModel, optional
        Who answers the collectives of synchronous SGD (default: the analytical
        network model of :mod:`dlscale.perfmodel.network.model` on ``cluster``).

    Returns
    -------
    IterationTimes
        Arrays over the node counts: iteration, compute, communication and exposed
        communication seconds, and samples per second.

    Raises
    ------
    ConfigError
        A bad node count, or ``network`` with an algorithm other than sync-sgd.
    """
    _check_network(workload, network)
    return layout_times(cluster, workload, layout(_transport(cluster), workload, nodes),
                        network=network)


def _transport(cluster: Cluster) -> Cluster:
    """:func:`dlscale.perfmodel.machine.runtime.with_transport` (imported when first needed)."""
    from dlscale.perfmodel.machine.runtime import with_transport

    return with_transport(cluster)


def _check_network(workload: Workload, network: NetworkModel | None) -> None:
    if workload.algorithm != "sync-sgd" and network is not None:
        raise ConfigError(f"network: only sync-sgd takes a network model, got algorithm "
                          f"{workload.algorithm!r}")


def layout_times(cluster: Cluster, workload: Workload, lay: Layout, *,
                 network: NetworkModel | None = None) -> IterationTimes:
    """:func:`iteration_times` of a layout already computed
    (:func:`~dlscale.perfmodel.training.rank_layout.layout`): the caller that needs the
    layout as well computes it once and hands it on.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained and how.
    lay : Layout
        Its layout at the node counts asked for.
    network : NetworkModel, optional
        As in :func:`iteration_times`.

    Returns
    -------
    IterationTimes
        Arrays over the node counts of ``lay``.
    """
    from dlscale.perfmodel.training.easgd import easgd_times
    from dlscale.perfmodel.training.outside import with_loader
    from dlscale.perfmodel.training.sync import sync_sgd_times

    cluster = _transport(cluster)
    _check_network(workload, network)
    if cluster.runtime.parameter_server:
        from dlscale.perfmodel.training.ps import ps_sync_times

        if network is not None:
            raise ConfigError(f"network: runtime {cluster.runtime.name!r} prices its pushes "
                              "and pulls on each node's links itself; a network model "
                              "answers allreduces (use an allreduce runtime)")
        times = ps_sync_times(cluster, workload, lay)
    elif workload.algorithm == "sync-sgd":
        times = sync_sgd_times(cluster, workload, lay, network=network)
    else:
        times = easgd_times(cluster, workload, lay)
    # no node's step is shorter than its input pipeline (dlscale.perfmodel.training.outside)
    return with_loader(cluster, workload, lay.global_batch / lay.nodes, times)


def efficiency(samples_per_s: ArrayLike, nodes: ArrayLike, one_node_samples_per_s: float
               ) -> np.ndarray:
    """Scaling efficiency ``samples_per_s / (nodes x one_node_samples_per_s)``.

    Parameters
    ----------
    samples_per_s : array_like
        Throughput at each node count.
    nodes : array_like
        The node counts.
    one_node_samples_per_s : float
        Throughput of one node.

    Returns
    -------
    ndarray
        Efficiency per node count (1.0 is linear scaling).

    Examples
    --------
    >>> efficiency([100.0, 180.0], [1, 2], 100.0).tolist()
    [1.0, 0.9]
    """
    return np.asarray(samples_per_s, dtype=float) / (
        np.asarray(nodes, dtype=float) * one_node_samples_per_s)
