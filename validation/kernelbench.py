"""Throughput of the project's own kernels and of two reference kernels, with noise.

Figures (the keys of :data:`dlscale.perfmodel.machine.profile.KERNEL_FIGURES`):

- ``stream_triad_Bps`` -- STREAM triad ``a = b + s c`` (McCalpin), numba, 3 arrays
  of ``triad_elems`` float64 (24 bytes moved per element);
- ``gemm_flops`` -- float32 ``n x n`` matrix product through numpy/BLAS, ``2 n^3``
  FLOP per call;
- ``easgd_Bps`` -- :func:`dlscale.kernels.easgd.easgd_worker_update`, bytes of
  parameters updated per second;
- ``sgd_Bps`` -- :func:`dlscale.kernels.sgd.sgd_update` (what the training runs
  call), the same;
- ``reduce_Bps`` -- :func:`dlscale.validation.mpi_ring.sum_into`, bytes reduced
  per second (the ``gamma`` of the collective models);
- ``model_fwd_bwd_s`` -- one training step's computation, exactly as the MPI
  training runs do it: draw a mini-batch (:func:`draw_batch`) and
  :func:`dlscale.kernels.model.loss_and_grad` of the small model on it.

- ``x_kernel_call_s`` -- the fixed cost of one call of an update kernel (the
  public wrapper's argument checks and numba's dispatch): the median time of
  :func:`dlscale.kernels.easgd.easgd_worker_update` on 16 elements, where the
  bytes cost nothing. The update figures above are measured on 4 MiB arrays, where
  this cost vanishes; at the small model's size it does not.
- ``x_page_fault_s_per_B`` -- first touch of freshly mapped memory (an anonymous
  ``mmap``, one byte written per page): the page fault and the kernel's zeroing,
  per byte, in process CPU time (user + system, so other processes sharing the
  core do not count); what MPICH's per-call temporary buffer costs where glibc
  maps it afresh on every call (:func:`dlscale.validation.collective_fit.temp_fault_bytes`).

``noise`` holds, per figure, the robust coefficient of variation of the
single-call times, ``IQR / 1.349 / median`` (the interquartile range of a normal
distribution is 1.349 standard deviations; unlike ``std / mean`` it is not swamped
by the rare calls the operating system interrupts): the per-iteration spread the
straggler model draws from. ``quantiles`` holds, for ``model_fwd_bwd_s``, its
single-call times' quantiles at probabilities 0, 0.001, ..., 1 (:func:`quantiles`):
the whole distribution, for a straggler model that does not assume it is normal. Each kernel gets an equal share of ``budget_s`` (at least ``min_reps``
calls). Run on every rank at once, the figures include the sharing of cores and
memory bandwidth that a training run on the same ranks sees.

Examples
--------
>>> t = time_calls(lambda: None, budget_s=0.001, min_reps=3)
>>> t.size >= 3
True
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

__all__ = ["TRAINING_MODEL", "draw_batch", "kernel_figures", "model_step", "page_fault_s_per_B",
           "quantiles", "robust_cv", "stream_triad", "time_calls"]

#: The small real model the training runs and the benchmark use: an MLP on the
#: 8x8 digits (64 inputs, 10 classes), float32, mini-batch of 32 per rank.
TRAINING_MODEL: dict[str, Any] = {"n_in": 64, "n_hidden": 128, "n_out": 10,
                                  "batch": 32, "dtype": "float32"}


@njit  # no cache=True: a file imported under two module names breaks numba's cache
def _triad(a, b, c, s):  # pragma: no cover - compiled
    for i in range(a.size):
        a[i] = b[i] + s * c[i]


def stream_triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: float) -> np.ndarray:
    """STREAM triad ``a[:] = b + s * c`` in place (numba); returns ``a``.

    >>> import numpy as np
    >>> stream_triad(np.zeros(3), np.ones(3), np.arange(3.0), 2.0).tolist()
    [1.0, 3.0, 5.0]
    """
    _triad(a, b, c, s)
    return a


def draw_batch(rng: np.random.Generator, X: np.ndarray, y: np.ndarray,
               batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A mini-batch of ``batch`` rows drawn with replacement.

    >>> import numpy as np
    >>> xb, yb = draw_batch(np.random.default_rng(0), np.eye(4), np.arange(4), 2)
    >>> xb.shape, yb.shape
    ((2, 4), (2,))
    """
    idx = rng.integers(0, y.size, batch)
    return X[idx], y[idx]


def model_step(seed: int = 0) -> Callable[[], float]:
    """One training step's computation as the MPI training runs do it: draw a
    mini-batch of :data:`TRAINING_MODEL`'s data and take the loss and gradient.

    Examples
    --------
    >>> step = model_step(0)
    >>> step() > 0
    True
    """
    from dlscale.kernels.data import load_digits_split
    from dlscale.kernels.model import ModelShape, init_params, loss_and_grad

    m = TRAINING_MODEL
    shape = ModelShape(m["n_in"], m["n_hidden"], m["n_out"])
    data = load_digits_split(seed=seed, dtype=np.float32)
    params = init_params(shape, seed=seed, dtype=np.float32)
    grad = np.empty_like(params)
    drng = np.random.default_rng(seed)

    def step() -> float:
        xb, yb = draw_batch(drng, data.X_train, data.y_train, m["batch"])
        return float(loss_and_grad(params, grad, xb, yb, shape))

    return step


def time_calls(fn: Callable[[], Any], budget_s: float, min_reps: int = 5,
               max_reps: int = 100000) -> np.ndarray:
    """Seconds of each call of ``fn``: a warm-up call, then calls until ``budget_s``."""
    fn()  # warm-up: compilation, page faults
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return np.asarray(times)


def page_fault_s_per_B(n_bytes: int = 8 << 20, reps: int = 5) -> float:
    """Process CPU seconds per byte to first-touch a fresh anonymous mapping (median).

    >>> 0.0 < page_fault_s_per_B(1 << 20, reps=1) < 1e-6
    True
    """
    import mmap

    page = mmap.PAGESIZE
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        m = mmap.mmap(-1, n_bytes)
        view = np.frombuffer(m, dtype=np.uint8)
        view[::page] = 1
        del view
        m.close()
        times.append(time.process_time() - t0)
    return float(np.median(times)) / n_bytes


def robust_cv(times: np.ndarray) -> float:
    """``IQR / 1.349 / median`` of ``times`` (0.0 for fewer than 2).

    >>> robust_cv(np.array([1.0, 1.0, 1.0, 1.0, 9.0]))  # one interrupted call: no spread
    0.0
    """
    if times.size < 2:
        return 0.0
    q25, q50, q75 = np.percentile(times, [25, 50, 75])
    return float((q75 - q25) / 1.349 / q50) if q50 > 0 else 0.0


def quantiles(times: np.ndarray) -> list[float]:
    """Quantiles of ``times`` at probabilities 0, 0.001, ..., 1 (linear interpolation;
    :data:`~dlscale.perfmodel.machine.profile.QUANTILE_POINTS` of them).

    >>> q = quantiles(np.array([1.0, 2.0, 3.0]))
    >>> len(q), q[0], q[500], q[1000]
    (1001, 1.0, 2.0, 3.0)
    """
    from dlscale.perfmodel.machine.profile import QUANTILE_POINTS

    if times.size == 0:
        raise ValueError("quantiles: no times")
    return [float(v) for v in np.quantile(times, np.linspace(0.0, 1.0, QUANTILE_POINTS))]


def _figure(times: np.ndarray, work: float) -> tuple[float, float]:
    return work / float(np.median(times)), robust_cv(times)


def kernel_figures(budget_s: float = 2.0, triad_elems: int = 1 << 22,
                   update_elems: int = 1 << 20, gemm_n: int = 256,
                   seed: int = 0) -> dict[str, Any]:
    """Measure every kernel figure on this process; returns the profile's ``kernels``.

    Also returns ``model`` (the :data:`TRAINING_MODEL` measured) and ``samples``
    (calls timed per figure).
    """
    from dlscale.kernels.easgd import easgd_worker_update
    from dlscale.kernels.model import ModelShape
    from dlscale.kernels.sgd import sgd_update
    from dlscale.validation.mpi_ring import sum_into

    rng = np.random.default_rng(seed)
    share = budget_s / 6
    out: dict[str, Any] = {"noise": {}, "samples": {}, "quantiles": {}}

    def record(name: str, times: np.ndarray, work: float) -> None:
        value, cv = _figure(times, work)
        out[name] = value
        out["noise"][name] = cv
        out["samples"][name] = int(times.size)

    ta, tb, tc = (rng.random(triad_elems) for _ in range(3))
    record("stream_triad_Bps", time_calls(lambda: stream_triad(ta, tb, tc, 3.0), share),
           24.0 * triad_elems)
    m1 = rng.random((gemm_n, gemm_n), dtype=np.float32)
    m2 = rng.random((gemm_n, gemm_n), dtype=np.float32)
    record("gemm_flops", time_calls(lambda: m1 @ m2, share), 2.0 * gemm_n**3)
    x, g, ctr = (rng.random(update_elems, dtype=np.float32) for _ in range(3))
    nbytes = 4.0 * update_elems
    record("easgd_Bps", time_calls(lambda: easgd_worker_update(x, g, ctr, 1e-6, 1e-6), share),
           nbytes)
    record("sgd_Bps", time_calls(lambda: sgd_update(x, g, 1e-6), share), nbytes)
    record("reduce_Bps", time_calls(lambda: sum_into(x, g), share), nbytes)
    xs, gs, cs = (rng.random(16, dtype=np.float32) for _ in range(3))
    out["x_kernel_call_s"] = float(np.median(time_calls(
        lambda: easgd_worker_update(xs, gs, cs, 1e-6, 1e-6), share / 4)))
    m = TRAINING_MODEL
    shape = ModelShape(m["n_in"], m["n_hidden"], m["n_out"])
    times = time_calls(model_step(seed), share)
    out["model_fwd_bwd_s"] = float(np.median(times))
    out["noise"]["model_fwd_bwd_s"] = robust_cv(times)
    out["samples"]["model_fwd_bwd_s"] = int(times.size)
    out["quantiles"]["model_fwd_bwd_s"] = quantiles(times)
    out["model"] = {**m, "n_params": shape.n_params}
    out["x_page_fault_s_per_B"] = page_fault_s_per_B()
    return out
