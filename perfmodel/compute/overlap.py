"""Compute slowed while communication runs beside it, on the overlapped part only.

While a gradient bucket's collective runs during the backward pass, the collective's
kernels hold SMs (NCCL runs one block per channel; a GEMM sized for every SM then
needs a second wave) and share memory bandwidth with the compute, so the compute in
that window runs slower. :attr:`.runtime.Runtime.overlap_slowdown` gives the fraction
``s`` per device kind, with its cited central value and range
(:mod:`.catalog.runtimes`).

The charge, one function for both fidelities (:func:`overlap_stretch`): from the
backward pass as scheduled without the slowdown, ``O`` is the time the backward pass
runs while a collective is in flight (the union of the buckets' intervals, each
bucket starting when it is ready, plus the runtime's cycle wait, and after the
previous one); that compute takes ``(1 + s)`` as long, so the backward pass
lengthens by ``s O``, spread over it in proportion (every ready time scales by
``1 + s O / backward``). A backward pass with no collective beside it (one rank, or
``overlap=False``) is not slowed.

Examples
--------
>>> import numpy as np
>>> # two buckets ready at 0.5 and 1.0 s of a 1 s backward pass, 0.2 s each
>>> k = overlap_stretch(np.array([[0.5], [1.0]]), np.array([[0.2], [0.2]]), 0.0,
...                     np.array([1.0]), 0.5)
>>> k.tolist()   # 0.2 s overlapped (the second runs after the pass): 1 + 0.5 x 0.2
[1.1]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from dlscale.perfmodel.machine.hardware import Cluster
    from dlscale.perfmodel.training.workload import Workload

__all__ = ["compute_slowdown", "overlap_stretch"]


def compute_slowdown(cluster: Cluster, workload: Workload) -> float:
    """``s`` for :func:`overlap_stretch`: the runtime's slowdown of compute beside
    communication on the cluster's device kind, or 0 where the workload's compute was
    measured beside communication (a multi-rank trace already holds it).

    Parameters
    ----------
    cluster : Cluster
        The machine (its runtime and device kind).
    workload : Workload
        The job (its model's measured compute, if any).

    Returns
    -------
    float
        The fraction by which overlapped compute lengthens.

    Examples
    --------
    >>> import dataclasses
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> from dlscale.perfmodel.compute.measured import MeasuredCompute
    >>> c, w = get_cluster("summit"), get_workload("resnet50")
    >>> compute_slowdown(c, w) > 0
    True
    >>> m = MeasuredCompute(batch=32, forward_s=0.03, backward_s=0.06, beside_communication=True)
    >>> compute_slowdown(c, dataclasses.replace(w, model=dataclasses.replace(w.model, measured=m)))
    0.0
    """
    measured = workload.model.measured
    if measured is not None and measured.beside_communication:
        return 0.0
    return cluster.runtime.slowdown(cluster.node.device.kind)


def overlap_stretch(ready: np.ndarray, dur: np.ndarray, wait: float | np.ndarray,
                    backward: np.ndarray, slowdown: float) -> np.ndarray:
    """Factor by which the backward pass (and every ready time in it) lengthens.

    Parameters
    ----------
    ready : ndarray, shape (B, N)
        Each bucket's ready time from the start of the backward pass, per node count.
    dur : ndarray, shape (B, N)
        Each bucket's coordination + collective (0 where it does not run).
    wait : float or ndarray
        The runtime's cycle wait before a bucket starts.
    backward : ndarray, shape (N,)
        The backward pass.
    slowdown : float
        ``s``: compute beside communication takes ``1 + s`` as long.

    Returns
    -------
    ndarray, shape (N,)
        ``1 + s O / backward`` (1 where nothing overlaps).
    """
    ready = np.atleast_2d(np.asarray(ready, dtype=float))
    dur = np.broadcast_to(np.asarray(dur, dtype=float), ready.shape)
    bwd = np.broadcast_to(np.asarray(backward, dtype=float), ready.shape[1:])
    if slowdown == 0 or ready.shape[0] == 0:
        return np.ones(bwd.shape)
    run = np.cumsum(dur, axis=0)
    # the chain start_b = max(ready_b + wait, end_{b-1}), unrolled as in sync_sgd_times
    end = run + np.maximum.accumulate(ready + wait - (run - dur), axis=0)
    start = end - dur
    overlapped = np.clip(np.minimum(end, bwd) - start, 0.0, None).sum(axis=0)
    safe = np.where(bwd > 0, bwd, 1.0)
    out: np.ndarray = np.where(bwd > 0, 1.0 + slowdown * np.minimum(overlapped, bwd) / safe,
                               1.0)
    return out
