"""The compute phase of a synchronous step on ranks that share cores, measured.

With more MPI ranks on a host than cores, MPICH's progress throttling (see
:func:`~dlscale.validation.mpi_env.oversubscription_env`) makes a rank that waits
in MPI sleep (``usleep(1)``) instead of polling. A synchronous training step then
costs more than its parts measured alone: the ranks' computations share the cores
(processor sharing: ``p / cores`` times longer), the ranks that finish first fall
asleep in the collective and take a wake-up to leave it, and a rank resuming on a
core another rank just used refills its caches. None of these shows in a median
single kernel call or in a collective whose ranks all enter it together.

:func:`sync_step` measures them together on all ranks of a communicator with the
training model's own forward+backward (:func:`~dlscale.validation.kernelbench.model_step`,
the calibration kernel ``model_fwd_bwd_s``) followed by a barrier, and subtracts
the barrier alone; :func:`sleep_s` measures the sleep granularity a throttled
waiting rank sees (the kernel's timer slack plus the wake-up). The training
model (:mod:`~dlscale.validation.local_model`) uses both on oversubscribed hosts.

Examples
--------
>>> 0 < sleep_s(reps=5) < 0.1
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["sleep_s", "sync_step"]


def sleep_s(reps: int = 200) -> float:
    """Median wall time of a 1 microsecond sleep: what one throttled wait costs."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        time.sleep(1e-6)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def sync_step(comm: Any, step: Callable[[], Any], budget_s: float, warmup: int = 20,
              max_reps: int = 5000) -> dict[str, Any]:
    """Median time of ``step(); Barrier()`` on every rank of ``comm``, and of a barrier alone.

    Returns (the same on every rank) ``ranks``, ``step_s`` (median over ranks of
    each rank's median iteration), ``barrier_s`` (the same for back-to-back
    barriers), ``compute_s = step_s - barrier_s`` (the compute phase of a
    synchronous step: processor sharing, straggler, wake-ups and cache refill
    included), ``sleep_s`` (:func:`sleep_s`, median over ranks), ``reps``.
    """
    for _ in range(warmup):
        step()
        comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
        comm.Barrier()
    one = max(comm.allgather((time.perf_counter() - t0) / warmup))
    reps = int(min(max_reps, max(20, 0.8 * budget_s / max(one, 1e-9))))
    iters = np.empty(reps)
    comm.Barrier()
    for i in range(reps):
        t0 = time.perf_counter()
        step()
        comm.Barrier()
        iters[i] = time.perf_counter() - t0
    bars = np.empty(reps)
    for i in range(reps):
        t0 = time.perf_counter()
        comm.Barrier()
        bars[i] = time.perf_counter() - t0
    mine = (float(np.median(iters)), float(np.median(bars)), sleep_s(50))
    everyone = comm.allgather(mine)
    step_s, barrier_s, sl = (float(np.median([e[k] for e in everyone])) for k in range(3))
    return {"ranks": comm.Get_size(), "step_s": step_s, "barrier_s": barrier_s,
            "compute_s": step_s - barrier_s, "sleep_s": sl, "reps": reps}
