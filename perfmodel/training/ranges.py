"""The range of every answer: a low and a high value beside the central one.

The central answer charges each uncertain cost (a *mechanism*) at its cited central
value. The sources give each of them a range, and a schedule may overlap
communication with compute fully or not at all; the band is what the model gives
over those ranges:

- the **fast corner**: every mechanism at the side that shortens the iteration, the
  overlap the schedule allows (the workload's ``overlap``);
- the **slow corner**: every mechanism at the side that lengthens it, the same
  overlap;
- the **serial corner** (synchronous SGD that overlaps only): the slow corner with
  no overlap at all (every bucket waits for the whole backward pass). Compute slowed
  beside communication applies to the overlapped part only, so with no overlap it
  charges nothing, and the slow and serial corners are both needed for the worst case;
- the **exchange-bound corner** (synchronous SGD): every mechanism of the step
  (:attr:`Mechanism.part` ``"step"``: the compute rate, dispatch, input pipeline) at
  its fast side and every mechanism of the exchange (``"exchange"``: transport, the
  slowdown beside it) at its slow side, with no overlap. An efficiency is lowest where
  the step is short and the exchange long, which neither the fast nor the slow
  corner combines once the compute rate has a range of its own
  (:mod:`dlscale.perfmodel.compute.framework`);
- the **step-bound corner** (synchronous SGD): the other way round, the step at its
  slow side and the exchange at its fast side with the overlap the schedule allows,
  where an efficiency is highest.

Each reported value's low is the least over the central answer and the corners, its
high the greatest (:func:`band_of`), so ``low <= central <= high`` holds by
construction. The rate, the time per iteration and the efficiency are then widened by
a measurement's own repeatability (:mod:`.repeatability`: the model answers for the
mean of repeated runs, a published figure is one of them). The efficiency of a corner divides by that corner's own baseline (the
same machine and stack, so the same mechanism values, at one node).

A mechanism is one entry of :data:`MECHANISMS`: its name, which side of its range
shortens the iteration, and where its values live. The model reads
``cluster.runtime.side(name)`` (``"low"``, ``"central"`` or ``"high"``) wherever it
uses the mechanism's value and takes that value of the range; :func:`corners` sets
the side of every registered mechanism at once. A further mechanism contributes its
range with one :func:`register_mechanism` call (and, when it moves an output not yet
banded, one name in :data:`BAND_KEYS`).

Examples
--------
>>> [m.name for m in MECHANISMS]  # doctest: +NORMALIZE_WHITESPACE
['transport', 'overlap-slowdown', 'input-pipeline', 'storage', 'dispatch', 'evaluation',
 'compute-rate', 'device-variability']
>>> band_of(np.array([1.0, 2.0]), [np.array([0.5, 2.5]), np.array([1.5, 1.0])])
(array([0.5, 1. ]), array([1.5, 2.5]))
>>> register_mechanism(Mechanism("transport", "high", "the same"))
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: mechanism 'transport': registered twice
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlscale.perfmodel.errors import ConfigError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from dlscale.perfmodel.machine.hardware import Cluster
    from dlscale.perfmodel.training.predict import Prediction
    from dlscale.perfmodel.training.workload import Workload

__all__ = ["BAND_KEYS", "MECHANISMS", "PARTS", "PLAN_ON", "SIDES", "Mechanism", "band_of", "corners",
           "predict_range", "register_mechanism", "relative_band"]

#: Which value of a mechanism's range the model uses.
SIDES = ("low", "central", "high")
#: What a mechanism lengthens (:attr:`Mechanism.part`).
PARTS = ("exchange", "step")
#: Which value of each answer a plan is made on (``plan --plan-on``).
PLAN_ON = ("low", "central", "high")
#: Result fields that carry ``_low`` / ``_high`` companions: every time, rate and
#: efficiency of a row.
BAND_KEYS = ("iteration_s", "compute_s", "backward_s", "comm_s", "exposed_comm_s",
             "samples_per_s", "efficiency")


@dataclass(frozen=True)
class Mechanism:
    """A cost charged at a cited central value, with the range its sources give.

    Attributes
    ----------
    name : str
        The key the model reads with ``runtime.side(name)``.
    fast : {"low", "high"}
        The side of the range that shortens the iteration (``"high"`` for a
        transport efficiency, ``"low"`` for a slowdown).
    where : str
        Where its values and their citations live.
    part : {"exchange", "step"}
        What it lengthens: the exchange of gradients (transport, compute slowed beside
        it) or the step every rank runs alone (compute rate, dispatch, input
        pipeline, evaluation); the exchange-bound corner sets the two apart.
    """

    name: str
    fast: str
    where: str
    part: str = "exchange"

    def __post_init__(self) -> None:
        if self.fast not in ("low", "high"):
            raise ConfigError(f"mechanism {self.name!r}.fast: must be low or high, got "
                              f"{self.fast!r}")
        if self.part not in PARTS:
            raise ConfigError(f"mechanism {self.name!r}.part: must be one of "
                              f"{', '.join(PARTS)}, got {self.part!r}")

    @property
    def slow(self) -> str:
        """The side that lengthens the iteration."""
        return "low" if self.fast == "high" else "high"


#: The registered mechanisms, in the order they were registered.
MECHANISMS: list[Mechanism] = []


def register_mechanism(mechanism: Mechanism) -> Mechanism:
    """Add ``mechanism`` to :data:`MECHANISMS` (the corners then set its side).

    Parameters
    ----------
    mechanism : Mechanism
        Its name must be new.

    Returns
    -------
    Mechanism
        The same object.
    """
    if any(m.name == mechanism.name for m in MECHANISMS):
        raise ConfigError(f"mechanism {mechanism.name!r}: registered twice")
    MECHANISMS.append(mechanism)
    return mechanism


register_mechanism(Mechanism(
    "transport", "high",
    "perfmodel.machine.runtime.TRANSPORT_EFFICIENCY / TRANSPORT_EFFICIENCY_RANGE, applied by "
    "runtime.with_transport"))
register_mechanism(Mechanism(
    "overlap-slowdown", "low",
    "Runtime.overlap_slowdown (catalog/runtimes.py), applied by "
    "training_sync.sync_sgd_times to the compute that runs beside communication"))
# The time outside the step and the dispatch floor (dlscale.perfmodel.training.outside,
# dlscale.perfmodel.compute.dispatch) are the workload's: a corner takes the workload
# that outside.workload_for_band gives for it (figures the user measured are kept).
register_mechanism(Mechanism(
    "input-pipeline", "high",
    "training.outside.DECODE_RATE (images/s per host core), or the workload's measured "
    "loader_rate; set on each corner's workload by outside.workload_for_band", "step"))
# What the node's storage delivers (training.storage.FS_EFFICIENCY): the loader's rate
# at each end is the lesser of decode and storage, so the same corner workload carries it.
register_mechanism(Mechanism(
    "storage", "high",
    "training.storage.FS_EFFICIENCY (a shared file system's share of the node's storage "
    "link); set on each corner's workload with the decode rate by outside.workload_for_band",
    "step"))
register_mechanism(Mechanism(
    "dispatch", "low",
    "compute.dispatch.DISPATCH (seconds per operator), or the workload's dispatch_per_op_s; "
    "set on each corner's workload by outside.workload_for_band", "step"))
register_mechanism(Mechanism(
    "evaluation", "low",
    "training.outside.EVALS_PER_EPOCH (time to train only), or the workload's "
    "evals_per_epoch; set on each corner's workload by outside.workload_for_band", "step"))
# The compute rate of the framework that trains (GPUs; CPUs and KNL against their
# optimised engine): each corner's cluster from compute.framework.cluster_for_band.
register_mechanism(Mechanism(
    "compute-rate", "high",
    "compute.framework.COMPUTE_RATE (GPUs) / CPU_COMPUTE_RATE (CPUs, KNL), x the device's "
    "solved rate; set on each "
    "corner's cluster by framework.cluster_for_band", "step"))
# Device-to-device variability of GPUs (the slowest of the ranks sets each synchronous
# step): each corner's cluster noise from compute.variability.cluster_for_band. Its part
# is the exchange's: like the exchange it costs more the more ranks wait on each other
# (nothing on one device), so it is slow where the efficiency is lowest.
register_mechanism(Mechanism(
    "device-variability", "low",
    "compute.variability.DEVICE_SPREAD (log-standard deviation of a GPU's rate); set on "
    "each corner's cluster (its noise) by variability.cluster_for_band"))


def _at(cluster: Cluster, step: str, exchange: str, measured: bool = False) -> Cluster:
    """``cluster`` with every mechanism of the step at its ``step`` side and every one
    of the exchange at its ``exchange`` side (each ``"fast"`` or ``"slow"``), the
    compute rate's end applied to its device (not where the workload's compute is
    ``measured``: the measurement is the framework's own rate, weight update included)."""
    from dlscale.perfmodel.compute import framework, variability

    def pick(m: Mechanism) -> str:
        return m.fast if (step if m.part == "step" else exchange) == "fast" else m.slow
    picks = tuple((m.name, pick(m)) for m in MECHANISMS)
    rate = next((pick(m) for m in MECHANISMS if m.name == "compute-rate"), "central")
    rate = "central" if measured else rate
    spread = next((pick(m) for m in MECHANISMS if m.name == "device-variability"), "central")
    at = variability.cluster_for_band(framework.cluster_for_band(cluster, rate), spread)
    return dataclasses.replace(at, runtime=dataclasses.replace(cluster.runtime, sides=picks))


def corners(cluster: Cluster, workload: Workload) -> list[tuple[str, Cluster, Workload]]:
    """The corners the band is taken over (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine at its central values.
    workload : Workload
        What is trained.

    Returns
    -------
    list of (str, Cluster, Workload)
        ``("fast", ...)``, ``("slow", ...)``, for synchronous SGD that overlaps
        ``("serial", ...)``, and for synchronous SGD ``("exchange-bound", ...)`` and
        ``("step-bound", ...)``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> [(name, c.runtime.side("transport"), c.runtime.side("compute-rate"), w.overlap)
    ...  for name, c, w in corners(get_cluster("summit"), get_workload("resnet50"))]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('fast', 'high', 'high', True), ('slow', 'low', 'low', True),
     ('serial', 'low', 'low', False), ('exchange-bound', 'low', 'high', False),
     ('step-bound', 'high', 'low', True)]
    """
    from dlscale.perfmodel.training.outside import workload_for_band

    fast, slow = (workload_for_band(cluster, workload, b) for b in ("fast", "slow"))
    m = workload.model.measured is not None
    out = [("fast", _at(cluster, "fast", "fast", m), fast),
           ("slow", _at(cluster, "slow", "slow", m), slow)]
    if workload.algorithm == "sync-sgd" and workload.overlap:
        out.append(("serial", out[1][1], dataclasses.replace(slow, overlap=False)))
    if workload.algorithm == "sync-sgd":
        out.append(("exchange-bound", _at(cluster, "fast", "slow", m),
                    dataclasses.replace(fast, overlap=False)))
        out.append(("step-bound", _at(cluster, "slow", "fast", m), slow))
    return out


def relative_band(value: float, central: float, low: float, high: float
                  ) -> tuple[float, float]:
    """A band the closed form gives around its ``central`` answer, carried to another
    fidelity's ``value`` of the same quantity: each end's ratio to the central answer
    applied to ``value``, the range never excluding ``value`` itself (``simulate``'s
    rule: the two fidelities charge the same mechanisms; a corner is not simulated
    again).

    Parameters
    ----------
    value : float
        The simulated value.
    central, low, high : float
        The closed form's central answer and its band (``central > 0``).

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> relative_band(2.0, 1.0, 0.9, 1.2)
    (1.8, 2.4)
    """
    return min(value, value * low / central), max(value, value * high / central)


def band_of(central: np.ndarray, others: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Least and greatest value per entry over ``central`` and the corners' ``others``.

    NaN entries (a value a corner cannot give) are left out; where every value is NaN
    the band is NaN.

    Parameters
    ----------
    central : ndarray
        The central answer.
    others : sequence of ndarray
        The same answer at each corner (same shape).

    Returns
    -------
    (ndarray, ndarray)
        Low and high.
    """
    stack = np.stack([np.asarray(central, dtype=float),
                      *(np.asarray(o, dtype=float) for o in others)])
    if np.isnan(stack).all(axis=0).any():
        low = np.where(np.isnan(stack).all(axis=0), np.nan,
                       np.nanmin(np.where(np.isnan(stack), np.inf, stack), axis=0))
        high = np.where(np.isnan(stack).all(axis=0), np.nan,
                        np.nanmax(np.where(np.isnan(stack), -np.inf, stack), axis=0))
        return low, high
    return np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)


def predict_range(cluster: Cluster, workload: Workload, nodes: ArrayLike,
                  baseline: str = "node") -> Prediction:
    """:func:`.predict.predict` with the band: the central answer and its ``band`` of
    low and high values for every key of :data:`BAND_KEYS`, over :func:`corners`.

    Parameters
    ----------
    cluster, workload, nodes, baseline
        As for :func:`.predict.predict`.

    Returns
    -------
    Prediction
        The central prediction, its ``band`` filled (rates, iteration times and
        efficiencies widened by :data:`.repeatability.MEASUREMENT`).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
    >>> p = predict_range(get_cluster("summit"), get_workload("resnet50"), [1, 64])
    >>> row = p.to_rows()[1]
    >>> row["efficiency_low"] <= row["efficiency"] <= row["efficiency_high"]
    True
    """
    from dlscale.perfmodel.machine.runtime import with_transport
    from dlscale.perfmodel.network.walkmemo import priced_with
    from dlscale.perfmodel.training.predict import predict
    from dlscale.perfmodel.training.repeatability import widen

    at = corners(cluster, workload)
    # the corners' networks differ in their links only: the central answer's plans
    # are walked on their links too, while at hand (not built again per corner)
    with priced_with([with_transport(c) for _, c, _ in at]):
        central = predict(cluster, workload, nodes, baseline)
    others = [predict(c, w, nodes, baseline) for _, c, w in at]
    band = {k: widen(k, *band_of(getattr(central, k), [getattr(o, k) for o in others]))
            for k in BAND_KEYS}
    return dataclasses.replace(central, band=band)
