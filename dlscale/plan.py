"""Capacity planning: which cluster, node count and algorithm meet a training target.

:func:`plan` evaluates a workload on every cluster on offer, over node counts,
training algorithms and allreduce algorithms (one vectorized evaluation per cluster,
algorithm and collective), checks each candidate against the limits, and ranks the
feasible ones. When none is feasible it says which limit makes the request
infeasible and by how much: for each limit, the best value reached by candidates
that meet every *other* limit, against the bound.

Limits (:data:`LIMITS`): ``deadline`` (time to train the target samples),
``throughput`` (samples per second), ``min_efficiency``, ``max_nodes``,
``budget_node_hours``, ``budget_cost`` (node-hours times the price per node-hour),
``max_power`` (node power times nodes), and ``memory`` (the training state fits the
device, always checked).

The bottleneck of a plan is the evaluator's ``bottleneck`` where it gives one (a
named link level, the master, ...), else ``memory`` when the state does not fit,
``compute`` when compute time is at least the exposed communication, and
``communication`` otherwise.

Examples
--------
>>> describe_violation("deadline", 30 * 3600.0, 25 * 3600.0)
'deadline: best 30 h against a limit of 25 h (20% over)'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dlscale.perfmodel.compute.variability import cluster_noise
from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.machine.config import apply_overrides, load_cluster, load_workload
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.ranges import PLAN_ON
from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES, Workload
from dlscale.results import ResultTable
from dlscale.sweep import Evaluator, resolve_evaluator

__all__ = ["LIMITS", "RANK_BY", "PlanRequest", "PlanResult", "describe_violation", "plan",
           "planned", "unpriced_line"]

#: Limit name -> (row field, True if the field must stay <= the bound, unit shown).
LIMITS: dict[str, tuple[str, bool, str]] = {
    "deadline": ("time_s", True, "h"),
    "throughput": ("samples_per_s", False, "samples/s"),
    "min_efficiency": ("efficiency", False, ""),
    "max_nodes": ("nodes", True, "nodes"),
    "budget_node_hours": ("node_hours", True, "node-hours"),
    "budget_cost": ("cost", True, ""),
    "max_power": ("power_w", True, "kW"),
    "memory": ("memory_per_device_bytes", True, "GiB"),
}

#: Ranking keys -> (row field, smaller is better).
RANK_BY: dict[str, tuple[str, bool]] = {
    "cost": ("cost", True),
    "node_hours": ("node_hours", True),
    "time": ("time_s", True),
    "nodes": ("nodes", True),
    "efficiency": ("efficiency", False),
}

_SCALE = {"h": 1 / 3600.0, "kW": 1e-3, "GiB": 1 / 1024.0**3}


def describe_violation(limit: str, best: float, bound: float) -> str:
    """One line: the limit, the best value reached, the bound, the relative excess."""
    _, upper, unit = LIMITS[limit]
    f = _SCALE.get(unit, 1.0)
    over = (best / bound - 1.0) if upper else (1.0 - best / bound)
    word = "over" if upper else "short"
    unit_txt = f" {unit}" if unit else ""
    return (f"{limit}: best {best * f:.4g}{unit_txt} against a limit of {bound * f:.4g}{unit_txt} "
            f"({over:.0%} {word})")


@dataclass(frozen=True)
class PlanRequest:
    """What to train, the target, the limits and the hardware on offer.

    Attributes
    ----------
    workload : Workload
    clusters : list of Cluster
    samples : float
        Samples to train (``epochs`` times the data set when given as epochs).
    bounds : dict
        Limit name (:data:`LIMITS`) -> bound in SI units (seconds, samples/s,
        fraction, nodes, node-hours, currency, watts).
    prices : dict
        Cluster name -> price per node-hour, None where the cluster has none.
    algorithms, collectives : list of str
    nodes : list of int or None
        Node counts to try (default: doubling from 1 to each cluster's size).
    rank_by : str
        One of :data:`RANK_BY`.
    """

    workload: Workload
    clusters: list[Cluster]
    samples: float
    bounds: dict[str, float] = field(default_factory=dict)
    prices: dict[str, float | None] = field(default_factory=dict)
    algorithms: list[str] = field(default_factory=list)
    collectives: list[str] = field(default_factory=list)
    nodes: list[int] | None = None
    rank_by: str = "cost"
    plan_on: str = "central"


class PlanResult(ResultTable):
    """Ranked feasible plans (``rows``), every candidate, and why none fit if so.

    Each row: ``rank``, ``cluster``, ``topology``, ``algorithm``, ``collective``,
    ``nodes``, ``devices``, ``iteration_s``, ``samples_per_s``, ``efficiency``,
    ``time_s`` (to train the target samples), ``node_hours``, ``cost``,
    ``power_w``, ``fits``, ``bottleneck``.
    """

    def __init__(self, rows: list[dict[str, Any]], meta: dict[str, Any] | None = None,
                 candidates: list[dict[str, Any]] | None = None,
                 infeasible: list[str] | None = None) -> None:
        super().__init__(rows, meta or {})
        #: Every evaluated candidate, with ``violates`` (names of the limits it breaks).
        self.candidates = candidates or []
        #: Lines saying which limit makes the request infeasible and by how much.
        self.infeasible = infeasible or []

    @property
    def feasible(self) -> bool:
        """True when at least one plan meets every limit."""
        return bool(self.rows)

    def to_json(self, path: Any) -> Any:
        """Write plans, request and the infeasibility lines as JSON."""
        meta = {**self.meta, "feasible": self.feasible, "infeasible": self.infeasible}
        return ResultTable(self.rows, meta).to_json(path)


def _bottleneck(row: Mapping[str, Any]) -> str:
    if row.get("bottleneck"):
        return str(row["bottleneck"])
    if row.get("fits") is False:
        return "memory"
    return "compute" if row.get("compute_s", 0) >= row.get("exposed_comm_s", 0) else "communication"


def _node_counts(cluster: Cluster, nodes: Sequence[int] | None, cap: float) -> list[int]:
    top = int(min(cluster.max_nodes, cap))
    if nodes is not None:
        return [n for n in nodes if n <= cluster.max_nodes]
    out, n = [], 1
    while n < top:
        out.append(n)
        n *= 2
    return [*out, top] if top >= 1 else out


def _evaluate(req: PlanRequest, fn: Evaluator) -> list[dict[str, Any]]:
    cands = []
    cap = req.bounds.get("max_nodes", math.inf)
    for cluster in req.clusters:
        price = req.prices.get(cluster.name)
        nodes = _node_counts(cluster, req.nodes, cap if req.nodes is None else math.inf)
        if req.workload.scaling == "strong":  # a rank needs at least one sample
            rpn = req.workload.ranks_per_node or cluster.node.devices_per_node
            nodes = [n for n in nodes if n * rpn <= req.workload.global_batch]
        if not nodes:
            continue
        mem = cluster.node.device.training_memory_bytes
        for algo in req.algorithms:
            for coll in req.collectives:
                w = replace(req.workload, algorithm=algo, collective=coll)
                for n, got in zip(nodes, fn(cluster, w, nodes, [0] * len(nodes)), strict=True):
                    rate = float(got["samples_per_s"])
                    t = req.samples / rate if rate > 0 else math.inf
                    row = {"cluster": cluster.name, "topology": cluster.network.topology.family,
                           "algorithm": algo, "collective": coll,
                           "allreduce": got.get("allreduce", ""),
                           "runtime": cluster.runtime.name, "nodes": n,
                           "devices": got.get("devices", n * cluster.node.devices_per_node),
                           "iteration_s": got.get("iteration_s"), "samples_per_s": rate,
                           "efficiency": got.get("efficiency"), "time_s": t,
                           "node_hours": n * t / 3600.0,
                           "cost": None if price is None else n * t / 3600.0 * price,
                           "power_w": n * cluster.node.power_w,
                           "memory_per_device_bytes": got.get("memory_per_device_bytes", 0.0),
                           "fits": bool(got.get("fits", True)), "bottleneck": _bottleneck(got),
                           "_memory_bound": mem, "plan_on": req.plan_on}
                    band = _band_columns(got, n, req.samples, price)
                    cands.append({k2: v2 for k, v in row.items() for k2, v2 in (
                        ((k, v), (f"{k}_low", band[f"{k}_low"]), (f"{k}_high", band[f"{k}_high"]))
                        if f"{k}_low" in band else ((k, v),))})
    return cands


#: Fields a plan may be made on the low or high end of: True where the answer's low
#: end is its pessimistic one (a rate, an efficiency), False where it is the high end
#: (a time, node-hours, a cost).
_PLANNED = {"samples_per_s": True, "efficiency": True, "time_s": False, "node_hours": False,
            "cost": False}


def _band_columns(got: Mapping[str, Any], n: int, samples: float,
                  price: float | None) -> dict[str, Any]:
    """The ``_low`` / ``_high`` of a candidate's iteration time, rate, efficiency and
    what follows from the rate (time to train, node-hours, cost); the central value
    where the evaluator gives no band."""
    out: dict[str, Any] = {}
    for k in ("iteration_s", "samples_per_s", "efficiency"):
        for end in ("low", "high"):
            v = got.get(f"{k}_{end}")
            out[f"{k}_{end}"] = got.get(k) if v is None else v
    for end, rate_end in (("low", "high"), ("high", "low")):   # high rate, low time
        rate = float(out[f"samples_per_s_{rate_end}"] or 0.0)
        t = samples / rate if rate > 0 else math.inf
        out[f"time_s_{end}"], out[f"node_hours_{end}"] = t, n * t / 3600.0
        out[f"cost_{end}"] = None if price is None else n * t / 3600.0 * price
    return out


def planned(row: Mapping[str, Any], fld: str) -> Any:
    """The value of ``fld`` a plan is made on: its central value, or with
    ``plan_on`` low (high) the pessimistic (optimistic) end of its band: the low rate
    and efficiency and so the high time, node-hours and cost.

    Examples
    --------
    >>> row = {"plan_on": "low", "efficiency": 0.9, "efficiency_low": 0.8,
    ...        "efficiency_high": 0.95, "time_s": 10, "time_s_low": 9, "time_s_high": 12}
    >>> planned(row, "efficiency"), planned(row, "time_s"), planned(row, "nodes")
    (0.8, 12, None)
    """
    on = row.get("plan_on", "central")
    if on == "central" or fld not in _PLANNED:
        return row.get(fld)
    end = "low" if (on == "low") == _PLANNED[fld] else "high"
    return row.get(f"{fld}_{end}")


def _violations(row: Mapping[str, Any], bounds: Mapping[str, float]) -> list[str]:
    out = []
    for limit, bound in bounds.items():
        fld, upper, _ = LIMITS[limit]
        v = planned(row, fld)
        if v is None or (v > bound if upper else v < bound):
            out.append(limit)
    if not row["fits"] and "memory" not in out:
        out.append("memory")
    return out


def _explain(cands: list[dict[str, Any]], bounds: Mapping[str, float]) -> list[str]:
    lines = []
    for limit in [*bounds, "memory"]:
        others = [c for c in cands if set(c["violates"]) <= {limit}]
        if not others:
            continue
        fld, upper, _ = LIMITS[limit]
        if limit == "memory":
            best = min(others, key=lambda c: c[fld] / c["_memory_bound"])
            lines.append(f"memory: the smallest training state needs "
                         f"{best[fld] / 1024**3:.3g} GiB per device, the device holds "
                         f"{best['_memory_bound'] / 1024**3:.3g} GiB ({best['cluster']})")
            continue
        vals = [planned(c, fld) for c in others]
        best = min(vals) if upper else max(vals)
        lines.append(describe_violation(limit, best, bounds[limit]))
    if not lines:
        lines.append("no candidate meets all but one limit; each limit alone:")
        for limit, bound in bounds.items():
            fld, upper, _ = LIMITS[limit]
            vals = [planned(c, fld) for c in cands if planned(c, fld) is not None]
            best = min(vals) if upper else max(vals)
            if (best > bound) if upper else (best < bound):
                lines.append("  " + describe_violation(limit, best, bound))
    return lines


def _check_limits(*, min_efficiency: float | None, **limits: float | None) -> None:
    """Each given limit a finite number > 0; ``min_efficiency`` in (0, 1]."""
    for name, v in limits.items():
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ConfigError(f"{name}: must be a finite number > 0, got {v!r}")
    if min_efficiency is not None and not (0 < min_efficiency <= 1):
        raise ConfigError(f"min_efficiency: must be in (0, 1], got {min_efficiency!r}")


def _choices(w: Workload, algorithms: Sequence[str] | None,
             collectives: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The training and allreduce algorithms to try (default: the workload's), checked."""
    algs = list(algorithms or [w.algorithm])
    colls = list(collectives or [w.collective])
    for a in algs:
        if a not in ALGORITHMS:
            raise unknown_name("algorithms", a, ALGORITHMS)
    for coll in colls:
        if coll not in COLLECTIVES:
            raise unknown_name("collectives", coll, COLLECTIVES)
    return algs, colls


def _prices(cl: list[Cluster], prices: Mapping[str, float] | None, budget_cost: float | None,
            max_power_w: float | None) -> dict[str, float | None]:
    """Price per node-hour of each cluster: ``prices`` first, else the cluster's own
    ``price_per_node_hour`` where it is above 0, else None (unpriced); checks what the
    limits need."""
    prices = dict(prices or {})
    for name in prices:
        if name not in {c.name for c in cl}:
            raise unknown_name("prices", name, [c.name for c in cl])
    priced: dict[str, float | None] = {
        c.name: float(prices[c.name]) if c.name in prices
        else (c.price_per_node_hour if c.price_per_node_hour > 0 else None) for c in cl}
    if budget_cost is not None:
        for name, p in priced.items():
            if p is None:
                raise ConfigError(f"budget_cost: cluster {name!r} has no price per node-hour; "
                                  f"give one (--price {name}=VALUE or price_per_node_hour)")
    if max_power_w is not None:
        for c in cl:
            if c.node.power_w <= 0:
                raise ConfigError(f"max_power: cluster {c.name!r} has no node power_w; "
                                  "give it in the cluster file")
    return priced


def unpriced_line(names: Sequence[str], rank_by: str, asked: str = "") -> str:
    """The line saying which clusters lack a price, how to give one, and how they rank
    (``rank_by`` the ranking used, ``asked`` the one requested).

    Examples
    --------
    >>> unpriced_line(["summit"], "cost")  # doctest: +NORMALIZE_WHITESPACE
    'unpriced: summit (no price per node-hour; give one with --price summit=PRICE or
    price_per_node_hour in the cluster file); ranked after the priced clusters, by node-hours'
    """
    how = (f"give one with --price {names[0] if len(names) == 1 else 'NAME'}=PRICE or "
           "price_per_node_hour in the cluster file")
    tail = ("; ranked after the priced clusters, by node-hours" if rank_by == "cost" else
            "; no cluster has a price, so ranked by node-hours" if asked == "cost" else "")
    return f"unpriced: {', '.join(names)} (no price per node-hour; {how}){tail}"


def plan(workload: Workload | str | Path, clusters: Sequence[Cluster | str | Path], *,
         epochs: float | None = None, samples: float | None = None,
         deadline_s: float | None = None, throughput: float | None = None,
         min_efficiency: float | None = None, max_nodes: int | None = None,
         budget_node_hours: float | None = None, budget_cost: float | None = None,
         prices: Mapping[str, float] | None = None, max_power_w: float | None = None,
         algorithms: Sequence[str] | None = None, collectives: Sequence[str] | None = None,
         nodes: Sequence[int] | None = None, rank_by: str = "cost",
         evaluator: str | Evaluator = "analytical",
         overrides: Mapping[str, Any] | None = None,
         runtime: str | None = None, plan_on: str = "central") -> PlanResult:
    """Search clusters x node counts x algorithms; rank the plans that meet every limit.

    Parameters
    ----------
    workload : Workload, str or Path
        Preset name, TOML path or object.
    clusters : sequence of Cluster, str or Path
        The hardware on offer.
    epochs, samples : float, optional
        How much to train (default: the workload's ``epochs`` over its data set).
    deadline_s, throughput : float, optional
        Target: train within ``deadline_s``, or reach ``throughput`` samples/s.
    min_efficiency, max_nodes, budget_node_hours, budget_cost, max_power_w : optional
        Limits. ``budget_cost`` needs a price for every cluster (``prices`` or the
        cluster's ``price_per_node_hour``); ``max_power_w`` needs each node's
        ``power_w``.
    prices : mapping, optional
        Cluster name -> price per node-hour, overriding the cluster files.
    algorithms, collectives : sequence of str, optional
        Training and allreduce algorithms to try (default: the workload's algorithm
        and collective; ``"auto"`` is each cluster's software stack's own choice, named
        per row in ``allreduce``).
    nodes : sequence of int, optional
        Node counts to try (default: doubling up to each cluster's size).
    rank_by : str
        One of :data:`RANK_BY`. ``cost`` ranks the plans of priced clusters by cost,
        then those of unpriced clusters (``cost`` None, listed in ``meta["unpriced"]``)
        by node-hours; with no price anywhere it is ``node_hours``
        (``meta["rank_by"]`` says which ranking was used).
    evaluator : str or callable
        ``"analytical"`` (default), ``"simulated"``, ``"module:function"`` or a function.
    overrides : mapping, optional
        Dotted-path workload overrides applied first (``{"batch_per_device": 64}``).
    runtime : str, optional
        Software stack every cluster runs (default: each cluster's own,
        :mod:`dlscale.perfmodel.catalog.runtimes`).
    plan_on : {"central", "low", "high"}
        Which value of each answer's range the limits and the ranking read (:func:`planned`).
    """
    w = load_workload(workload)
    if overrides:
        w = apply_overrides(w, overrides, "workload")
    if not clusters:
        raise ConfigError("clusters: give at least one cluster")
    from dlscale.perfmodel.catalog.runtimes import apply_runtime

    cl = [apply_runtime(load_cluster(c), runtime) for c in clusters]
    fn = resolve_evaluator(evaluator)
    if epochs is not None and samples is not None:
        raise ConfigError("target: give epochs or samples, not both")
    _check_limits(epochs=epochs, samples=samples, deadline_s=deadline_s, throughput=throughput,
                  max_nodes=max_nodes, budget_node_hours=budget_node_hours,
                  budget_cost=budget_cost, max_power_w=max_power_w, min_efficiency=min_efficiency)
    _check_names(rank_by, plan_on)
    algs, colls = _choices(w, algorithms, collectives)
    priced = _prices(cl, prices, budget_cost, max_power_w)
    if rank_by == "cost" and all(p is None for p in priced.values()):
        rank_by = "node_hours"  # no price anywhere: cost says nothing (the meta says why)
    bounds = {k: float(v) for k, v in (("deadline", deadline_s), ("throughput", throughput),
                                       ("min_efficiency", min_efficiency),
                                       ("max_nodes", max_nodes),
                                       ("budget_node_hours", budget_node_hours),
                                       ("budget_cost", budget_cost), ("max_power", max_power_w))
              if v is not None}
    n_samples = float(samples if samples is not None
                      else (epochs or w.epochs) * w.model.samples_per_epoch)
    req = PlanRequest(w, cl, n_samples, bounds, priced, algs, colls,
                      list(nodes) if nodes else None, rank_by, plan_on)
    return run_plan(req, fn)


def _check_names(rank_by: str, plan_on: str) -> None:
    """``rank_by`` one of :data:`RANK_BY`, ``plan_on`` one of low, central, high."""
    if rank_by not in RANK_BY:
        raise unknown_name("rank_by", rank_by, RANK_BY)
    if plan_on not in PLAN_ON:
        raise unknown_name("plan_on", plan_on, PLAN_ON)


def _no_node_count(req: PlanRequest) -> str:
    """Why no cluster had a node count to evaluate."""
    w = req.workload
    if w.scaling == "strong":
        least = min(w.ranks_per_node or c.node.devices_per_node for c in req.clusters)
        if w.global_batch < least:
            return (f"global_batch: {w.global_batch} samples cannot be split over the "
                    f"{least} ranks of one node (the fewest of the clusters); strong scaling "
                    f"needs at least one sample per rank")
    return "max_nodes: no cluster has a node count within the limits"


def run_plan(req: PlanRequest, fn: Callable[..., Any]) -> PlanResult:
    """Evaluate, filter and rank the candidates of a checked request."""
    cands = _evaluate(req, fn)
    for c in cands:
        c["violates"] = _violations(c, req.bounds)
    fld, smaller = RANK_BY[req.rank_by]
    feasible = [c for c in cands if not c["violates"]]

    def order(c: Mapping[str, Any]) -> tuple[Any, ...]:
        v = planned(c, fld)
        unpriced = v is None  # only cost can be None: unpriced clusters after, by node-hours
        v = planned(c, "node_hours") if unpriced else v
        return (unpriced, v if smaller else -v, planned(c, "time_s"), c["cluster"], c["algorithm"],
                c["collective"], c["nodes"])

    feasible.sort(key=order)
    rows = [{"rank": i + 1, **{k: v for k, v in c.items() if k not in ("violates", "_memory_bound")}}
            for i, c in enumerate(feasible)]
    meta = {"workload": req.workload.name, "clusters": [c.name for c in req.clusters],
            "samples": req.samples, "limits": req.bounds, "prices": req.prices,
            "rank_by": req.rank_by, "plan_on": req.plan_on, "candidates": len(cands), "scaling": req.workload.scaling,
            "unpriced": [name for name, p in req.prices.items() if p is None],
            "noise": {c.name: cluster_noise(c) for c in req.clusters}}
    why = [] if rows else (_explain(cands, req.bounds) if cands else [_no_node_count(req)])
    return PlanResult(rows, meta, cands, why)
