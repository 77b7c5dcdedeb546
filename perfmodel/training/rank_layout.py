"""How ranks, devices and batches follow from the node counts, and the times per iteration.

Ranks: ``ranks_per_node = workload.ranks_per_node or devices_per_node``; each rank
owns ``share = devices_per_node / ranks_per_node`` devices (a fraction when several
CPU ranks split a socket) and processes ``batch_per_device x share`` samples per
iteration in weak scaling, ``global_batch / ranks`` in strong scaling.

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
>>> lay = layout(c, w, [1, 2, 8])
>>> lay.ranks.tolist(), lay.devices.tolist(), lay.batch_per_rank.tolist()
([4.0, 8.0, 32.0], [4.0, 8.0, 32.0], [10.0, 10.0, 10.0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import check_analytical_curve, check_analytical_ranks
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload

__all__ = ["IterationTimes", "Layout", "check_nodes", "layout"]


@dataclass(frozen=True)
class Layout:
    """How ranks, devices and samples follow from node counts (arrays of shape ``(N,)``).

    Attributes
    ----------
    nodes, ranks, devices : ndarray
        Node, rank and device counts.
    ranks_per_node : int
    share : float
        Devices per rank.
    batch_per_rank : ndarray
        Samples per rank per iteration.
    global_batch : ndarray
        Samples per iteration over all ranks.
    compute_fraction : float
        Share of the rank's cores that computes, the rest running the software stack's
        communication threads (:meth:`dlscale.perfmodel.machine.runtime.Runtime.compute_fraction`).
    """

    nodes: np.ndarray
    ranks: np.ndarray
    devices: np.ndarray
    ranks_per_node: int
    share: float
    batch_per_rank: np.ndarray
    global_batch: np.ndarray
    compute_fraction: float = 1.0

    def take(self, idx: np.ndarray) -> Layout:
        """The layout of the node counts at positions ``idx`` (the same values).

        Parameters
        ----------
        idx : ndarray of int
            Positions in this layout's node counts.
        """
        return Layout(self.nodes[idx], self.ranks[idx], self.devices[idx], self.ranks_per_node,
                      self.share, self.batch_per_rank[idx], self.global_batch[idx],
                      self.compute_fraction)


@dataclass(frozen=True)
class IterationTimes:
    """Per-iteration times, arrays over node counts.

    Attributes
    ----------
    iteration_s : ndarray
        Wall time of one iteration (one optimizer step of every rank; for the
        asynchronous algorithms, the mean time between two steps of one worker).
    compute_s : ndarray
        Forward + backward + weight update of one rank.
    comm_s : ndarray
        Communication time per iteration (all messages, hidden or not; for tau > 1,
        the exchange amortized over tau steps).
    exposed_comm_s : ndarray
        Part of ``iteration_s`` not covered by compute (communication, negotiation
        and waiting left after the backward pass or the local steps).
    samples_per_s : ndarray
        Training throughput of the whole job.
    limit : ndarray of str or None
        Where the model itself names what bounds the throughput (``"master-link"``,
        ``"master-update"`` for a saturated parameter server, ``"input-pipeline"``
        where the loader is slower than the step; ``""`` where it does not); None when
        it never does.
    backward_s : ndarray or None
        The backward pass of one rank (summed over its layers, without noise), from the
        same layer times the model used; None where a model does not give it.
    """

    iteration_s: np.ndarray
    compute_s: np.ndarray
    comm_s: np.ndarray
    exposed_comm_s: np.ndarray
    samples_per_s: np.ndarray
    limit: np.ndarray | None = None
    backward_s: np.ndarray | None = None

    def take(self, idx: np.ndarray) -> IterationTimes:
        """The times of the node counts at positions ``idx`` (the same values).

        Parameters
        ----------
        idx : ndarray of int
            Positions in these times' node counts.
        """
        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[idx]
        return IterationTimes(self.iteration_s[idx], self.compute_s[idx], self.comm_s[idx],
                              self.exposed_comm_s[idx], self.samples_per_s[idx],
                              pick(self.limit), pick(self.backward_s))


def check_nodes(cluster: Cluster, nodes: ArrayLike) -> np.ndarray:
    """Node counts as a 1-D int array, or :class:`ConfigError` naming the bad value.

    Parameters
    ----------
    cluster : Cluster
        The machine; its ``max_nodes`` bounds the counts.
    nodes : int or array_like of int
        Node counts.

    Returns
    -------
    ndarray of int64
        The counts, 1-D.

    Raises
    ------
    ConfigError
        A count that is not an integer in ``1..cluster.max_nodes``.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.hardware import (
    ...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
    >>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
    >>> node = NodeSpec("n", gpu, 4, Link("nvlink", 50e9, 2e-6), Link("ib", 10e9, 1e-6))
    >>> c = Cluster("toy", node, NetworkSpec("x", Crossbar(64), Link("ib", 10e9, 1e-6)))
    >>> check_nodes(c, [1, 65])
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: nodes: 65 is more than cluster 'toy' holds (crossbar of 64 nodes)
    """
    arr = np.atleast_1d(np.asarray(nodes))
    if arr.ndim != 1 or arr.size == 0:
        raise ConfigError(f"nodes: must be an integer or a non-empty 1-D array, got {nodes!r}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" or np.any(~np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ConfigError(f"nodes: must be integers, got {nodes!r}")
    bad = arr < 1
    if np.any(bad):
        raise ConfigError(
            f"nodes: must be >= 1 (cluster {cluster.name!r} holds 1..{cluster.max_nodes}), "
            f"got {int(arr[bad][0])}"
        )
    over = arr > cluster.max_nodes
    if np.any(over):
        cluster.check_nodes(int(arr[over][0]))  # raises, with the cluster's message
    return arr.astype(np.int64)


def layout(cluster: Cluster, workload: Workload, nodes: ArrayLike) -> Layout:
    """Ranks, devices and per-rank batch for each node count (see module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        Batch per device, ranks per node, weak or strong scaling.
    nodes : int or array_like of int
        Node counts.

    Returns
    -------
    Layout
        Arrays over the node counts: ranks, ranks per node, devices per rank
        (``share``), batch per rank and global batch.

    Raises
    ------
    ConfigError
        A bad node count, or a strong-scaling global batch smaller than the ranks.
    """
    n = check_nodes(cluster, nodes).astype(float)
    dpn = cluster.node.devices_per_node
    rpn = workload.ranks_per_node or dpn
    share = dpn / rpn
    top = int(np.max(n))
    check_analytical_ranks(top * rpn, nodes=top)
    check_analytical_curve(int(np.size(n)))
    ranks = n * rpn
    if workload.scaling == "strong":
        if np.any(ranks > workload.global_batch):
            worst = int(np.max(n))
            raise ConfigError(
                f"global_batch: {workload.global_batch} samples cannot be split over "
                f"{worst * rpn} ranks ({worst} nodes x {rpn}); strong scaling needs "
                f"global_batch >= ranks, here at most {workload.global_batch // rpn} nodes")
        batch = workload.global_batch / ranks
        global_batch = np.full(n.shape, float(workload.global_batch))
    else:
        batch = np.full(n.shape, workload.batch_per_device * share)
        global_batch = batch * ranks
    dev = cluster.node.device
    fraction = cluster.runtime.compute_fraction(dev.kind, share * dev.cores)
    return Layout(n, ranks, n * dpn, rpn, share, batch, global_batch, fraction)
