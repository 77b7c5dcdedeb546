"""The interface between collectives/training and the network, and its analytical side.

The training layer sees the network only through :class:`NetworkModel` (three calls,
in the spirit of ASTRA-sim's network API). Two implementations answer it:
:class:`AnalyticalNetwork` here (closed forms of :mod:`dlscale.perfmodel.collectives`
on a :class:`~dlscale.perfmodel.hardware.Cluster`) and
:class:`dlscale.simulator.network.SimulatedNetwork` (routed message schedules on a
topology graph with link contention).

Ranks are numbered ``0..P-1`` and placed block-wise, ``devices_per_node`` consecutive
ranks per node. ``ranks`` arguments are a count (the first ranks) or a sequence of
rank ids.

Examples
--------
>>> from dlscale.perfmodel.hardware import (Cluster, Crossbar, Device, Link,
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

from . import collectives as cf
from .errors import ConfigError, unknown_name
from .hardware import Cluster

__all__ = ["COLLECTIVE_ALGORITHMS", "AnalyticalNetwork", "NetworkModel"]

#: Collective -> algorithms both implementations understand (first is the default).
COLLECTIVE_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "recursive-doubling", "rabenseifner", "binomial-tree",
                  "double-binary-tree", "hierarchical", "auto"),
    "reduce-scatter": ("ring",),
    "allgather": ("ring",),
    "broadcast": ("binomial",),
    "reduce": ("binomial",),
    "parameter-server": ("push-pull", "concurrent"),
}


@runtime_checkable
class NetworkModel(Protocol):
    """What the layers above ask the network. All times in seconds.

    ``ranks`` is a rank count (ranks ``0..ranks-1``) or a sequence of rank ids.
    """

    def allreduce_s(self, n_bytes: float, ranks: int | Sequence[int],
                    algorithm: str = "ring") -> float:
        """Allreduce of an ``n_bytes`` vector held by every rank."""
        ...

    def collective_s(self, collective: str, n_bytes: float, ranks: int | Sequence[int],
                     algorithm: str | None = None) -> float:
        """Any collective of :data:`COLLECTIVE_ALGORITHMS` (``None``: its default)."""
        ...

    def transfer_s(self, src_rank: int, dst_rank: int, n_bytes: float) -> float:
        """One point-to-point message on an otherwise idle network."""
        ...


class AnalyticalNetwork:
    """Closed-form collective times on a cluster (Hockney parameters from its links).

    Inside one node: ``alpha = intra_link.latency_s``, ``beta = 1/intra_link.bandwidth``;
    across nodes: the NIC's injection bandwidth and the path latency of
    :func:`dlscale.perfmodel.contention.hockney_params` (the NIC's latency, plus the
    intra-node link's where a node has more than one device: the rank sits behind
    it), which is the latency :func:`dlscale.simulator.topology_cluster.cluster_graph`
    routes. Contention is not modelled (block placement, one flow per NIC
    direction for ring algorithms).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    gamma_s_per_B : float
        Reduction cost per byte reduced.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.
    """

    def __init__(self, cluster: Cluster, gamma_s_per_B: float = 0.0,
                 inter_algorithm: str = "ring") -> None:
        if not gamma_s_per_B >= 0:
            raise ConfigError(f"gamma_s_per_B: must be >= 0, got {gamma_s_per_B!r}")
        self.cluster = cluster
        self.gamma_s_per_B = float(gamma_s_per_B)
        self.inter_algorithm = inter_algorithm
        self.ranks_per_node = cluster.node.devices_per_node

    @property
    def max_ranks(self) -> int:
        """Ranks the whole cluster holds."""
        return self.cluster.max_nodes * self.ranks_per_node

    def _ids(self, ranks: int | Sequence[int]) -> list[int]:
        if isinstance(ranks, int) and not isinstance(ranks, bool):
            if not 1 <= ranks <= self.max_ranks:
                raise ConfigError(f"ranks: must be in 1..{self.max_ranks}, got {ranks}")
            return list(range(ranks))
        ids = [int(r) for r in ranks]  # type: ignore[union-attr]
        if not ids or min(ids) < 0 or max(ids) >= self.max_ranks or len(set(ids)) != len(ids):
            raise ConfigError(f"ranks: need distinct rank ids in 0..{self.max_ranks - 1}")
        return ids

    def _inter_alpha_s(self) -> float:
        node = self.cluster.node
        return node.nic.latency_s + (node.intra_link.latency_s if self.ranks_per_node > 1 else 0.0)

    def _params(self, ids: list[int]) -> tuple[float, float, int]:
        nodes = len({r // self.ranks_per_node for r in ids})
        node = self.cluster.node
        if nodes == 1:
            return node.intra_link.latency_s, 1.0 / node.intra_link.bandwidth_Bps, 1
        return self._inter_alpha_s(), 1.0 / node.nic.bandwidth_Bps, nodes

    def collective_s(self, collective: str, n_bytes: float, ranks: int | Sequence[int],
                     algorithm: str | None = None) -> float:
        """Closed-form time of a collective (see :data:`COLLECTIVE_ALGORITHMS`).

        Examples
        --------
        >>> from dlscale.perfmodel.hardware import (Cluster, Crossbar, Device, Link,
        ...     NetworkSpec, NodeSpec)
        >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
        >>> node = NodeSpec("n", dev, 1, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 0.0))
        >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(8), Link("l", 1e9, 0.0)))
        >>> AnalyticalNetwork(c).collective_s("allgather", 4e6, 4)
        0.003
        """
        if collective not in COLLECTIVE_ALGORITHMS:
            raise unknown_name("collective", collective, COLLECTIVE_ALGORITHMS)
        algs = COLLECTIVE_ALGORITHMS[collective]
        algorithm = algs[0] if algorithm is None else algorithm
        if algorithm not in algs:
            raise unknown_name(f"{collective} algorithm", algorithm, algs)
        ids = self._ids(ranks)
        p = len(ids)
        a, b, nodes = self._params(ids)
        g = self.gamma_s_per_B
        if collective == "allreduce":
            if algorithm == "auto":
                return float(self._best(n_bytes, ids)[0])
            if algorithm == "hierarchical":
                intra = self.cluster.node.intra_link
                nic = self.cluster.node.nic
                per_node = -(-p // nodes)
                return float(cf.hierarchical_allreduce_s(
                    n_bytes, nodes, per_node, (intra.latency_s, 1 / intra.bandwidth_Bps),
                    (self._inter_alpha_s(), 1 / nic.bandwidth_Bps), g, self.inter_algorithm))
            return float(cf.allreduce_s(algorithm, n_bytes, p, a, b, g))
        if collective == "reduce-scatter":
            return float(cf.reduce_scatter_s(n_bytes, p, a, b, g))
        if collective == "allgather":
            return float(cf.allgather_s(n_bytes, p, a, b))
        if collective == "broadcast":
            return float(cf.broadcast_s(n_bytes, p, a, b))
        if collective == "reduce":
            return float(cf.reduce_s(n_bytes, p, a, b, g))
        if p < 2:
            return 0.0
        if algorithm == "concurrent":  # all workers at once through the server's link
            w = p - 1
            return 2 * a + 2 * w * n_bytes * b + w * n_bytes * g
        return float(cf.parameter_server_s(n_bytes, p - 1, a, b, g))

    def _best(self, n_bytes: float, ids: list[int]) -> tuple[float, str]:
        a, b, nodes = self._params(ids)
        intra = self.cluster.node.intra_link
        nic = self.cluster.node.nic
        per_node = -(-len(ids) // nodes)
        t, name = cf.best_allreduce(
            n_bytes, len(ids), a, b, self.gamma_s_per_B, ranks_per_node=per_node,
            intra=(intra.latency_s, 1 / intra.bandwidth_Bps),
            inter=(self._inter_alpha_s(), 1 / nic.bandwidth_Bps),
            inter_algorithm=self.inter_algorithm)
        return float(t), str(name)

    def resolve_allreduce(self, n_bytes: float, ranks: int | Sequence[int]) -> str:
        """The algorithm ``"auto"`` runs: the least closed-form time (no contention).

        Examples
        --------
        >>> from dlscale.perfmodel.hardware import (Cluster, Crossbar, Device, Link,
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
        return self._best(n_bytes, self._ids(ranks))[1]

    def allreduce_s(self, n_bytes: float, ranks: int | Sequence[int],
                    algorithm: str = "ring") -> float:
        """Closed-form allreduce time (``"auto"``: the fastest algorithm, see
        :meth:`resolve_allreduce`)."""
        return self.collective_s("allreduce", n_bytes, ranks, algorithm)

    def transfer_s(self, src_rank: int, dst_rank: int, n_bytes: float) -> float:
        """Hockney time of one message (0 to oneself).

        Examples
        --------
        >>> from dlscale.perfmodel.hardware import (Cluster, Crossbar, Device, Link,
        ...     NetworkSpec, NodeSpec)
        >>> dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
        >>> node = NodeSpec("n", dev, 2, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 1e-6))
        >>> c = Cluster("t", node, NetworkSpec("net", Crossbar(8), Link("l", 1e9, 1e-6)))
        >>> AnalyticalNetwork(c).transfer_s(0, 2, 1e9)  # NIC 1 us + shared memory 0.5 us
        1.0000015
        """
        self._ids([src_rank, dst_rank] if src_rank != dst_rank else [src_rank])
        if n_bytes < 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        if src_rank == dst_rank:
            return 0.0
        a, b, _ = self._params([src_rank, dst_rank])
        return a + n_bytes * b
