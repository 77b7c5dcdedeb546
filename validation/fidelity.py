"""The simulated fidelity of the published cases: the training model on a routed network.

Synchronous SGD at the simulated fidelity is the analytical training model
(:func:`dlscale.perfmodel.training.iteration_times`: per-layer compute, fusion
buckets, Horovod's cycle wait, the overlap chain) with its bucket allreduces and its
graph-aware bit-vector negotiation answered by a
:class:`~dlscale.simulator.network.SimulatedNetwork` of the cluster's topology
(routed message schedules, link contention, fast mode) instead of the closed forms.
Fed the closed-form network instead, it gives the analytical model's time.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> c, w = get_cluster("summit"), get_workload("resnet50")
>>> simulated_network(c, w, 1).max_ranks
6
>>> round(sync_sgd_iteration_s(c, w, 1, simulated_network(c, w, 1)), 4) > 0
True
"""

from __future__ import annotations

from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["simulated_network", "sync_sgd_iteration_s"]


def sync_sgd_iteration_s(cluster: Any, workload: Any, nodes: int, network: Any) -> float:
    """Synchronous-SGD iteration time with ``network`` answering the collectives.

    :func:`dlscale.perfmodel.training.iteration_times` with ``network=network``: each
    bucket's allreduce (``workload.collective``) and, for graph-aware grouping, the
    bit-vector negotiation (recursive doubling) are asked of ``network`` (a
    :class:`~dlscale.perfmodel.netapi.NetworkModel`; unused, may be None, for one
    rank); rank-0 negotiation (fusion) is the model's closed form
    ``(P - 1 + ceil(log2 P)) alpha``. Sparse gradients must be densified (the sparse
    allgather has no simulated counterpart here).
    """
    from dlscale.perfmodel.training import iteration_times

    if workload.algorithm != "sync-sgd":
        raise ConfigError(f"workload.algorithm: the simulated chain is synchronous SGD, got "
                          f"{workload.algorithm!r}")
    if workload.model.sparse_params > 0 and not workload.sparse_as_dense:
        raise ConfigError("workload.sparse_as_dense: the simulated chain needs densified "
                          "gradients (no sparse allgather), got False")
    return float(iteration_times(cluster, workload, nodes, network=network).iteration_s[0])


def simulated_network(cluster: Any, workload: Any, nodes: int) -> Any:
    """The routed topology of ``nodes`` nodes, fast mode, the model's reduction cost.

    ``None`` for a single rank (nothing to communicate).
    """
    from dlscale.perfmodel.contention import hockney_params
    from dlscale.perfmodel.training import layout
    from dlscale.simulator.network import SimulatedNetwork

    lay = layout(cluster, workload, nodes)
    if lay.ranks[0] == 1:
        return None
    gamma = hockney_params(cluster)["gamma_s_per_B"] / lay.share
    return SimulatedNetwork.from_cluster(cluster, nodes, gamma_s_per_B=gamma)
