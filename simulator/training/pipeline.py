"""One training iteration of a transformer's tp x pp x dp layout, as events (SimPy).

Every pipeline stage of every data-parallel replica is a SimPy process that runs its
schedule's operations (:mod:`~dlscale.simulator.training.pipeline_schedule`: gpipe,
1f1b, interleaved with virtual chunks) in order:

- **compute** of a forward or backward pass of one microbatch on one model chunk,
  the per-microbatch times ``predict`` uses
  (:func:`~dlscale.perfmodel.training.parallel_time.stage_microbatch_s`: GEMMs by
  the roofline, elementwise bytes, recomputation) over the ``v`` chunks; the first
  stage's embedding and the last stage's logits and loss are charged as ``predict``
  charges them (every stage the larger, on its backward passes);
- **tensor-parallel collectives** per layer (two forward, two backward, two more
  with full recomputation; one for the embedding or the logits; each a ring
  allreduce, or a reduce-scatter and an all-gather with sequence parallelism) timed
  on the routed network on the group's own ranks
  (:meth:`~dlscale.simulator.network.SimulatedNetwork.simulate`, fast mode), once
  per distinct placement of a group inside a node (the node graphs are copies of
  one, so the times are those of every group there). They run alone: inside a node
  the group's links carry nothing else at that moment but the stage's own received
  activations (not modelled as sharing them);
- **pipeline point-to-point**: the output of each pass goes to the stage of the next
  (forward) or previous (backward) virtual stage, each of the ``tp`` ranks its
  ``1 / tp`` share (scatter/gather, then an all-gather inside the receiving node,
  routed as above) to its peer rank, as flows on the routed network
  (:mod:`~dlscale.simulator.training.pipeline_net`) beside every other stage's and
  replica's; a send blocks its stage until delivered (Megatron-LM's 2021
  point-to-point calls wait for their requests), a pass waits for its input;
- **data-parallel exchange** of each stage's gradients (a ring allreduce; ZeRO 1: a
  ring reduce-scatter, the optimizer step on the shard, a ring all-gather; ZeRO 2:
  also a reduce-scatter after every microbatch's backward but the last, which waits
  for it; ZeRO 3: also an all-gather of the weights before every pass, as ``predict``
  prices them, Rajbhandari et al. SC'20 Sec. 7) between
  the real ranks of each data-parallel group, on the same network as the pipelines'
  messages; it starts with the stage's last backward pass when the layout overlaps
  it (``dp_overlap``), else after it (the compute beside the hidden part slowed by
  ``predict``'s closed form,
  :func:`~dlscale.perfmodel.training.parallel_time.overlap_slowdown_s`, charged after
  the pass); then the optimizer step (Adam's bytes at the
  memory bandwidth, as ``predict``); with expert parallelism the dense gradients'
  ring over all ``dp`` replicas, then the experts' over the ``dp / ep`` replicas that
  hold the same experts (``ep`` apart), as ``predict`` prices them;
- **expert-parallel all-to-alls** (``ep > 1``): every MoE layer's dispatch and
  combine inside each pass, pairwise exchanges over the group's real ranks
  (:mod:`~dlscale.simulator.training.pipeline_expert`).

The inter-node links are as the runtime's transport delivers them
(:func:`~dlscale.perfmodel.machine.runtime.with_transport`), as ``predict``'s.
Bubbles, stragglers and the contention of groups sharing links come out of the run.
Symmetry is used where it is exact: the ``tp`` ranks of a group run in lockstep (the
same compute, the same collectives); with per-rank noise (one factor per rank and
iteration, :mod:`~dlscale.simulator.training.stragglers`; the cluster's noise, else
its GPUs' rate spread, :func:`~dlscale.perfmodel.compute.variability.cluster_noise`,
whose expected slowest factor ``predict`` charges) a group computes at its slowest
rank's factor, since every layer's collective waits for it (the factor stretches its
passes' compute and its optimizer step, not its collectives). The ``tp``
ranks' messages between two nodes travel as one flow per rail only where
:func:`~dlscale.simulator.training.pipeline_net.bundling_exact` says that changes no
rate.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.training.expert import local_expert_params
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.perfmodel.training.parallel_time import (
    LLMIteration,
    llm_iteration,
    nccl_node,
    optimizer_step_s,
    overlap_slowdown_s,
    stage_microbatch_s,
)
from dlscale.perfmodel.training.transformer import TransformerSpec
from dlscale.simulator.network.schedules import build_schedule
from dlscale.simulator.network.simulated import SimulatedNetwork
from dlscale.simulator.training.pipeline_expert import ExpertExchange
from dlscale.simulator.training.pipeline_net import GroupFlows, bundling_exact
from dlscale.simulator.training.pipeline_schedule import (
    BACKWARD,
    FORWARD,
    Op,
    producer,
    stage_order,
)
from dlscale.simulator.training.pipeline_trace import PipelineTrace
from dlscale.simulator.training.stragglers import make_noise

__all__ = ["PipelineResult", "check_layout", "simulate_pipeline"]

#: Mixed precision: 2-byte activations and gradients (as parallel_time prices them).
_E = 2.0


@dataclass(frozen=True)
class PipelineResult:
    """One simulated iteration and the closed form's answer to the same question."""

    analytical: LLMIteration
    iteration_s: float
    #: When the last stage's last pass ended (the pipeline's flush).
    pipeline_s: float
    #: Longest time a stage spent computing and sending, of all stages and replicas.
    busy_s: float
    #: Time after the flush that the slowest rank spent on the exchange and the step.
    tail_s: float
    optimizer_s: float
    tp_collective_s: float
    noise: str
    seed: int
    groups_sent: int
    groups_met: int
    bundled: bool
    stage_end_s: np.ndarray = field(repr=False)
    #: ``(group id, sent s, delivered s)`` of every message group, with ``keep_log``
    #: (the expert groups' messages inside a node: ids ``-1 - id``).
    log: list[tuple[int, float, float]] | None = field(default=None, repr=False)
    #: The Chrome trace dict, with ``trace``.
    trace: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def tflops_per_gpu(self) -> float:
        """Achieved TFLOP/s per GPU (the paper's accounting, recomputation included)."""
        a = self.analytical
        return a.flops / (self.iteration_s * a.gpus) / 1e12

    def to_row(self) -> dict[str, Any]:
        """One result row."""
        a = self.analytical
        lay = a.layout
        return {
            "cluster": a.cluster, "model": a.model, "gpus": a.gpus, "tp": lay.tp,
            "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "micro": lay.micro, "global_batch": lay.global_batch,
            "microbatches": lay.microbatches, "schedule": lay.schedule,
            "virtual": lay.virtual, "zero": lay.zero, "sp": lay.sp,
            "recompute": lay.recompute, "iteration_s": self.iteration_s,
            "tflops_per_gpu": self.tflops_per_gpu, "analytical_s": a.iteration_s,
            "vs_analytical": self.iteration_s / a.iteration_s - 1.0,
            "pipeline_s": self.pipeline_s, "busy_s": self.busy_s,
            "bubble_s": self.pipeline_s - self.busy_s, "tail_s": self.tail_s,
            "optimizer_s": self.optimizer_s, "tp_collective_s": self.tp_collective_s,
            "messages": self.groups_sent, "messages_met": self.groups_met,
            "bundled": self.bundled, "noise": self.noise, "seed": self.seed,
            "memory_GB": a.memory.total_B / 1e9, "fits": a.fits,
        }


def check_layout(cluster: Cluster, layout: ParallelLayout) -> None:
    """Raise one line if the simulation cannot run ``layout`` on ``cluster``."""
    dpn = cluster.node.devices_per_node
    if layout.gpus > dpn and layout.gpus % dpn:
        raise ConfigError(f"parallel: tp x pp x dp = {layout.gpus} GPUs must fill whole "
                          f"nodes of {dpn} on {cluster.name}")


class _Run:
    """The processes of one iteration (see the module docstring)."""

    def __init__(self, cluster: Cluster, model: TransformerSpec, layout: ParallelLayout,
                 factors: np.ndarray, every_flow: bool, bundle: bool | None,
                 keep_log: bool, trace: bool) -> None:
        self.layout = lay = layout
        self.t, self.p, self.d, self.v = lay.tp, lay.pp, lay.dp, lay.virtual
        nodes = max(1, math.ceil(lay.gpus / cluster.node.devices_per_node))
        self.net = SimulatedNetwork.from_cluster(cluster, nodes)
        # the tensor-parallel collectives on the links at NCCL's rate, as predict's
        self.coll_net = SimulatedNetwork.from_cluster(nccl_node(cluster), nodes)
        self.env = simpy.Environment()
        full = _E * model.seq * lay.micro * model.hidden
        self.pp_bytes = full / self.t if lay.scatter_gather else full
        self.experts = ExpertExchange(model, lay, self.env, self._ranks, self._ep_send,
                                      self._event)
        exact = bundling_exact(self.net, self._pairs())
        if bundle and not exact:
            raise ConfigError("bundle: the tp ranks' messages can be one flow per rail only "
                              "where that changes no rate (pipeline_net.bundling_exact)")
        self.flows = GroupFlows(self.env, self.net, exact if bundle is None else bundle,
                                every_flow, keep_log)
        # the expert groups' messages inside a node, at NCCL's rate (pipeline_expert)
        self.node_flows = GroupFlows(self.env, self.coll_net, False, every_flow, keep_log)
        fwd, bwd, _tp, extra = stage_microbatch_s(cluster, model, lay)
        n = lay.stage_layers(model)
        self._tp_cache: dict[tuple, float] = {}
        coll = self._tp_time(0, 0, full)
        self.tp_coll = coll
        self.ag = (self._collective("allgather", full, self._ranks(0, 0))
                   if lay.scatter_gather and self.t > 1 and self.p > 1 else 0.0)
        back_tp = (2 + (2 if lay.recompute == "full" else 0)) * n
        ends = 1 if self.p > 1 else 2
        # per pass: (compute s, tensor-parallel s), so a rank's factor stretches only
        # its compute, as predict's expected slowest factor does
        self.op_parts = ((fwd, 2 * n * coll), (bwd + extra, (back_tp + ends) * coll))
        self.factors = factors
        self._events: dict[tuple, simpy.Event] = {}
        self._groups: dict[tuple, Any] = {}
        self.trace = (PipelineTrace(sorted({0, self.d - 1})) if trace else None)
        self.ops_end = np.zeros((self.p, self.d))
        self.end = np.zeros((self.p, self.d))
        self.busy = np.zeros((self.p, self.d))
        self._rings = np.zeros((self.p, self.d), dtype=np.int64)
        params = max(_stage_params(model, lay))
        expert = local_expert_params(model, lay) if lay.ep > 1 else 0.0
        # (replicas, elements) of each data-parallel ring: the dense gradients over
        # all, the experts' over the replicas holding the same ones
        self.dp_rings: list[tuple[list[int] | None, float]] = [
            (list(range(self.d)), params - expert)]
        if lay.ep > 1 and self.d > lay.ep:
            self.dp_rings.append((None, expert))
        self.opt_s = optimizer_step_s(cluster, model, lay)
        self.beside_s = 0.0      # set by simulate_pipeline from predict's answer

    def rank(self, ti: int, di: int, pi: int) -> int:
        """Megatron's rank numbering (tensor fastest, then data, then pipeline)."""
        return ti + self.t * (di + self.d * pi)

    def _ranks(self, s: int, d: int) -> list[int]:
        return [self.rank(ti, d, s) for ti in range(self.t)]

    def _pairs(self) -> np.ndarray:
        out = []
        for s in range(self.p):
            for d in range(self.d):
                for ti in range(self.t):
                    r = self.rank(ti, d, s)
                    if self.p > 1:
                        out.append((r, self.rank(ti, d, (s + 1) % self.p)))
                    if self.d > 1:
                        out.append((r, self.rank(ti, (d + 1) % self.d, s)))
        pairs = np.asarray(out, dtype=np.int64).reshape(-1, 2)
        if self.layout.ep > 1:                       # those the routed network carries
            ep = self.experts.pairs(self.p, self.d)
            host = self.net.rank_host
            pairs = np.concatenate([pairs, ep[host[ep[:, 0]] != host[ep[:, 1]]]])
        return pairs[pairs[:, 0] != pairs[:, 1]]

    def _collective(self, op: str, n_bytes: float, ranks: list[int]) -> float:
        if len(ranks) < 2:
            return 0.0
        host = self.net.rank_host[ranks]
        local = (tuple(int(r) - int(ranks[0]) for r in ranks)
                 if bool(np.all(host == host[0])) else tuple(ranks))
        key = (op, n_bytes, local)
        if key not in self._tp_cache:
            self._tp_cache[key] = float(self.coll_net.simulate(op, n_bytes, ranks,
                                                                "ring").time_s)
        return self._tp_cache[key]

    def _tp_time(self, s: int, d: int, full: float) -> float:
        ranks = self._ranks(s, d)
        if self.layout.sp:
            return (self._collective("reduce-scatter", full, ranks)
                    + self._collective("allgather", full, ranks))
        return self._collective("allreduce", full, ranks)

    def _event(self, key: tuple) -> simpy.Event:
        ev = self._events.get(key)
        if ev is None:
            ev = self._events[key] = self.env.event()
        return ev

    def _ep_send(self, src: list[int], dst: list[int], nbytes: float,
                 key: tuple) -> simpy.Event:
        """An expert group's message: inside one node on its links at NCCL's rate,
        else on the routed network beside every other message."""
        host = self.net.rank_host
        inside = bool(np.all(host[src] == host[src[0]]) and np.all(host[dst] == host[src[0]]))
        return self._send(src, dst, nbytes, key, self.node_flows if inside else self.flows)

    def _send(self, src: list[int], dst: list[int], nbytes: float, key: tuple,
              flows: GroupFlows | None = None) -> simpy.Event:
        flows = self.flows if flows is None else flows
        gkey = (src[0], dst[0], nbytes, flows is self.flows)
        g = self._groups.get(gkey)
        if g is None:
            g = self._groups[gkey] = flows.group(src, dst, nbytes)
        done = flows.send(g)
        waiting = self._events.get(key)
        if waiting is None:                 # the receiver waits on the delivery itself
            self._events[key] = done
        else:
            def arrived(_e: simpy.Event) -> None:
                waiting.succeed()

            done.callbacks.append(arrived)
        return done

    def _consumer(self, op: Op, s: int) -> tuple[int, Op] | None:
        kind, j, c = op
        k, last = c * self.p + s, self.p * self.v - 1
        if kind == FORWARD:
            return None if k == last else ((k + 1) % self.p, (FORWARD, j, (k + 1) // self.p))
        return None if k == 0 else ((k - 1) % self.p, (BACKWARD, j, (k - 1) // self.p))

    def plan(self, s: int) -> list[tuple[int, Op, bool, int, Op | None]]:
        """Stage ``s``'s operations as ``(kind, op, waits for an input, consumer stage
        (-1: none on another stage), consumer op)``, the same for every replica."""
        out: list[tuple[int, Op, bool, int, Op | None]] = []
        for op in stage_order(self.layout.schedule, s, self.p, self.layout.microbatches,
                              self.v):
            prod = producer(op, s, self.p, self.v)
            cons = self._consumer(op, s)
            far = cons is not None and cons[0] != s
            out.append((op[0], op, prod is not None and prod[0] != s,
                        cons[0] if far and cons else -1, cons[1] if far and cons else None))
        return out

    def stage(self, s: int, d: int, plan: list[tuple[int, Op, bool, int, Op | None]]) -> Any:
        env, f = self.env, float(self.factors[s, d])
        dp_done: simpy.Event | None = None
        last_b = max(i for i, step in enumerate(plan) if step[0] == BACKWARD)
        ranks = [self._ranks(st, d) for st in range(self.p)]
        op_s = tuple((c * f + tp) / self.v for c, tp in self.op_parts)
        overlap, zero = self.layout.dp_overlap, self.layout.zero
        moe = self.layout.ep > 1
        for i, (kind, op, waits, cs, cop) in enumerate(plan):
            gather = 0.0
            if waits:                                  # wait for the input to arrive
                yield self._event(("pp", s, d, op))
                gather = self.ag
            if zero == 3 and op[2] == 0 and self.d > 1:   # gather this pass's weights
                yield from self._ring(s, d, "allgather")
            if i == last_b and overlap:
                dp_done = env.process(self.exchange(s, d))
            t0 = env.now
            if moe:
                yield from self.experts.run_pass(s, d, kind, gather + op_s[kind])
            else:
                yield env.timeout(gather + op_s[kind])
            t1 = env.now
            if cs >= 0:
                yield self._send(ranks[s], ranks[cs], self.pp_bytes, ("pp", cs, d, cop))
            if zero >= 2 and kind == BACKWARD and op[2] == 0 and i != last_b and self.d > 1:
                yield from self._ring(s, d, "reduce-scatter")  # this microbatch's gradients
            self.busy[s, d] += env.now - t0
            if self.trace is not None:
                self.trace.add(d, s, f"{'FB'[kind]} {op[1]}.{op[2]}", t0, t1)
                if env.now > t1:
                    self.trace.add(d, s, "send", t1, env.now)
        self.ops_end[s, d] = env.now
        self._event(("flushed", s, d)).succeed()
        if dp_done is None:
            dp_done = env.process(self.exchange(s, d))
        yield dp_done
        self.end[s, d] = env.now

    def exchange(self, s: int, d: int) -> Any:
        """Stage ``s``'s data-parallel exchange on replica ``d``, then its optimizer step."""
        env, t0 = self.env, self.env.now
        if self.d > 1 and self.layout.zero == 0:
            yield from self._ring(s, d, "allreduce")
        elif self.d > 1:
            yield from self._ring(s, d, "reduce-scatter")
        t1 = env.now
        yield self._event(("flushed", s, d))         # the step needs every gradient
        # the last backward pass ran slower beside the exchange: predict's closed form
        # (overlap_slowdown_s of its hidden exchange), charged after the pass, as the
        # data-parallel simulation takes compute.overlap's
        tb = env.now
        if self.beside_s > 0:
            yield env.timeout(self.beside_s)
        t2 = env.now
        yield env.timeout(self.opt_s * float(self.factors[s, d]))
        t3 = env.now
        if self.d > 1 and self.layout.zero >= 1:
            yield from self._ring(s, d, "allgather")
        if self.trace is not None:
            if t1 > t0:
                self.trace.add(d, s, "data-parallel " + ("allreduce" if self.layout.zero == 0
                                                         else "reduce-scatter"), t0, t1)
            if t2 > tb:
                self.trace.add(d, s, "compute slowed beside the exchange", tb, t2)
            self.trace.add(d, s, "optimizer step", t2, t3)
            if env.now > t3:
                self.trace.add(d, s, "data-parallel allgather", t3, env.now)

    def _ring(self, s: int, d: int, op: str) -> Any:
        """Ring ``op`` of stage ``s``'s data-parallel groups, as replica ``d`` runs it
        (every replica runs the same rings in the same order: the k-th meets the k-th):
        all replicas' dense gradients, then (ep > 1) the experts' of the replicas
        ``ep`` apart that hold the same ones."""
        e = self.layout.dp_element_bytes(op)
        for members, elements in self.dp_rings:
            if members is None:
                members = list(range(d % self.layout.ep, self.d, self.layout.ep))
            yield from self._ring_over(s, d, op, members, e * elements)

    def _ring_over(self, s: int, d: int, op: str, members: list[int], nbytes: float) -> Any:
        k = self._rings[s, d]
        self._rings[s, d] += 1
        me, tag = members.index(d), members[0]
        step = 0
        for ph in build_schedule(op, "ring", len(members), nbytes):
            sends = np.flatnonzero(ph.src == me)
            recvs = np.flatnonzero(ph.dst == me)
            for _ in range(ph.repeat):
                waits = [self._send(self._ranks(s, d), self._ranks(s, members[int(ph.dst[m])]),
                                    float(ph.nbytes[m]), (op, s, tag, k, step, int(m)))
                         for m in sends]
                waits += [self._event((op, s, tag, k, step, int(m))) for m in recvs]
                yield simpy.AllOf(self.env, waits)
                step += 1

    def run(self) -> None:
        for s in range(self.p):
            plan = self.plan(s)
            for d in range(self.d):
                self.env.process(self.stage(s, d, plan))
        self.env.run()


def _stage_params(model: TransformerSpec, layout: ParallelLayout) -> tuple[float, float]:
    from dlscale.perfmodel.compute.llm_memory import stage_params

    return stage_params(model, layout, "first"), stage_params(model, layout, "last")


def simulate_pipeline(cluster: Cluster, model: TransformerSpec, layout: ParallelLayout, *,
                      noise: str | None = None, seed: int = 0,
                      every_flow: bool = False, bundle: bool | None = None,
                      keep_log: bool = False, trace: bool = False) -> PipelineResult:
    """Simulate one iteration of ``model`` trained with ``layout`` on ``cluster``.

    Parameters
    ----------
    cluster : Cluster
        The job takes its first ``tp x pp x dp / devices_per_node`` nodes, ranks
        placed in order (Megatron's numbering, one rank per device).
    model : TransformerSpec
    layout : ParallelLayout
        Checked against the model and the machine first (one line).
    noise : str, optional
        Per-rank compute noise (``none``, ``lognormal:SIGMA``, ``empirical:FILE``);
        None: the cluster's, else its GPUs' rate spread
        (:func:`~dlscale.perfmodel.compute.variability.cluster_noise`).
    seed : int
        Seed of the noise draws (the same seed, the same answer bit for bit).
    every_flow : bool
        Put every message group into the flow model, alone or not (tests).
    bundle : bool, optional
        Send a group's ``tp`` messages as one flow per rail; None: where that is
        exact (:func:`~dlscale.simulator.training.pipeline_net.bundling_exact`);
        False: never (tests).
    keep_log : bool
        Keep when each message group was sent and delivered (tests).
    trace : bool
        Record a Chrome trace of the first and last replicas' stages
        (:mod:`~dlscale.simulator.training.pipeline_trace`) in the result's ``trace``.

    Returns
    -------
    PipelineResult
        The simulated iteration and ``predict``'s answer (:func:`llm_iteration`) for
        the run's noise.
    """
    layout.check(model)
    check_layout(cluster, layout)
    # the cluster's noise, else its GPUs' central rate spread (compute.variability),
    # the distribution whose expected slowest factor llm_iteration charges: predict's
    # answer beside it is for the run's noise (as simulator.training.run's)
    nz = make_noise(cluster_noise(cluster) if noise is None else noise)
    analytical = llm_iteration(dataclasses.replace(cluster, noise=nz.spec) if nz.spec
                               else cluster, model, layout)
    draws = nz.draw(np.random.default_rng(seed), (layout.gpus,))
    # a tensor-parallel group waits for its slowest rank at every layer's collective
    factors = draws.reshape(layout.pp, layout.dp, layout.tp).max(axis=2)
    # the inter-node links as the runtime's transport delivers them (llm_iteration's)
    run = _Run(with_transport(cluster), model, layout, factors, every_flow, bundle, keep_log,
               trace)
    run.beside_s = overlap_slowdown_s(with_transport(cluster), analytical.dp_comm_s,
                                      analytical.dp_exposed_s)
    run.run()
    iteration = float(run.end.max())
    flush = float(run.ops_end.max())
    return PipelineResult(
        analytical, iteration, flush, float(run.busy.max()),
        float((run.end - run.ops_end).max()), run.opt_s, run.tp_coll, nz.spec or "sample",
        seed, run.flows.sent + run.node_flows.sent, run.flows.met + run.node_flows.met,
        run.flows.bundle, run.end.copy(), _log(run),
        run.trace.build() if run.trace is not None else None)


def _log(run: _Run) -> list[tuple[int, float, float]] | None:
    main, node = run.flows.log, run.node_flows.log
    if main is None or node is None:
        return None
    return main + [(-1 - g, t0, t1) for g, t0, t1 in node]
