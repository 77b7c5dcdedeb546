"""Hogwild (lock-free) updates applied by several threads at once, with real races.

Each row of a ``(T, n)`` array of worker vectors or gradients is applied to one
shared vector by its own numba thread (``prange``), without a lock and without
atomics.  A read-modify-write of one element by one thread can be overwritten by
another thread that read the element before it: an update is *lost*.  The loss is
real (it comes from the hardware interleaving of the threads), not emulated, so how
many updates are lost depends on how many cores the threads actually get.

:func:`hogwild_lost_updates` counts lost updates exactly: every thread adds 1.0 to
every element ``passes`` times, so the serial result is known in integer arithmetic
and ``applied - recorded`` is the number of increments lost.

Examples
--------
>>> hogwild_lost_updates(n_elements=64, n_threads=1, passes=10).lost
0
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import prange

from dlscale.kernels._checks import check_float_array, check_int, check_scalar, check_writeable
from dlscale.kernels.jit import njit

__all__ = ["LostUpdates", "hogwild_easgd_center_update", "hogwild_lost_updates", "hogwild_sgd_update"]


@njit(parallel=True)
def _center(c: np.ndarray, workers: np.ndarray, a: float) -> None:
    for k in prange(workers.shape[0]):
        for i in range(c.size):
            c[i] = c[i] + a * (workers[k, i] - c[i])


@njit(parallel=True)
def _sgd(x: np.ndarray, grads: np.ndarray, lr: float) -> None:
    for k in prange(grads.shape[0]):
        for i in range(x.size):
            x[i] = x[i] - lr * grads[k, i]


@njit(parallel=True)
def _increment(target: np.ndarray, n_threads: int, passes: int) -> None:
    for _k in prange(n_threads):
        for _s in range(passes):
            for i in range(target.size):
                target[i] = target[i] + 1.0


class _Threads:
    """Context manager that sets numba's thread count and restores it."""

    def __init__(self, n_threads: int | None) -> None:
        self.n = n_threads
        self.old = numba.get_num_threads()

    def __enter__(self) -> None:
        if self.n is not None:
            numba.set_num_threads(min(self.n, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        numba.set_num_threads(self.old)


def _threads_arg(n_threads: int | None) -> int | None:
    return None if n_threads is None else check_int("n_threads", n_threads, low=1)


def _rows(name: str, rows: np.ndarray, ref_name: str, ref: np.ndarray) -> np.ndarray:
    rows = check_float_array(name, rows, ndim=2)
    if rows.shape[1] != ref.size:
        raise ValueError(f"{name}: must have shape (T, {ref.size}) to match {ref_name}, got {rows.shape}")
    if rows.dtype != ref.dtype:
        raise TypeError(f"{name}: dtype {rows.dtype} does not match {ref_name} dtype {ref.dtype}")
    return rows


def hogwild_easgd_center_update(center: np.ndarray, workers: np.ndarray, lr: float, rho: float,
                                n_threads: int | None = None) -> np.ndarray:
    """Hogwild EASGD: apply ``center += lr rho (w_k - center)`` for every row ``w_k`` concurrently.

    Rows are spread over ``n_threads`` numba threads (default: numba's current count)
    that update ``center`` without a lock.  Serially the result is the async center
    update applied row after row; with races some row updates are partly lost.
    For ``0 <= lr rho <= 1`` every element always stays within the range spanned by
    its old value and the workers' values, race or not.

    Examples
    --------
    >>> import numpy as np
    >>> c = np.zeros(4); w = np.ones((2, 4))
    >>> hogwild_easgd_center_update(c, w, lr=1.0, rho=1.0)
    array([1., 1., 1., 1.])
    """
    cf = check_float_array("center", center)
    wf = _rows("workers", workers, "center", cf)
    check_writeable("center", center)
    nt = _threads_arg(n_threads)
    t = center.dtype.type
    a = check_scalar("lr", lr, t) * check_scalar("rho", rho, t)
    with _Threads(nt):
        _center(cf, wf, a)
    return center


def hogwild_sgd_update(x: np.ndarray, grads: np.ndarray, lr: float,
                       n_threads: int | None = None) -> np.ndarray:
    """Hogwild SGD: every row ``g_k`` of ``grads`` applies ``x -= lr g_k`` concurrently, lock-free.

    Without races the result is ``x - lr sum_k g_k``; lost updates drop whole or
    partial contributions of some rows.

    Examples
    --------
    >>> import numpy as np
    >>> hogwild_sgd_update(np.zeros(3), np.ones((1, 3)), lr=0.5)
    array([-0.5, -0.5, -0.5])
    """
    xf = check_float_array("x", x)
    gf = _rows("grads", grads, "x", xf)
    check_writeable("x", x)
    nt = _threads_arg(n_threads)
    with _Threads(nt):
        _sgd(xf, gf, check_scalar("lr", lr, x.dtype.type))
    return x


@dataclass(frozen=True)
class LostUpdates:
    """Result of :func:`hogwild_lost_updates`.

    Attributes
    ----------
    applied : int
        Increments issued, ``n_threads * passes * n_elements``.
    recorded : int
        Increments present in the shared vector afterwards (its sum).
    lost : int
        ``applied - recorded``: increments overwritten by a racing thread.
    per_element : numpy.ndarray
        Final value of each element (float64, integer-valued).
    """

    applied: int
    recorded: int
    lost: int
    per_element: np.ndarray

    @property
    def lost_fraction(self) -> float:
        """``lost / applied`` (0 when nothing was applied)."""
        return self.lost / self.applied if self.applied else 0.0


def hogwild_lost_updates(n_elements: int, n_threads: int, passes: int) -> LostUpdates:
    """Count lost updates of a real lock-free increment race.

    ``n_threads`` numba threads each add 1.0 to every element of a shared float64
    vector ``passes`` times, without a lock.  Counts are exact while
    ``n_threads * passes < 2**53``.  One thread never loses an update; with several
    threads on several cores, some increments are overwritten (how many depends on
    scheduling, so the count varies from run to run).

    Examples
    --------
    >>> r = hogwild_lost_updates(8, 1, 3)
    >>> (r.applied, r.recorded, r.lost)
    (24, 24, 0)
    """
    n = check_int("n_elements", n_elements, low=0)
    nt = check_int("n_threads", n_threads, low=1)
    ps = check_int("passes", passes, low=0)
    target = np.zeros(n, dtype=np.float64)
    with _Threads(nt):
        _increment(target, nt, ps)
    applied = nt * ps * n
    recorded = int(target.sum())
    return LostUpdates(applied=applied, recorded=recorded, lost=applied - recorded, per_element=target)
