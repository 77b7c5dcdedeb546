"""Round-based EASGD: the original round-robin master, and Sync EASGD.

``easgd`` (Zhang et al. 2015 as run by You et al. 2017)
    Every ``tau`` local steps the master (a CPU process, a SimPy process here) serves
    the workers one at a time in rank order, round-robin: it waits for worker ``i``
    to be ready, exchanges ``W`` bytes each way with it over its link and applies
    the elastic update, ``2 alpha + 2 W beta + W u``. The workers resume when the
    round is over (the analytical model's reading, :mod:`dlscale.perfmodel.training.easgd`).
    GPU workers also copy their weights device -> host -> device every step.
``sync-easgd`` (You et al. 2017)
    Every ``tau`` local steps the center is a binomial-tree reduce of the workers'
    weights plus a broadcast, over all ranks (the network backend's
    ``reduce_broadcast_s``), once the slowest worker is there. Without overlap a
    worker waits for the round; with ``workload.overlap`` it goes on with its next
    ``tau`` steps on the previous center and only waits, at the end of them, for the
    round before to be done (one round in flight); the first block, which waits for
    no round, fills that pipeline and is left out of the iteration times, and of the
    per-iteration parts (compute, communication, exposed communication) with them.

Every local step waits for its batch from the node's input pipeline
(:func:`~dlscale.simulator.training.easgd.batch_ready_s`), as the asynchronous
workers' do.

Per-rank compute is vectorized (one factor array per step), the rounds are SimPy
processes holding a ``simpy.Resource`` (the master, or the communication channel).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training.run import simulate_training
>>> c, w = get_cluster("k80-8gpu"), get_workload("alexnet-cifar10")
>>> orig = simulate_training(c, w, 1, algorithm="easgd", iterations=4)
>>> sync = simulate_training(c, w, 1, algorithm="sync-easgd", iterations=4)
>>> bool(orig.iteration_s > sync.iteration_s)
True
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from dlscale.perfmodel.network.collectives import parameter_server_s
from dlscale.perfmodel.training.easgd import master_update_s_per_B
from dlscale.simulator.training.common import Breakdown, RunContext, RunOutcome
from dlscale.simulator.training.easgd import StepDraws, batch_ready_s, step_time_s, tau_of

__all__ = ["run_rounds"]


def _blocks(iterations: int, tau: int) -> list[range]:
    return [range(s, min(s + tau, iterations)) for s in range(0, iterations, tau)]


class _Rounds:
    """State of one round-based run: the SimPy environment, the master, the blocks."""

    def __init__(self, ctx: RunContext) -> None:
        alg, R = ctx.algorithm, ctx.ranks
        self.ctx, self.alg, self.R = ctx, alg, R
        self.t_step, tau = step_time_s(ctx), tau_of(ctx)
        W = ctx.workload.gradient_bytes
        self.draws = StepDraws(ctx)
        self.acc = Breakdown(R)
        self.env = simpy.Environment()
        self.master = simpy.Resource(self.env, capacity=1)
        self.num, self.tr = ctx.numerics, ctx.tracer
        self.blocks = _blocks(ctx.iterations, tau)
        self.block_end = np.zeros(len(self.blocks))
        self.serve = self.rnd = 0.0
        if alg == "easgd":
            alpha, beta = ctx.net.master_link(alg, W)
            # one worker's turn of the round-robin round (the analytical round is P of them)
            self.serve = float(parameter_server_s(W, 1, alpha, beta,
                                                  master_update_s_per_B(ctx.cluster, alg)))
            self.copy = ctx.net.host_copy_s(W)
        else:
            self.rnd = ctx.net.reduce_broadcast_s(W)
            self.copy = 0.0
        self.overlap = alg == "sync-easgd" and ctx.workload.overlap
        self.load = ctx.loader_s
        self.held = 0   # steps that waited for the input pipeline
        # with overlap, the breakdown's seconds at the end of the first block (the
        # pipeline's fill, which the iteration times leave out)
        self.fill: dict[str, np.ndarray] | None = None

    def fed(self, t: np.ndarray, k: int) -> np.ndarray:
        """``t`` (each worker's time), no earlier than when the batch of step ``k`` is
        there (:func:`~dlscale.simulator.training.easgd.batch_ready_s`): a step, and
        a block with its round, ends when the next batch is there."""
        ready = batch_ready_s(0.0, k, self.load)
        self.held += bool(np.any(t < ready))
        return np.maximum(t, ready)

    def local(self, start: np.ndarray, steps: range) -> np.ndarray:
        """Every worker's ``steps`` local steps from ``start``; returns when each is done."""
        tr, num, acc = self.tr, self.num, self.acc
        t = start.copy()
        for k in steps:
            if k != steps[0]:   # the block's first batch: the block before's end
                t = self.fed(t, k)
            f = self.draws(k)
            d = f * self.t_step
            if tr is not None and k < tr.max_iterations:
                for r in tr.ranks.tolist():
                    tr.slice(r, "compute", f"step {k}", float(t[r]), float(d[r]))
                    if self.copy:
                        tr.slice(r, "comm", "host copy", float(t[r] + d[r]), self.copy)
            t += d + self.copy
            acc.compute_s += d
            # the weights' device -> host -> device copy crosses the host link: it is
            # communication, as the closed form counts it (easgd_times' comm)
            acc.comm_s += self.copy
            acc.exposed_comm_s += self.copy
            if num is not None:
                for w in range(self.R):
                    num.local_step(w, k)
        return t

    def original(self) -> Generator[simpy.Event, object, None]:
        """EASGD's round-robin master: serve the workers in rank order each round."""
        env, tr, num, acc, R, serve = self.env, self.tr, self.num, self.acc, self.R, self.serve
        start = np.zeros(R)
        for b, steps in enumerate(self.blocks):
            ready = self.local(start, steps)
            for w in range(R):                      # round-robin, rank order
                with self.master.request() as req:
                    yield req
                    yield env.timeout(max(float(ready[w]) - env.now, 0.0))
                    t0 = env.now
                    yield env.timeout(serve)
                    if num is not None:
                        num.exchange(w)
                    if tr is not None and b < tr.max_iterations:
                        tr.slice(-1, "master", f"serve w{w}", t0, serve)
                        tr.slice(w, "comm", "exchange", t0, serve)
                    acc.master_queue_s[w] += t0 - float(ready[w])
            end = env.now
            # a worker is away from its steps from being ready until the round ends:
            # its turns' wait, its own exchange and the turns after it, the round the
            # closed form charges as communication (easgd_times: P turns per round);
            # master_queue_s is the part before its own turn
            away = end - ready
            acc.comm_s += away
            acc.exposed_comm_s += away
            start = self.fed(np.full(R, end), steps[-1] + 1)
            self.block_end[b] = float(start.max())
            if num is not None:
                num.step_done_all(steps[-1], end)

    def sync_easgd(self) -> Generator[simpy.Event, object, None]:
        """Sync EASGD: a reduce + broadcast round once the slowest worker is there."""
        env, tr, num, acc, R, rnd = self.env, self.tr, self.num, self.acc, self.R, self.rnd
        overlap, block_end = self.overlap, self.block_end
        start = np.zeros(R)
        prev_end = 0.0
        for b, steps in enumerate(self.blocks):
            ready = self.local(start, steps)
            go = max(float(ready.max()), prev_end)
            yield env.timeout(max(go - env.now, 0.0))
            with self.master.request() as req:
                yield req
                t0 = env.now
                if num is not None:
                    num.round_begin(b)
                yield env.timeout(rnd)
                if num is not None:
                    num.round_end(b)
            end = env.now
            if tr is not None and b < tr.max_iterations:
                for r in tr.ranks.tolist():
                    tr.slice(r, "comm", "reduce+broadcast", t0, rnd)
            acc.comm_s += rnd
            if overlap:
                nxt = np.maximum(ready, prev_end)        # wait for the round before
            else:
                nxt = np.full(R, end)
            wait = nxt - ready
            exposed = max(0.0, float(nxt.max() - ready.max()))
            acc.exposed_comm_s += exposed
            acc.straggler_wait_s += np.maximum(wait - exposed, 0.0) + (
                float(ready.max()) - ready if not overlap else 0.0)
            start = self.fed(nxt, steps[-1] + 1)
            block_end[b] = float(start.max())
            prev_end = end
            if overlap and b == 0:
                self.fill = {k: getattr(acc, k).copy() for k in Breakdown.PARTS}
            if num is not None:
                num.step_done_all(steps[-1], float(block_end[b]))


def run_rounds(ctx: RunContext) -> RunOutcome:
    """Simulate ``easgd`` or ``sync-easgd`` (see module docstring)."""
    run = _Rounds(ctx)
    counters: dict[str, Any] = {"rounds": len(run.blocks)}
    env = run.env
    env.process(run.original() if run.alg == "easgd" else run.sync_easgd())
    env.run()
    if run.held and ctx.loader_limit == "storage":
        counters["limit"] = "storage"   # the node's storage set the pace
    block_end, blocks = run.block_end, run.blocks
    sim_end = max(float(env.now), float(block_end[-1]))
    sizes = np.array([len(s) for s in blocks], dtype=float)
    per_block = np.diff(np.concatenate([[0.0], block_end])) / sizes
    parts = run.acc.per_iteration(ctx.iterations)
    if run.overlap and len(blocks) > 1 and run.fill is not None:
        # one round in flight: the first block waits for no round (the pipeline's
        # fill), so the steady iterations are timed from its end, as the
        # asynchronous runs time theirs from the start-up's; the parts are averaged
        # over the same steps
        per_block, sizes = per_block[1:], sizes[1:]
        fill = run.fill
        parts = {k: (getattr(run.acc, k) - fill[k]) / float(sizes.sum())
                 for k in Breakdown.PARTS}
    times = np.repeat(per_block, sizes.astype(int))
    return RunOutcome(times, parts, sim_end, counters)
