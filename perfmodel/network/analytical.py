"""The interface between collectives/training and the network, and its analytical side.

The training layer sees the network only through :class:`NetworkModel` (three calls,
in the spirit of ASTRA-sim's network API). Two implementations answer it:
:class:`AnalyticalNetwork` here (closed forms of :mod:`dlscale.perfmodel.network.collectives`
on a :class:`~dlscale.perfmodel.machine.hardware.Cluster`) and
:class:`dlscale.simulator.network.SimulatedNetwork` (routed message schedules on a
topology graph with link contention).

Ranks are numbered ``0..P-1`` and placed block-wise, ``devices_per_node`` consecutive
ranks per node. ``ranks`` arguments are a count (the first ranks) or a sequence of
rank ids.

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
...     NetworkSpec, NodeSpec)
>>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
>>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 1e-6))
>>> c = Cluster("t", node, NetworkSpec("net", Crossbar(8), Link("l", 1e9, 1e-6)))
>>> net = AnalyticalNetwork(c)
>>> isinstance(net, NetworkModel)
True
>>> round(net.allreduce_s(4e6, 4, "ring"), 9)  # 6 alpha + 2 (3/4) n / B
0.006006
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.autopolicy import choose_allreduce
from dlscale.perfmodel.network.model import collective_time_s, path_hockney
from dlscale.perfmodel.network.msgfactors import message_time_s
from dlscale.perfmodel.network.registry import ALLREDUCE_CHOICES, OPERATIONS, algorithms

__all__ = ["COLLECTIVE_ALGORITHMS", "AnalyticalNetwork", "NetworkModel", "check_ranks"]

#: Collective -> algorithms both implementations understand (first is the default).
COLLECTIVE_ALGORITHMS: dict[str, tuple[str, ...]] = {
    op: ALLREDUCE_CHOICES if op == "allreduce" else algorithms(op) for op in OPERATIONS}


def check_ranks(ranks: int | Sequence[int], max_ranks: int) -> int | tuple[int, ...]:
    """The ``ranks`` argument of a :class:`NetworkModel` method, checked.

    Both network models (this module's and the simulator's) check their ranks here.

    Parameters
    ----------
    ranks : int or sequence of int
        A rank count (ranks ``0..ranks-1``) or distinct rank ids.
    max_ranks : int
        Ranks the machine holds.

    Returns
    -------
    int or tuple of int
        The count, or the rank ids as a tuple.

    Raises
    ------
    ConfigError
        A count outside ``1..max_ranks``; no ids, an id outside ``0..max_ranks-1``,
        or an id given twice.

    Examples
    --------
    >>> check_ranks(4, 16), check_ranks([3, 0], 16)
    (4, (3, 0))
    >>> check_ranks([1, 1], 16)
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: ranks: rank ids must be distinct, got [1, 1]
    """
    if isinstance(ranks, (int, np.integer)):
        count = int(ranks)
        if isinstance(ranks, bool) or not 1 <= count <= max_ranks:
            raise ConfigError(f"ranks: must be in 1..{max_ranks}, got {ranks!r}")
        return count
    ids = tuple(int(r) for r in ranks)
    if not ids or min(ids) < 0 or max(ids) >= max_ranks:
        raise ConfigError(f"ranks: rank ids must be in 0..{max_ranks - 1}, got {list(ids)}")
    if len(set(ids)) != len(ids):
        raise ConfigError(f"ranks: rank ids must be distinct, got {list(ids)}")
    return ids


@runtime_checkable
class NetworkModel(Protocol):
    """What the layers above ask the network: the extension point for a network model.

    Two implementations ship: :class:`AnalyticalNetwork` (closed forms over the
    topology's levels) and :class:`dlscale.simulator.network.SimulatedNetwork`
    (routed, with link contention). Any object with these four members plugs into
    ``iteration_times(..., network=)`` and ``simulate(..., network=)``;
    ``isinstance(obj, NetworkModel)`` checks that they are there. All times in
    seconds; ``ranks`` is a rank count (ranks ``0..ranks-1``) or a sequence of
    distinct rank ids (:func:`check_ranks` checks both).
    """

    @property
    def max_ranks(self) -> int:
        """Ranks (endpoints) the network holds; rank ids run ``0..max_ranks-1``."""
        ...

    def allreduce_s(self, n_bytes: float, ranks: int | Sequence[int],
                    algorithm: str = "ring") -> float:
        """Allreduce of an ``n_bytes`` vector held by every rank, by ``algorithm``
        (one of ``COLLECTIVE_ALGORITHMS["allreduce"]``)."""
        ...

    def collective_s(self, collective: str, n_bytes: float, ranks: int | Sequence[int],
                     algorithm: str | None = None) -> float:
        """Any collective of :data:`COLLECTIVE_ALGORITHMS` (``algorithm=None``: its
        default, the first listed); ``n_bytes`` is the vector each rank holds (the
        gathered result for ``allgather``)."""
        ...

    def transfer_s(self, src_rank: int, dst_rank: int, n_bytes: float) -> float:
        """One point-to-point message on an otherwise idle network (0 for ``src == dst``)."""
        ...


class AnalyticalNetwork:
    """Collective times of the analytical network model (:mod:`dlscale.perfmodel.network.model`) on a cluster.

    Every collective is its algorithm's schedule of steps, each costed from the loads
    its flows put on every level of the cluster's topology (ranks placed block-wise,
    ``devices_per_node`` per node): the same model ``predict`` uses, and the one the
    routed simulation (:class:`dlscale.simulator.network.SimulatedNetwork`) is held to.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    gamma_s_per_B : float
        Reduction cost per byte reduced.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.
    bytes_per_element : float
        Bytes of one reduced element, for a runtime whose ``"auto"`` rule counts
        elements (MPICH's); 4, ``MPI_FLOAT``, by default.
    """

    def __init__(self, cluster: Cluster, gamma_s_per_B: float = 0.0,
                 inter_algorithm: str = "ring", bytes_per_element: float = 4.0) -> None:
        if not gamma_s_per_B >= 0:
            raise ConfigError(f"gamma_s_per_B: must be >= 0, got {gamma_s_per_B!r}")
        if not bytes_per_element > 0:
            raise ConfigError(f"bytes_per_element: must be > 0, got {bytes_per_element!r}")
        self.bytes_per_element = float(bytes_per_element)
        self.cluster = cluster
        self.gamma_s_per_B = float(gamma_s_per_B)
        self.inter_algorithm = inter_algorithm
        self.ranks_per_node = cluster.node.devices_per_node

    @property
    def max_ranks(self) -> int:
        """Ranks the whole cluster holds."""
        return self.cluster.max_nodes * self.ranks_per_node

    def _count(self, ranks: int | Sequence[int]) -> int | tuple[int, ...]:
        """A rank count, or the rank ids (checked) of ``ranks``."""
        return check_ranks(ranks, self.max_ranks)

    def _time(self, collective: str, algorithm: str, n_bytes: float,
              p: int | tuple[int, ...], gamma: float) -> float:
        r = self.ranks_per_node
        last = p - 1 if isinstance(p, int) else max(p)
        return float(collective_time_s(self.cluster, collective, algorithm, float(n_bytes),
                                       last // r + 1, r, gamma, self.inter_algorithm, ranks=p))

    def collective_s(self, collective: str, n_bytes: float, ranks: int | Sequence[int],
                     algorithm: str | None = None) -> float:
        """Time of a collective (see :data:`COLLECTIVE_ALGORITHMS`).

        Examples
        --------
        >>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
        ...     NetworkSpec, NodeSpec)
        >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
        >>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 0.0))
        >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(8), Link("l", 1e9, 0.0),
        ...                                    hop_latency_s=0.0))
        >>> AnalyticalNetwork(c).collective_s("allgather", 4e6, 4)
        0.003
        """
        if collective not in COLLECTIVE_ALGORITHMS:
            raise unknown_name("collective", collective, COLLECTIVE_ALGORITHMS)
        algs = COLLECTIVE_ALGORITHMS[collective]
        algorithm = algs[0] if algorithm is None else algorithm
        if algorithm not in algs:
            raise unknown_name(f"{collective} algorithm", algorithm, algs)
        if not n_bytes >= 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        p = self._count(ranks)
        if collective == "allreduce" and algorithm == "auto":
            return self._best(n_bytes, p)[0]
        return self._time(collective, algorithm, n_bytes, p, self.gamma_s_per_B)

    def _best(self, n_bytes: float, p: int | tuple[int, ...]) -> tuple[float, str]:
        """Seconds and name of what ``"auto"`` runs: the cluster's runtime's rule
        (:func:`dlscale.perfmodel.network.autopolicy.choose_allreduce`, the one every caller follows)."""
        count = p if isinstance(p, int) else len(p)
        whole = isinstance(p, int) and p % self.ranks_per_node == 0

        def time_of(name: str) -> float:
            return self._time("allreduce", name, n_bytes, p, self.gamma_s_per_B)

        t, chosen = choose_allreduce(self.cluster.runtime, float(n_bytes), count,
                                     self.bytes_per_element, time_of, whole_nodes=whole)
        return float(t), str(chosen)

    def resolve_allreduce(self, n_bytes: float, ranks: int | Sequence[int]) -> str:
        """The algorithm ``"auto"`` runs: the cluster's runtime's rule
        (:mod:`dlscale.perfmodel.network.autopolicy`; MPICH's size thresholds, or the least time by this model
        among the library's algorithms).

        Examples
        --------
        >>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
        ...     NetworkSpec, NodeSpec)
        >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
        >>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 1e-6))
        >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(64), Link("l", 1e9, 1e-6)))
        >>> net = AnalyticalNetwork(c)
        >>> net.resolve_allreduce(8, 64), net.resolve_allreduce(1e9, 64)
        ('recursive-doubling', 'rabenseifner')
        """
        if n_bytes < 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        return self._best(n_bytes, self._count(ranks))[1]

    def allreduce_s(self, n_bytes: float, ranks: int | Sequence[int],
                    algorithm: str = "ring") -> float:
        """Allreduce time (``"auto"``: the fastest algorithm, see
        :meth:`resolve_allreduce`)."""
        return self.collective_s("allreduce", n_bytes, ranks, algorithm)

    def transfer_s(self, src_rank: int, dst_rank: int, n_bytes: float) -> float:
        """Time of one message on an idle network (0 to oneself): the path's latency
        plus the bytes over its slowest link (:func:`dlscale.perfmodel.network.model.path_hockney`).

        Examples
        --------
        >>> from dlscale.perfmodel.machine.hardware import (Cluster, Crossbar, Device, Link,
        ...     NetworkSpec, NodeSpec)
        >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
        >>> node = NodeSpec("n", dev, 2, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 1e-6))
        >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(8), Link("l", 1e9, 1e-6)))
        >>> AnalyticalNetwork(c).transfer_s(0, 2, 1e9)  # NIC 1 us + shared memory 0.5 us
        1.0000015
        """
        if n_bytes < 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        check_ranks(sorted({src_rank, dst_rank}), self.max_ranks)
        if src_rank == dst_rank:
            return 0.0
        r = self.ranks_per_node
        nodes = max(src_rank, dst_rank) // r + 1
        a, b = path_hockney(self.cluster, nodes, r, src_rank, dst_rank)
        return float(message_time_s(a, b, float(n_bytes), self.cluster.network.message_factors))
