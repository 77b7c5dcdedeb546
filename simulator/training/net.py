"""The communication costs the training processes ask for, from either network model.

The training layer asks a :class:`TrainingNetwork` for the seconds of the few
communication operations it issues: the gradient allreduce of a bucket, the
negotiation of a bucket (Horovod's rank-0 gather/broadcast or the graph-aware
bit-vector allreduce), the allgather of sparse gradients, the binomial reduce and
broadcast of Sync EASGD, and a worker's message to the master. Two backends:

``analytical``
    The analytical network model of :mod:`dlscale.perfmodel.network.model` (each step's
    loads on every level of the topology), exactly as the analytical training model
    uses it, so that without noise the simulation must agree with it.
``fast`` / ``flow`` (or any :class:`~dlscale.perfmodel.network.analytical.NetworkModel`: an object
with ``max_ranks``, ``allreduce_s``, ``collective_s`` and ``transfer_s``)
    A :class:`~dlscale.simulator.network.SimulatedNetwork` of the cluster's topology:
    each collective is simulated as routed message phases with link contention.
    The rank-0 negotiation (a linear gather plus a binomial broadcast of a few bytes)
    has no schedule in the network layer; it stays a latency count with the latency
    the network reports for a zero-byte message between the first and last rank.

Every answer is cached per (operation, bytes): a training run asks for the same few
sizes every iteration.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> net = make_training_network(get_cluster("summit"), get_workload("resnet50"), 2, "analytical")
>>> net.ranks, round(net.allreduce_s(100e6) * 1e3, 3) > 0
(12, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.network.analytical import NetworkModel
from dlscale.perfmodel.network.contention import hockney_params
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.perfmodel.network.msgfactors import effective_hockney
from dlscale.perfmodel.training.easgd import host_copy_s, master_link
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import (
    coordination_bytes,
    end_to_end_latency_s,
    negotiation_s,
    workload_allreduce,
)
from dlscale.perfmodel.training.workload import Workload
from dlscale.simulator.network.simulated import SimulatedNetwork, draws_at_random

__all__ = ["DEFAULT_NETWORK", "NETWORKS", "TrainingNetwork", "default_network",
           "make_training_network", "network_draws"]

#: Network backends by name.
NETWORKS = ("analytical", "fast", "flow")
#: The backend ``simulate`` uses unless told otherwise, in the Python API, the command
#: line and sweeps alike: the routed fast mode (link contention on the topology).
DEFAULT_NETWORK = "fast"


def default_network(cluster: Cluster) -> str:
    """The backend a run on ``cluster`` gets when none is named: :data:`DEFAULT_NETWORK`,
    or ``"flow"`` for a parameter-server runtime, whose pushes and pulls run as their
    own max-min fair flows (:mod:`dlscale.simulator.training.ps`). The command line,
    the Python API and a simulated sweep all ask here (a sweep's parameter-server
    point was refused, "got 'fast'", where ``dlscale simulate`` answered it)."""
    return "flow" if cluster.runtime.parameter_server else DEFAULT_NETWORK


class TrainingNetwork:
    """Seconds of the training layer's communication operations (see module docstring).

    Parameters
    ----------
    cluster, workload : Cluster, Workload
    nodes : int
    backend : str or NetworkModel
        ``"analytical"``, ``"fast"``, ``"flow"``, or a
        :class:`~dlscale.perfmodel.network.analytical.NetworkModel`.
    seed : int
        Seed of the simulated network's placement and routing.
    placement : {"linear", "random", "topology"}
        Where the ranks run on the simulated network (ignored by the closed forms,
        which :func:`~dlscale.simulator.training.run.simulate_training` refuses it for).
    """

    def __init__(self, cluster: Cluster, workload: Workload, nodes: int,
                 backend: str | NetworkModel = "analytical", seed: int = 0,
                 placement: str = "linear") -> None:
        # the inter-node links as the runtime's transport delivers them, for the
        # closed forms and the simulated topology alike
        cluster = with_transport(cluster)
        self.cluster, self.workload, self.nodes = cluster, workload, int(nodes)
        self.lay = layout(cluster, workload, nodes)
        self.ranks = int(self.lay.ranks[0])
        self.par = hockney_params(cluster)
        multi = self.nodes > 1
        self.alpha_s = self.par["inter_alpha_s"] if multi else self.par["intra_alpha_s"]
        self.gamma_s_per_B = self.par["gamma_s_per_B"] / self.lay.share
        self.sim: NetworkModel | None = None
        if isinstance(backend, str):
            if backend not in NETWORKS:
                raise unknown_name("network", backend, NETWORKS)
            self.name = backend
            endpoints = self.nodes * cluster.node.devices_per_node
            if backend != "analytical" and endpoints < 2:
                # one device: no link to route over; the closed forms (intra-node and
                # master-link terms) answer, as they do for the analytical backend
                self.name = "analytical"
            elif backend != "analytical":
                self.sim = SimulatedNetwork.from_cluster(
                    cluster, self.nodes, mode=backend, seed=seed, placement=placement,
                    gamma_s_per_B=self.gamma_s_per_B)
        else:
            if not isinstance(backend, NetworkModel):
                raise ConfigError("network: an object must have max_ranks, allreduce_s, "
                                  "collective_s and transfer_s (the NetworkModel interface), "
                                  f"got {type(backend).__name__}")
            self.name = type(backend).__name__
            self.sim = backend
        # the simulated ranks: every device, or every k-th device when a rank drives
        # k devices of a node (placed block-wise, one per group of k)
        self.sel: int | list[int] = self.ranks
        if self.sim is not None:
            cap = int(self.sim.max_ranks)
            if self.ranks > cap:
                raise ConfigError(f"network: {self.ranks} ranks ({self.lay.ranks_per_node} per "
                                  f"node) but the simulated topology has {cap} endpoints; use "
                                  "network='analytical' for more ranks than devices")
            dpn, rpn = cluster.node.devices_per_node, self.lay.ranks_per_node
            if rpn < dpn and dpn % rpn == 0 and cap == self.nodes * dpn:
                self.sel = list(range(0, cap, dpn // rpn))
        # plain dicts, not lru_cache on bound methods: those make a reference cycle
        # that keeps each run's network alive until the cyclic collector runs
        self._cache: dict[tuple[str, float], float] = {}

    def _endpoint(self, rank: int) -> int:
        """The simulated topology's endpoint of ``rank``."""
        return rank if isinstance(self.sel, int) else self.sel[rank]

    def _cached(self, op: str, n_bytes: float, fn) -> float:
        key = (op, float(n_bytes))
        if key not in self._cache:
            self._cache[key] = fn(n_bytes)
        return self._cache[key]

    def allreduce_s(self, n_bytes: float) -> float:
        """Seconds of the workload's allreduce of ``n_bytes`` over all ranks (cached)."""
        return self._cached("allreduce", n_bytes, self._allreduce)

    def allgather_s(self, total_bytes: float) -> float:
        """Seconds of the ring allgather of ``total_bytes`` (cached)."""
        return self._cached("allgather", total_bytes, self._allgather)

    # -- collectives of synchronous SGD -------------------------------------------------
    def algorithm_for(self, n_bytes: float) -> str:
        """The allreduce algorithm run for ``n_bytes``: the workload's, or the one
        ``"auto"`` picks by the analytical model (the same choice as ``predict``)."""
        _, names = workload_allreduce(self.cluster, self.workload, self.lay,
                                      np.array([float(n_bytes)]))
        return str(names[0])

    def _allreduce(self, n_bytes: float) -> float:
        """Seconds of the workload's allreduce of ``n_bytes`` over all ranks."""
        if self.ranks < 2:
            return 0.0
        if self.sim is None:
            t, _ = workload_allreduce(self.cluster, self.workload, self.lay,
                                      np.array([float(n_bytes)]))
            return float(t[0])
        return float(self.sim.allreduce_s(float(n_bytes), self.sel, self.algorithm_for(n_bytes)))

    def _closed(self, collective: str, algorithm: str, n_bytes: float,
                gamma_s_per_B: float = 0.0) -> float:
        return float(collective_time_s(self.cluster, collective, algorithm, float(n_bytes),
                                       self.nodes, self.lay.ranks_per_node, gamma_s_per_B))

    def negotiation_s(self, tensors: int) -> float:
        """Coordination of one bucket: rank-0 gather + broadcast, a bit-vector allreduce
        (graph-aware grouping, Horovod's response cache), or nothing (the runtime's)."""
        p = self.ranks
        if p < 2:
            return 0.0
        rt = self.cluster.runtime
        if self.workload.grouping == "fusion" and rt.coordination == "rank0":
            return float(negotiation_s(np.array([p]), np.array([self.latency_s()]))[0])
        bits = coordination_bytes(self.workload, rt, tensors)
        if bits == 0:
            return 0.0
        if self.sim is None:
            return self._closed("allreduce", "recursive-doubling", bits)
        return float(self.sim.allreduce_s(bits, self.sel, "recursive-doubling"))

    def latency_s(self) -> float:
        """Zero-byte message latency between the first and the last rank."""
        if self.ranks < 2:
            return self.alpha_s
        if self.sim is None:
            return float(end_to_end_latency_s(self.cluster, self.lay)[0])
        return float(self.sim.transfer_s(0, self._endpoint(self.ranks - 1), 0.0))

    def _allgather(self, total_bytes: float) -> float:
        """Seconds of a ring allgather whose result is ``total_bytes`` per rank."""
        if self.ranks < 2:
            return 0.0
        if self.sim is None:
            return self._closed("allgather", "ring", total_bytes)
        return float(self.sim.collective_s("allgather", float(total_bytes),
                                           self.sel, "ring"))

    # -- Sync EASGD --------------------------------------------------------------------
    def reduce_broadcast_s(self, n_bytes: float) -> float:
        """Binomial reduce (summing) plus binomial broadcast of ``n_bytes`` over all ranks."""
        if self.ranks < 2:
            return 0.0
        if self.sim is None:
            return (self._closed("reduce", "binomial", n_bytes, self.gamma_s_per_B)
                    + self._closed("broadcast", "binomial", n_bytes))
        sim = self.sim
        return float(sim.collective_s("reduce", n_bytes, self.sel)
                     + sim.collective_s("broadcast", n_bytes, self.sel))

    # -- master (parameter server) -----------------------------------------------------
    def master_link(self, algorithm: str,
                    n_bytes: float | None = None) -> tuple[float, float]:
        """``(alpha_s, beta_s_per_B)`` of a worker's message to the master (of
        ``n_bytes``: then with the network's per-size factors across nodes).

        The simulated network's view of the message from the last worker to rank 0,
        or, analytically, :func:`dlscale.perfmodel.training.easgd.master_link`.
        """
        if self.sim is not None and self.ranks > 1 and not (algorithm == "easgd"
                                                              and self.nodes == 1):
            # the simulated network's view of a message from the last worker to the
            # master, which sits with rank 0
            w = self._endpoint(self.ranks - 1)
            if not isinstance(self.sim, SimulatedNetwork):  # any other NetworkModel
                lat = float(self.sim.transfer_s(w, 0, 0.0))
                one = float(self.sim.transfer_s(w, 0, 1e9)) - lat
                return lat, one / 1e9
            lat, beta = self.sim.path_hockney(w, 0)
            if self.nodes == 1:
                return lat, beta
            return effective_hockney(lat, beta, n_bytes, self.sim.message_factors)
        a, b = master_link(self.cluster, algorithm, np.array([self.nodes]),
                           self.lay.ranks_per_node, n_bytes)
        return float(a[0]), float(b[0])

    def host_copy_s(self, n_bytes: float) -> float:
        """Device -> host -> device copy of ``n_bytes`` (GPU workers of the original EASGD)."""
        return host_copy_s(self.cluster.node, n_bytes)


def make_training_network(cluster: Cluster, workload: Workload, nodes: int,
                          network: str | NetworkModel = "analytical",
                          seed: int = 0, placement: str = "linear") -> TrainingNetwork:
    """Build the :class:`TrainingNetwork` of ``nodes`` nodes of ``cluster``."""
    return TrainingNetwork(cluster, workload, nodes, network, seed, placement)


def network_draws(cluster: Cluster, nodes: Sequence[int], network: str,
                  placement: str = "linear") -> bool:
    """Whether the simulated network of a run at ``nodes`` reads its seed
    (:func:`~dlscale.simulator.network.simulated.draws_at_random`: a random placement,
    or a router that draws its paths).

    Never on the ``analytical`` backend, nor at a count of one device (the closed
    forms answer it, as :class:`TrainingNetwork` does). The router asked is that of
    the smallest simulated count's graph: a topology family's router draws at every
    node count or at none (Valiant's over 3+ groups: its groups are the topology's).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> network_draws(get_cluster("summit"), [2, 4], "fast")
    False
    >>> network_draws(get_cluster("summit"), [2, 4], "fast", "random")
    True
    """
    from dlscale.simulator.topology.cluster import cluster_graph
    from dlscale.simulator.topology.routing import make_router

    counts = [int(n) for n in nodes if n * cluster.node.devices_per_node >= 2]
    if network == "analytical" or not counts:
        return False
    return draws_at_random(placement, make_router(cluster_graph(cluster, min(counts))))
