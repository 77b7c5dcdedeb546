"""The public Python API: the command line's questions, asked from code.

Every function returns a documented result object holding ``rows`` (plain dicts)
and ``meta``, with ``to_rows()`` (a pandas-free list of dicts), ``to_csv(path)`` and
``to_json(path)`` (see :class:`dlscale.results.ResultTable`).

- :func:`load_cluster`, :func:`load_workload`: a preset name, a TOML file, or an
  object; change fields with ``overrides={"network.link.bandwidth_GBps": 25}``.
- :func:`predict`: the analytical model over node counts -> :class:`PredictResult`.
- :func:`simulate`: the discrete-event simulator -> :class:`SimulateResult`.
- :func:`simulate_transformer`: one iteration of a transformer's tp x pp x dp layout
  as events -> :class:`SimulateResult`.
- :func:`sweep`: a study file or table -> :class:`dlscale.sweep.SweepResult`.
- :func:`plan`: capacity planning -> :class:`dlscale.plan.PlanResult`; a transformer
  model goes to :func:`plan_layouts`.
- :func:`plan_layouts`: a transformer's parallel layouts and machine size ->
  :class:`dlscale.plan_llm.LayoutPlanResult`.
- :func:`validate`: the published cases, or this machine under ``mpiexec`` ->
  :class:`dlscale.measure.ValidateResult`.
- :func:`calibrate`: measure and fit this machine under ``mpiexec`` ->
  :class:`dlscale.measure.CalibrateResult`.

Examples
--------
>>> c = load_cluster("summit", overrides={"network.link.bandwidth_GBps": 25})
>>> c.network.link.bandwidth_Bps
25000000000.0
>>> w = load_workload("resnet50", overrides={"batch_per_device": 64})
>>> w.batch_per_device
64
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlscale.measure import CalibrateResult, ValidateResult
from dlscale.perfmodel.errors import ConfigError, DlscaleError
from dlscale.perfmodel.machine import config as _config
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload
from dlscale.results import ResultTable

if TYPE_CHECKING:
    from dlscale.plan import PlanResult
    from dlscale.study import Study
    from dlscale.sweep import SweepResult

__all__ = ["CalibrateResult", "PlanResult", "PredictResult", "ResultTable", "SimulateResult",
           "SweepResult", "ValidateResult", "calibrate", "fit", "load_cluster", "load_workload",
           "plan", "plan_layouts", "predict", "simulate", "simulate_transformer", "sweep",
           "validate"]


def load_cluster(spec: str | Path | Cluster, overrides: Mapping[str, Any] | None = None,
                 profile: str | Path | None = None) -> Cluster:
    """A cluster from a preset name, a TOML file or an object, with dotted-path overrides
    and, optionally, a machine profile from ``dlscale calibrate`` applied.

    Parameters
    ----------
    spec : str, Path or Cluster
        A catalog name, a TOML file or a Cluster.
    overrides : mapping of str to value, optional
        Dotted path -> value, in the TOML keys and units
        (``{"node.nic.bandwidth_GBps": 25}``).
    profile : str or Path, optional
        A calibration profile whose measurements replace catalog figures.

    Returns
    -------
    Cluster

    Raises
    ------
    ConfigError
        An unknown name, a bad file, key or value (each naming the field), or a bad
        override path.
    """
    cluster = _config.load_cluster(spec)
    if overrides:
        cluster = _config.apply_overrides(cluster, overrides, "cluster")
    return _config.load_cluster(cluster, profile)


def load_workload(spec: str | Path | Workload,
                  overrides: Mapping[str, Any] | None = None) -> Workload:
    """A workload from a preset name, a TOML file or an object, with dotted-path overrides.

    Parameters
    ----------
    spec : str, Path or Workload
        A catalog name, a TOML file or a Workload.
    overrides : mapping of str to value, optional
        Dotted path -> value (``{"batch_per_device": 64}``).

    Returns
    -------
    Workload

    Raises
    ------
    ConfigError
        An unknown name, a bad file, key or value (each naming the field), or a bad
        override path.
    """
    workload = _config.load_workload(spec)
    if overrides:
        workload = _config.apply_overrides(workload, overrides, "workload")
    return workload


def _nodes(cluster: Cluster, nodes: int | str | Sequence[int] | None) -> list[int]:
    from dlscale.node_counts import parse_nodes

    if nodes is None:
        out = parse_nodes(f"1-{cluster.max_nodes}")
    elif isinstance(nodes, str):
        out = parse_nodes(nodes)
    elif isinstance(nodes, int):
        out = [nodes]
    else:
        out = list(nodes)
    for n in out:
        cluster.check_nodes(n)
    return out


class PredictResult(ResultTable):
    """Analytical prediction, one row per node count.

    Rows hold ``nodes``, ``devices``, ``iteration_s``, ``compute_s``, ``comm_s``,
    ``exposed_comm_s``, ``samples_per_s``, ``efficiency``,
    ``memory_per_device_bytes``, ``fits`` (and whatever else the model reports,
    such as ``bottleneck``), plus ``time_to_train_s``, ``node_hours`` and ``cost``
    for the workload's epochs. ``raw`` is the model's own result object.
    """

    raw: Any = None


class SimulateResult(ResultTable):
    """Discrete-event simulation, one row per node count (same columns as
    :class:`PredictResult` where the simulator reports them); ``raw`` holds the
    simulator's result objects, one per node count."""

    raw: Any = None


def predict(cluster: str | Path | Cluster, workload: str | Path | Workload,
            nodes: int | str | Sequence[int] | None = None, *,
            cluster_overrides: Mapping[str, Any] | None = None,
            workload_overrides: Mapping[str, Any] | None = None,
            profile: str | Path | None = None, baseline: str = "node") -> PredictResult:
    """Predict time per iteration and scaling with the closed-form model.

    ``dlscale predict`` is this function behind its parser: the command loads and
    changes the cluster and workload as its flags say and asks here.

    ``nodes`` is a count, a list, a string like ``"1-4608"`` or None (doubling up
    to the cluster's size).

    Parameters
    ----------
    cluster, workload : str, Path or object
        As :func:`load_cluster` and :func:`load_workload` take them.
    nodes : int, str, sequence of int or None, optional
        Node counts.
    cluster_overrides, workload_overrides : mapping, optional
        Dotted-path overrides applied to each.
    profile : str or Path, optional
        A calibration profile applied to the cluster.
    baseline : {"node", "device"}, optional
        What efficiency is measured against: one node (default) or one device alone.

    Returns
    -------
    PredictResult
        One row per node count (``.rows``, ``.to_csv()``, ``.to_json()``, ...).

    Raises
    ------
    ConfigError
        A bad cluster, workload, override or node count, before any work.
    """
    from dlscale.perfmodel.training.ranges import predict_range
    from dlscale.training_metrics import add_training_metrics

    c = load_cluster(cluster, cluster_overrides, profile)
    w = load_workload(workload, workload_overrides)
    if profile is not None:   # a fitted single-device rate, as the command applies it
        from dlscale.perfmodel.fitting.fitted_compute import with_fitted_compute
        from dlscale.perfmodel.machine.profile import load_profile

        w, _ = with_fitted_compute(w, load_profile(profile), Path(profile).name)
    raw = predict_range(c, w, _nodes(c, nodes), baseline=baseline)
    rows = raw.to_rows()
    for row in rows:
        add_training_metrics(row, c, w)
    out = PredictResult(rows, {"cluster": c.name, "workload": w.name, "fidelity": "analytical",
                               "runtime": c.runtime.name, "baseline": raw.baseline})
    out.raw = raw
    return out


def simulate(cluster: str | Path | Cluster, workload: str | Path | Workload,
             nodes: int | str | Sequence[int], *, seed: int = 0,
             cluster_overrides: Mapping[str, Any] | None = None,
             workload_overrides: Mapping[str, Any] | None = None,
             stragglers: float | None = None, progress: bool = False,
             **options: Any) -> SimulateResult:
    """Simulate with the discrete-event model (``dlscale.simulator.simulate``), one run
    per node count, all with ``seed``; ``options`` go to the simulator.

    ``dlscale simulate CLUSTER WORKLOAD`` is this function behind its parser (once per
    algorithm of ``--compare``). Each node count is one simulation; the closed form's
    answer to the question (the analytical reference of every row, the one-node
    baseline the efficiencies divide by, the bands) is computed once, over all the
    node counts, and handed to each run
    (:func:`dlscale.simulator.training.run.analytical_answer`).

    Parameters
    ----------
    cluster, workload : str, Path or object
        As :func:`load_cluster` and :func:`load_workload` take them.
    nodes : int, str or sequence of int
        Node counts, one run each.
    seed : int, optional
        Seed of every run (same seed, same result, bit for bit).
    cluster_overrides, workload_overrides : mapping, optional
        Dotted-path overrides applied to each.
    stragglers : float, optional
        Per-rank compute noise: the sigma of the lognormal factor each rank draws per
        iteration (mean 1), the same as ``noise="lognormal:SIGMA"``; not with ``noise``.
    progress : bool, optional
        Show a progress bar on stderr over the runs (two or more).
    **options
        Keyword arguments of :func:`dlscale.simulator.simulate_training`
        (``algorithm``, ``iterations``, ``network``, ``noise``, ``mode``, ...); a
        ``trace`` path is written by the last node count's run (each run would write
        it over the one before).

    Returns
    -------
    SimulateResult
        One row per node count; ``.raw`` holds the simulator's
        :class:`~dlscale.simulator.TrainingResult` of each.

    Raises
    ------
    ConfigError
        A bad cluster, workload, override, node count or option (an unknown keyword
        names the valid ones), before any work.
    """
    from dlscale.training_metrics import add_training_metrics

    try:
        sim = importlib.import_module("dlscale.simulator").simulate
    except (ImportError, AttributeError):
        raise DlscaleError("simulate needs dlscale.simulator.simulate, which this "
                           "installation does not have") from None
    options = _simulate_options(sim, stragglers, options)
    c = load_cluster(cluster, cluster_overrides)
    w = load_workload(workload, workload_overrides)
    counts = _nodes(c, nodes)
    if sim is getattr(importlib.import_module("dlscale.simulator.training.run"),
                      "simulate_training", None):
        # every node count checked before the first runs (one line, no work done)
        from dlscale.simulator.training.run import check_runs

        check_runs(c, w, counts, seed=seed, **{k: options[k] for k in (
            "algorithm", "iterations", "mode", "network", "placement") if k in options})
    answer = _analytical(c, w, counts, options)
    trace = options.pop("trace", False)
    raws, rows = [], []
    for i in _progress(range(len(counts)), progress and len(counts) > 1):
        last = i == len(counts) - 1
        n = counts[i]
        res = sim(c, w, n, seed=seed, analytical=answer,
                  trace=trace if (last or not isinstance(trace, (str, os.PathLike))) else False,
                  **options)
        raws.append(res)
        row = dict(res.to_rows()[-1]) if hasattr(res, "to_rows") else dict(res)
        row.setdefault("nodes", n)
        if "samples_per_s" in row:
            add_training_metrics(row, c, w)
        rows.append(row)
    out = SimulateResult(rows, {"cluster": c.name, "workload": w.name, "fidelity": "simulated",
                                "seed": seed})
    out.raw = raws
    return out


def _analytical(cluster: Cluster, workload: Workload, nodes: list[int],
                options: dict[str, Any]) -> Any:
    """The closed form's answer to the question, once for all its node counts (None
    where no efficiency is asked for, or where the closed form cannot price it: each
    run then says why, or answers alone)."""
    if not options.get("efficiency", True):
        return None
    from dlscale.simulator.training.run import analytical_answer

    try:
        return analytical_answer(cluster, workload, nodes, algorithm=options.get("algorithm"),
                                 noise=options.get("noise"),
                                 baseline=options.get("baseline", "node"))
    except ConfigError:
        return None


def _progress(items: range, show: bool) -> Any:
    """``items``, with a progress bar on stderr where ``show`` and stderr is a terminal."""
    import sys

    if not show or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, file=sys.stderr, desc="simulate")


def _simulate_options(sim: Any, stragglers: float | None,
                      options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against the simulator's keywords, ``stragglers`` as ``noise``."""
    import inspect
    import math

    params = inspect.signature(sim).parameters
    valid = sorted(k for k, p in params.items()
                   if p.kind is p.KEYWORD_ONLY and k not in ("seed", "analytical"))
    bad = sorted(k for k in options if k not in valid)
    if bad:
        raise ConfigError(f"simulate: unknown option {', '.join(bad)}; valid: "
                          f"{', '.join(['stragglers', *valid])}")
    if stragglers is None:
        return options
    if "noise" in options:
        raise ConfigError("simulate: stragglers and noise both given; stragglers=SIGMA is "
                          "noise='lognormal:SIGMA', give one")
    if isinstance(stragglers, bool) or not isinstance(stragglers, (int, float)) \
            or not math.isfinite(stragglers) or stragglers < 0:
        raise ConfigError(f"simulate: stragglers must be a lognormal sigma >= 0, got "
                          f"{stragglers!r}")
    return {**options, "noise": f"lognormal:{float(stragglers)!r}"}


def sweep(study: str | Path | Study | Mapping[str, Any], out_dir: str | Path | None = None,
          **options: Any) -> SweepResult:
    """Run a study (file path, parsed :class:`~dlscale.study.Study`, or a table with
    the file's keys) -> :class:`~dlscale.sweep.SweepResult`. ``options`` are those of
    :func:`dlscale.sweep.run_sweep` (``executor``, ``jobs``, ``resume``, ``quiet``,
    ``evaluators``, ``plots``). A table needs ``out_dir``.

    Parameters
    ----------
    study : str, Path, Study or mapping
        The study.
    out_dir : str or Path, optional
        Where the results go (default: the study's own; required for a table).
    **options
        Keyword arguments of :func:`dlscale.sweep.run_sweep`.

    Returns
    -------
    SweepResult

    Raises
    ------
    DlscaleError
        A bad study (ConfigError), a table without ``out_dir``, or a bad option.
    """
    from dlscale.study import Study, load_study, parse_study
    from dlscale.sweep import run_sweep

    if isinstance(study, Mapping):
        if out_dir is None:
            raise DlscaleError("sweep: a study given as a table needs out_dir")
        study = parse_study(study, Path(out_dir) / "study.toml")
    elif not isinstance(study, Study):
        study = load_study(study)
    options.setdefault("quiet", True)
    return run_sweep(study, out_dir, **options)


def plan(workload: str | Path | Workload, clusters: Sequence[str | Path | Cluster],
         **options: Any) -> Any:
    """Capacity planning; the options are those of :func:`dlscale.plan.plan`, or for a
    transformer of the catalog (``dlscale catalog transformers``) those of
    :func:`plan_layouts`, which it then asks.

    Parameters
    ----------
    workload : str, Path or Workload
        What to train.
    clusters : sequence of str, Path or Cluster
        The candidate machines.
    **options
        Keyword arguments of :func:`dlscale.plan.plan` (limits, budgets, ranking).

    Returns
    -------
    PlanResult or LayoutPlanResult

    Raises
    ------
    ConfigError
        A bad workload, cluster or option.
    """
    from dlscale.perfmodel.catalog.models_llm import LLMS
    from dlscale.plan import plan as _plan

    if isinstance(workload, str) and workload in LLMS:
        return plan_layouts(workload, clusters, **_checked_options("plan", _plan_layouts(),
                                                                   options))
    return _plan(workload, list(clusters), **options)


def validate(what: str = "published", **options: Any) -> ValidateResult:
    """Hold the model against measurements: ``dlscale validate WHAT`` from code.

    ``"published"`` reproduces the seed papers' published results point by point
    (:mod:`dlscale.validation.published`); ``"local"``, run under ``mpiexec -n N``,
    fits this machine on part of its measurements and predicts the held-out part
    (allreduce sizes and rank counts not fitted, real distributed training runs; see
    :mod:`dlscale.validation.validate_local`). ``dlscale validate`` is this function
    behind its parser; it writes the files.

    Parameters
    ----------
    what : {"published", "local"}, optional
        Which validation (default: the published cases).
    **options
        For ``"published"``: ``cases`` (names, default all) and ``fidelities``
        (``"analytical"``, ``"simulated"``; default both: the simulated rows take
        minutes). For ``"local"``: ``min_size``, ``max_size`` (bytes; default 1 KiB and
        64 MiB), ``budget_s`` (default 60), ``iterations`` (per training run, default
        500), ``rounds`` (default 8), ``algorithms`` (default all), ``oversubscribe``,
        ``yield_mode`` (``"auto"``, ``"on"``, ``"off"``), ``progress`` (lines on
        stderr), ``argv`` (recorded), ``comm`` (an mpi4py communicator; default: MPI
        started here and its ``COMM_WORLD``), ``timeline`` (record the first
        ``sgd-allreduce`` run as a Horovod-format timeline, on ``.timeline``).

    Returns
    -------
    ValidateResult
        One row per compared case; ``.meta`` the counts and summaries and the
        provenance; ``.raw`` the outputs of each published case, or the local report.
        Under MPI the ranks other than 0 get no rows and ``meta["rank"]``.

    Raises
    ------
    ConfigError
        An unknown ``what``, option, case, fidelity or algorithm, or a bad value,
        before any work.

    Examples
    --------
    >>> r = validate("published", cases=["cavdar-isc19"], fidelities=["analytical"])
    >>> r.meta["cases"], r.meta["rows"] == len(r.rows) > 0
    (['cavdar-isc19'], True)
    >>> sorted({row["fidelity"] for row in r.rows})
    ['analytical']
    """
    from dlscale import measure

    kinds: dict[str, Callable[..., ValidateResult]] = {
        "published": measure.validate_published, "local": measure.validate_local}
    if what not in kinds:
        raise ConfigError(f"validate: unknown {what!r}; valid: {', '.join(kinds)}")
    return kinds[what](**_checked_options(f"validate {what}", kinds[what], options))


def calibrate(sizes: Sequence[int] | None = None, **options: Any) -> CalibrateResult:
    """Measure and fit this machine (under ``mpiexec -n N``): ``dlscale calibrate``
    from code.

    Point-to-point latency and bandwidth (intra-node, and inter-node where ranks sit
    on several hosts), MPI collectives and the project's kernels, fitted (piecewise
    Hockney, LogGP, collective efficiency); see
    :mod:`dlscale.validation.calibrate_run`. ``dlscale calibrate`` is this function
    behind its parser; it writes the profile.

    Parameters
    ----------
    sizes : sequence of int, optional
        Message sizes in bytes (default: powers of two from 1 B to 64 MiB).
    **options
        ``budget_s`` (seconds of the whole run, default 60; repetitions adapt, sizes
        that do not fit are left out with a note), ``started`` (the
        :func:`time.monotonic` reading the budget counts from; default: now),
        ``collectives`` (names, default all), ``rank_counts`` (default: all ranks),
        ``kernels`` (default True), ``allreduce_algorithm`` (the MPI library's, set
        before MPI starts; default the library's choice), ``yield_mode``,
        ``progress``, ``argv``, ``comm`` (an mpi4py communicator; default: MPI
        started here and its ``COMM_WORLD``).

    Returns
    -------
    CalibrateResult
        One row per fitted figure (``kind``, ``name``, ``value``, ``unit``);
        ``.profile`` the machine profile (save it with
        :func:`dlscale.perfmodel.machine.profile.save_profile`, use it with
        ``load_cluster(..., profile=path)``). The ranks other than 0 get no rows, no
        profile and ``meta["rank"]``.

    Raises
    ------
    ConfigError
        An unknown option or collective, a bad size or budget, before measuring.
    """
    from dlscale import measure

    return measure.calibrate(sizes, **_checked_options("calibrate", measure.calibrate,
                                                       options))


def _checked_options(what: str, fn: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options``, each a keyword-only parameter of ``fn``, else a one-line refusal."""
    import inspect

    params = inspect.signature(fn).parameters
    valid = sorted(k for k, p in params.items()
                   if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and k != "sizes")
    bad = sorted(k for k in options if k not in valid)
    if bad:
        raise ConfigError(f"{what}: unknown option {', '.join(bad)}; valid: {', '.join(valid)}")
    return options


def __getattr__(name: str) -> Any:
    """:class:`PlanResult` and :class:`SweepResult`, imported on first use: asking one
    question (``dlscale predict``) does not load the plan, sweep and study layers
    (:class:`ValidateResult` and :class:`CalibrateResult` come from the light
    :mod:`dlscale.measure`, whose work is imported when asked)."""
    if name == "PlanResult":
        from dlscale.plan import PlanResult
        return PlanResult
    if name == "SweepResult":
        from dlscale.sweep import SweepResult
        return SweepResult
    raise AttributeError(f"module 'dlscale.api' has no attribute {name!r}")


def fit(cluster: str | Path | Cluster, workload: str | Path | Workload,
        rates: str | Path | None = None, *, nodes: Sequence[int] | None = None,
        horovod_timeline: str | Path | None = None,
        single_device: tuple[float, int] | None = None, runtime: str | None = None,
        workload_overrides: Mapping[str, Any] | None = None, baseline: str | None = None,
        output: str | Path | None = None) -> Any:
    """Fit the costs real runs pay to the user's own small run, into a machine profile.

    From a table of measured rates at a few node counts and/or a Horovod timeline of a
    multi-rank run, fit the mechanisms the model has with cited ranges (the overlap
    achieved, compute slowed beside communication, the transport's efficiency, the
    input pipeline), within those ranges, by bounded least squares; the parameters
    the data cannot determine or separate are held at their central values
    (:func:`dlscale.perfmodel.fitting.scaling.fit_scaling`). With ``output``, the
    fitted values are written as a profile that ``--profile`` (or ``profile=``)
    applies at every scale, with what produced it (this version, the inputs and
    their SHA-256).

    Parameters
    ----------
    cluster, workload : str, Path or object
        The machine and what was trained on it, as :func:`predict` takes them.
    rates : str or Path, optional
        A rates table (:func:`dlscale.perfmodel.fitting.rates_table.read_rates`: CSV
        or TOML); its ``[single_device]`` rate, if any, sets the compute.
    nodes : sequence of int, optional
        Fit only the table's rows at these node counts (hold the others out).
    horovod_timeline : str or Path, optional
        A Horovod timeline: its collective and exposed time per iteration.
    single_device : (float, int), optional
        Samples/s one device alone trained at, and its batch: sets the compute (not
        with a table that gives one).
    runtime : str, optional
        The runtime the run used (default: the cluster's).
    workload_overrides : mapping, optional
        Workload fields changed by dotted path (``{"batch_per_device": 64}``).
    baseline : {"node", "device"}, optional
        What a table's efficiencies are measured against (default ``"node"``);
        ``"device"`` is refused where no observation is an efficiency (nothing would
        read it).
    output : str or Path, optional
        Where to write the profile (atomically; a regular file there is replaced, as
        ``calibrate`` does, a write-protected one refused).

    Returns
    -------
    dlscale.perfmodel.fitting.scaling.ScalingFit
        Fitted and held values, residuals, notes; ``cluster`` and ``workload`` with
        the fit applied.

    Raises
    ------
    ConfigError
        No input, a bad input file or value, an output that cannot be written.

    Examples
    --------
    >>> f = fit("validation/holdout/piz-daint-p100.toml", "inception-v3",
    ...         "examples/fit/daint-inception-v3.toml", runtime="parameter-server",
    ...         workload_overrides={"batch_per_device": 64, "data": "synthetic"})
    >>> sorted(f.fitted), sorted(f.held)
    (['overlap'], ['transport'])
    """
    import dataclasses
    import hashlib

    from dlscale.perfmodel.catalog.runtimes import apply_runtime
    from dlscale.perfmodel.compute.measured import MeasuredCompute
    from dlscale.perfmodel.fitting.rates_table import read_rates, timeline_observations
    from dlscale.perfmodel.fitting.scaling import fit_scaling
    from dlscale.perfmodel.machine.profile import MachineProfile, save_profile
    from dlscale.perfmodel.output.atomicio import check_output_path
    from dlscale.perfmodel.training.predict import BASELINES
    from dlscale.provenance import version

    if baseline is not None and baseline not in BASELINES:
        raise ConfigError(f"baseline: must be one of {', '.join(BASELINES)}, got {baseline!r}")
    if rates is None and horovod_timeline is None:
        raise ConfigError("fit: give a rates table, a Horovod timeline, or both")
    check_output_path(output, "-o")
    c = apply_runtime(load_cluster(cluster), runtime, "--runtime")
    w = load_workload(workload, overrides=workload_overrides)
    table = read_rates(rates) if rates is not None else None
    obs = list(table.points) if table is not None else []
    if nodes is not None:
        obs = [o for o in obs if o.nodes in set(nodes)]
        if not obs:
            have = sorted({o.nodes for o in table.points}) if table is not None else []
            raise ConfigError(f"--nodes: no row of {rates} at {list(nodes)} (it has "
                              f"{', '.join(map(str, have)) or 'no table'})")
    if table is not None and table.single_device is not None:
        if single_device is not None or w.model.measured is not None:
            raise ConfigError(f"{rates}: gives a single_device rate, and the compute is "
                              f"measured too (--measured-samples-per-s, --trace or "
                              f"single_device): give one of them")
        single_device = table.single_device
    if single_device is not None:
        if w.model.measured is not None:
            raise ConfigError("single_device: the workload's compute is already measured "
                              f"({w.model.measured.describe()}); give one of them")
        rate, batch = single_device
        m = MeasuredCompute(batch=int(batch), samples_per_s=float(rate),
                            source=f"single-device rate {rate:g}@{batch}")
        w = dataclasses.replace(w, model=dataclasses.replace(w.model, measured=m))
    if horovod_timeline is not None:
        obs += timeline_observations(horovod_timeline, c.node.devices_per_node,
                                     w.layer_gradient_bytes())
    if baseline == "device" and not any(o.quantity == "efficiency" for o in obs):
        given = sorted({o.quantity for o in obs})
        raise ConfigError(f"--baseline {baseline}: says what measured efficiencies are "
                          f"against; these observations hold none ({', '.join(given)}), so "
                          f"nothing would read it (drop it, or give an efficiency column)")
    result = fit_scaling(c, w, obs, baseline or "node")
    if output is not None:
        inputs = []
        for p in (rates, horovod_timeline):
            if p is not None:
                digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                inputs.append(f"{p} (sha256 {digest})")
        if nodes is not None:
            inputs.append(f"rows at nodes {', '.join(map(str, sorted(set(nodes))))}")
        measured = w.model.measured.describe() if w.model.measured is not None else ""
        prof = MachineProfile(
            fitted=result.profile_fitted(inputs),
            provenance={"dlscale_version": version(), "command": "dlscale fit",
                        "inputs": inputs, "cluster": c.name, "workload": w.name,
                        "runtime": c.runtime.name, "measured_compute": measured,
                        "table_source": table.source if table is not None else ""},
            notes=list(result.notes))
        save_profile(prof, output)
        result.profile = prof
    return result


def _plan_layouts() -> Callable[..., Any]:
    from dlscale.plan_llm import plan_layouts as fn

    return fn


def plan_layouts(model: str | Any, clusters: Sequence[str | Path | Cluster],
                 **options: Any) -> Any:
    """A transformer's parallel layouts and machine size: ``dlscale plan TRANSFORMER``.

    Every layout ``tp x pp x dp x micro x schedule x zero x recompute x sp`` on each
    cluster and node count, memory first, then the time :func:`predict`'s transformer
    path gives; the fastest that fits, or the fewest GPUs that meet
    ``tokens_per_day`` (or ``tokens`` by ``deadline_s``).

    Parameters
    ----------
    model : str or TransformerSpec
        A transformer of the catalog (``dlscale catalog transformers``).
    clusters : sequence of str, Path or Cluster
        The machines on offer.
    **options
        Keyword arguments of :func:`dlscale.plan_llm.plan_layouts` (``global_batch``
        required; ``nodes``, the targets, the dimensions' values to try).

    Returns
    -------
    dlscale.plan_llm.LayoutPlanResult
        The chosen machine's Pareto layouts (``rows``), every machine tried and why
        (``meta``).

    Raises
    ------
    ConfigError
        A bad model, cluster or option, before any work.

    Examples
    --------
    >>> res = plan_layouts("gpt-1.7b", ["dgx1-v100"], global_batch=16, nodes=[1],
    ...                    recompute=["none"], zero=[0])
    >>> res.feasible, res.meta["gpus"]
    (True, 8)
    """
    return _plan_layouts()(model, list(clusters), **_checked_options("plan_layouts",
                                                                     _plan_layouts(), options))


#: The simulated transformer values that carry a band, as ``predict`` bands them.
_SIMULATED_BANDED = ("iteration_s", "tflops_per_gpu")


def _simulated_band(row: dict[str, Any], cluster: Cluster, spec: Any, layout: Any,
                    noise: str | None) -> dict[str, Any]:
    """``row`` with ``KEY_low``/``KEY_high`` after each of :data:`_SIMULATED_BANDED`: the
    rule of the data-parallel ``simulate`` (``simulator.training.run._band``): each end
    of ``predict``'s band (:func:`~dlscale.perfmodel.training.llm_ranges.llm_band`, for
    the run's noise) relative to its central answer, applied to the simulated value
    (:func:`~dlscale.perfmodel.training.ranges.relative_band`)."""
    from dlscale.perfmodel.compute.variability import cluster_noise
    from dlscale.perfmodel.training.llm_ranges import llm_band
    from dlscale.perfmodel.training.ranges import relative_band
    from dlscale.simulator.training.stragglers import make_noise

    if not row.get("fits", True):
        return row
    nz = make_noise(cluster_noise(cluster) if noise is None else noise)
    at = dataclasses.replace(cluster, noise=nz.spec) if nz.spec else cluster
    central, band = llm_band(at, spec, layout)
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        mid = float(getattr(central, k, float("nan"))) if k in _SIMULATED_BANDED else 0.0
        if k in _SIMULATED_BANDED and mid > 0 and math.isfinite(float(v)):
            out[f"{k}_low"], out[f"{k}_high"] = relative_band(float(v), mid, *band[k])
    return out


def simulate_transformer(cluster: str | Path | Cluster, model: str,
                         nodes: int | str | Sequence[int] | None = None, *, tp: int = 1,
                         pp: int = 1, microbatch: int = 1, global_batch: int | None = None,
                         schedule: str = "1f1b", virtual: int = 1, zero: int = 0,
                         recompute: str = "none", sp: bool = False, ep: int = 1,
                         precision: str = "fp16", noise: str | None = None, seed: int = 0,
                         trace: str | Path | None = None,
                         cluster_overrides: Mapping[str, Any] | None = None,
                         ) -> SimulateResult:
    """Simulate one iteration of a transformer's parallel layout as events, per node count.

    ``dlscale simulate CLUSTER TRANSFORMER --tp T --pp P ...`` is this function behind
    its parser. Each node count's GPUs split into ``tp x pp`` groups, ``dp`` the rest
    (as ``predict``'s transformer path); each is one simulation
    (:func:`dlscale.simulator.training.pipeline.simulate_pipeline`), every row beside
    ``predict``'s answer to the same layout (``analytical_s``, ``vs_analytical``).

    Parameters
    ----------
    cluster : str, Path or Cluster
        As :func:`load_cluster` takes it.
    model : str
        A transformer of the catalog (``dlscale catalog transformers``).
    nodes : int, str, sequence of int or None, optional
        Node counts; None: the fewest nodes that hold ``tp x pp`` GPUs.
    tp, pp, microbatch, global_batch, schedule, virtual, zero, recompute, sp, ep, precision
        The layout (:class:`dlscale.perfmodel.training.parallel.ParallelLayout`);
        ``global_batch`` None: one microbatch per replica; ``ep`` > 1 (a mixture of
        experts): its all-to-alls as events
        (:mod:`dlscale.simulator.training.pipeline_expert`).
    noise : str, optional
        Per-rank compute noise (``lognormal:SIGMA``, ``none``, ...); None: the
        cluster's, else its GPUs' rate spread
        (:func:`dlscale.perfmodel.compute.variability.cluster_noise`).
    seed : int, optional
        Seed of the noise draws (same seed, same result, bit for bit).
    trace : str or Path, optional
        Write the Chrome trace of the last node count's run there (the first and last
        replicas' stages: passes, sends, exchange, optimizer step).
    cluster_overrides : mapping, optional
        Dotted-path overrides of the cluster.

    Returns
    -------
    SimulateResult
        One row per node count; ``.raw`` holds each
        :class:`~dlscale.simulator.training.pipeline.PipelineResult`.

    Raises
    ------
    ConfigError
        A bad cluster, model, layout or node count, before any simulation.
    """
    from dlscale.node_counts import parse_nodes
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.perfmodel.compute.variability import cluster_noise
    from dlscale.perfmodel.training.parallel import ParallelLayout, replica_counts
    from dlscale.simulator.training.pipeline import check_layout, simulate_pipeline
    from dlscale.simulator.training.stragglers import make_noise

    c = load_cluster(cluster, cluster_overrides)
    spec = get_llm(model)
    make_noise(cluster_noise(c) if noise is None else noise)
    for name, value in (("tp", tp), ("pp", pp), ("ep", ep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name}: must be a positive integer, got {value!r}")
    counts = (None if nodes is None else parse_nodes(nodes) if isinstance(nodes, str) else
              [nodes] if isinstance(nodes, int) else list(nodes))
    layouts = []
    for n, dp in replica_counts(c, counts, tp, pp):
        lay = ParallelLayout(tp=tp, pp=pp, dp=dp, micro=microbatch,
                             global_batch=microbatch * dp if global_batch is None
                             else global_batch, schedule=schedule, virtual=virtual, zero=zero,
                             sp=sp, recompute=recompute, ep=ep, precision=precision)
        lay.check(spec)
        check_layout(c, lay)
        layouts.append((int(n), lay))
    raws, rows = [], []
    for i, (n, lay) in enumerate(layouts):
        res = simulate_pipeline(c, spec, lay, noise=noise, seed=seed,
                                trace=trace is not None and i == len(layouts) - 1)
        raws.append(res)
        rows.append(_simulated_band({"nodes": n, **res.to_row()}, c, spec, lay, noise))
    if trace is not None:
        from dlscale.simulator.network.trace import write_json_atomic

        write_json_atomic(raws[-1].trace, trace)
    out = SimulateResult(rows, {"cluster": c.name, "model": spec.name, "fidelity": "simulated",
                                "path": "transformer", "seed": seed, "source": spec.source})
    out.raw = raws
    return out
