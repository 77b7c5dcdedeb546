"""The EASGD family and the asynchronous SGD baselines as SimPy processes with a master.

Notation as in :mod:`dlscale.perfmodel.training.easgd`: ``t`` one local step of a
worker (forward + backward, plus its own update for the EASGD variants; the SGD
baselines leave the update to the master), ``W`` bytes of weights, ``tau`` the
communication period (1 for the SGD baselines). Each worker draws its compute factor
per step (:mod:`dlscale.simulator.training.stragglers`).

Asynchronous algorithms (``async-easgd``, ``async-measgd``, ``async-sgd``,
``async-msgd``): one SimPy process per worker and a master that is a real resource,
a ``simpy.Resource`` of capacity 1 (the lock), served first come first served. After
``tau`` local steps a worker queues for the master; holding it, it pushes ``W`` bytes
and pulls ``W`` bytes over the master's link (``2 (alpha + W beta)``) and leaves with
the new center; the master keeps the lock while it applies the exchange to its
memory (``k W / bandwidth``, ``k`` from :data:`~dlscale.perfmodel.training.easgd.MASTER_ARRAYS`).
With more workers the queue grows and the master saturates.

Hogwild variants (``hogwild-easgd``, ``hogwild-sgd``): no lock. Messages share the
master's link (:class:`~dlscale.simulator.training.master.SharedPipe`, processor sharing), and each
exchange is applied by its own master thread on one core, at ``1 / cores`` of the
memory bandwidth (its fair share of the chip; a locked master applies one update at
a time with all cores), up to ``cores`` updates at once sharing the bandwidth. The
worker does not wait for the update, so the throughput bounds stay those of the
analytical model (``1 / max(link, k W / bandwidth)``). An update is a read-modify-write of the center, chunk by chunk;
two updates whose read-modify-write of the same chunk overlap in simulated time lose
the earlier write, and the lost chunk updates are counted (and, in co-simulation,
really lost from the center array).

Real data: a worker's step ends when its next batch is there, its share of the node's
input pipeline (:func:`batch_ready_s` of
:func:`dlscale.perfmodel.training.outside.loader_s`), so no worker steps faster than
the closed form's input-bound iteration.

Round-based algorithms (``easgd``, ``sync-easgd``): :mod:`dlscale.simulator.training.easgd_rounds`.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training.run import simulate_training
>>> c, w = get_cluster("cori-knl"), get_workload("googlenet")
>>> few = simulate_training(c, w, 4, algorithm="async-sgd", iterations=30)
>>> many = simulate_training(c, w, 256, algorithm="async-sgd", iterations=30)
>>> bool(many.summary()["master_queue_s"] > few.summary()["master_queue_s"])
True
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from dlscale.perfmodel.training.easgd import MASTER_ARRAYS, exchange_s, period
from dlscale.perfmodel.training.workload import SGD_FAMILY
from dlscale.simulator.training.common import Breakdown, RunContext, RunOutcome, compute_profile
from dlscale.simulator.training.master import SharedPipe

__all__ = ["ASYNC", "HOGWILD", "HogwildRun", "LockedRun", "StepDraws", "batch_ready_s",
           "measured_completions", "step_time_s"]

#: Algorithms with a first-come-first-served master.
ASYNC = ("async-easgd", "async-measgd", "async-sgd", "async-msgd")
#: Lock-free master.
HOGWILD = ("hogwild-easgd", "hogwild-sgd")


class StepDraws:
    """Per-step compute factors of all workers, drawn lazily in step order (seeded)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._rows: list[np.ndarray] = []

    def __call__(self, k: int) -> np.ndarray:
        while len(self._rows) <= k:
            self._rows.append(self.ctx.noise.draw(self.ctx.rng, (self.ctx.ranks,)))
        return self._rows[k]


def step_time_s(ctx: RunContext) -> float:
    """One local step of a worker, noise-free."""
    alg = ctx.algorithm
    prof = compute_profile(ctx.cluster, ctx.workload, ctx.lay, momentum=alg == "async-measgd")
    fb = prof.forward_s + prof.backward_s
    return fb if alg in SGD_FAMILY else fb + prof.update_s


def tau_of(ctx: RunContext) -> int:
    """Communication period: the workload's tau, 1 for the SGD baselines."""
    return period(ctx.workload)


def batch_ready_s(first_s: float, k: int, loader_s: float) -> float:
    """When a worker's batch for its step ``k`` is ready: its node's input pipeline
    delivers the worker's share of the node's samples, one batch every ``loader_s``
    (:func:`dlscale.perfmodel.training.outside.loader_s`, 0: no bound), from the
    worker's first step at ``first_s`` (its first batch prepared before it; a step
    ends when the next batch is there, so ``k`` steps take at least ``k loader_s``,
    the closed form's ``iteration >= loader_s``,
    :func:`~dlscale.perfmodel.training.outside.with_loader`).

    The loader prepares batches ahead of the step that takes them (a prefetch queue,
    as PyTorch's ``DataLoader`` and ``tf.data`` keep), so it does not stop while a
    worker exchanges with the master or waits for a round: the bound holds at every
    ``tau``. The queue is not bounded here: where the step is the slower, the loader
    holds back no step either way. (The allreduce path's iterations wait for the
    batch prepared during the iteration before, the same bound for steps that all
    exchange.)

    Examples
    --------
    >>> batch_ready_s(2.0, 3, 0.5), batch_ready_s(2.0, 3, 0.0)
    (3.5, 2.0)
    """
    return first_s + k * loader_s


def measured_completions(done: list[float], ranks: int) -> np.ndarray:
    """Which step completions the iteration times span
    (:func:`completions_to_iterations`): indices into ``done``, every completion after
    the first ``ranks`` up to the last whole block of ``ranks``; with a single block,
    that block.

    Examples
    --------
    >>> measured_completions([1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0], 2).tolist()
    [2, 3, 4, 5]
    """
    order = np.argsort(np.asarray(done), kind="stable")
    blocks = len(order) // ranks
    return order[ranks:blocks * ranks] if blocks > 1 else order[:ranks]


def completions_to_iterations(done: list[float], ranks: int) -> np.ndarray:
    """Times per iteration from step completion times: one per ``ranks`` completions.

    The first ``ranks`` completions (the start-up, when workers join the master one
    at a time) open the measurement; with a single block it is timed from 0.

    Examples
    --------
    >>> completions_to_iterations([1.0, 1.5, 2.0, 2.5, 3.0, 3.5], 2).tolist()
    [1.0, 1.0]
    """
    c = np.sort(np.asarray(done))
    ends = c[ranks - 1::ranks]
    return np.diff(ends) if len(ends) > 1 else ends


class _AsyncRun:
    """One asynchronous run: a SimPy process per worker exchanging with a master.

    The steps of a worker (:meth:`worker`) are named methods: :meth:`join`, then per
    step :meth:`local_step` and, every ``tau`` steps, :meth:`exchange`, which the
    locked (:class:`LockedRun`) and lock-free (:class:`HogwildRun`) masters
    implement, each with its own :meth:`apply` of an exchange to the center.
    """

    def __init__(self, ctx: RunContext) -> None:
        alg = ctx.algorithm
        self.ctx, self.R, self.K = ctx, ctx.ranks, ctx.iterations
        self.t_step, self.tau = step_time_s(ctx), tau_of(ctx)
        self.W = ctx.workload.gradient_bytes
        self.alpha, self.beta = ctx.net.master_link(alg, self.W)
        self.mem_bw = ctx.cluster.node.device.training_memory_bandwidth_Bps
        self.upd_bytes = MASTER_ARRAYS[alg] * self.W
        self.num, self.tr = ctx.numerics, ctx.tracer
        self.env = simpy.Environment()
        self.draws = StepDraws(ctx)
        self.acc = Breakdown(self.R)
        self.done: list[float] = []
        # per completion: its worker and the breakdown's seconds of its step, so that
        # the parts are averaged over the steps the iteration times span
        self.done_by: list[int] = []
        self.done_parts: list[np.ndarray] = []
        self.counters: dict[str, Any] = {"master_exchanges": 0, "lost_updates": 0,
                                         "chunk_updates": 0}
        self.load = ctx.loader_s
        self.held = 0   # steps that waited for the input pipeline

    def trace(self, w: int, k: int, category: str, name: str, t0: float, d: float) -> None:
        """A slice of worker ``w``'s timeline, if it and step ``k`` are traced."""
        tr = self.tr
        if tr is not None and k < tr.max_iterations and tr.traced(w):
            tr.slice(w, category, name, t0, d)

    def join(self, w: int) -> Generator[simpy.Event, object, None]:
        """Joining: one exchange with the master each (push the initial weights, pull
        the center), served one worker at a time before training starts."""
        yield self.env.timeout((w + 1) * exchange_s(self.alpha, self.beta, self.W))

    def local_step(self, w: int, k: int) -> Generator[simpy.Event, object, None]:
        """Step ``k`` of worker ``w``: its compute time times its drawn factor."""
        f = float(self.draws(k)[w])
        t0 = self.env.now
        if self.num is not None:
            self.num.local_step(w, k)
        yield self.env.timeout(f * self.t_step)
        self.acc.compute_s[w] += f * self.t_step
        self.trace(w, k, "compute", f"step {k}", t0, f * self.t_step)

    def exchange(self, w: int, k: int) -> Generator[simpy.Event, object, None]:
        """Push the worker's weights to the master and pull the center."""
        raise NotImplementedError

    def input_wait(self, k: int, first: float) -> Generator[simpy.Event, object, None]:
        """Wait for the batch of step ``k`` (:func:`batch_ready_s`)."""
        ready = batch_ready_s(first, k, self.load)
        if ready > self.env.now:
            self.held += 1
            yield self.env.timeout(ready - self.env.now)

    def worker(self, w: int) -> Generator[simpy.Event, object, None]:
        """Worker ``w``: join, then ``K`` local steps with an exchange every ``tau``;
        a step ends when the worker has its next batch from the node's input pipeline
        (as the allreduce path's iteration ends when the next can start)."""
        yield from self.join(w)
        first = self.env.now
        for k in range(self.K):
            before = self.acc.rank_parts(w)
            yield from self.local_step(w, k)
            if (k + 1) % self.tau == 0 or k == self.K - 1:
                yield from self.exchange(w, k)
                self.counters["master_exchanges"] += 1
            yield from self.input_wait(k + 1, first)
            self.done.append(self.env.now)
            self.done_by.append(w)
            self.done_parts.append(self.acc.rank_parts(w) - before)
            if self.num is not None:
                self.num.step_done(w, k, self.env.now)

    def busy_s(self) -> float:
        """Seconds the master was busy (its link or its memory, whichever more)."""
        raise NotImplementedError

    def run(self) -> RunOutcome:
        """Run every worker to its last step; iteration times, breakdown, counters."""
        for w in range(self.R):
            self.env.process(self.worker(w))
        self.env.run()
        end = float(self.env.now)
        busy = self.busy_s()
        self.counters["master_busy_fraction"] = busy / end if end > 0 else 0.0
        if self.held and self.ctx.loader_limit == "storage":
            self.counters["limit"] = "storage"   # the node's storage set the pace
        return RunOutcome(completions_to_iterations(self.done, self.R), self.measured_parts(),
                          end, self.counters)

    def measured_parts(self) -> dict[str, np.ndarray]:
        """Each worker's breakdown per step over the steps the iteration times span
        (:func:`measured_completions`: the start-up's steps, when the workers join
        the master one after the other, left out of both)."""
        at = measured_completions(self.done, self.R)
        who = np.asarray(self.done_by, dtype=np.int64)[at]
        sums = np.zeros((self.R, len(Breakdown.PARTS)))
        np.add.at(sums, who, np.asarray(self.done_parts).reshape(-1, len(Breakdown.PARTS))[at])
        steps = np.maximum(np.bincount(who, minlength=self.R), 1)
        return {k: sums[:, i] / steps for i, k in enumerate(Breakdown.PARTS)}


class LockedRun(_AsyncRun):
    """A master behind a lock (``simpy.Resource`` of capacity 1), first come first served."""

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.lock = simpy.Resource(self.env, capacity=1)
        self.master_busy_s = 0.0

    def queue_length(self) -> None:
        """Record the master's queue on the trace's counter track."""
        if self.tr is not None:
            self.tr.counter("master queue", self.env.now, len(self.lock.queue))

    def apply(self, req: simpy.resources.resource.Request,
              w: int) -> Generator[simpy.Event, object, None]:
        """The master applies worker ``w``'s exchange to its memory, then releases the lock."""
        env, tr = self.env, self.tr
        t0 = env.now
        yield env.timeout(self.upd_bytes / self.mem_bw)
        self.master_busy_s += env.now - t0
        if (tr is not None and tr.traced(w)
                and self.counters["master_exchanges"] <= 64 * len(tr.ranks)):
            tr.slice(-1, "master", f"apply w{w}", t0, env.now - t0)
        self.lock.release(req)
        self.queue_length()

    def exchange(self, w: int, k: int) -> Generator[simpy.Event, object, None]:
        """Queue for the lock; holding it, push and pull ``W`` bytes each."""
        env, acc = self.env, self.acc
        tq = env.now
        req = self.lock.request()
        self.queue_length()
        yield req
        ts = env.now
        acc.master_queue_s[w] += ts - tq
        xfer = exchange_s(self.alpha, self.beta, self.W)
        yield env.timeout(xfer)
        self.master_busy_s += xfer
        if self.num is not None:
            self.num.exchange(w)
        # the wait for the lock is time away from compute for the exchange: it counts
        # in the communication, as the closed form's saturated master does
        # (easgd_times' comm); master_queue_s is that part of it
        acc.comm_s[w] += env.now - tq
        acc.exposed_comm_s[w] += env.now - tq
        self.trace(w, k, "comm", "wait master", tq, ts - tq)
        self.trace(w, k, "comm", "push+pull", ts, xfer)
        env.process(self.apply(req, w))

    def busy_s(self) -> float:
        """Seconds the master held the lock, transferring or applying."""
        return self.master_busy_s

    def run(self) -> RunOutcome:
        out = super().run()
        out.counters.pop("lost_updates")
        out.counters.pop("chunk_updates")
        return out


class HogwildRun(_AsyncRun):
    """A lock-free master: shared link, one master thread per exchange, lost updates."""

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.chunks = int(self.num.chunks) if self.num is not None else 1
        self.link = SharedPipe(self.env, 1.0 / self.beta)
        # lock-free: each exchange is applied by its own master thread on one core
        cores = max(int(ctx.cluster.node.device.cores), 1)
        self.mem = SharedPipe(self.env, self.mem_bw, self.mem_bw / cores)
        self.version = np.zeros(self.chunks, dtype=np.int64)

    def apply(self, w: int, payload: np.ndarray | None) -> Generator[simpy.Event, object, None]:
        """Read-modify-write of the center, chunk by chunk; overlapping writes are lost."""
        num, counters = self.num, self.counters
        for j in range(self.chunks):
            token = num.hog_read(w, j, payload) if num is not None and payload is not None \
                else None
            seen = int(self.version[j])
            yield self.mem.transfer(self.upd_bytes / self.chunks)
            counters["lost_updates"] += int(self.version[j]) - seen
            counters["chunk_updates"] += 1
            self.version[j] += 1
            if num is not None and token is not None:
                num.hog_write(w, j, token)

    def exchange(self, w: int, k: int) -> Generator[simpy.Event, object, None]:
        """Push ``W`` bytes over the shared link, start the update, pull ``W`` bytes."""
        env, num = self.env, self.num
        tq = env.now
        payload = num.hog_payload(w) if num is not None else None
        yield env.timeout(self.alpha)
        yield self.link.transfer(self.W)
        env.process(self.apply(w, payload))
        yield env.timeout(self.alpha)
        if num is not None:
            num.hog_pull(w)
        yield self.link.transfer(self.W)
        self.acc.comm_s[w] += env.now - tq
        self.acc.exposed_comm_s[w] += env.now - tq
        self.trace(w, k, "comm", "exchange (no lock)", tq, env.now - tq)

    def busy_s(self) -> float:
        """The busier of the master's link and memory; records the peak in flight."""
        self.counters["peak_in_flight"] = int(self.link.peak)
        return max(self.link.busy_s, self.mem.busy_s)
