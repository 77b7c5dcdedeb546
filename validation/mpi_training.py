"""Real distributed training over MPI: the project's kernels on mpi4py ranks.

The small real model (:data:`~dlscale.validation.kernelbench.TRAINING_MODEL`, an MLP
on scikit-learn's 8x8 digits) is trained by every rank on its own shard of the
training set (rank ``r`` takes rows ``r, r+p, ...``), mini-batches drawn with a
seeded generator per rank. Algorithms (:data:`TRAINING_ALGORITHMS`):

- ``sgd-ring`` -- synchronous SGD, gradients summed by the project's own ring
  allreduce (:func:`dlscale.validation.mpi_ring.ring_allreduce`: numba reduction
  plus ``Sendrecv``), then :func:`dlscale.kernels.sgd.sgd_update`;
- ``sgd-allreduce`` -- the same with ``MPI_Allreduce``;
- ``sync-easgd`` -- Sync EASGD (You, Buluc, Demmel, SC'17): every worker takes an
  elastic step against the shared center
  (:func:`~dlscale.kernels.easgd.easgd_worker_update`), the workers' parameters
  are summed with ``MPI_Allreduce`` and every rank moves its copy of the center
  (:func:`~dlscale.kernels.easgd.easgd_center_update_sync`);
- ``async-easgd`` -- Async EASGD: rank 0 is a master holding the center, ranks
  ``1..p-1`` are workers. The master keeps one non-blocking receive posted per
  worker and serves whichever completes first (``Waitany``: first come, first
  served): it moves the center towards that worker's parameters
  (:func:`~dlscale.kernels.easgd.easgd_center_update_async`) and sends the center
  back; the worker then takes its elastic step with the center it got.

Each run reports wall time per iteration (after ``warmup`` untimed iterations),
the per-iteration spread, compute and communication time, and the test accuracy
of the final model (the center for EASGD, rank 0's parameters for SGD).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.validation.kernelbench import TRAINING_MODEL, draw_batch
from dlscale.validation.mpi_env import get_mpi, one_blas_thread
from dlscale.validation.mpi_ring import ring_allreduce

__all__ = ["TRAINING_ALGORITHMS", "TrainingResult", "gradient_tensors", "train"]

#: Algorithms :func:`train` runs.
TRAINING_ALGORITHMS = ("sgd-ring", "sgd-allreduce", "sync-easgd", "async-easgd")

_X_TAG, _C_TAG = 11, 12


@dataclass(frozen=True)
class TrainingResult:
    """One real training run.

    Attributes
    ----------
    algorithm : str
    ranks : int
        MPI ranks (for ``async-easgd``: one master and ``ranks - 1`` workers).
    iterations : int
        Timed iterations per worker.
    iteration_s : float
        Wall time per iteration: for the synchronous algorithms the time between
        barriers over the timed iterations divided by their number; for
        ``async-easgd`` the mean over workers of each worker's time per iteration.
    iteration_median_s, iteration_cv : float
        Median and coefficient of variation of single iterations (rank 0 for the
        synchronous algorithms, all workers pooled for async).
    compute_s, comm_s : float
        Mean forward+backward time and mean communication time per iteration.
    n_params, message_bytes : int
        Parameters of the model and bytes of each allreduce / exchange message.
    accuracy, loss : float
        Test-set accuracy of the final model and the last training loss.
    spans : dict or None
        With ``record``: what :func:`dlscale.validation.timeline.horovod_timeline`
        turns into a timeline: per rank (``"marks"``) each timed iteration's five
        :func:`time.perf_counter` readings (start, gradient computed, allreduce
        called, allreduce returned, update done), each rank's reading at the exit of
        the barrier before the timed iterations (``"clock_refs"``), the ranks' host
        names, the tensors of the gradient and the algorithm. Not in :meth:`to_dict`.
    """

    algorithm: str
    ranks: int
    iterations: int
    iteration_s: float
    iteration_median_s: float
    iteration_cv: float
    compute_s: float
    comm_s: float
    n_params: int
    message_bytes: int
    accuracy: float
    loss: float
    spans: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (without ``spans``)."""
        out = asdict(self)
        del out["spans"]
        return out


def _setup(comm: Any, seed: int) -> dict[str, Any]:
    from dlscale.kernels.data import load_digits_split
    from dlscale.kernels.model import ModelShape, init_params

    m = TRAINING_MODEL
    shape = ModelShape(m["n_in"], m["n_hidden"], m["n_out"])
    data = load_digits_split(seed=seed, dtype=np.float32)
    p, r = comm.Get_size(), comm.Get_rank()
    return {
        "shape": shape, "data": data,
        "X": np.ascontiguousarray(data.X_train[r::p]), "y": data.y_train[r::p].copy(),
        "params": init_params(shape, seed=seed, dtype=np.float32),  # same start everywhere
        "rng": np.random.default_rng([seed, r]), "batch": m["batch"],
    }


def _batch(s: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return draw_batch(s["rng"], s["X"], s["y"], s["batch"])


def _sync(comm: Any, s: dict[str, Any], algorithm: str, iterations: int, warmup: int,
          lr: float, rho: float, record: bool = False) -> dict[str, Any]:
    from mpi4py import MPI

    from dlscale.kernels.easgd import easgd_center_update_sync, easgd_worker_update
    from dlscale.kernels.model import loss_and_grad
    from dlscale.kernels.sgd import sgd_update

    p = comm.Get_size()
    x, shape = s["params"], s["shape"]
    g, total = np.empty_like(x), np.empty_like(x)
    center = x.copy()
    scratch = np.empty(x.size // p + 1, dtype=x.dtype)
    times, comp, comm_t = [], 0.0, 0.0
    marks: list[tuple[float, float, float, float, float]] = []
    loss = 0.0
    for it in range(warmup + iterations):
        if it == warmup:
            comm.Barrier()
            start = time.perf_counter()
            comp = comm_t = 0.0
        t0 = time.perf_counter()
        xb, yb = _batch(s)
        loss = loss_and_grad(x, g, xb, yb, shape)
        t1 = time.perf_counter()
        if algorithm == "sync-easgd":
            easgd_worker_update(x, g, center, lr, rho)
            t2 = time.perf_counter()
            comm.Allreduce(x, total, op=MPI.SUM)
            t3 = time.perf_counter()
            easgd_center_update_sync(center, total, p, lr, rho)
        else:
            t2 = time.perf_counter()
            if algorithm == "sgd-ring":
                ring_allreduce(comm, g, scratch)
            else:
                comm.Allreduce(MPI.IN_PLACE, g, op=MPI.SUM)
            t3 = time.perf_counter()
            sgd_update(x, g, lr / p)
        t4 = time.perf_counter()
        comp += t1 - t0
        comm_t += t3 - t2
        if it >= warmup:
            times.append(t4 - t0)
            if record:
                marks.append((t0, t1, t2, t3, t4))
    comm.Barrier()
    wall = time.perf_counter() - start
    final = center if algorithm == "sync-easgd" else x
    return {"wall_per_iter": wall / iterations, "times": times, "compute": comp / iterations,
            "comm": comm_t / iterations, "final": final, "loss": loss, "marks": marks,
            "clock_ref": start}


def _async(comm: Any, s: dict[str, Any], iterations: int, warmup: int, lr: float,
           rho: float) -> dict[str, Any]:
    from mpi4py import MPI

    from dlscale.kernels.easgd import easgd_center_update_async, easgd_worker_update
    from dlscale.kernels.model import loss_and_grad

    p, r = comm.Get_size(), comm.Get_rank()
    x, shape = s["params"], s["shape"]
    total = warmup + iterations
    if r == 0:  # master: first come, first served
        center = x.copy()
        bufs = [np.empty_like(x) for _ in range(p - 1)]
        reqs = [comm.Irecv(bufs[w], source=w + 1, tag=_X_TAG) for w in range(p - 1)]
        left = [total] * (p - 1)
        served = 0
        while served < total * (p - 1):
            w = MPI.Request.Waitany(reqs)
            easgd_center_update_async(center, bufs[w], lr, rho)
            comm.Send(center, dest=w + 1, tag=_C_TAG)
            served += 1
            left[w] -= 1
            reqs[w] = comm.Irecv(bufs[w], source=w + 1, tag=_X_TAG) if left[w] else MPI.REQUEST_NULL
        comm.Barrier()
        return {"final": center, "loss": 0.0, "times": [], "wall_per_iter": 0.0,
                "compute": 0.0, "comm": 0.0}
    g, c = np.empty_like(x), np.empty_like(x)
    times, comp, comm_t, loss = [], 0.0, 0.0, 0.0
    start = time.perf_counter()
    for it in range(total):
        if it == warmup:
            start = time.perf_counter()
            comp = comm_t = 0.0
        t0 = time.perf_counter()
        xb, yb = _batch(s)
        loss = loss_and_grad(x, g, xb, yb, shape)
        t1 = time.perf_counter()
        comm.Send(x, dest=0, tag=_X_TAG)
        comm.Recv(c, source=0, tag=_C_TAG)
        t2 = time.perf_counter()
        easgd_worker_update(x, g, c, lr, rho)
        comp += t1 - t0
        comm_t += t2 - t1
        if it >= warmup:
            times.append(time.perf_counter() - t0)
    wall = (time.perf_counter() - start) / iterations
    comm.Barrier()
    return {"final": x, "loss": loss, "times": times, "wall_per_iter": wall,
            "compute": comp / iterations, "comm": comm_t / iterations}


def train(comm: Any, algorithm: str, iterations: int = 300, warmup: int = 20,
          lr: float = 0.1, rho: float = 0.5, seed: int = 0,
          record: bool = False) -> TrainingResult | None:
    """Run one training on every rank of ``comm``; the result on rank 0, ``None`` elsewhere.

    Same inputs and seed give the same model for the synchronous algorithms (the
    asynchronous one depends on arrival order, as it does on a real machine). With
    ``record`` (a synchronous algorithm only) every rank keeps the clock readings of
    each timed iteration, and rank 0's result holds them all (``spans``).
    """
    if algorithm not in TRAINING_ALGORITHMS:
        raise unknown_name("algorithm", algorithm, TRAINING_ALGORITHMS)
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ConfigError(f"iterations: must be an integer >= 1, got {iterations!r}")
    if not (isinstance(warmup, int) and warmup >= 0):
        raise ConfigError(f"warmup: must be an integer >= 0, got {warmup!r}")
    p = comm.Get_size()
    if record and algorithm == "async-easgd":
        raise ConfigError("record: only the synchronous algorithms are recorded (async-easgd "
                          "has no collective to put on a timeline)")
    if algorithm == "async-easgd" and p < 2:
        raise ConfigError("algorithm: async-easgd needs at least 2 ranks (a master and a worker)")
    get_mpi()
    with one_blas_thread():
        s = _setup(comm, seed)
        if algorithm == "async-easgd":
            out = _async(comm, s, iterations, warmup, lr, rho)
        else:
            out = _sync(comm, s, algorithm, iterations, warmup, lr, rho, record)
    gathered = comm.gather((out["wall_per_iter"], out["times"], out["compute"], out["comm"]), root=0)
    spans = None
    if record:
        import socket

        mine = (socket.gethostname(), out["clock_ref"], out["marks"])
        every = comm.gather(mine, root=0)
        if every is not None:
            spans = {"algorithm": algorithm, "hosts": [e[0] for e in every],
                     "clock_refs": [e[1] for e in every], "marks": [e[2] for e in every],
                     "tensors": gradient_tensors(s["shape"])}
    if comm.Get_rank() != 0:
        return None
    from dlscale.kernels.model import accuracy

    workers = gathered[1:] if algorithm == "async-easgd" else gathered
    if algorithm == "async-easgd":
        per_iter = float(np.mean([w[0] for w in workers]))
        pooled = np.concatenate([np.asarray(w[1]) for w in workers])
    else:
        per_iter = float(gathered[0][0])
        pooled = np.asarray(gathered[0][1])
    data = s["data"]
    return TrainingResult(
        algorithm=algorithm, ranks=p, iterations=iterations,
        iteration_s=per_iter, iteration_median_s=float(np.median(pooled)),
        iteration_cv=float(np.std(pooled) / np.mean(pooled)),
        compute_s=float(np.mean([w[2] for w in workers])),
        comm_s=float(np.mean([w[3] for w in workers])),
        n_params=int(s["params"].size), message_bytes=int(s["params"].nbytes),
        accuracy=float(accuracy(out["final"], data.X_test, data.y_test, s["shape"])),
        loss=float(out["loss"]), spans=spans,
    )


def gradient_tensors(shape: Any) -> list[tuple[str, int]]:
    """The model's parameter tensors as they lie in its flat gradient (weights then bias
    of each layer, :func:`dlscale.kernels.model.init_params`): ``(name, bytes)``, float32.

    Examples
    --------
    >>> from dlscale.kernels.model import ModelShape
    >>> gradient_tensors(ModelShape(64, 128, 10))
    [('fc1.weight', 32768), ('fc1.bias', 512), ('fc2.weight', 5120), ('fc2.bias', 40)]
    """
    n_in, h, n_out = shape.n_in, shape.n_hidden, shape.n_out
    sizes = [("fc1.weight", n_in * h), ("fc1.bias", h), ("fc2.weight", h * n_out),
             ("fc2.bias", n_out)] if h else [("fc1.weight", n_in * n_out), ("fc1.bias", n_out)]
    return [(name, 4 * n) for name, n in sizes]
