"""Entry point of the training simulation: :func:`simulate_training`.

It checks the configuration, checks memory (a configuration that does not fit is
reported, with the resource and the shortfall, and not simulated), builds the network
backend, runs the algorithm's SimPy processes (:mod:`dlscale.simulator.training.sync` for
``sync-sgd``, :mod:`dlscale.simulator.training.easgd` for the EASGD family and the asynchronous
baselines) in timing mode or co-simulation mode (:mod:`dlscale.simulator.training.cosim`), and
returns a :class:`~dlscale.simulator.training.result.TrainingResult` with the analytical model's
figure next to the simulated one, and the scaling efficiency against one node. One
run is one simulation: the reference, the baseline the efficiency divides by and the
band come from the closed form's answer to the question (:func:`analytical_answer`),
computed once per question and handed to its runs, not from a second simulation.

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
from collections.abc import Sequence

import numpy as np

from dlscale.perfmodel.compute.memory import memory_per_rank
from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.limits import check_rank_steps
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.analytical import NetworkModel
from dlscale.perfmodel.training.iteration import iteration_times
from dlscale.perfmodel.training.predict import Prediction, one_device
from dlscale.perfmodel.training.ranges import predict_range, relative_band
from dlscale.perfmodel.training.rank_layout import Layout, layout
from dlscale.perfmodel.training.workload import ALGORITHMS, Workload
from dlscale.simulator.topology.placement import PLACEMENTS
from dlscale.simulator.training.common import RunContext, RunOutcome, compute_profile
from dlscale.simulator.training.net import NETWORKS, default_network, make_training_network
from dlscale.simulator.training.result import TrainingResult
from dlscale.simulator.training.stragglers import Noise, make_noise
from dlscale.simulator.training.trace import TraceRecorder

__all__ = ["MODES", "analytical_answer", "check_runs", "simulate_training"]

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
        "workspace_bytes": float(v.workspace_bytes[0]),
        "per_rank_bytes": float(v.total_bytes[0]),
        "per_device_bytes": float(v.per_device_bytes[0]),
        "capacity_bytes": float(v.capacity_bytes),
        "resource": v.resource,
        "fits": bool(v.fits[0]),
        "shortfall_bytes": float(v.shortfall_bytes[0]),
    }


def check_runs(cluster: Cluster, workload: Workload, nodes: Sequence[int], *,
               algorithm: str | None = None, iterations: int = 20, mode: str = "timing",
               network: str | NetworkModel | None = None, seed: int = 0,
               placement: str = "linear") -> None:
    """The checks :func:`simulate_training` makes, for every node count of a question
    before any is simulated (``dlscale.api.simulate``): a refusal at a later node count
    (an input-bound asynchronous step at 2 nodes of a 1,2 list) came after the first
    count's run. Raises the same :class:`ConfigError`."""
    net = default_network(cluster) if network is None else network
    for n in nodes:
        _check(cluster, workload, n, algorithm, iterations, mode, net, seed, placement)


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
    if cluster.runtime.parameter_server:
        _check_ps(cluster, workload, int(nodes), network, placement, mode)
    return workload


def _check_ps(cluster: Cluster, workload: Workload, nodes: int, network: object,
              placement: str, mode: str) -> None:
    """What a parameter-server run takes: its own flows (network 'flow'), timing mode."""
    from dlscale.perfmodel.training.ps import check_ps

    rt = cluster.runtime.name
    if network != "flow":
        raise ConfigError(f"network: runtime {rt!r} is simulated as max-min fair flows on "
                          f"each node's links (network 'flow'); got {network!r}")
    if placement != "linear":
        raise ConfigError(f"placement: runtime {rt!r} places one worker per node and its "
                          f"servers by ps_placement; got {placement!r}")
    if mode != "timing":
        raise ConfigError(f"mode: runtime {rt!r} is simulated in timing mode; the "
                          f"co-simulation runs allreduce and EASGD exchanges, got {mode!r}")
    check_ps(cluster, workload, np.array([nodes]))


def _run(ctx: RunContext):
    if ctx.cluster.runtime.parameter_server:
        from dlscale.simulator.training.ps import run_ps_sync
        return run_ps_sync(ctx)
    if ctx.algorithm == "sync-sgd":
        from dlscale.simulator.training.sync import run_sync_sgd
        return run_sync_sgd(ctx)
    if ctx.algorithm in ("easgd", "sync-easgd"):
        from dlscale.simulator.training.easgd_rounds import run_rounds
        return run_rounds(ctx)
    from dlscale.simulator.training.easgd import HOGWILD, HogwildRun, LockedRun
    run = HogwildRun(ctx) if ctx.algorithm in HOGWILD else LockedRun(ctx)
    return run.run()


def _check_run_options(cluster: Cluster, workload: Workload, baseline: str,
                       noise: str | Noise | None, mode: str,
                       cosim_options: dict | None) -> Noise:
    """Check ``baseline`` (a one-device baseline needs whole ranks per device:
    :func:`dlscale.perfmodel.training.predict.one_device`), ``noise`` and the
    co-simulation options, in that order; the noise model."""
    if baseline not in ("node", "device"):
        raise unknown_name("baseline", baseline, ("node", "device"))
    if baseline == "device":
        one_device(cluster, workload)
    nz = make_noise(cluster_noise(cluster) if noise is None else noise)
    if mode == "cosim":
        from dlscale.simulator.training.cosim import check_cosim_options

        check_cosim_options(cosim_options or {})
    return nz


def _context(cluster: Cluster, workload: Workload, nodes: int, lay: Layout, network: str | NetworkModel,
             nz: Noise, seed: int, iterations: int, tracer: TraceRecorder | None, mode: str,
             cosim_options: dict | None, placement: str = "linear") -> RunContext:
    """The run's context: network backend, seeded generator, tracer, co-simulation numerics."""
    if cluster.runtime.parameter_server:   # its flows run on its own links (.ps)
        network, placement = "analytical", "linear"
    net = make_training_network(cluster, workload, nodes, network, seed, placement)
    ctx = RunContext(cluster, workload, nodes, lay, net, nz, np.random.default_rng(seed),
                     iterations, tracer)
    if mode == "cosim":
        from dlscale.simulator.training.cosim import make_numerics
        ctx.numerics = make_numerics(ctx, cosim_options or {}, seed)
    return ctx


def _record_outcome(res: TrainingResult, out: RunOutcome, ctx: RunContext) -> None:
    """Copy the run's outcome into ``res``."""
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


def _reference_cluster(cluster: Cluster, nz: Noise) -> Cluster:
    """The cluster the closed form answers for: with the run's noise (its expected
    slowest rank), where the noise has a spec (not a sample given as an array)."""
    return dataclasses.replace(cluster, noise=nz.spec) if nz.spec else cluster


def analytical_answer(cluster: Cluster, workload: Workload, nodes: Sequence[int], *,
                      algorithm: str | None = None, noise: str | Noise | None = None,
                      baseline: str = "node") -> Prediction:
    """The closed form's answer to the question that runs of these settings belong to,
    computed once and handed to each of them (:func:`simulate_training`'s ``analytical``).

    It is :func:`dlscale.perfmodel.training.ranges.predict_range` of ``cluster`` with
    the runs' noise, over every node count of the question: each run takes from it
    its analytical reference (``analytical_iteration_s``), the one-node (or one-device)
    baseline its efficiency divides by (the stack's own allreduce, as ``predict``
    reports it) and the band of each simulated value.

    Parameters
    ----------
    cluster, workload : Cluster, Workload
    nodes : sequence of int
        The node counts of the question's runs.
    algorithm, noise, baseline
        As :func:`simulate_training` takes them.

    Returns
    -------
    Prediction
    """
    if algorithm is not None:
        if algorithm not in ALGORITHMS:
            raise unknown_name("algorithm", algorithm, ALGORITHMS)
        workload = dataclasses.replace(workload, algorithm=algorithm)
    if baseline not in ("node", "device"):
        raise unknown_name("baseline", baseline, ("node", "device"))
    nz = make_noise(cluster_noise(cluster) if noise is None else noise)
    return predict_range(_reference_cluster(cluster, nz), workload,
                         [int(n) for n in nodes], baseline)


def _answer_for(res: TrainingResult, cluster: Cluster, workload: Workload, baseline: str,
                nz: Noise, analytical: Prediction | None, efficiency: bool
                ) -> tuple[Prediction | None, int]:
    """The closed form's answer a run takes its reference, baseline and band from, and
    the run's row in it: the one handed on (checked to be this question's), else
    computed here for this node count, once; None (and the closed form's iteration time
    alone as the reference) where no efficiency is asked for or the closed form cannot
    price the configuration."""
    if analytical is not None:
        at = np.flatnonzero(np.asarray(analytical.nodes) == res.nodes)
        asked = (analytical.cluster, analytical.workload, analytical.algorithm,
                 analytical.collective, analytical.baseline)
        if not len(at) or asked != (cluster.name, workload.name, workload.algorithm,
                                    workload.collective, baseline):
            raise ConfigError(f"analytical: the closed form's answer for {asked} at nodes "
                              f"{np.asarray(analytical.nodes).tolist()}, not this run's "
                              f"({cluster.name}, {workload.name}, {workload.algorithm}, "
                              f"{workload.collective}, {baseline}) at {res.nodes} nodes")
        return analytical, int(at[0])
    ref = _reference_cluster(cluster, nz)
    if efficiency:
        try:
            return predict_range(ref, workload, [res.nodes], baseline), 0
        except ConfigError:
            pass
    res.analytical_iteration_s = float(iteration_times(ref, workload, [res.nodes]).iteration_s[0])
    return None, 0


def _efficiency(res: TrainingResult, pred: Prediction, cluster: Cluster,
                baseline: str) -> float | None:
    """Throughput over ``nodes`` (or devices) times that of the closed form's one-node
    (or one-device) run with the stack's own allreduce, as ``predict`` reports it
    (:func:`~dlscale.perfmodel.training.predict.baseline_workload`); records what that
    baseline runs on ``res``. None (and no baseline recorded) where the baseline does
    not fit in memory: a run that could not happen."""
    base = float(pred.baseline_samples_per_s)
    if not (pred.baseline_fits and base > 0 and np.isfinite(base)):
        return None
    units = res.nodes * (1 if baseline == "node" else cluster.node.devices_per_node)
    res.baseline_runs = pred.baseline_runs
    res.baseline_iteration_s = float(pred.baseline_iteration_s)
    return res.samples_per_s / (units * base)


def _record_trace(res: TrainingResult, tracer: TraceRecorder, trace: bool | str) -> None:
    """Build the Chrome trace into ``res.trace``; write it (atomically) if ``trace`` is a path."""
    meta = {"cluster": res.cluster, "workload": res.workload,
            "algorithm": res.algorithm, "nodes": res.nodes, "ranks": res.ranks,
            "seed": res.seed, "mode": res.mode, "network": res.network,
            "traced_ranks": tracer.ranks.tolist()}
    res.trace = tracer.build(meta)
    if isinstance(trace, (str, os.PathLike)):
        from dlscale.perfmodel.output.atomicio import atomic_write_text
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
                      mode: str = "timing", network: str | NetworkModel | None = None,
                      noise: str | Noise | None = None, trace: bool | str = False,
                      efficiency: bool = True, cosim_options: dict | None = None,
                      trace_ranks: int = 16, trace_iterations: int = 5,
                      baseline: str = "node", placement: str = "linear",
                      analytical: Prediction | None = None) -> TrainingResult:
    """Simulate ``iterations`` iterations of ``workload`` on ``nodes`` nodes of ``cluster``.

    Parameters
    ----------
    cluster, workload : Cluster, Workload
    nodes : int
    algorithm : str, optional
        Overrides ``workload.algorithm`` (one of ``dlscale.perfmodel.training.workload.ALGORITHMS``).
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
    network : {"analytical", "fast", "flow"}, a NetworkModel object or None, optional
        Who answers communication times (:mod:`dlscale.simulator.training.net`;
        default :func:`~dlscale.simulator.training.net.default_network`: ``"fast"``,
        ``"flow"`` for a parameter-server runtime).
    noise : str or noise model, optional
        ``"none"``, ``"lognormal:SIGMA"``, ``"empirical:FILE"`` (:mod:`dlscale.simulator.training.stragglers`);
        ``None``: the cluster's ``noise``.
    trace : bool or path
        Record a Chrome trace (``result.trace``); a path also writes it (atomically).
    efficiency : bool
        Also give the scaling efficiency, against the closed form's one-node (or
        one-device) run, and the band of every simulated value.
    placement : {"linear", "random", "topology"}
        Ranks on a simulated network (:mod:`dlscale.simulator.topology.placement`).
    cosim_options : dict, optional
        Co-simulation settings (:class:`~dlscale.simulator.training.cosim.CosimOptions` fields).
    trace_ranks, trace_iterations : int
        How many ranks and iterations the trace covers.
    baseline : {"node", "device"}
        Efficiency against one node, or one device alone
        (:func:`dlscale.perfmodel.training.predict.one_device`), running the stack's own
        allreduce, as the closed form gives it (``predict``'s baseline, with the run's
        noise): one simulation per run, none for the baseline.
    analytical : Prediction, optional
        The closed form's answer to the question this run belongs to
        (:func:`analytical_answer` of the same cluster, workload, algorithm, noise and
        baseline, over node counts that include ``nodes``), computed once and handed
        to each of the question's runs; None: computed here for this node count.

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
    return _simulate(cluster, workload, nodes, algorithm=algorithm, iterations=iterations,
                     seed=seed, mode=mode, network=network, noise=noise, trace=trace,
                     efficiency=efficiency, cosim_options=cosim_options,
                     trace_ranks=trace_ranks, trace_iterations=trace_iterations,
                     baseline=baseline, placement=placement, analytical=analytical)


def _simulate(cluster: Cluster, workload: Workload, nodes: int, *,
              algorithm: str | None = None, iterations: int = 20, seed: int = 0,
              mode: str = "timing", network: str | NetworkModel | None = None,
              noise: str | Noise | None = None, trace: bool | str = False,
              efficiency: bool = True, cosim_options: dict | None = None,
              trace_ranks: int = 16, trace_iterations: int = 5, baseline: str = "node",
              placement: str = "linear", analytical: Prediction | None = None
              ) -> TrainingResult:
    """:func:`simulate_training`."""
    if network is None:
        network = default_network(cluster)
    workload = _check(cluster, workload, nodes, algorithm, iterations, mode, network, seed, placement)
    nz = _check_run_options(cluster, workload, baseline, noise, mode, cosim_options)
    nodes = int(nodes)
    lay = layout(cluster, workload, nodes)
    ranks = int(lay.ranks[0])
    mem = _memory(workload, cluster, ranks, float(lay.batch_per_rank[0]))
    res = _new_result(cluster, workload, nodes, ranks, mode, network, nz, seed, mem)
    pred, row = None, 0
    if analytical is not None or mem["fits"]:
        pred, row = _answer_for(res, cluster, workload, baseline, nz, analytical, efficiency)
    if not mem["fits"]:
        res.fits = False
        return res
    tracer = TraceRecorder(ranks, trace_ranks, trace_iterations) if trace else None
    ctx = _context(cluster, workload, nodes, lay, network, nz, seed, int(iterations), tracer,
                   mode, cosim_options, placement)
    if ctx.numerics is not None:
        res.surrogate = ctx.numerics.label
    _record_outcome(res, _run(ctx), ctx)
    if pred is not None:
        res.analytical_iteration_s = float(pred.iteration_s[row])
        if efficiency:
            res.efficiency = _efficiency(res, pred, cluster, baseline)
            res.band = _band(res, pred, row)
    if tracer is not None:
        _record_trace(res, tracer, trace)
    return res


def _band(res: TrainingResult, pred: Prediction, at: int) -> dict[str, tuple[float, float]]:
    """The low and high of each simulated time, rate and efficiency: each corner of
    :func:`dlscale.perfmodel.training.ranges.corners`, as the closed form prices it
    relative to its own central answer (``pred``'s row ``at``), applied to the simulated
    value (the two fidelities charge the same mechanisms; a corner is not simulated
    again)."""
    row = res.to_rows()[0]
    out = {}
    for key, (low, high) in pred.band.items():
        central, value = float(getattr(pred, key)[at]), row.get(key)
        if value is None or not (np.isfinite(value) and np.isfinite(central)) or central <= 0:
            continue
        out[key] = relative_band(value, central, float(low[at]), float(high[at]))
    return out
