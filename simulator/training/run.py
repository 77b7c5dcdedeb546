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
import math
import os

import numpy as np

from dlscale.perfmodel.compute.memory import memory_per_rank
from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.limits import check_rank_steps
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.analytical import NetworkModel
from dlscale.perfmodel.training.iteration import iteration_times
from dlscale.perfmodel.training.outside import loader_rate_per_node
from dlscale.perfmodel.training.predict import baseline_workload, one_device
from dlscale.perfmodel.training.rank_layout import Layout, layout
from dlscale.perfmodel.training.workload import ALGORITHMS, Workload
from dlscale.simulator.topology.placement import PLACEMENTS
from dlscale.simulator.training.common import RunContext, RunOutcome, compute_profile
from dlscale.simulator.training.net import DEFAULT_NETWORK, NETWORKS, make_training_network
from dlscale.simulator.training.result import TrainingResult
from dlscale.simulator.training.stragglers import Noise, make_noise
from dlscale.simulator.training.trace import TraceRecorder

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
        "workspace_bytes": float(v.workspace_bytes[0]),
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
    if cluster.runtime.parameter_server:
        _check_ps(cluster, workload, int(nodes), network, placement, mode)
    if workload.algorithm != "sync-sgd" and math.isfinite(loader_rate_per_node(cluster, workload)):
        limit = iteration_times(cluster, workload, [int(nodes)]).limit
        if limit is not None and limit[0] == "input-pipeline":
            raise ConfigError(
                f"workload {workload.name!r}: its input pipeline (loader "
                f"{loader_rate_per_node(cluster, workload):g} samples/s per node) bounds the "
                f"step, which is simulated for sync-sgd only, not {workload.algorithm}; give "
                f"data = 'synthetic' or use predict")
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
                       cosim_options: dict | None) -> tuple[Cluster, Workload, Noise]:
    """Check ``baseline``, ``noise`` and the co-simulation options, in that order.

    Returns the baseline run's cluster and workload ("node": the same; "device": one
    device, :func:`dlscale.perfmodel.training.predict.one_device`) and the noise model.
    """
    if baseline not in ("node", "device"):
        raise unknown_name("baseline", baseline, ("node", "device"))
    base = baseline_workload(workload)  # the stack's own allreduce: one baseline per question
    base_cluster, base_workload = (cluster, base) if baseline == "node" \
        else one_device(cluster, base)
    nz = make_noise(cluster.noise if noise is None else noise)
    if mode == "cosim":
        from dlscale.simulator.training.cosim import check_cosim_options

        check_cosim_options(cosim_options or {})
    return base_cluster, base_workload, nz


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


def _record_outcome(res: TrainingResult, out: RunOutcome, ctx: RunContext, nz: Noise,
                    reference: bool = True) -> None:
    """Copy the run's outcome into ``res`` and add the analytical reference figure
    (unless ``reference`` is false: a baseline run, whose reference no one reads)."""
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
    if not reference:
        return
    # the analytical reference with the run's noise (its expected slowest rank), where
    # the noise has a spec (not a sample given as an array)
    ref = dataclasses.replace(cluster, noise=nz.spec) if nz.spec else cluster
    res.analytical_iteration_s = float(iteration_times(ref, workload, ctx.nodes).iteration_s[0])


def _runs(res: TrainingResult) -> str:
    """What a baseline run ran, for the header line: ``"auto (ring)"``."""
    if res.algorithm != "sync-sgd":
        return res.algorithm
    if res.counters.get("exchange") == "parameter-server":
        return "parameter-server"
    return f"auto ({res.counters.get('allreduce') or 'one rank: no allreduce'})"


#: Iterations of a one-node baseline run at most (a row's efficiency divides by it).
BASELINE_ITERATIONS = 20


@dataclasses.dataclass(frozen=True)
class _Baseline:
    """What the efficiency of a run divides by: the one-node (or one-device) run of
    the same settings with the stack's own allreduce, and the key under which the runs
    of one question share it (:func:`simulate_training`'s ``baselines``)."""

    cluster: Cluster
    workload: Workload
    kind: str                          # "node" or "device"
    iterations: int
    seed: int
    network: str | NetworkModel
    noise: Noise
    placement: str

    def key(self) -> tuple:
        spec = self.noise.spec or id(self.noise)   # a sample given as an array: its object
        net = self.network if isinstance(self.network, str) else id(self.network)
        return (self.cluster, self.workload, self.kind, self.iterations, self.seed, net, spec,
                self.placement)

    def run(self) -> TrainingResult:
        """Simulate it (timing only, no efficiency, no analytical reference)."""
        return _simulate(self.cluster, self.workload, 1, iterations=self.iterations,
                         seed=self.seed, mode="timing", network=self.network,
                         noise=self.noise, efficiency=False, placement=self.placement,
                         reference=False)


def _baseline_of(base_cluster: Cluster, base_workload: Workload, baseline: str,
                 iterations: int, seed: int, network: str | NetworkModel, nz: Noise,
                 placement: str) -> _Baseline:
    """The baseline run of a run with these settings (an object network: the closed
    forms, block placement)."""
    named = isinstance(network, str)
    return _Baseline(base_cluster, base_workload, baseline,
                     min(int(iterations), BASELINE_ITERATIONS), int(seed),
                     network if named else "analytical", nz, placement if named else "linear")


def _is_own_baseline(res: TrainingResult, ctx: RunContext, base: _Baseline, mode: str,
                     network: str | NetworkModel, placement: str) -> bool:
    """Whether the run ``res`` (of ``ctx``) is, step for step, its own baseline run:
    one node, the baseline's iterations, seed, noise and network, and the workload's
    allreduce either the stack's own or, for a forced collective (``--collective
    ring``), what the stack's own runs for every bucket (same algorithm and closed-form
    time: the network is asked the same questions), so that the one simulation
    answers both."""
    if (res.nodes != 1 or base.kind != "node" or mode != "timing"
            or ctx.iterations != base.iterations or base.network != network
            or base.placement != placement or base.noise is not ctx.noise
            or base.cluster != ctx.cluster):
        return False
    if base.workload == ctx.workload:
        return True
    if dataclasses.replace(ctx.workload, collective=base.workload.collective) != base.workload \
            or ctx.workload.algorithm != "sync-sgd":
        return False
    if ctx.ranks < 2:
        return True                              # one rank: no allreduce to choose
    from dlscale.perfmodel.training.sync import buckets, workload_allreduce

    sizes = np.asarray(buckets(ctx.workload, ctx.cluster.runtime).bytes, dtype=float)
    net = ctx.net
    t_run, n_run = workload_allreduce(net.cluster, ctx.workload, net.lay, sizes)
    t_own, n_own = workload_allreduce(net.cluster, base.workload, net.lay, sizes)
    return bool(np.array_equal(np.asarray(n_run), np.asarray(n_own))
                and np.array_equal(np.asarray(t_run), np.asarray(t_own)))


def _efficiency(res: TrainingResult, base: _Baseline, cluster: Cluster, collective: str,
                own: bool, baselines: dict | None) -> float | None:
    """Throughput over that of a one-node (or one-device) run with the same settings
    and the stack's own allreduce (:func:`~dlscale.perfmodel.training.predict.baseline_workload`;
    ``collective`` is the run's own); records what the baseline ran on ``res``.

    The baseline run is ``res`` itself where ``own`` (:func:`_is_own_baseline`), else
    the one in ``baselines`` under its key, else simulated (and kept there). 1.0 for
    one node running the baseline itself; ``None`` where the baseline does not fit.
    """
    nodes = res.nodes
    if own and baselines is not None:
        baselines.setdefault(base.key(), res)
    if nodes == 1 and base.kind == "node" and base.workload.collective == collective:
        res.baseline_runs, res.baseline_iteration_s = _runs(res), res.iteration_s
        return 1.0
    one = res if own else baselines.get(base.key()) if baselines is not None else None
    if one is None:
        one = base.run()
        if baselines is not None:
            baselines[base.key()] = one
    units = nodes * (1 if base.kind == "node" else cluster.node.devices_per_node)
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
                      mode: str = "timing", network: str | NetworkModel = DEFAULT_NETWORK,
                      noise: str | Noise | None = None, trace: bool | str = False,
                      efficiency: bool = True, cosim_options: dict | None = None,
                      trace_ranks: int = 16, trace_iterations: int = 5,
                      baseline: str = "node", placement: str = "linear",
                      baselines: dict | None = None) -> TrainingResult:
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
        (:func:`dlscale.perfmodel.training.predict.one_device`), with the stack's own allreduce.
    baselines : dict, optional
        The baseline runs of one question, shared by its runs (a command's rows): a run
        takes its baseline from here where an earlier one left it (or was it: one node
        with the baseline's settings) instead of simulating it again, and leaves it
        here. Empty at first; the keys are this module's.

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
                     baseline=baseline, placement=placement, baselines=baselines)


def _simulate(cluster: Cluster, workload: Workload, nodes: int, *,
              algorithm: str | None = None, iterations: int = 20, seed: int = 0,
              mode: str = "timing", network: str | NetworkModel = DEFAULT_NETWORK,
              noise: str | Noise | None = None, trace: bool | str = False,
              efficiency: bool = True, cosim_options: dict | None = None,
              trace_ranks: int = 16, trace_iterations: int = 5, baseline: str = "node",
              placement: str = "linear", baselines: dict | None = None,
              reference: bool = True) -> TrainingResult:
    """:func:`simulate_training`; without ``reference``, no analytical reference (a
    baseline run)."""
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
    _record_outcome(res, _run(ctx), ctx, nz, reference)
    if efficiency:
        base = _baseline_of(base_cluster, base_workload, baseline, iterations, seed, network,
                            nz, placement)
        own = _is_own_baseline(res, ctx, base, mode, network, placement)
        res.efficiency = _efficiency(res, base, cluster, workload.collective, own, baselines)
        res.band = _band(res, cluster, workload, baseline, nz)
    else:   # a baseline run: its band is never shown
        res.efficiency = 1.0 if nodes == 1 else res.efficiency
    if tracer is not None:
        _record_trace(res, tracer, trace)
    return res


def _band(res: TrainingResult, cluster: Cluster, workload: Workload, baseline: str,
          nz: Noise) -> dict[str, tuple[float, float]]:
    """The low and high of each simulated time, rate and efficiency: each corner of
    :func:`dlscale.perfmodel.training.ranges.corners`, as the closed form prices it relative to
    its own central answer, applied to the simulated value (the two fidelities charge
    the same mechanisms; a corner is not simulated again). Empty where the closed form
    cannot price the configuration."""
    from dlscale.perfmodel.training.ranges import predict_range

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
