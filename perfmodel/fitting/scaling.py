"""Fitting the costs real runs pay to the user's own small run (``dlscale fit``).

The model has a parameter, with a cited central value and range, for each cost a
real run pays beyond the roofline step and the wire (:mod:`dlscale.perfmodel.training.ranges`):

- ``overlap``: the share of the schedule's lead time each gradient exchange achieved
  (1, the central value: as the schedule allows; 0: every exchange after the whole
  backward pass, the band's serial corner);
- ``overlap-slowdown``: compute slowed beside communication, the runtime's cited
  range for the device kind (:mod:`dlscale.perfmodel.compute.overlap`);
- ``transport``: the delivered fraction of the inter-node links' bandwidth, the
  cited range of the stack's transport (:data:`dlscale.perfmodel.machine.runtime.
  TRANSPORT_EFFICIENCY_RANGE`);
- ``input-pipeline``: images/s one host core decodes, where real data is decoded on
  described host cores (:data:`dlscale.perfmodel.training.outside.DECODE_RATE`);
- ``compute``: where the observations hold absolute rates or times and no
  single-device rate is given, the rate one device alone trains at (not a cited
  mechanism: the device's own speed, which the roofline misses by 20-50 % across
  frameworks, issue 25; bounded to a quarter and four times the roofline's).

:func:`fit_scaling` fits within those ranges only, by bounded least squares
(``scipy.optimize.least_squares``, trust-region reflective) on the relative
residuals ``model / measured - 1``. Which parameters it fits is decided first, from
the data (identifiability): the residuals' sensitivity to each parameter over its
whole range, the others at their central values (:func:`_sensitivity`); a parameter
that moves no residual by :data:`INERT` is not determined by these data; of the
rest, a QR factorization with column pivoting orders them by how much each adds
that the ones before it do not, and a parameter whose share is below
:data:`SEPARABLE` of the first's is not separable from those before it. At most as
many parameters are fitted as there are observations; the others are held at their
central values, and the fit says which and why.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> ps, notes = candidates(get_cluster("summit"), get_workload("resnet50"))
>>> [p.name for p in ps]
['overlap', 'overlap-slowdown', 'transport', 'input-pipeline']
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting.rates_table import Observation
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.runtime import (
    FITTED,
    TRANSPORT_EFFICIENCY,
    TRANSPORT_EFFICIENCY_RANGE,
)
from dlscale.perfmodel.training.workload import Workload

__all__ = ["COMPUTE_SPAN", "INERT", "MODEL_FIELDS", "SEPARABLE", "Param", "ScalingFit",
           "apply_values", "candidates", "fit_scaling", "model_values"]

#: A parameter whose whole range moves no relative residual by more than this (0.1 %)
#: is not determined by the observations. Assumption: below measurement repeatability
#: (the TensorFlow benchmarks average 5 runs of 100 steps; their repeat spread is
#: not published, and 0.1 % is far below any spread published for such runs).
INERT = 1e-3
#: A parameter adding less than this share (10 %) of the best-determined one's
#: effect, beyond those ordered before it (the pivoted QR's diagonal), is not
#: separable from them. Assumption: no source; the figure only orders fitted against
#: held, and the fit reports both.
SEPARABLE = 0.1
#: The ``compute`` parameter's range: the roofline's single-device rate divided and
#: multiplied by this. Assumption: the issue 25 trial found single-device rates
#: missed by 20-50 %, up to +161 % (Dell's MXNet rows); 4x holds all of them.
COMPUTE_SPAN = 4.0
#: Fitted values this close to a bound (in units of the range) are the bound.
SNAP = 1e-6
#: Grid points a fit starts its local solver from (the best ones). Assumption: no
#: source; a numerical choice, three so that one start lies on each side of a kink
#: next to the best grid point.
STARTS = 3
#: Prediction fields an observation may name.
MODEL_FIELDS = ("samples_per_s", "iteration_s", "efficiency", "comm_s", "exposed_comm_s",
                "allreduce_s")
#: Fields that carry an absolute time or rate (so they determine the compute).
_ABSOLUTE = ("samples_per_s", "iteration_s")


@dataclass(frozen=True)
class Param:
    """A parameter the fit may move: its cited range and where it is cited."""

    name: str
    low: float
    central: float
    high: float
    source: str
    log: bool = False

    def value(self, u: float) -> float:
        """The value at ``u`` in [0, 1] along the range."""
        if self.log:
            return float(math.exp(math.log(self.low) + u * math.log(self.high / self.low)))
        return float(self.low + u * (self.high - self.low))

    def unit(self, v: float) -> float:
        """Where ``v`` lies in the range, in [0, 1]."""
        if self.log:
            return float(math.log(v / self.low) / math.log(self.high / self.low))
        return float((v - self.low) / (self.high - self.low))


def _link_kind(cluster: Cluster) -> str:
    """The transport the network link is priced with (as ``with_transport`` does)."""
    rt = cluster.runtime
    name = cluster.network.link.name.lower()
    return "tcp" if "tcp" in name and rt.transport != "grpc" else rt.transport


def candidates(cluster: Cluster, workload: Workload) -> tuple[list[Param], list[str]]:
    """The cited mechanisms that have a range on this machine and workload, and a
    note for each that has none here (and so is not fitted).

    Parameters
    ----------
    cluster : Cluster
        The machine and its runtime.
    workload : Workload
        What is trained.

    Returns
    -------
    (list of Param, list of str)
    """
    from dlscale.perfmodel.training.outside import DECODE_RATE, loader_rate_per_node

    rt = cluster.runtime
    out: list[Param] = []
    notes: list[str] = []
    if workload.algorithm == "sync-sgd" and workload.overlap:
        out.append(Param("overlap", 0.0, 1.0, 1.0, "from none (the band's serial corner) to "
                         "the schedule's (perfmodel/training/ranges.py)"))
    else:
        notes.append(f"overlap: not fitted ({workload.algorithm}, overlap "
                     f"{workload.overlap}: nothing overlaps)")
    kind = cluster.node.device.kind
    entry = [e for e in rt.overlap_slowdown if e[0] == kind]
    if entry and entry[0][2] < entry[0][3]:
        _, c, lo, hi = entry[0]
        out.append(Param("overlap-slowdown", float(lo), float(c), float(hi),
                         f"runtime {rt.name!r}.overlap_slowdown ({kind}; "
                         f"perfmodel/catalog/runtimes.py)"))
    else:
        notes.append(f"overlap-slowdown: not fitted (runtime {rt.name!r} charges none on a "
                     f"{kind})")
    if rt.links_measured:
        notes.append("transport: not fitted (the links are measured figures)")
    else:
        t = _link_kind(cluster)
        lo, hi = TRANSPORT_EFFICIENCY_RANGE[t]
        out.append(Param("transport", float(lo), float(TRANSPORT_EFFICIENCY[t]), float(hi),
                         f"TRANSPORT_EFFICIENCY_RANGE[{t!r}] (perfmodel/machine/runtime.py)"))
    # the decode rate per core is what is fitted: a loader bounded by storage alone
    # (training.storage) has no decode rate to fit
    decode_only = dataclasses.replace(cluster, node=dataclasses.replace(
        cluster.node, storage_read_Bps=0.0))
    if (math.isfinite(loader_rate_per_node(decode_only, workload))
            and workload.loader_rate == 0):
        out.append(Param("input-pipeline", DECODE_RATE.low, DECODE_RATE.central,
                         DECODE_RATE.high, "DECODE_RATE (perfmodel/training/outside.py)"))
    else:
        notes.append("input-pipeline: not fitted (synthetic data, a measured loader rate, "
                     "or no described host cores: no loader bound)")
    return out, notes


def apply_values(cluster: Cluster, workload: Workload,
                 values: dict[str, float]) -> tuple[Cluster, Workload]:
    """``cluster`` and ``workload`` with ``values`` set: the mechanisms of
    :data:`~dlscale.perfmodel.machine.runtime.FITTED` as the runtime's fitted values
    (for its own name), ``compute`` as the model's measured single-device rate at the
    workload's batch per device."""
    from dlscale.perfmodel.compute.measured import MeasuredCompute

    rt = cluster.runtime
    fitted = {**dict(rt.fitted), **{k: float(v) for k, v in values.items() if k in FITTED}}
    cluster = dataclasses.replace(cluster, runtime=dataclasses.replace(
        rt, fitted=tuple(sorted(fitted.items())), fitted_for=rt.name))
    if "compute" in values:
        m = MeasuredCompute(batch=workload.batch_per_device, samples_per_s=float(values["compute"]),
                            source="single-device rate fitted by dlscale fit")
        workload = dataclasses.replace(workload, model=dataclasses.replace(workload.model,
                                                                           measured=m))
    return cluster, workload


def model_values(cluster: Cluster, workload: Workload, obs: Sequence[Observation],
                 baseline: str = "node") -> np.ndarray:
    """The model's value of every observation's quantity at its node count."""
    from dlscale.perfmodel.training.predict import predict

    rows = [o for o in obs if o.quantity != "allreduce_s"]
    out = np.empty(len(obs))
    if rows:
        nodes = sorted({o.nodes for o in rows})
        pred = predict(cluster, workload, nodes, baseline)
        at = {n: i for i, n in enumerate(nodes)}
        for i, o in enumerate(obs):
            if o.quantity != "allreduce_s":
                out[i] = float(getattr(pred, o.quantity)[at[o.nodes]])
    for n in sorted({o.nodes for o in obs if o.quantity == "allreduce_s"}):
        idx = [i for i, o in enumerate(obs) if o.quantity == "allreduce_s" and o.nodes == n]
        out[idx] = _allreduce_s(cluster, workload, n, [obs[i].size_bytes for i in idx])
    return out


def _allreduce_s(cluster: Cluster, workload: Workload, nodes: int,
                 sizes: list[float]) -> np.ndarray:
    """The model's seconds of one gradient allreduce of each size over ``nodes``."""
    from dlscale.perfmodel.machine.runtime import with_transport
    from dlscale.perfmodel.training.rank_layout import layout
    from dlscale.perfmodel.training.sync import workload_allreduce

    c = with_transport(cluster)
    lay = layout(c, workload, [nodes])
    t: np.ndarray = workload_allreduce(c, workload, lay, np.asarray(sizes)[:, None])[0][:, 0]
    return t


def _single_device_rate(cluster: Cluster, workload: Workload) -> float:
    from dlscale.perfmodel.training.predict import predict

    return float(predict(cluster, workload, [1], "device").baseline_samples_per_s)


@dataclass
class ScalingFit:
    """What :func:`fit_scaling` fitted, held and left, and how well it fits.

    Attributes
    ----------
    cluster, workload
        The inputs with the fitted values applied (:func:`apply_values`).
    params : list of Param
        Every parameter considered, in the order of :func:`candidates`.
    fitted : dict
        Name -> fitted value.
    held : dict
        Name -> (the central value it is held at, why it is not fitted).
    observations : tuple of Observation
    before, residuals : ndarray
        Relative residuals (model / measured - 1) at the central values and after the fit.
    notes : list of str
        Mechanisms with no range on this machine, and what the data cannot separate.
    evaluations : int
        Model evaluations the fit took.
    """

    cluster: Cluster
    workload: Workload
    params: list[Param]
    fitted: dict[str, float]
    held: dict[str, tuple[float, str]]
    observations: tuple[Observation, ...]
    before: np.ndarray
    residuals: np.ndarray
    notes: list[str] = field(default_factory=list)
    evaluations: int = 0
    baseline: str = "node"
    profile: Any = None        # the MachineProfile written from it (dlscale.api.fit)

    def profile_fitted(self, inputs: Sequence[str]) -> dict[str, Any]:
        """The ``fitted`` section of a machine profile: the values the model applies
        (mechanisms; a fitted single-device rate is the workload's: ``compute``, which
        ``--profile`` applies to that workload alone,
        :mod:`dlscale.perfmodel.fitting.fitted_compute`) and the fit's report."""
        values = {k: v for k, v in self.fitted.items() if k in FITTED}
        report: dict[str, Any] = {
            "runtime": self.cluster.runtime.name, "values": values,
            "cluster": self.cluster.name, "workload": self.workload.name,
            "held": {k: {"value": v, "why": why} for k, (v, why) in self.held.items()},
            "ranges": {p.name: [p.low, p.central, p.high] for p in self.params},
            "observations": [{"nodes": o.nodes, "quantity": o.quantity, "measured": o.value,
                              "residual_before": float(b), "residual": float(r)}
                             for o, b, r in zip(self.observations, self.before,
                                                self.residuals, strict=True)],
            "baseline": self.baseline, "inputs": list(inputs), "notes": list(self.notes)}
        if "compute" in self.fitted:
            report["compute"] = {"samples_per_s": self.fitted["compute"],
                                 "batch": self.workload.batch_per_device}
        return report


def _residuals(cluster: Cluster, workload: Workload, obs: Sequence[Observation],
               baseline: str, values: dict[str, float]) -> np.ndarray:
    c, w = apply_values(cluster, workload, values)
    meas = np.array([o.value for o in obs])
    out: np.ndarray = model_values(c, w, obs, baseline) / meas - 1.0
    return out


def _sensitivity(fun: Any, u0: np.ndarray) -> np.ndarray:
    """Per parameter, how the residuals move over its whole range, the others at their
    central values: ``fun(high) - fun(low)`` (a secant, not a local slope: the model is
    piecewise, and where the schedule hides every exchange a local slope is 0 while
    the range still moves the answer)."""
    cols = []
    for j in range(len(u0)):
        ua, ub = u0.copy(), u0.copy()
        ua[j], ub[j] = 0.0, 1.0
        cols.append(fun(ub) - fun(ua))
    return np.stack(cols, axis=1) if cols else np.zeros((0, 0))


def _choose(jac: np.ndarray, params: list[Param], n_obs: int) -> tuple[list[int], dict[int, str]]:
    """Indices to fit, and why each other one is held (module docstring)."""
    import scipy.linalg

    why: dict[int, str] = {}
    norms = np.linalg.norm(jac, axis=0) if jac.size else np.zeros(len(params))
    active = [j for j in range(len(params)) if norms[j] > INERT]
    for j in range(len(params)):
        if j not in active:
            why[j] = (f"not determined: its whole range moves no observation by more than "
                      f"{INERT:.1%}")
    if not active:
        return [], why
    _, r, piv = scipy.linalg.qr(jac[:, active], mode="economic", pivoting=True)
    diag = np.abs(np.diag(r)) if r.size else np.zeros(0)
    order = [active[int(k)] for k in piv]
    chosen: list[int] = []
    for k, j in enumerate(order):
        if k < len(diag) and diag[k] >= SEPARABLE * diag[0] and len(chosen) < n_obs:
            chosen.append(j)
            continue
        col = jac[:, j]
        best = max(chosen, key=lambda i: abs(float(np.dot(col, jac[:, i]))), default=None)
        if best is None:
            why[j] = "not separable from the others"
        else:
            cos = abs(float(np.dot(col, jac[:, best]))) / (
                float(np.linalg.norm(col) * np.linalg.norm(jac[:, best])) or 1.0)
            why[j] = (f"not separable from {params[best].name} with these observations "
                      f"(their effects align, |cos| = {cos:.2f}; {len(chosen)} parameter(s) "
                      f"from {n_obs} observation(s))")
    return sorted(chosen), why


def _rms(r: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(r)))) if len(r) else 0.0


def _grid(k: int) -> list[np.ndarray]:
    """Points of [0, 1]^k: 9 per axis for one parameter, 5 for two, 3 beyond."""
    import itertools

    n = 9 if k == 1 else 5 if k == 2 else 3
    axis = np.linspace(0.0, 1.0, n)
    return [np.array(p) for p in itertools.product(axis, repeat=k)]


def _solve(sub: Any, k: int, least_squares: Any) -> np.ndarray:
    """The chosen parameters' best point in ``[0, 1]^k``.

    The model is piecewise (a fully hidden exchange has no slope; a rate bounded by the
    loader or by the step is flat on one side of the kink), so a local solver started
    on a flat piece stays there. It starts from each of the :data:`STARTS` best points
    of a coarse grid over the ranges, and the least sum of squares wins (the earlier
    start on a tie)."""
    grid = sorted(_grid(k), key=lambda x: (float(np.sum(sub(x) ** 2)), tuple(x)))
    best: tuple[float, np.ndarray] | None = None
    for start in grid[:STARTS]:
        sol = least_squares(sub, start, bounds=(0.0, 1.0), method="trf",
                            diff_step=0.01, x_scale=1.0)
        # the trust region keeps its iterates strictly inside the bounds: a value
        # within SNAP of a bound (in units of the range) is that bound
        x = np.where(sol.x < SNAP, 0.0, np.where(sol.x > 1.0 - SNAP, 1.0, sol.x))
        cost = float(np.sum(sub(x) ** 2))
        if best is None or cost < best[0]:
            best = (cost, x)
    assert best is not None
    return best[1]


def fit_scaling(cluster: Cluster, workload: Workload, observations: Sequence[Observation],
                baseline: str = "node") -> ScalingFit:
    """Fit the cited mechanisms (and, where needed, the compute) to ``observations``.

    Parameters
    ----------
    cluster : Cluster
        The machine with the runtime the run used.
    workload : Workload
        What was trained (with its measured compute, if any).
    observations : sequence of Observation
        Measured figures; ``quantity`` one of :data:`MODEL_FIELDS`.
    baseline : {"node", "device"}
        What measured efficiencies are against.

    Returns
    -------
    ScalingFit

    Raises
    ------
    ConfigError
        No observation, an unknown quantity, or a node count the cluster lacks.
    """
    from scipy.optimize import least_squares

    obs = tuple(observations)
    if not obs:
        raise ConfigError("fit: no observations (give a rates table or a Horovod timeline)")
    for o in obs:
        if o.quantity not in MODEL_FIELDS:
            raise ConfigError(f"fit: unknown quantity {o.quantity!r}; valid: "
                              f"{', '.join(MODEL_FIELDS)}")
        if o.nodes > cluster.max_nodes:
            raise ConfigError(f"{o.source or 'fit'}: nodes {o.nodes}: the cluster "
                              f"{cluster.name!r} has {cluster.max_nodes}")
    params, notes = candidates(cluster, workload)
    if workload.model.measured is None and any(o.quantity in _ABSOLUTE for o in obs):
        r1 = _single_device_rate(cluster, workload)
        params.append(Param("compute", r1 / COMPUTE_SPAN, r1, r1 * COMPUTE_SPAN,
                            f"the roofline's single-device rate / and x {COMPUTE_SPAN:g} "
                            f"(COMPUTE_SPAN, perfmodel/fitting/scaling.py)", log=True))
    count = [0]

    def res(u_all: np.ndarray) -> np.ndarray:
        count[0] += 1
        vals = {p.name: p.value(float(u)) for p, u in zip(params, u_all, strict=True)}
        return _residuals(cluster, workload, obs, baseline, vals)

    u0 = np.array([p.unit(p.central) for p in params])
    before = res(u0)
    jac = _sensitivity(res, u0)
    chosen, why = _choose(jac, params, len(obs))
    u = u0.copy()
    if chosen:
        def sub(x: np.ndarray) -> np.ndarray:
            full = u0.copy()
            full[chosen] = x
            return res(full)

        u[chosen] = _solve(sub, len(chosen), least_squares)
    after = res(u)
    if chosen and _rms(before) - _rms(after) <= INERT:
        # the data's best point is no better than the central values: nothing is fitted
        why.update({j: f"fitting it moves the RMS residual by less than {INERT:.1%}"
                    for j in chosen})
        chosen, u, after = [], u0.copy(), before
    fitted = {params[j].name: params[j].value(float(u[j])) for j in chosen}
    held = {params[j].name: (params[j].central, why[j]) for j in range(len(params))
            if j not in chosen}
    notes += [f"{params[j].name}: held at its central value {params[j].central:.4g} "
              f"({why[j]})" for j in range(len(params)) if j not in chosen]
    c, w = apply_values(cluster, workload, fitted)
    return ScalingFit(c, w, params, fitted, held, obs, before, after, notes, count[0], baseline)
