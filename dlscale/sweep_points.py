"""One point of a sweep: its configuration, its evaluation, and where chunks run.

Evaluators (:data:`EVALUATORS`) are functions ``f(cluster, workload, nodes, seeds) ->
list of row dicts``, one row per node count, with at least ``samples_per_s``;
``"module:function"`` names one to import. Executors (:data:`EXECUTORS`) are the
``concurrent.futures`` pools a sweep can run on. :func:`materialize` applies a
point's dotted-path parameters to the base cluster and workload.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from dlscale.perfmodel.errors import ConfigError, DlscaleError, unknown_name
from dlscale.perfmodel.machine.config import apply_overrides, load_cluster, load_workload
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.ranges import BAND_KEYS
from dlscale.perfmodel.training.workload import Workload
from dlscale.study import split_params
from dlscale.training_metrics import add_training_metrics

__all__ = ["COLUMNS", "EVALUATORS", "EXECUTORS", "Evaluator", "add_training_metrics",
           "analytical", "analytical_one_device", "materialize", "mpi_preflight", "resolve_evaluator", "simulated"]


Evaluator = Callable[[Cluster, Workload, list[int], list[int]], list[dict[str, Any]]]

#: Result columns after the parameters, in table order (evaluators may add more; those
#: go to the JSON files only).
#: Each time, rate and efficiency is followed by its ``_low`` and ``_high``
#: (:mod:`dlscale.perfmodel.training.ranges`).
_BANDED = (*BAND_KEYS, "time_to_train_s", "node_hours", "cost")
COLUMNS = tuple(x for c in (
    "nodes", "network", "runtime", "devices", "ranks", "iteration_s", "compute_s",
    "backward_s", "comm_s", "exposed_comm_s",
    "samples_per_s", "efficiency", "memory_per_device_bytes", "fits", "bottleneck",
    "allreduce", "network_limit",
    "time_to_train_s", "node_hours", "cost", "error")
    for x in ((c, f"{c}_low", f"{c}_high") if c in _BANDED else (c,)))


def analytical(cluster: Cluster, workload: Workload, nodes: list[int],
               seeds: list[int]) -> list[dict[str, Any]]:
    """The closed-form model, one vectorized call over the node counts."""
    from dlscale.perfmodel.training.ranges import predict_range

    return [{**row, "network": "analytical", "runtime": cluster.runtime.name}
            for row in predict_range(cluster, workload, nodes).to_rows()]


def analytical_one_device(cluster: Cluster, workload: Workload, nodes: list[int],
                          seeds: list[int]) -> list[dict[str, Any]]:
    """The closed-form model with efficiency against one device alone (``--baseline device``)."""
    from dlscale.perfmodel.training.ranges import predict_range

    return [{**row, "network": "analytical"}
            for row in predict_range(cluster, workload, nodes, baseline="device").to_rows()]


def simulated(cluster: Cluster, workload: Workload, nodes: list[int],
              seeds: list[int]) -> list[dict[str, Any]]:
    """The discrete-event simulator, one run per node count with its own seed."""
    try:
        sim = importlib.import_module("dlscale.simulator")
        simulate = sim.simulate
    except (ImportError, AttributeError):
        raise DlscaleError("fidelity 'simulated' needs dlscale.simulator.simulate, "
                           "which this installation does not have") from None
    rows = []
    for n, seed in zip(nodes, seeds, strict=True):
        result = simulate(cluster, workload, n, seed=seed)   # the API's default network
        got = result.to_rows() if hasattr(result, "to_rows") else [dict(result)]
        rows.append({**got[-1], "network": getattr(result, "network", None),
                     "runtime": cluster.runtime.name})
    return rows


#: Evaluator name -> function.
EVALUATORS: dict[str, Evaluator] = {"analytical": analytical, "simulated": simulated}


def resolve_evaluator(spec: str | Evaluator) -> Evaluator:
    """An evaluator from a name in :data:`EVALUATORS`, ``"module:function"`` or a callable.

    Examples
    --------
    >>> resolve_evaluator("analytical") is analytical
    True
    >>> resolve_evaluator("analytic")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: evaluator: unknown name 'analytic'; valid: analytical, module:function, simulated (did you mean 'analytical'?)
    """
    if callable(spec):
        return spec
    if spec in EVALUATORS:
        return EVALUATORS[spec]
    if ":" in spec:
        mod, _, fn = spec.partition(":")
        try:
            return getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"evaluator: cannot import {spec!r}: {exc}") from None
    raise unknown_name("evaluator", spec, [*EVALUATORS, "module:function"])


MPI_START = "mpiexec -n N python -m mpi4py.futures -m dlscale sweep STUDY.toml --executor mpi"


def mpi_preflight() -> str | None:
    """Check where ``--executor mpi`` runs; return a one-line note to print, or None.

    Under ``python -m mpi4py.futures`` rank 0 runs the sweep and the other ranks are
    its workers; with one rank there are none and mpi4py runs the points in a thread
    of rank 0 (said in the note). Under a plain ``mpiexec -n N dlscale sweep`` (N > 1)
    every rank would run the whole sweep into the same folder: a :class:`ConfigError`.
    Without mpiexec, mpi4py spawns the workers (``MPI_Comm_spawn``).
    """
    try:
        from mpi4py import MPI
        from mpi4py.futures import _core
    except ImportError:
        raise ConfigError("--executor mpi: mpi4py is not installed "
                          "(pip install 'dlscale[mpi]')") from None
    size = MPI.COMM_WORLD.Get_size()
    shared = getattr(_core, "SharedPool", None) is not None
    if size > 1 and not shared:
        raise ConfigError(f"--executor mpi: {size} MPI processes each running the whole "
                          f"sweep; start it as `{MPI_START}`")
    if shared and size == 1:
        return ("--executor mpi: 1 MPI process, no worker ranks: the points run one at a "
                "time in rank 0 (mpiexec -n N gives N-1 workers)")
    return None


def _make_executor(name: str, jobs: int | None) -> cf.Executor:
    if name == "process":  # workers ignore Ctrl-C and die with the parent
        from dlscale.sweep_guard import worker_init

        return cf.ProcessPoolExecutor(max_workers=jobs, initializer=worker_init)
    if name == "mpi":
        mpi_preflight()
        from mpi4py.futures import MPIPoolExecutor

        return MPIPoolExecutor(max_workers=jobs)
    return _SerialExecutor()


class _SerialExecutor(cf.Executor):
    """Runs each task at submit time, in this process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future[Any]:
        fut: cf.Future[Any] = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            fut.set_exception(exc)
        return fut


#: Executor name -> factory ``f(jobs) -> concurrent.futures.Executor``.
EXECUTORS: dict[str, Callable[[int | None], cf.Executor]] = {
    name: functools.partial(_make_executor, name) for name in ("process", "mpi", "serial")
}


@functools.lru_cache(maxsize=32)
def _cluster(spec: str) -> Cluster:
    return load_cluster(spec)


@functools.lru_cache(maxsize=32)
def _workload(spec: str) -> Workload:
    return load_workload(spec)


def _overridden(obj: Any, overrides: Mapping[str, Any], where: str,
                cache: dict[tuple[int, str], Any] | None) -> Any:
    if not overrides:
        return obj
    if cache is None:
        return apply_overrides(obj, overrides, where)
    try:
        ckey = (id(obj), json.dumps(overrides, sort_keys=True))
    except TypeError:  # values JSON cannot encode: no caching
        return apply_overrides(obj, overrides, where)
    if ckey not in cache:
        # the entry holds ``obj`` too: while it is cached no other object can take its id
        cache[ckey] = (obj, apply_overrides(obj, overrides, where))
    return cache[ckey][1]


def materialize(base_cluster: Cluster | str, base_workload: Workload | str,
                params: Mapping[str, Any],
                cache: dict[tuple[int, str], Any] | None = None) -> tuple[Cluster, Workload]:
    """The cluster and workload of one parameter combination.

    ``cache`` (a dict the caller keeps while the base objects live) memoizes the
    overridden objects: grid neighbours share most of their values.
    """
    c_spec, w_spec, c_over, w_over = split_params(params)
    cluster = _cluster(c_spec) if c_spec is not None else base_cluster
    workload = _workload(w_spec) if w_spec is not None else base_workload
    if isinstance(cluster, str):
        cluster = _cluster(cluster)
    if isinstance(workload, str):
        workload = _workload(workload)
    return (_overridden(cluster, c_over, "cluster", cache),
            _overridden(workload, w_over, "workload", cache))
