"""Entry point of the training simulation: :func:`simulate_training`.

It checks the configuration, checks memory (a configuration that does not fit is
reported, with the resource and the shortfall, and not simulated), builds the network
backend, runs the algorithm's SimPy processes (:mod:`dlscale.simulator.training.sync` for
``sync-sgd``, :mod:`dlscale.simulator.training.easgd` for the EASGD family and the asynchronous
baselines) in timing mode or co-simulation mode (:mod:`dlscale.simulator.training.cosim`), and
returns a :class:`~dlscale.simulator.training.result.TrainingResult` with the analytical model's
figure next to the simulated one, and the scaling efficiency against one node.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> r = simulate_training(get_cluster("cori-knl"), get_workload("googlenet"), 4,
...                       algorithm="async-easgd", iterations=5)
>>> r.ranks, r.fits, r.iteration_s > 0
(4, True, True)
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.hardware import Cluster
from dlscale.perfmodel.limits import check_rank_steps
from dlscale.perfmodel.memory import memory_per_rank
from dlscale.perfmodel.netapi import NetworkModel
from dlscale.perfmodel.predict import baseline_workload, one_device
from dlscale.perfmodel.training import Layout, iteration_times, layout
from dlscale.perfmodel.workload import ALGORITHMS, Workload

from ..topology.placement import PLACEMENTS
from .common import RunContext, RunOutcome, compute_profile
from .net import DEFAULT_NETWORK, NETWORKS, make_training_network
from .result import TrainingResult
from .stragglers import Noise, make_noise
from .trace import TraceRecorder

__all__ = ["MODES", "simulate_training"]

#: Simulation modes.
MODES = ("timing", "cosim")


def _memory(workload: Workload, cluster: Cluster, ranks: int, batch: float) -> dict:
    v = memory_per_rank(workload, cluster, ranks, batch)
    return {
        "parameters_bytes": float(v.parameters_bytes[0]),
        "gradients_bytes": float(v.gradients_bytes[0]),
        "optimizer_bytes": float(v.optimizer_bytes[0]),
        "activations_bytes": float(v.activations_bytes[0]),
        "buffers_bytes": float(v.buffers_bytes[0]),
        "per_rank_bytes": float(v.total_bytes[0]),
        "per_device_bytes": float(v.per_device_bytes[0]),
        "capacity_bytes": float(v.capacity_bytes),
        "resource": v.resource,
        "fits": bool(v.fits[0]),
        "shortfall_bytes": float(v.shortfall_bytes[0]),
    }


def _check(cluster: Cluster, workload: Workload, nodes: int, algorithm: str | None,
           iterations: int, mode: str, network: object, seed: int = 0,
           placement: str = "linear") -> Workload:
    if not isinstance(cluster, Cluster):
        raise ConfigError(f"cluster: must be a Cluster, got {type(cluster).__name__}")
    if not isinstance(workload, Workload):
        raise ConfigError(f"workload: must be a Workload, got {type(workload).__name__}")
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)):
        raise ConfigError(f"nodes: must be an integer, got {nodes!r}")
    cluster.check_nodes(int(nodes))
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
            or iterations < 1:
        raise ConfigError(f"iterations: must be an integer >= 1, got {iterations!r}")
    rpn = workload.ranks_per_node or cluster.node.devices_per_node
    check_rank_steps(int(nodes) * rpn, int(iterations), where="iterations")
    if mode not in MODES:
        raise unknown_name("mode", mode, MODES)
    if isinstance(network, str) and network not in NETWORKS:
        raise unknown_name("network", network, NETWORKS)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed: must be an integer >= 0, got {seed!r}")
    if placement not in PLACEMENTS:
        raise unknown_name("placement", placement, PLACEMENTS)
    if placement != "linear" and not (isinstance(network, str) and network in ("fast", "flow")):
        raise ConfigError(f"placement: {placement!r} places ranks on a simulated network "
                          f"(network 'fast' or 'flow'); network {network!r} places them "
                          f"block-wise")
    if algorithm is not None:
        if algorithm not in ALGORITHMS:
            raise unknown_name("algorithm", algorithm, ALGORITHMS)
        workload = dataclasses.replace(workload, algorithm=algorithm)
    return workload


def _run(ctx: RunContext):
    if ctx.algorithm == "sync-sgd":
        from .sync import run_sync_sgd
        return run_sync_sgd(ctx)
    from .easgd import run_easgd
    return run_easgd(ctx)


def _check_run_options(cluster: Cluster, workload: Workload, baseline: str,
                       noise: str | Noise | None, mode: str,
                       cosim_options: dict | None) -> tuple[Cluster, Workload, Noise]:
    """Check ``baseline``, ``noise`` and the co-simulation options, in that order.

    Returns the baseline run's cluster and workload ("node": the same; "device": one
    device, :func:`dlscale.perfmodel.predict.one_device`) and the noise model.
    """
    if baseline not in ("node", "device"):
        raise unknown_name("baseline", baseline, ("node", "device"))
    base = baseline_workload(workload)  # the stack's own allreduce: one baseline per question
    base_cluster, base_workload = (cluster, base) if baseline == "node" \
        else one_device(cluster, base)
    nz = make_noise(cluster.noise if noise is None else noise)
    if mode == "cosim":
        from .cosim import check_cosim_options

        check_cosim_options(cosim_options or {})
    return base_cluster, base_workload, nz


def _context(cluster: Cluster, workload: Workload, nodes: int, lay: Layout, network: str | NetworkModel,
             nz: Noise, seed: int, iterations: int, tracer: TraceRecorder | None, mode: str,
             cosim_options: dict | None, placement: str = "linear") -> RunContext:
    """The run's context: network backend, seeded generator, tracer, co-simulation numerics."""
    net = make_training_network(cluster, workload, nodes, network, seed, placement)
    ctx = RunContext(cluster, workload, nodes, lay, net, nz, np.random.default_rng(seed),
                     iterations, tracer)
    if mode == "cosim":
        from .cosim import make_numerics
        ctx.numerics = make_numerics(ctx, cosim_options or {}, seed)
    return ctx


def _record_outcome(res: TrainingResult, out: RunOutcome, ctx: RunContext, nz: Noise) -> None:
    """Copy the run's outcome into ``res`` and add the analytical reference figure."""
    cluster, workload, lay = ctx.cluster, ctx.workload, ctx.lay
    res.iteration_times_s = out.iteration_times_s
    res.samples_per_iteration = float(lay.global_batch[0])
    res.breakdown = out.breakdown
    res.backward_s = float(compute_profile(cluster, workload, lay).backward_s)
    res.sim_time_s = out.sim_time_s
    res.counters = dict(out.counters)
    if ctx.numerics is not None:
        res.curve = ctx.numerics.curve
        res.counters.update(ctx.numerics.counters())
    # the analytical reference with the run's noise (its expected slowest rank), where
    # the noise has a spec (not a sample given as an array)
    ref = dataclasses.replace(cluster, noise=nz.spec) if nz.spec else cluster
    res.analytical_iteration_s = float(iteration_times(ref, workload, ctx.nodes).iteration_s[0])


def _runs(res: TrainingResult) -> str:
    """What a baseline run ran, for the header line: ``"auto (ring)"``."""
    if res.algorithm != "sync-sgd":
        return res.algorithm
    return f"auto ({res.counters.get('allreduce') or 'one rank: no allreduce'})"


def _efficiency(res: TrainingResult, base_cluster: Cluster, base_workload: Workload,
                efficiency: bool, baseline: str, cluster: Cluster, iterations: int, seed: int,
                network: str | NetworkModel, nz: Noise, collective: str,
                placement: str = "linear") -> float | None:
    """Throughput over that of a one-node (or one-device) run with the same settings
    and the stack's own allreduce (:func:`~dlscale.perfmodel.predict.baseline_workload`;
    ``collective`` is the run's own); records what the baseline ran on ``res``.

    1.0 for one node running the baseline itself (or without ``efficiency``); ``None``
    where the baseline does not fit.
    """
    nodes = res.nodes
    if not efficiency:
        return 1.0 if nodes == 1 else res.efficiency
    if nodes == 1 and baseline == "node" and base_workload.collective == collective:
        res.baseline_runs, res.baseline_iteration_s = _runs(res), res.iteration_s
        return 1.0
    one = simulate_training(base_cluster, base_workload, 1,
                            iterations=min(int(iterations), 20),
                            seed=seed, mode="timing", network="analytical"
                            if not isinstance(network, str) else network,
                            noise=nz, efficiency=False,
                            placement=placement if isinstance(network, str) else "linear")
    units = nodes * (1 if baseline == "node" else cluster.node.devices_per_node)
    res.baseline_runs, res.baseline_iteration_s = _runs(one), one.iteration_s
    if one.fits and one.samples_per_s > 0:
        return res.samples_per_s / (units * one.samples_per_s)
    return res.efficiency


def _record_trace(res: TrainingResult, tracer: TraceRecorder, trace: bool | str) -> None:
    """Build the Chrome trace into ``res.trace``; write it (atomically) if ``trace`` is a path."""
    meta = {"cluster": res.cluster, "workload": res.workload,
            "algorithm": res.algorithm, "nodes": res.nodes, "ranks": res.ranks,
            "seed": res.seed, "mode": res.mode, "network": res.network,
            "traced_ranks": tracer.ranks.tolist()}
    res.trace = tracer.build(meta)
    if isinstance(trace, (str, os.PathLike)):
        from dlscale.perfmodel.atomicio import atomic_write_text
        atomic_write_text(trace, json.dumps(res.trace, sort_keys=True))


def _new_result(cluster: Cluster, workload: Workload, nodes: int, ranks: int, mode: str,
                network: str | NetworkModel, nz: Noise, seed: int, mem: dict) -> TrainingResult:
    """The result before the run: what was asked for and the memory verdict."""
    net_name = network if isinstance(network, str) else type(network).__name__
    return TrainingResult(cluster.name, workload.name, workload.algorithm, nodes, ranks, mode,
                          net_name, getattr(nz, "name", "none") if not hasattr(nz, "sigma")
                          else f"lognormal:{nz.sigma}", seed, memory=mem)


def simulate_training(cluster: Cluster, workload: Workload, nodes: int, *,
                      algorithm: str | None = None, iterations: int = 20, seed: int = 0,
                      mode: str = "timing", network: str | NetworkModel = DEFAULT_NETWORK,
                      noise: str | Noise | None = None, trace: bool | str = False,
                      efficiency: bool = True, cosim_options: dict | None = None,
                      trace_ranks: int = 16, trace_iterations: int = 5,
                      baseline: str = "node", placement: str = "linear") -> TrainingResult:
    """Simulate ``iterations`` iterations of ``workload`` on ``nodes`` nodes of ``cluster``.

    Parameters
    ----------
    cluster, workload : Cluster, Workload
    nodes : int
    algorithm : str, optional
        Overrides ``workload.algorithm`` (one of ``dlscale.perfmodel.workload.ALGORITHMS``).
    iterations : int
        Synchronous algorithms: iterations of the job; asynchronous ones: local steps
        of each worker.
    seed : int
        Seeds the straggler draws, the simulated network's placement and routing, and
        in co-simulation the data order and initial weights.
    mode : {"timing", "cosim"}
        Timing only (catalog parameter sizes, no arrays), or co-simulation: every
        worker holds real parameters of the small model of :mod:`dlscale.kernels` and
        runs the real kernels in the order the events decide.
    network : {"analytical", "fast", "flow"} or a NetworkModel object
        Who answers communication times (:mod:`dlscale.simulator.training.net`).
    noise : str or noise model, optional
        ``"none"``, ``"lognormal:SIGMA"``, ``"empirical:FILE"`` (:mod:`dlscale.simulator.training.stragglers`);
        ``None``: the cluster's ``noise``.
    trace : bool or path
        Record a Chrome trace (``result.trace``); a path also writes it (atomically).
    efficiency : bool
        Also simulate one node (same settings) for the scaling efficiency.
    placement : {"linear", "random", "topology"}
        Ranks on a simulated network (:mod:`dlscale.simulator.topology.placement`).
    cosim_options : dict, optional
        Co-simulation settings (:class:`~dlscale.simulator.training.cosim.CosimOptions` fields).
    trace_ranks, trace_iterations : int
        How many ranks and iterations the trace covers.
    baseline : {"node", "device"}
        Efficiency against a one-node simulation, or a one-device one
        (:func:`dlscale.perfmodel.predict.one_device`), with the stack's own allreduce.

    Returns
    -------
    TrainingResult
        Iteration times, per-rank breakdown, throughput, efficiency (each with its range,
        ``band``), memory verdict, counters, the analytical prediction for comparison, in
        co-simulation the accuracy curve; ``fits=False`` (nothing simulated) when the
        memory verdict says the configuration does not fit.

    Raises
    ------
    ConfigError
        A bad argument (naming it and what is allowed), before any simulation.
    """
    workload = _check(cluster, workload, nodes, algorithm, iterations, mode, network, seed, placement)
    base_cluster, base_workload, nz = _check_run_options(cluster, workload, baseline, noise,
                                                         mode, cosim_options)
    nodes = int(nodes)
    lay = layout(cluster, workload, nodes)
    ranks = int(lay.ranks[0])
    mem = _memory(workload, cluster, ranks, float(lay.batch_per_rank[0]))
    res = _new_result(cluster, workload, nodes, ranks, mode, network, nz, seed, mem)
    if not mem["fits"]:
        res.fits = False
        return res
    tracer = TraceRecorder(ranks, trace_ranks, trace_iterations) if trace else None
    ctx = _context(cluster, workload, nodes, lay, network, nz, seed, int(iterations), tracer,
                   mode, cosim_options, placement)
    if ctx.numerics is not None:
        res.surrogate = ctx.numerics.label
    _record_outcome(res, _run(ctx), ctx, nz)
    res.efficiency = _efficiency(res, base_cluster, base_workload, efficiency, baseline, cluster,
                                 iterations, seed, network, nz, workload.collective, placement)
    res.band = _band(res, cluster, workload, baseline, nz)
    if tracer is not None:
        _record_trace(res, tracer, trace)
    return res


def _band(res: TrainingResult, cluster: Cluster, workload: Workload, baseline: str,
          nz: Noise) -> dict[str, tuple[float, float]]:
    """The low and high of each simulated time, rate and efficiency: each corner of
    :func:`dlscale.perfmodel.ranges.corners`, as the closed form prices it relative to
    its own central answer, applied to the simulated value (the two fidelities charge
    the same mechanisms; a corner is not simulated again). Empty where the closed form
    cannot price the configuration."""
    from dlscale.perfmodel.ranges import predict_range

    ref = dataclasses.replace(cluster, noise=nz.spec) if nz.spec else cluster
    try:
        pred = predict_range(ref, workload, [res.nodes], baseline)
    except ConfigError:
        return {}
    row = res.to_rows()[0]
    out = {}
    for key, (low, high) in pred.band.items():
        central, value = float(getattr(pred, key)[0]), row.get(key)
        if value is None or not (np.isfinite(value) and np.isfinite(central)) or central <= 0:
            continue
        lo, hi = value * float(low[0]) / central, value * float(high[0]) / central
        out[key] = (min(value, lo), max(value, hi))
    return out
