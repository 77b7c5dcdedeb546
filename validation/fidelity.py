"""The simulated fidelity of the published cases: the discrete-event training simulation.

A case's simulated prediction is :func:`dlscale.simulator.training.run.simulate_training`
on the case's cluster, workload and node count: every rank resolved, per-layer
forward and backward times, Horovod's buckets, cycle wait and negotiation (rank-0 or
graph-aware bit vector), one collective at a time overlapping the rest of the backward
pass, with every allreduce simulated on the cluster's routed topology (fast mode:
routed message phases with link contention). One setting for every case
(:data:`SETTINGS`): the cluster's noise, as the analytical fidelity charges it (a GPU
cluster that describes none draws its GPUs' cited rate spread,
:mod:`dlscale.perfmodel.compute.variability`; the published runs' own noise is not
known), seed 0, and a few iterations. The scaling efficiency is the
simulation's own: throughput against ``nodes`` times that of a one-node simulation
with the same settings.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> r = simulate_case(get_cluster("summit"), get_workload("resnet50"), 2)
>>> r.ranks, r.network, 0.5 < r.efficiency <= 1.0
(12, 'fast', True)
>>> describe(r).startswith("simulated iteration ")
True
"""

from __future__ import annotations

from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["SETTINGS", "describe", "simulate_case"]

#: The simulation settings of every published case at the simulated fidelity.
SETTINGS: dict[str, Any] = {"network": "fast", "noise": None, "iterations": 3, "seed": 0}


def simulate_case(cluster: Any, workload: Any, nodes: int) -> Any:
    """Simulate ``workload`` on ``nodes`` nodes of ``cluster`` with :data:`SETTINGS`.

    Returns the :class:`~dlscale.simulator.training.result.TrainingResult` (its
    ``samples_per_s``, ``iteration_s``, ``efficiency`` and ``summary()``). Raises
    :class:`~dlscale.perfmodel.errors.ConfigError` when the configuration does not fit
    in memory (a published run did fit), and, from the simulator, when the ranks
    outnumber the simulated topology's endpoints (the node's devices).
    """
    from dlscale.simulator.training.run import simulate_training

    res = simulate_training(cluster, workload, int(nodes), **SETTINGS)
    if not res.fits:
        raise ConfigError(f"workload: {workload.name} on {nodes} nodes of {cluster.name} does "
                          f"not fit in {res.memory['resource']} (short by "
                          f"{res.memory['shortfall_bytes'] / 1e9:.2f} GB); nothing to simulate")
    return res


def describe(res: Any) -> str:
    """One line for a case's note: iteration, its parts, efficiency, the analytical time."""
    s = res.summary()
    eff = "" if res.efficiency is None else f", efficiency {res.efficiency:.3f}"
    return (f"simulated iteration {res.iteration_s * 1e3:.1f} ms (analytical "
            f"{res.analytical_iteration_s * 1e3:.1f}): compute {s['compute_max_s'] * 1e3:.1f} ms, "
            f"collectives {s['comm_s'] * 1e3:.1f} ms, exposed {s['exposed_comm_s'] * 1e3:.1f} ms"
            f"{eff}")
