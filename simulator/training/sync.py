"""Synchronous data-parallel SGD as a SimPy simulation, every rank resolved.

Per iteration every rank ``r`` draws a compute factor ``f_r`` (:mod:`dlscale.simulator.training.stragglers`)
and runs, from its own start time ``s_r``: the forward pass, the backward pass layer
by layer from the last layer (times from the roofline model, times ``f_r``), then,
after the last gradient message, its optimizer step. The per-rank work is one numpy
array per quantity, so an iteration of tens of thousands of ranks costs a handful
of array operations.

Gradients are packed into buckets as Horovod does (:func:`dlscale.perfmodel.training.sync.buckets`,
last layer first, at most ``fusion_threshold_bytes`` each). A SimPy process per
bucket waits until the bucket is ready on **every** rank (the slowest rank decides:
``max_r(s_r + f_r (forward + backward up to the bucket's earliest layer))``; with
``overlap=False`` the end of the whole backward pass), plus half of the runtime's
cycle time (Horovod's background thread; 0 for stacks without one) to pick it up; it
then takes the communication
channel (a ``simpy.Resource`` of capacity 1: Horovod runs one collective at a time,
in ready order) for its orchestration and its allreduce:

- ``grouping="fusion"``: the runtime's coordination (rank-0 negotiation, a linear
  gather of readiness requests and a binomial broadcast of the response; or the
  response cache's bit-vector allreduce; or none), then the fused allreduce;
- ``grouping="graph-aware"``: the group fires when all its tensors are ready; the
  ranks agree on that with a recursive-doubling allreduce of a bit vector (one bit
  per tensor), with no coordinator (Laanait et al. 2019).

Sparse (IndexedSlices) gradients that are not densified are allgathered after the
dense buckets and summed into the table. Communication overlaps the rest of the
backward pass (slowed while a collective runs beside it, by the runtime's
``overlap_slowdown``: :func:`dlscale.perfmodel.compute.overlap.overlap_stretch`, the closed
form's charge); a rank's iteration ends with its update after both its backward pass
and the last message. The communication times come from the run's
:class:`~dlscale.simulator.training.net.TrainingNetwork` (closed forms or the simulated topology).

Breakdown per rank and iteration: ``compute`` = ``f_r`` x (forward + backward +
update); ``comm`` = per buffer, its background-cycle wait + orchestration +
collective (as in the closed form; so exposed <= comm); ``exposed`` = how long the last
message ends after the slowest rank's backward pass; ``straggler wait`` = the rest of
the rank's idle time (waiting for slower ranks).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training.run import simulate_training
>>> r = simulate_training(get_cluster("summit"), get_workload("resnet50"), 2, iterations=3,
...                       noise="none")
>>> abs(r.iteration_s / r.analytical_iteration_s - 1) < 1e-6
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simpy

from dlscale.perfmodel.compute.memory import sparse_gather_bytes
from dlscale.perfmodel.compute.overlap import compute_slowdown, overlap_stretch
from dlscale.perfmodel.training.sync import Buckets, buckets
from dlscale.simulator.training.common import (
    Breakdown,
    ComputeProfile,
    RunContext,
    RunOutcome,
    compute_profile,
)

__all__ = ["run_sync_sgd"]


def _trace_compute(ctx: RunContext, prof, start: np.ndarray, f: np.ndarray,
                   bwd_end: np.ndarray, end: np.ndarray) -> None:
    tr = ctx.tracer
    assert tr is not None
    names = [layer.name for layer in ctx.workload.model.layers]
    for r in tr.ranks.tolist():
        t = float(start[r])
        for name, d in zip(names, prof.forward_layers_s * f[r], strict=True):
            tr.slice(r, "compute", f"fwd {name}", t, float(d))
            t += float(d)
        for i in range(len(names) - 1, -1, -1):
            d = float(prof.backward_layers_s[i] * f[r])
            tr.slice(r, "compute", f"bwd {names[i]}", t, d)
            t += d
        u = float(prof.update_s * f[r])
        tr.slice(r, "compute", "update", float(end[r]) - u, u)


@dataclass(frozen=True)
class _SyncCosts:
    """What every iteration of a synchronous run repeats: waits, durations, labels."""

    wait_s: float              # half the runtime's cycle (0 on one rank)
    negotiation_s: float       # coordination of each bucket
    durations_s: list[float]   # each bucket's coordination + allreduce
    ready_s: list[float]       # each bucket's ready time from the rank's start, before f_r
    fb_s: float                # forward + backward
    sparse: bool               # an allgather of sparse gradients follows the buckets
    sparse_s: float            # its duration
    orchestration: str         # trace label of the coordination
    group: str                 # trace label of a bucket


def _sync_costs(ctx: RunContext, prof: ComputeProfile, bk: Buckets) -> _SyncCosts:
    """The per-iteration constants of :func:`run_sync_sgd` (network asked in a fixed order)."""
    w, net, R = ctx.workload, ctx.net, ctx.ranks
    rt = ctx.cluster.runtime
    multi = R > 1
    wait = rt.cycle_wait_s if multi else 0.0
    neg = net.negotiation_s(bk.tensors) if multi else 0.0
    durs = [neg + net.allreduce_s(float(b)) if multi else 0.0 for b in bk.bytes]
    stretch = 1.0
    if w.overlap:
        # compute beside communication runs slower (the closed form's function)
        done = rt.achieved_ready(np.asarray([float(prof.backward_done_s[i])
                                             for i in bk.first_layer]), prof.backward_s)
        stretch = float(overlap_stretch(done[:, None], np.asarray(durs)[:, None], wait,
                                        np.array([prof.backward_s]),
                                        compute_slowdown(ctx.cluster, w))[0])
        ready_off = [float(prof.forward_s + d * stretch) for d in done]
    else:
        ready_off = [prof.forward_s + prof.backward_s] * len(bk.bytes)
    sparse = w.model.sparse_params > 0 and not w.sparse_as_dense and multi
    sparse_dur = 0.0
    if sparse:
        total = float(sparse_gather_bytes(w, R, float(ctx.lay.batch_per_rank[0])))
        sparse_dur = neg + net.allgather_s(total) + total * net.gamma_s_per_B
    fb = prof.forward_s + prof.backward_s * stretch
    fusion = w.grouping == "fusion"
    orchestration = ("agree (bit-vector allreduce)" if not fusion
                     else {"rank0": "negotiate (rank 0)",
                           "cache": "agree (response cache bit vector)"}.get(rt.coordination, ""))
    group = "fusion buffer" if fusion else "group"
    return _SyncCosts(wait, neg, durs, ready_off, fb, sparse, sparse_dur, orchestration, group)


def run_sync_sgd(ctx: RunContext) -> RunOutcome:
    """Simulate ``ctx.iterations`` iterations of synchronous SGD (see module docstring)."""
    w, net, R = ctx.workload, ctx.net, ctx.ranks
    prof = compute_profile(ctx.cluster, w, ctx.lay)
    bk = buckets(w, ctx.cluster.runtime)
    multi = R > 1
    c = _sync_costs(ctx, prof, bk)
    wait, neg, durs, ready_off, fb = c.wait_s, c.negotiation_s, c.durations_s, c.ready_s, c.fb_s
    sparse, sparse_dur, orchestration, group = c.sparse, c.sparse_s, c.orchestration, c.group
    env = simpy.Environment()
    channel = simpy.Resource(env, capacity=1)
    acc = Breakdown(R)
    start = np.zeros(R)
    iter_end = np.zeros(ctx.iterations)
    counters: dict = {"buckets": len(bk.bytes), "collectives": 0,
                      # the algorithm of the largest bucket, as predict's rows name it
                      "allreduce": net.algorithm_for(float(bk.bytes.max()))
                      if multi and len(bk.bytes) else ""}
    tr = ctx.tracer

    def collective(k: int, ready_at: float, dur: float, label: str, ends: list):
        yield env.timeout(max(ready_at - env.now, 0.0))
        with channel.request() as req:
            yield req
            t0 = env.now
            yield env.timeout(dur)
            ends.append(env.now)
            counters["collectives"] += 1
            if tr is not None and k < tr.max_iterations:
                for r in tr.ranks.tolist():
                    if neg > 0:
                        tr.slice(r, "comm", orchestration, t0, neg)
                    tr.slice(r, "comm", label, t0 + neg, dur - neg)

    load = ctx.loader_s
    held = 0   # iterations the input pipeline, not the step, ended

    def iterations():
        nonlocal start, held
        for k in range(ctx.iterations):
            f = ctx.noise.draw(ctx.rng, (R,))
            ends: list[float] = []
            procs = [env.process(collective(k, float(np.max(start + f * off)) + wait, d,
                                            f"allreduce {group} {i} ({b / 1e6:.1f} MB)",
                                            ends))
                     for i, (off, d, b) in enumerate(zip(ready_off, durs, bk.bytes,
                                                         strict=True))]
            if procs:
                yield env.all_of(procs)
            bwd_end = start + f * fb
            if sparse:
                ready = max(float(bwd_end.max()) + wait, max(ends, default=0.0))
                yield env.process(collective(k, ready, sparse_dur, "allgather sparse", ends))
            comm_end = max(ends, default=0.0) if multi else 0.0
            end = np.maximum(bwd_end, comm_end) + f * prof.update_s
            comp = f * (fb + prof.update_s)
            acc.compute_s += comp
            acc.comm_s += float(sum(durs) + (sparse_dur if sparse else 0.0)
                                + wait * (len(durs) + sparse))
            exposed = max(0.0, comm_end - float(bwd_end.max())) if multi else 0.0
            acc.exposed_comm_s += exposed
            acc.straggler_wait_s += np.maximum(end - start - comp - exposed, 0.0)
            if tr is not None and k < tr.max_iterations:
                _trace_compute(ctx, prof, start, f, bwd_end, end)
            if ctx.numerics is not None:
                ctx.numerics.sync_step(k, float(end.max()))
            # the input pipeline prepares one node's batch every ``load`` s: the next
            # iteration starts when both the step and the next batch are done
            if load > 0:
                held += bool(np.any(start + load > end))
                end = np.maximum(end, start + load)
            iter_end[k] = float(end.max())
            start = end
            yield env.timeout(max(float(end.min()) - env.now, 0.0))

    env.process(iterations())
    env.run()
    if held and ctx.loader_limit == "storage":
        counters["limit"] = "storage"   # the node's storage set the pace (training.storage)
    times = np.diff(np.concatenate([[0.0], iter_end]))
    return RunOutcome(times, acc.per_iteration(ctx.iterations), float(iter_end[-1]), counters)
