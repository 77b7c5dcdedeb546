"""The EASGD family and the asynchronous SGD baselines as SimPy processes with a master.

Notation as in :mod:`dlscale.perfmodel.training_easgd`: ``t`` one local step of a
worker (forward + backward, plus its own update for the EASGD variants; the SGD
baselines leave the update to the master), ``W`` bytes of weights, ``tau`` the
communication period (1 for the SGD baselines). Each worker draws its compute factor
per step (:mod:`.stragglers`).

Asynchronous algorithms (``async-easgd``, ``async-measgd``, ``async-sgd``,
``async-msgd``): one SimPy process per worker and a master that is a real resource,
a ``simpy.Resource`` of capacity 1 (the lock), served first come first served. After
``tau`` local steps a worker queues for the master; holding it, it pushes ``W`` bytes
and pulls ``W`` bytes over the master's link (``2 (alpha + W beta)``) and leaves with
the new center; the master keeps the lock while it applies the exchange to its
memory (``k W / bandwidth``, ``k`` from :data:`~dlscale.perfmodel.training_easgd.MASTER_ARRAYS`).
With more workers the queue grows and the master saturates.

Hogwild variants (``hogwild-easgd``, ``hogwild-sgd``): no lock. Messages share the
master's link (:class:`~.training_master.SharedPipe`, processor sharing), and each
exchange is applied by its own master thread on one core, at ``1 / cores`` of the
memory bandwidth (its fair share of the chip; a locked master applies one update at
a time with all cores), up to ``cores`` updates at once sharing the bandwidth. The
worker does not wait for the update, so the throughput bounds stay those of the
analytical model (``1 / max(link, k W / bandwidth)``). An update is a read-modify-write of the center, chunk by chunk;
two updates whose read-modify-write of the same chunk overlap in simulated time lose
the earlier write, and the lost chunk updates are counted (and, in co-simulation,
really lost from the center array).

Round-based algorithms (``easgd``, ``sync-easgd``): :mod:`.training_easgd_rounds`.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training_run import simulate_training
>>> c, w = get_cluster("cori-knl"), get_workload("googlenet")
>>> few = simulate_training(c, w, 4, algorithm="async-sgd", iterations=30)
>>> many = simulate_training(c, w, 256, algorithm="async-sgd", iterations=30)
>>> bool(many.summary()["master_queue_s"] > few.summary()["master_queue_s"])
True
"""

from __future__ import annotations

import numpy as np
import simpy

from dlscale.perfmodel.training_easgd import MASTER_ARRAYS

from .training_common import Breakdown, RunContext, RunOutcome, compute_profile
from .training_master import SharedPipe

__all__ = ["ASYNC", "HOGWILD", "StepDraws", "run_easgd", "step_time_s"]

#: Algorithms with a first-come-first-served master.
ASYNC = ("async-easgd", "async-measgd", "async-sgd", "async-msgd")
#: Lock-free master.
HOGWILD = ("hogwild-easgd", "hogwild-sgd")
_SGD_FAMILY = ("async-sgd", "async-msgd", "hogwild-sgd")


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
    return fb if alg in _SGD_FAMILY else fb + prof.update_s


def tau_of(ctx: RunContext) -> int:
    """Communication period: the workload's tau, 1 for the SGD baselines."""
    return 1 if ctx.algorithm in _SGD_FAMILY else int(ctx.workload.tau)


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


def run_easgd(ctx: RunContext):
    """Simulate the workload's algorithm (not ``sync-sgd``)."""
    if ctx.algorithm in ("easgd", "sync-easgd"):
        from .training_easgd_rounds import run_rounds
        return run_rounds(ctx)
    return _run_async(ctx)


def _run_async(ctx: RunContext) -> RunOutcome:
    alg, R, K = ctx.algorithm, ctx.ranks, ctx.iterations
    t_step, tau = step_time_s(ctx), tau_of(ctx)
    W = float(ctx.workload.model.params * ctx.workload.bytes_per_element)
    alpha, beta = ctx.net.master_link(alg)
    mem_bw = ctx.cluster.node.device.training_memory_bandwidth_Bps
    upd_bytes = MASTER_ARRAYS[alg] * W
    hog = alg in HOGWILD
    num = ctx.numerics
    chunks = int(getattr(num, "chunks", 1)) if hog else 1

    env = simpy.Environment()
    draws = StepDraws(ctx)
    acc = Breakdown(R)
    done: list[float] = []
    counters: dict[str, float] = {"master_exchanges": 0, "lost_updates": 0, "chunk_updates": 0}
    tr = ctx.tracer
    lock = simpy.Resource(env, capacity=1)
    link = SharedPipe(env, 1.0 / beta) if hog else None
    # lock-free: each exchange is applied by its own master thread on one core
    cores = max(int(ctx.cluster.node.device.cores), 1)
    mem = SharedPipe(env, mem_bw, mem_bw / cores) if hog else None
    version = np.zeros(chunks, dtype=np.int64)
    master_busy = [0.0]

    def traced(w: int, k: int) -> bool:
        return tr is not None and k < tr.max_iterations and tr.traced(w)

    def locked_release(req, w: int):
        t0 = env.now
        yield env.timeout(upd_bytes / mem_bw)
        master_busy[0] += env.now - t0
        if tr is not None and tr.traced(w) and counters["master_exchanges"] <= 64 * len(tr.ranks):
            tr.slice(-1, "master", f"apply w{w}", t0, env.now - t0)
        lock.release(req)
        if tr is not None:
            tr.counter("master queue", env.now, len(lock.queue))

    def hog_apply(w: int, payload):
        for j in range(chunks):
            token = num.hog_read(w, j, payload) if num is not None else None  # type: ignore[attr-defined]
            seen = int(version[j])
            yield mem.transfer(upd_bytes / chunks)  # type: ignore[union-attr]
            lost = int(version[j]) - seen
            counters["lost_updates"] += lost
            counters["chunk_updates"] += 1
            version[j] += 1
            if num is not None:
                num.hog_write(w, j, token)  # type: ignore[attr-defined]

    def worker(w: int):
        # joining: one exchange with the master each (push the initial weights, pull
        # the center), served one worker at a time before training starts
        yield env.timeout((w + 1) * 2 * (alpha + W * beta))
        for k in range(K):
            f = float(draws(k)[w])
            t0 = env.now
            if num is not None:
                num.local_step(w, k)  # type: ignore[attr-defined]
            yield env.timeout(f * t_step)
            acc.compute_s[w] += f * t_step
            if traced(w, k):
                tr.slice(w, "compute", f"step {k}", t0, f * t_step)  # type: ignore[union-attr]
            if (k + 1) % tau == 0 or k == K - 1:
                tq = env.now
                if hog:
                    payload = num.hog_payload(w) if num is not None else None  # type: ignore[attr-defined]
                    yield env.timeout(alpha)
                    yield link.transfer(W)  # type: ignore[union-attr]
                    env.process(hog_apply(w, payload))
                    yield env.timeout(alpha)
                    if num is not None:
                        num.hog_pull(w)  # type: ignore[attr-defined]
                    yield link.transfer(W)  # type: ignore[union-attr]
                    acc.comm_s[w] += env.now - tq
                    acc.exposed_comm_s[w] += env.now - tq
                    if traced(w, k):
                        tr.slice(w, "comm", "exchange (no lock)", tq, env.now - tq)  # type: ignore[union-attr]
                else:
                    req = lock.request()
                    if tr is not None:
                        tr.counter("master queue", env.now, len(lock.queue))
                    yield req
                    ts = env.now
                    acc.master_queue_s[w] += ts - tq
                    xfer = 2 * (alpha + W * beta)
                    yield env.timeout(xfer)
                    master_busy[0] += xfer
                    if num is not None:
                        num.exchange(w)  # type: ignore[attr-defined]
                    acc.comm_s[w] += xfer
                    acc.exposed_comm_s[w] += xfer
                    if traced(w, k):
                        tr.slice(w, "comm", "wait master", tq, ts - tq)  # type: ignore[union-attr]
                        tr.slice(w, "comm", "push+pull", ts, xfer)  # type: ignore[union-attr]
                    env.process(locked_release(req, w))
                counters["master_exchanges"] += 1
            done.append(env.now)
            if num is not None:
                num.step_done(w, k, env.now)  # type: ignore[attr-defined]

    for w in range(R):
        env.process(worker(w))
    env.run()
    end = float(env.now)
    if hog:
        busy = max(link.busy_s, mem.busy_s)  # type: ignore[union-attr]
        counters["peak_in_flight"] = int(link.peak)  # type: ignore[union-attr]
    else:
        busy = master_busy[0]
    counters["master_busy_fraction"] = busy / end if end > 0 else 0.0
    if not hog:
        counters.pop("lost_updates")
        counters.pop("chunk_updates")
    return RunOutcome(completions_to_iterations(done, R), acc.per_iteration(K), end, counters)
