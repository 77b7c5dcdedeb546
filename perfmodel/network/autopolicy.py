"""The one rule ``collective = "auto"`` follows to pick an allreduce algorithm.

Every caller that resolves ``"auto"`` comes here: the training model
(:func:`dlscale.perfmodel.training.sync.workload_allreduce`, which ``predict`` and the training
simulator use), the analytical network object
(:meth:`dlscale.perfmodel.network.analytical.AnalyticalNetwork.resolve_allreduce`) and, through it, the routed
simulation of a cluster's network
(:meth:`dlscale.simulator.network.SimulatedNetwork.resolve_allreduce`). The rule is
the runtime's (:class:`dlscale.perfmodel.machine.runtime.Runtime`, fields ``selection`` and ``algorithms``):

``selection = "mpich"``
    MPICH's documented size rule (:func:`dlscale.perfmodel.machine.runtime.mpich_short`): recursive doubling
    for short messages, Rabenseifner's reduce-scatter + allgather otherwise.
``selection = "model"``
    The least time, by the caller's own network model, among the algorithms the
    library has (``Runtime.algorithms``), ties to the first listed; as NCCL tunes by
    its cost model and Intel MPI by measurement (see :mod:`.catalog.runtimes`).

Without a runtime (a bare graph with no software stack) every algorithm the closed
forms know is a candidate (:data:`dlscale.perfmodel.network.collectives.AUTO_CANDIDATES`).

Examples
--------
>>> import numpy as np
>>> from dlscale.perfmodel.catalog import get_runtime
>>> times = {"recursive-doubling": np.array([1.0, 9.0]), "rabenseifner": np.array([2.0, 3.0])}
>>> t, names = choose_allreduce(get_runtime("mpi"), np.array([1e3, 1e6]), 64, 4,
...                             times.__getitem__)
>>> names.tolist(), t.tolist()
(['recursive-doubling', 'rabenseifner'], [1.0, 3.0])
>>> t, names = choose_allreduce(get_runtime("nccl"), 1e6, 64, 4,
...                             {"ring": 2.0, "double-binary-tree": 1.5}.__getitem__)
>>> str(names), float(t)
('double-binary-tree', 1.5)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.machine.runtime import Runtime, mpich_short
from dlscale.perfmodel.network.collective_primitives import fastest
from dlscale.perfmodel.network.collectives import AUTO_CANDIDATES
from dlscale.perfmodel.network.registry import offered_by

__all__ = ["auto_candidates", "choose_allreduce"]


def auto_candidates(runtime: Runtime | None, *, whole_nodes: bool = True) -> tuple[str, ...]:
    """The algorithms ``"auto"`` may pick under ``runtime``.

    ``whole_nodes=False`` (ranks that are not whole nodes placed block-wise) drops
    ``hierarchical``, which needs them.

    Parameters
    ----------
    runtime : Runtime or None
        The software stack (None: every algorithm the closed forms know).
    whole_nodes : bool
        Whether the ranks are whole nodes placed block-wise.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_runtime
    >>> auto_candidates(get_runtime("mpi"))
    ('recursive-doubling', 'rabenseifner')
    >>> "hierarchical" in auto_candidates(None, whole_nodes=False)
    False
    """
    if runtime is None:
        names: tuple[str, ...] = AUTO_CANDIDATES
    elif runtime.selection == "mpich":
        names = offered_by("mpich")
    else:
        names = tuple(runtime.algorithms)
    if not whole_nodes:
        names = tuple(a for a in names if a != "hierarchical")
    return names


def choose_allreduce(runtime: Runtime | None, n_bytes: ArrayLike, ranks: ArrayLike,
                     bytes_per_element: float,
                     time_of: Callable[[str], ArrayLike], *,
                     whole_nodes: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Seconds and name of the allreduce ``"auto"`` runs, element-wise.

    Parameters
    ----------
    runtime : Runtime or None
        The software stack whose rule applies (None: least time of every algorithm).
    n_bytes : array_like
        Message sizes, broadcast against ``ranks``.
    ranks : array_like
        Ranks taking part.
    bytes_per_element : float
        Bytes of one reduced element (MPICH's rule counts elements).
    time_of : callable
        ``time_of(algorithm)`` -> seconds of that algorithm, broadcast against the sizes;
        called once per candidate.
    whole_nodes : bool
        Whether the ranks are whole nodes placed block-wise (``hierarchical`` needs it).

    Returns
    -------
    time_s : ndarray
        Seconds of the chosen algorithm.
    algorithm : ndarray of str
        The chosen algorithm.
    """
    if runtime is not None and runtime.selection == "mpich":
        t_rd = np.asarray(time_of("recursive-doubling"), dtype=float)
        t_rab = np.asarray(time_of("rabenseifner"), dtype=float)
        shape = np.broadcast_shapes(np.shape(n_bytes), np.shape(ranks), t_rd.shape, t_rab.shape)
        short = np.broadcast_to(mpich_short(np.asarray(n_bytes, dtype=float),
                                            np.asarray(ranks), bytes_per_element,
                                            runtime.short_msg_bytes), shape)
        return (np.broadcast_to(np.where(short, t_rd, t_rab), shape),
                np.where(short, "recursive-doubling", "rabenseifner"))
    times = {a: time_of(a) for a in auto_candidates(runtime, whole_nodes=whole_nodes)}
    best, names = fastest(times)
    return np.asarray(best, dtype=float), np.asarray(names)
