"""SimulatedNetwork: collectives as routed message schedules on a topology graph.

The simulated implementation of :class:`dlscale.perfmodel.network.analytical.NetworkModel`: the
layers above ask for ``allreduce_s``, ``collective_s`` or ``transfer_s`` and get
seconds, or call :meth:`SimulatedNetwork.simulate` for the full
:class:`~dlscale.simulator.network.result.CollectiveResult` (per-step times, bytes per link,
Chrome trace).

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> net = SimulatedNetwork(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9,
...                                       host_latency_s=0.0, hop_latency_s=0.0))
>>> round(net.allreduce_s(16e6, 16, "ring"), 6)
0.03
>>> round(net.transfer_s(0, 15, 1e9), 6)
1.0
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.gcpause import paused_gc
from dlscale.perfmodel.limits import GAMMA_RANGE_S_PER_B, check_range
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import Runtime
from dlscale.perfmodel.network.analytical import AnalyticalNetwork, check_ranks
from dlscale.perfmodel.network.autopolicy import choose_allreduce
from dlscale.perfmodel.network.collectives import allreduce_s, hierarchical_allreduce_s
from dlscale.perfmodel.network.model import dbt_segments
from dlscale.perfmodel.network.msgfactors import MessageFactors, message_time_s
from dlscale.perfmodel.network.pipelined_tree import dbt_best_segments
from dlscale.perfmodel.network.schedules import double_binary_tree_edges
from dlscale.simulator.network.fastmode import RouteCache, run_fast
from dlscale.simulator.network.result import CollectiveResult
from dlscale.simulator.network.schedules import ALGORITHMS, build_schedule
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.graphml import endpoints, validate_graph
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.metrics import TopologyMetrics, topology_metrics
from dlscale.simulator.topology.placement import node_of, place
from dlscale.simulator.topology.routing import make_router, route

__all__ = ["MODES", "SimulatedNetwork", "draws_at_random"]

#: Simulation modes: flow-level reference, lock-step fast mode.
MODES = ("flow", "fast")

#: Default algorithm of each collective.
DEFAULT_ALGORITHM = {c: algs[0] for c, algs in ALGORITHMS.items()}


def draws_at_random(placement: str, router: object) -> bool:
    """Whether a simulated network's seed changes anything: a random placement, or a
    router that draws its paths (its ``draws`` attribute: Valiant's intermediate
    groups on a dragonfly of 3+ groups)."""
    return placement == "random" or bool(getattr(router, "draws", False))


class SimulatedNetwork:
    """A topology with ranks placed on it, answering collective timings by simulation.

    Parameters
    ----------
    topology : networkx.Graph
        A topology graph (built-in generator, :func:`cluster_graph`, or a user graph).
    mode : {"fast", "flow"}
        Lock-step fast mode (scales to tens of thousands of ranks) or the flow-level
        max-min model (reference fidelity, small scale).
    placement : {"linear", "random", "topology"}
        Rank placement policy (:mod:`~dlscale.simulator.topology.placement`).
    seed : int
        Seed of random placement and of Valiant routing.
    gamma_s_per_B : float
        Local reduction cost per byte reduced.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical`` allreduce.
    max_segments : int
        Cap on pipeline segments of the double binary tree.
    message_factors : MessageFactors, optional
        Per-message-size latency and bandwidth factors
        (:mod:`dlscale.perfmodel.network.msgfactors`) applied to every message; a cluster's
        network (:meth:`from_cluster`) takes its own.
    validate : bool
        Check the graph (:func:`~dlscale.simulator.topology.graphml.validate_graph`);
        :meth:`from_cluster` does not check the graphs the built-in builders make
        beyond their count of endpoints (``tests/test_sim_fast_scale.py`` checks the
        rest: 0.5 s of 27,648 GPUs on a loaded host).
    """

    def __init__(self, topology: nx.Graph, *, mode: str = "fast", placement: str = "linear",
                 seed: int = 0, gamma_s_per_B: float = 0.0, inter_algorithm: str = "ring",
                 max_segments: int = 256,
                 message_factors: MessageFactors | None = None, validate: bool = True) -> None:
        if mode not in MODES:
            raise unknown_name("mode", mode, MODES)
        if not (gamma_s_per_B >= 0):
            raise ConfigError(f"gamma_s_per_B: must be >= 0, got {gamma_s_per_B!r}")
        check_range(gamma_s_per_B, GAMMA_RANGE_S_PER_B, "gamma_s_per_B", "s/B")
        # unchecked: the built-in builders' graphs, but for their count of endpoints
        # (a one-device machine has no network to simulate: the same error)
        self.graph = validate_graph(topology) if validate or len(endpoints(topology)) < 2 \
            else topology
        self.mode = mode
        self.placement = placement
        self.seed = seed
        self.gamma_s_per_B = float(gamma_s_per_B)
        self.inter_algorithm = inter_algorithm
        self.max_segments = max_segments
        if message_factors is not None and not isinstance(message_factors, MessageFactors):
            raise ConfigError(f"message_factors: must be a MessageFactors, got "
                              f"{type(message_factors).__name__}")
        self.message_factors = message_factors
        with paused_gc():   # arrays over every link and endpoint (perfmodel.gcpause)
            self.table = LinkTable.from_graph(topology)
            self.router = make_router(topology, seed)
            labels = place(topology, placement, seed)
            self.rank_nodes = self.table.node_index(labels)
            self.rank_host = node_of(topology, labels)
        self._cache = RouteCache()
        self.name = str(topology.graph.get("cluster", topology.graph.get("family", "graph")))
        self.cluster: Cluster | None = None
        #: Node count of :attr:`cluster`'s network (0 on a bare graph).
        self.nodes = 0
        #: The software stack whose ``"auto"`` rule applies (None on a bare graph).
        self.runtime: Runtime | None = None

    @property
    def seeded(self) -> bool:
        """Whether :attr:`seed` changes anything (:func:`draws_at_random`)."""
        return draws_at_random(self.placement, self.router)

    @classmethod
    def from_cluster(cls, cluster: Cluster, nodes: int, node_graph: nx.Graph | None = None,
                     **kwargs: object) -> SimulatedNetwork:
        """The network of the first ``nodes`` nodes of ``cluster`` (see :func:`cluster_graph`)."""
        kwargs.setdefault("message_factors", cluster.network.message_factors)
        kwargs.setdefault("validate", node_graph is not None)  # a user's node graph: checked
        with paused_gc():   # tens of thousands of dicts, no garbage (perfmodel.gcpause)
            net = cls(cluster_graph(cluster, nodes, node_graph), **kwargs)  # type: ignore[arg-type]
        net.runtime = cluster.runtime
        if node_graph is None and net.placement == "linear":
            net.cluster, net.nodes = cluster, nodes
        return net

    @property
    def max_ranks(self) -> int:
        """Number of endpoints (ranks the topology holds)."""
        return len(self.rank_nodes)

    def metrics(self) -> TopologyMetrics:
        """Diameter, bisection bandwidth and links per level of the topology."""
        return topology_metrics(self.graph)

    def _select(self, ranks: int | Sequence[int] | None) -> np.ndarray:
        if ranks is None:
            return np.arange(self.max_ranks)
        sel = check_ranks(ranks, self.max_ranks)
        return np.arange(sel) if isinstance(sel, int) else np.asarray(sel, dtype=np.int64)

    def _segments(self, sel: np.ndarray, n_bytes: float) -> int:
        """Pipeline segments of the double binary tree: on a catalog cluster's own
        network the count of least costed time, as the closed form prices it
        (:func:`dlscale.perfmodel.network.pipelined_tree.dbt_best_segments`); on another
        graph the rule of :func:`dlscale.perfmodel.network.model.dbt_segments`, with the
        uncontended latency and inverse bandwidth of the path from the first to the
        last rank."""
        p = len(sel)
        if p < 2:
            return 1
        if self.cluster is not None and self.nodes and self.max_ranks % self.nodes == 0:
            ranks: int | tuple[int, ...] = (
                p if np.array_equal(sel, np.arange(p)) else tuple(int(r) for r in sel))
            k = dbt_best_segments(self.cluster, self.nodes, self.max_ranks // self.nodes,
                                  n_bytes, self.gamma_s_per_B, ranks)
            return min(k, self.max_segments)
        alpha, beta = self.path_hockney(int(sel[0]), int(sel[-1]))
        depth = double_binary_tree_edges(p)[2]
        return dbt_segments(depth, n_bytes, alpha, beta, self.max_segments)

    def path_hockney(self, a: int, b: int) -> tuple[float, float]:
        """``(alpha_s, beta_s_per_B)`` of the path between endpoints ``a`` and ``b``:
        its latency and the inverse bandwidth of its most loaded link, without the
        per-size factors (0, 0 from an endpoint to itself)."""
        if a == b:
            self._select([a])
            return 0.0, 0.0
        sel = self._select([a, b])
        r = route(self.table, self.router, self.rank_nodes[sel[:1]], self.rank_nodes[sel[1:]])
        ok = r.links >= 0
        # a link two subflows share (a device's link, before the rails split) carries both
        share = np.broadcast_to(r.fraction[:, None], r.links.shape)[ok]
        load = np.bincount(r.links[ok], weights=share, minlength=self.table.n_links)
        return float(r.latency_s.max()), float((load / self.table.bandwidth_Bps).max(initial=0.0))

    def resolve_allreduce(self, n_bytes: float, ranks: int | Sequence[int] | None = None) -> str:
        """The algorithm ``"auto"`` runs for these ranks and this size.

        Every path follows the one rule of :mod:`dlscale.perfmodel.network.autopolicy`. On a
        cluster's own network (:meth:`from_cluster`, block placement) this is the
        choice of the analytical model
        (:meth:`dlscale.perfmodel.network.analytical.AnalyticalNetwork.resolve_allreduce`), so that
        both fidelities run the same algorithm. Otherwise (another placement, a graph of
        its own) the runtime's rule, if the network belongs to a cluster, or the least
        time, prices each candidate with the closed forms
        (:mod:`dlscale.perfmodel.network.collectives`) on the network's uncontended
        point-to-point parameters, measured here on the routed graph: latency and
        inverse bandwidth from the first rank to a rank of another node (or, all on one
        node, to the next rank); ``hierarchical`` is a candidate with the intra-node
        pair's parameters when a node holds several of the ranks.

        Examples
        --------
        >>> from dlscale.simulator.topology.fattree import fat_tree_graph
        >>> net = SimulatedNetwork(fat_tree_graph(4, host_bandwidth_Bps=1e9,
        ...                        link_bandwidth_Bps=1e9, host_latency_s=1e-6,
        ...                        hop_latency_s=0.0))
        >>> net.resolve_allreduce(8, 16), net.resolve_allreduce(1e9, 16)
        ('recursive-doubling', 'rabenseifner')
        """
        if not n_bytes >= 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        sel = self._select(ranks)
        p = len(sel)
        if p < 2:
            return "ring"
        if self.cluster is not None:
            # a cluster's network, ranks placed block-wise: the analytical model's choice,
            # so that both fidelities run the same algorithm
            ana = AnalyticalNetwork(self.cluster, self.gamma_s_per_B, self.inter_algorithm)
            ids = int(p) if np.array_equal(sel, np.arange(p)) else sel.tolist()
            return ana.resolve_allreduce(float(n_bytes), ids)
        hosts = self.rank_host[sel]
        _, counts = np.unique(hosts, return_counts=True)
        first = int(sel[0])
        other = sel[hosts != hosts[0]]
        same = sel[1:][hosts[1:] == hosts[0]]
        inter = self.path_hockney(first, int(other[0])) if len(other) else None
        intra = self.path_hockney(first, int(same[0])) if len(same) else None
        a, b = inter if inter is not None else intra  # type: ignore[misc]
        whole = inter is not None and intra is not None

        def time_of(name: str) -> float:
            if name == "hierarchical" and intra is not None and inter is not None:
                return float(hierarchical_allreduce_s(
                    float(n_bytes), np.ceil(p / counts.max()), int(counts.max()), intra,
                    inter, self.gamma_s_per_B, self.inter_algorithm))
            return float(allreduce_s(name, float(n_bytes), p, a, b, self.gamma_s_per_B))

        # the one rule of "auto" (dlscale.perfmodel.network.autopolicy): the runtime's, where the
        # network belongs to a cluster; the least closed-form time on a bare graph
        _, name = choose_allreduce(self.runtime, float(n_bytes), p, 4.0, time_of,
                                   whole_nodes=whole)
        return str(name)

    def simulate(self, collective: str, n_bytes: float, ranks: int | Sequence[int] | None = None,
                 algorithm: str | None = None, *, mode: str | None = None,
                 trace: bool = False) -> CollectiveResult:
        """Simulate one collective; ``ranks`` is a count (the first ranks) or rank ids.

        ``algorithm="auto"`` (allreduce) runs the algorithm of
        :meth:`resolve_allreduce`; the result's ``algorithm`` names it.

        With ``trace=True`` the result carries ``result.trace``, a Chrome trace dict.
        """
        mode = self.mode if mode is None else mode
        if mode not in MODES:
            raise unknown_name("mode", mode, MODES)
        if collective not in ALGORITHMS:
            raise unknown_name("collective", collective, ALGORITHMS)
        algorithm = DEFAULT_ALGORITHM[collective] if algorithm is None else algorithm
        if collective == "allreduce" and algorithm == "auto":
            algorithm = self.resolve_allreduce(n_bytes, ranks)
        elif algorithm not in ALGORITHMS[collective]:
            valid = (*ALGORITHMS[collective], "auto") if collective == "allreduce" \
                else ALGORITHMS[collective]
            raise unknown_name(f"{collective} algorithm", algorithm, valid)
        sel = self._select(ranks)
        nodes = self.rank_nodes[sel]
        groups = None
        if algorithm == "hierarchical":
            hosts = self.rank_host[sel]
            _, first, inverse = np.unique(hosts, return_index=True, return_inverse=True)
            order = np.argsort(first)
            groups = [np.flatnonzero(inverse == g) for g in order]
        segments = self._segments(sel, n_bytes) if algorithm == "double-binary-tree" else 1
        phases = build_schedule(collective, algorithm, len(sel), n_bytes, groups=groups,
                                inter_algorithm=self.inter_algorithm, segments=segments)
        cache = self._cache if ranks is None or isinstance(ranks, (int, np.integer)) else RouteCache()
        tracer = None
        if trace:
            from dlscale.simulator.network.trace import Tracer
            tracer = Tracer(self.table, len(sel))
        if mode == "fast":
            out = run_fast(phases, self.table, self.router, nodes, cache, self.gamma_s_per_B,
                           self.message_factors)
        else:   # imported here: a fast-mode run loads no flow engine (issue 27 item 5)
            from dlscale.simulator.network.flowmode import run_flow

            out = run_flow(phases, self.table, self.router, nodes, cache, self.gamma_s_per_B,
                           on_rates=tracer.on_rates if tracer else None,
                           record_ranks=tracer.ranks if tracer else None,
                           factors=self.message_factors)
        res = CollectiveResult(
            collective=collective, algorithm=algorithm, mode=mode, ranks=len(sel),
            n_bytes=float(n_bytes), time_s=float(out["time_s"]), step_times_s=out["step_times_s"],
            step_labels=[p.label for p in phases], link_bytes=out["link_bytes"],
            link_capacity_Bps=self.table.bandwidth_Bps, link_level=self.table.level,
            link_names=self.table.name, phase_times_s=out["phase_times_s"],
            placement=self.placement, topology=self.name)
        if tracer is not None:
            res.trace = tracer.build(res, phases, out)  # type: ignore[attr-defined]
        return res

    def collective_s(self, collective: str, n_bytes: float, ranks: int | Sequence[int],
                     algorithm: str | None = None) -> float:
        """Seconds of one collective (see :meth:`simulate`)."""
        return self.simulate(collective, n_bytes, ranks, algorithm).time_s

    def allreduce_s(self, n_bytes: float, ranks: int | Sequence[int],
                    algorithm: str = "ring") -> float:
        """Seconds of an allreduce of ``n_bytes`` per rank."""
        return self.collective_s("allreduce", n_bytes, ranks, algorithm)

    def transfer_s(self, src_rank: int, dst_rank: int, n_bytes: float) -> float:
        """Seconds of one uncontended message: path latency + bytes over the most loaded
        link of its path (its subflows, one per rail, share the links before the split),
        with the per-size factors (:func:`dlscale.perfmodel.network.msgfactors.message_time_s`)."""
        if n_bytes < 0:
            raise ConfigError(f"n_bytes: must be >= 0, got {n_bytes!r}")
        if src_rank == dst_rank:
            self._select([src_rank])
            return 0.0
        a, b = self.path_hockney(src_rank, dst_rank)
        return float(message_time_s(a, b, float(n_bytes), self.message_factors))
