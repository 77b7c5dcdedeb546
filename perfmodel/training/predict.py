"""Predict a whole scaling curve with the analytical model in one call.

:func:`predict` takes a cluster, a workload and node counts (an int or a 1-D
array) and returns a :class:`Prediction`: arrays over the node counts, computed
together with numpy (no Python loop over node counts for synchronous SGD).

Examples
--------
>>> from dlscale.perfmodel.machine.hardware import (
...     Cluster, Crossbar, Device, Link, NetworkSpec, NodeSpec)
>>> from dlscale.perfmodel.training.workload import Layer, Model, Workload
>>> gpu = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
>>> node = NodeSpec("n", gpu, 4, Link("nvlink", 50e9, 2e-6), Link("ib", 10e9, 1e-6))
>>> c = Cluster("toy", node, NetworkSpec("x", Crossbar(64), Link("ib", 10e9, 1e-6)))
>>> m = Model("m", (Layer("fc", "fc", 10**6, 7e9, 1000),), (1000,), "none", 1)
>>> pred = predict(c, Workload("w", m, 10), [1, 4, 16])
>>> pred.devices.tolist()
[4, 16, 64]
>>> float(pred.efficiency[0])
1.0
>>> list(pred.to_rows()[0])[:5]
['nodes', 'devices', 'ranks', 'global_batch', 'iteration_s']
>>> pred.bottleneck.tolist()
['compute', 'compute', 'compute']
>>> predict(c, Workload("w", m, 10), 0)
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: nodes: must be >= 1 (cluster 'toy' holds 1..64), got 0
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.compute.dispatch import dispatch_s_per_op
from dlscale.perfmodel.compute.memory import memory_per_rank
from dlscale.perfmodel.compute.roofline import layer_times
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.output.atomicio import atomic_write_text
from dlscale.perfmodel.training.iteration import efficiency, layout_times
from dlscale.perfmodel.training.rank_layout import IterationTimes, Layout, check_nodes, layout
from dlscale.perfmodel.training.row_notes import row_notes
from dlscale.perfmodel.training.storage import storage_note
from dlscale.perfmodel.training.sync import collective_summary
from dlscale.perfmodel.training.workload import Workload

__all__ = ["BASELINES", "ROW_KEYS", "Prediction", "baseline_workload", "one_device", "predict"]

#: Keys of :meth:`Prediction.to_rows`, in column order.
ROW_KEYS = ("nodes", "devices", "ranks", "global_batch", "iteration_s", "compute_s",
            "backward_s", "comm_s", "exposed_comm_s", "samples_per_s", "efficiency", "memory_per_device_bytes", "fits",
            "bottleneck", "allreduce", "network_limit", "note")


@dataclass(frozen=True)
class Prediction:
    """Result of :func:`predict`: one entry per node count asked for.

    ``band`` (filled by :func:`.ranges.predict_range`): for each of
    :data:`.ranges.BAND_KEYS`, its low and high arrays; :meth:`to_rows` adds them as
    ``KEY_low`` and ``KEY_high`` after ``KEY``.

    Attributes
    ----------
    cluster, workload, algorithm, collective, scaling : str
        What was predicted (names).
    nodes, devices, ranks : ndarray of int
        Node, device and rank (worker) counts.
    global_batch : ndarray
        Samples per iteration over all ranks.
    iteration_s : ndarray
        Time of one iteration (see :class:`dlscale.perfmodel.training.rank_layout.IterationTimes`).
    compute_s : ndarray
        Forward + backward + update of one rank.
    backward_s : ndarray
        The backward pass of one rank (part of ``compute_s``; the collectives of
        synchronous SGD overlap it).
    comm_s : ndarray
        Time the collectives of one iteration take (negotiation, transfer and
        reduction), hidden behind compute or not.
    exposed_comm_s : ndarray
        Part of the iteration not covered by compute: ``iteration_s - compute_s``.
        It includes waits that are not transfers, such as Horovod's cycle (a
        bucket waits on average half a cycle before it is negotiated), so it can
        exceed ``comm_s`` when messages are small.
    samples_per_s : ndarray
        Training throughput.
    efficiency : ndarray
        Scaling efficiency ``samples_per_s / (nodes x samples_per_s at 1 node)``
        (weak scaling: fixed batch per device; strong scaling: fixed global batch, so
        this is the speed-up over one node divided by the node count); with
        ``baseline="device"``, ``samples_per_s / (devices x samples_per_s of one
        device alone)``.
    memory_per_device_bytes : ndarray
        Bytes one device holds (its ranks' parameters, gradients, optimizer state,
        activations and buffers; see :mod:`dlscale.perfmodel.compute.memory`).
    fits : ndarray of bool
        Whether that fits the device's training memory.
    bottleneck : ndarray of str
        ``"memory"`` where the state does not fit; ``"master-link"`` or
        ``"master-update"`` where an asynchronous master is saturated;
        ``"input-pipeline"`` where the node's loader is slower than its step; else
        ``"compute"`` when compute time is at least the exposed communication,
        ``"communication"`` otherwise.
    memory_resource : str
        Which memory ``fits`` was checked against.
    allreduce : ndarray of str
        Synchronous SGD: the algorithm the largest gradient bucket's allreduce runs at
        that node count (what ``"auto"`` picked, or the chosen collective); ``""``
        for one rank and for the other training algorithms.
    network_limit : ndarray of str
        The topology level whose links limit that allreduce's bandwidth time
        (``intra``, ``host``, ``L1-L2``, ``local``, ``global``, ``torus``...; see
        :mod:`dlscale.perfmodel.network.linkload`).
    note : ndarray of str
        Why an efficiency is above 1, or why throughput fell below the previous node
        count's (:mod:`dlscale.perfmodel.training.row_notes`); ``""`` elsewhere.
    baseline : {"node", "device"}
        What ``efficiency`` is measured against: one node, or one device alone.
    baseline_fits : bool
        Whether the baseline run (its ranks, and in strong scaling the whole global
        batch) fits the device memory; when it does not, the efficiencies compare
        with a run that could not happen.
    """

    cluster: str
    workload: str
    algorithm: str
    collective: str
    scaling: str
    nodes: np.ndarray
    devices: np.ndarray
    ranks: np.ndarray
    global_batch: np.ndarray
    iteration_s: np.ndarray
    compute_s: np.ndarray
    comm_s: np.ndarray
    exposed_comm_s: np.ndarray
    samples_per_s: np.ndarray
    efficiency: np.ndarray
    memory_per_device_bytes: np.ndarray
    fits: np.ndarray
    bottleneck: np.ndarray
    memory_resource: str
    allreduce: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    network_limit: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    note: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    backward_s: np.ndarray = field(default_factory=lambda: np.empty(0))
    baseline: str = "node"
    baseline_fits: bool = True
    baseline_runs: str = ""
    baseline_iteration_s: float = float("nan")
    baseline_samples_per_s: float = float("nan")
    band: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def baseline_text(self) -> str:
        """The one header line naming what ``efficiency`` divides by (a sweep or a plan,
        whose rows have baselines of their own, states the rule instead).

        Examples
        --------
        >>> from dlscale.perfmodel.catalog import get_cluster, get_workload
        >>> predict(get_cluster("summit"), get_workload("resnet50"), [1, 2]).baseline_text()
        'baseline: efficiency against 1 node running auto (ring): 0.135 s per iteration, 1,423 samples/s'
        """
        what = "1 node" if self.baseline == "node" else "1 device alone"
        return (f"baseline: efficiency against {what} running {self.baseline_runs}: "
                f"{self.baseline_iteration_s:.3g} s per iteration, "
                f"{self.baseline_samples_per_s:,.0f} samples/s")

    def __len__(self) -> int:
        return int(self.nodes.size)

    def row_keys(self) -> tuple[str, ...]:
        """:data:`ROW_KEYS`, each banded key followed by its ``_low`` and ``_high``."""
        return tuple(x for k in ROW_KEYS
                     for x in ((k, f"{k}_low", f"{k}_high") if k in self.band else (k,)))

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per node count, keys :meth:`row_keys`, plain Python numbers."""
        cols = {k: getattr(self, k).tolist() for k in ROW_KEYS}
        for k, (low, high) in self.band.items():
            cols[f"{k}_low"], cols[f"{k}_high"] = low.tolist(), high.tolist()
        keys = self.row_keys()
        return [{k: cols[k][i] for k in keys} for i in range(len(self))]

    def meta(self) -> dict[str, str]:
        """Names of what was predicted."""
        return {"cluster": self.cluster, "workload": self.workload, "algorithm": self.algorithm,
                "collective": self.collective, "scaling": self.scaling,
                "memory_resource": self.memory_resource, "fidelity": "analytical",
                "baseline": self.baseline, "baseline_fits": str(self.baseline_fits).lower(),
                "baseline_runs": self.baseline_runs,
                "baseline_iteration_s": repr(self.baseline_iteration_s),
                "baseline_samples_per_s": repr(self.baseline_samples_per_s)}

    def to_csv(self, path: str | Path) -> None:
        """Write the rows as CSV, atomically (temp file in the same folder, then rename)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.row_keys(), lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.to_rows())
        atomic_write_text(path, buf.getvalue())

    def to_json(self, path: str | Path) -> None:
        """Write ``{"meta": ..., "rows": [...]}`` as JSON, atomically."""
        atomic_write_text(path, json.dumps({"meta": self.meta(), "rows": self.to_rows()}, indent=1))


#: What efficiency may be measured against.
BASELINES = ("node", "device")


def one_device(cluster: Cluster, workload: Workload) -> tuple[Cluster, Workload]:
    """The cluster cut down to one device per node, and the workload's ranks on it.

    Raises :class:`ConfigError` when a rank spans several devices (fewer ranks than
    devices per node) or the ranks do not divide evenly over the devices.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        Its ranks per device.
    """
    dpn = cluster.node.devices_per_node
    rpn = workload.ranks_per_node or dpn
    if rpn % dpn:
        raise ConfigError(
            f"baseline: 'device' needs a whole number of ranks per device; workload "
            f"{workload.name!r} runs {rpn} ranks per node on {dpn} devices (use 'node')")
    node = dataclasses.replace(cluster.node, devices_per_node=1)
    return (dataclasses.replace(cluster, node=node),
            dataclasses.replace(workload, ranks_per_node=rpn // dpn))


def baseline_workload(workload: Workload) -> Workload:
    """The workload of the run that efficiencies divide by: the same one with the
    software stack's own allreduce choice (``collective="auto"``).

    One baseline per question: rows that differ only in ``--collective`` (or a
    sweep's ``collective`` axis) share it, so their efficiencies compare as their
    throughputs do (each divided by its own one-node run, hierarchical showed 0.967
    against ring's 0.931 at 171 Summit nodes while running 0.141 against 0.143 s).

    Parameters
    ----------
    workload : Workload
        The workload of the question.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_workload
    >>> baseline_workload(dataclasses.replace(get_workload("resnet50"), collective="ring")).collective
    'auto'
    """
    if workload.collective == "auto":
        return workload
    return dataclasses.replace(workload, collective="auto")


def _runs(cluster: Cluster, workload: Workload, lay: Any, chosen: str | None = None) -> str:
    """What the baseline runs, for its header line: ``"auto (ring)"``."""
    if workload.algorithm != "sync-sgd":
        return workload.algorithm
    if cluster.runtime.parameter_server:
        return "parameter-server"
    if int(lay.ranks[0]) < 2:
        return "auto (one rank: no allreduce)"
    return f"auto ({chosen or collective_summary(cluster, workload, lay)[0][0]})"


def _faster_than_baseline(workload: Workload, eff: np.ndarray, runs: str, baseline: str,
                          notes: np.ndarray) -> np.ndarray:
    """``notes`` with the rows that a forced collective puts above 1 explained."""
    if workload.collective == "auto":
        return notes
    where = "1 node" if baseline == "node" else "1 device"
    return np.where((eff > 1 + 1e-9) & (notes == ""),
                    f"efficiency above 1: {workload.collective} beats the baseline's {runs} "
                    f"on {where}", notes).astype(object)


def _baseline(cluster: Cluster, workload: Workload, baseline: str,
              own: tuple[IterationTimes, Layout] | None = None,
              chosen: str | None = None) -> tuple[float, float, bool, str]:
    """Samples/s and iteration time of the baseline run (one node, or one device,
    :func:`baseline_workload`), whether it fits, and what it runs. ``own``: the curve's
    own times and layout at one node (the baseline itself when the workload runs
    ``auto`` and the baseline is one node), handed on instead of computed again."""
    if own is not None and baseline == "node" and workload.collective == "auto":
        times, lay = own
    else:
        chosen = None  # ``chosen``: the curve's own 1-node choice, only for its own run
        workload = baseline_workload(workload)
        if baseline == "device":
            cluster, workload = one_device(cluster, workload)
        lay = layout(cluster, workload, [1])
        times = layout_times(cluster, workload, lay)
    mem = memory_per_rank(workload, cluster, lay.ranks, lay.batch_per_rank)
    return (float(times.samples_per_s[0]), float(times.iteration_s[0]),
            bool(np.all(mem.fits)), _runs(cluster, workload, lay, chosen))


def _summary(cluster: Cluster, workload: Workload, lay_all: Layout, rows: np.ndarray
             ) -> tuple[str | None, np.ndarray, np.ndarray]:
    """Synchronous SGD: the one-node run's algorithm (the baseline's), and per row the
    algorithm (or ``"parameter-server"``) and limiting level (or link) (:func:`.training_sync.collective_summary` of the
    curve's layout ``lay_all``, whose first count is one node); else None and ``""``."""
    if cluster.runtime.parameter_server:
        from dlscale.perfmodel.training.ps import ps_summary

        used, limit = ps_summary(cluster, workload, lay_all)
    elif workload.algorithm == "sync-sgd":
        used, limit = collective_summary(cluster, workload, lay_all)
    else:
        none = np.full(len(rows), "", dtype=object)
        return None, none, none
    return str(used[0]), used[rows], limit[rows]


def _backward_s(cluster: Cluster, workload: Workload, lay: Layout,
                times: IterationTimes) -> np.ndarray:
    """One rank's backward pass per row: the model's own (``times.backward_s``), or
    from the layer times where a model does not give it."""
    if times.backward_s is not None:
        return times.backward_s
    return np.asarray(layer_times(workload.model, cluster.node.device, workload.precision,
                                  lay.batch_per_rank, lay.share,
                                  lay.compute_fraction, dispatch_s_per_op(workload)
                                  ).backward_s.sum(axis=-1))


def predict(cluster: Cluster, workload: Workload, nodes: ArrayLike,
            baseline: str = "node") -> Prediction:
    """Predict ``workload`` on ``cluster`` at every node count in ``nodes``.

    Node counts must be integers in ``1..cluster.max_nodes``; a bad one raises
    :class:`~dlscale.perfmodel.errors.ConfigError` naming it and the limit before
    anything is computed. The one-node run that efficiencies are measured against is
    computed in the same vectorized call; ``baseline="device"`` measures them against
    one device alone instead (a one-device node running the workload's ranks per
    device).

    Parameters
    ----------
    cluster : Cluster
        The machine (:func:`~dlscale.perfmodel.machine.config.load_cluster`).
    workload : Workload
        Model, batch, precision, algorithm and collective
        (:func:`~dlscale.perfmodel.machine.config.load_workload`).
    nodes : int or array_like of int
        Node counts, each in ``1..cluster.max_nodes``.
    baseline : {"node", "device"}
        What the efficiency is measured against.

    Returns
    -------
    Prediction
        One row per node count: time per iteration and its parts, throughput,
        efficiency, memory, the chosen collective and the level that limits it.

    Raises
    ------
    ConfigError
        A node count outside ``1..cluster.max_nodes`` or a workload that the
        cluster cannot run (its message names the field and what is allowed).
    """
    if baseline not in BASELINES:
        raise ConfigError(f"baseline: must be one of {', '.join(BASELINES)}, got {baseline!r}")
    n = check_nodes(cluster, nodes)
    # every node count once, one node (the baseline's) first: each is computed once
    # and its layout, layer times and iteration times are handed on from here
    counts, at = np.unique(np.concatenate(([1], n)), return_inverse=True)
    lay_all = layout(cluster, workload, counts)
    times_all = layout_times(cluster, workload, lay_all)
    rows = at[1:]
    lay, times = lay_all.take(rows), times_all.take(rows)
    mem = memory_per_rank(workload, cluster, lay.ranks, lay.batch_per_rank)
    sps = times.samples_per_s
    compute, exposed = times.compute_s, times.exposed_comm_s
    basic = np.where(compute >= exposed, "compute", "communication")
    if times.limit is not None:
        basic = np.where(times.limit != "", times.limit, basic)
    bottleneck = np.where(mem.fits, basic, "memory").astype(str)
    chosen, used, limit = _summary(cluster, workload, lay_all, rows)
    one = np.zeros(1, dtype=np.intp)
    own_one = float(times_all.samples_per_s[0])
    base_sps, base_it, base_fits, runs = _baseline(cluster, workload, baseline,
                                                   (times_all.take(one), lay_all.take(one)),
                                                   chosen)
    node_eff = efficiency(sps, n, base_sps if baseline == "node" else own_one)
    eff = node_eff if baseline == "node" else efficiency(sps, lay.devices, base_sps)
    notes = _faster_than_baseline(workload, eff, runs, baseline,
                                  row_notes(cluster, workload, lay, sps, node_eff, used, limit))
    if np.any(bottleneck == "storage"):
        notes = np.where((bottleneck == "storage") & (notes == ""),
                         storage_note(cluster, workload), notes).astype(object)
    backward = _backward_s(cluster, workload, lay, times)
    return Prediction(
        cluster=cluster.name, workload=workload.name, algorithm=workload.algorithm,
        collective=workload.collective, scaling=workload.scaling,
        nodes=n, devices=lay.devices.astype(np.int64), ranks=lay.ranks.astype(np.int64),
        global_batch=lay.global_batch, iteration_s=times.iteration_s,
        compute_s=compute, comm_s=times.comm_s,
        exposed_comm_s=exposed, samples_per_s=sps,
        efficiency=eff,
        memory_per_device_bytes=mem.per_device_bytes, fits=mem.fits, bottleneck=bottleneck,
        memory_resource=mem.resource, allreduce=used, network_limit=limit, note=notes,
        backward_s=np.asarray(backward, dtype=float), baseline=baseline,
        baseline_fits=base_fits, baseline_runs=runs, baseline_iteration_s=base_it,
        baseline_samples_per_s=base_sps,
    )
