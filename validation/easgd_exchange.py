"""The Async EASGD master/worker exchange, timed directly (issue 16).

In the real asynchronous run (:func:`dlscale.validation.mpi_training.train`,
``async-easgd``) a worker sends its parameters to the master (rank 0) and waits for
the center; the master, which keeps a non-blocking receive posted per worker and
serves whichever completes first (``Waitany``), moves the center towards the
worker's parameters (:func:`dlscale.kernels.easgd.easgd_center_update_async`, the
numba kernel) and sends the center back. :func:`easgd_exchange` runs exactly that
loop between rank 0 (the master) and rank 1 (one worker) of a communicator, with
the training model's parameter vector (float32, the same size as the run's
messages), and times

- ``exchange_s``: the worker's ``Send`` of its parameters plus its ``Recv`` of the
  center (what the run's worker counts as communication), median over exchanges;
- ``service_s``: the master's part of it, from ``Waitany`` returning to the
  center's ``Send`` returning (center update plus posting the send), median;

so that the local model (:mod:`~dlscale.validation.local_model`) takes the
exchange as measured instead of composing it from ping-pong fits. One worker at a
time: the queueing of several workers at the master is the model's part (its
mean-value analysis), not the measurement's.

Examples
--------
>>> from dlscale.validation.easgd_exchange import exchange_reps
>>> exchange_reps(1e-4, 1.0), exchange_reps(1.0, 1.0), exchange_reps(1e-9, 1.0)
(10000, 50, 20000)
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dlscale.validation.kernelbench import TRAINING_MODEL, robust_cv

__all__ = ["easgd_exchange", "exchange_reps"]

_X_TAG, _C_TAG = 21, 22


def exchange_reps(one_s: float, budget_s: float, min_reps: int = 50,
                  max_reps: int = 20000) -> int:
    """Exchanges that fit ``budget_s`` at ``one_s`` each, within ``min_reps..max_reps``."""
    return int(min(max_reps, max(min_reps, budget_s / max(one_s, 1e-12))))


def _params() -> np.ndarray:
    from dlscale.kernels.model import ModelShape, init_params

    m = TRAINING_MODEL
    shape = ModelShape(m["n_in"], m["n_hidden"], m["n_out"])
    return init_params(shape, seed=0, dtype=np.float32)


def _master(sub: Any, x: np.ndarray, reps: int, lr: float, rho: float) -> list[float]:
    from mpi4py import MPI

    from dlscale.kernels.easgd import easgd_center_update_async

    center, buf = x.copy(), np.empty_like(x)
    reqs = [sub.Irecv(buf, source=1, tag=_X_TAG)]
    service = []
    for i in range(reps):
        MPI.Request.Waitany(reqs)
        t0 = time.perf_counter()
        easgd_center_update_async(center, buf, lr, rho)
        sub.Send(center, dest=1, tag=_C_TAG)
        service.append(time.perf_counter() - t0)
        reqs[0] = sub.Irecv(buf, source=1, tag=_X_TAG) if i + 1 < reps else MPI.REQUEST_NULL
    return service


def _worker(sub: Any, x: np.ndarray, reps: int) -> list[float]:
    c = np.empty_like(x)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sub.Send(x, dest=0, tag=_X_TAG)
        sub.Recv(c, source=0, tag=_C_TAG)
        times.append(time.perf_counter() - t0)
    return times


def _pair(sub: Any, x: np.ndarray, reps: int, lr: float, rho: float) -> list[float]:
    return _master(sub, x, reps, lr, rho) if sub.Get_rank() == 0 else _worker(sub, x, reps)


def easgd_exchange(sub: Any, budget_s: float, lr: float = 0.1, rho: float = 0.5,
                   warmup: int = 20) -> dict[str, Any] | None:
    """Time the master/worker exchange on ranks 0 and 1 of ``sub`` (two ranks).

    Returns, on rank 0, ``{"ranks": [0, 1], "message_bytes", "exchange_s",
    "service_s", "spread", "reps"}`` (``spread``: the robust coefficient of
    variation of the exchanges); ``None`` on rank 1. ``warmup`` untimed exchanges
    first (numba compilation, page faults), then as many as fit ``budget_s``.
    """
    x = _params()
    _pair(sub, x, warmup, lr, rho)
    probe = _pair(sub, x, warmup, lr, rho)
    one = sub.bcast(float(np.median(probe)) if sub.Get_rank() == 1 else None, root=1)
    reps = exchange_reps(one, budget_s)
    mine = _pair(sub, x, reps, lr, rho)
    if sub.Get_rank() == 1:
        sub.send(mine, dest=0, tag=_X_TAG + 100)
        return None
    times = np.asarray(sub.recv(source=1, tag=_X_TAG + 100))
    return {"ranks": [0, 1], "message_bytes": int(x.nbytes),
            "exchange_s": float(np.median(times)), "service_s": float(np.median(mine)),
            "spread": robust_cv(times), "reps": reps}
