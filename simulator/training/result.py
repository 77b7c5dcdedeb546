"""The result of a simulated training run.

Examples
--------
>>> import numpy as np
>>> r = TrainingResult("toy", "w", "sync-sgd", 1, 2, "timing", "analytical", "none", 0,
...                    iteration_times_s=np.array([0.1, 0.1]), samples_per_iteration=64.0)
>>> round(r.iteration_s, 3), round(r.samples_per_s, 1)
(0.1, 640.0)
>>> r.to_rows()[0]["iteration_s"]
0.1
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BREAKDOWN", "TrainingResult"]

#: Per-rank time categories, seconds per iteration (mean over iterations).
BREAKDOWN = ("compute_s", "comm_s", "exposed_comm_s", "straggler_wait_s", "master_queue_s")


@dataclass
class TrainingResult:
    """Time, breakdown, memory and (in co-simulation) accuracy of one simulated run.

    Attributes
    ----------
    cluster, workload, algorithm : str
        What ran.
    nodes, ranks : int
        Nodes and ranks (workers) of the run.
    mode : {"timing", "cosim"}
        Timing only, or co-simulation with real arrays.
    network : str
        Network backend that answered the communication times.
    noise : str
        Straggler model.
    seed : int
    iteration_times_s : ndarray
        Per iteration: for synchronous algorithms the time from the end of one
        iteration of the slowest rank to the next; for asynchronous ones the time
        between two consecutive completed worker steps, times the number of workers
        (so its mean is the mean time between two steps of one worker).
    samples_per_iteration : float
        Samples of one iteration over all ranks.
    breakdown : dict of ndarray
        ``BREAKDOWN`` names -> per-rank seconds per iteration (mean over iterations):
        compute, communication (hidden or not), exposed communication, waiting for
        stragglers, queueing at the master.
    memory : dict
        Per-device memory parts in bytes, capacity, resource, ``fits`` and
        ``shortfall_bytes`` (:func:`dlscale.perfmodel.compute.memory.memory_per_rank`).
    fits : bool
        False: the configuration does not fit in memory and was not simulated.
    efficiency : float or None
        Throughput against ``nodes`` times that of the closed form's one node (or
        devices times one device's), as ``predict`` gives it (None when not computed).
    analytical_iteration_s : float or None
        The analytical model's time per iteration for the same configuration.
    curve : list of dict
        Co-simulation: ``iteration, time_s, loss, accuracy`` samples.
    surrogate : str
        Co-simulation: what the numerics are when they are not the timed model's
        (e.g. ``"digits softmax regression (surrogate for googlenet)"``).
    counters : dict
        Extra counts (``lost_updates``, ``master_exchanges``, ``master_busy_fraction``...).
    sim_time_s : float
        Simulated time of the whole run.
    trace : dict or None
        Chrome trace when asked for.
    backward_s : float or None
        One rank's backward pass per iteration (local step) before straggler noise:
        the compute profile the simulation scales by each rank's noise factor.
    baseline_runs : str
        What the closed-form run that ``efficiency`` divides by runs (``"auto
        (ring)"``: the stack's own allreduce; the algorithm's name outside synchronous
        SGD).
    baseline_iteration_s : float or None
        That run's time per iteration (None when no efficiency was computed).
    """

    cluster: str
    workload: str
    algorithm: str
    nodes: int
    ranks: int
    mode: str
    network: str
    noise: str
    seed: int
    iteration_times_s: np.ndarray = field(default_factory=lambda: np.empty(0))
    samples_per_iteration: float = 0.0
    breakdown: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)
    fits: bool = True
    efficiency: float | None = None
    analytical_iteration_s: float | None = None
    curve: list = field(default_factory=list)
    surrogate: str = ""
    counters: dict = field(default_factory=dict)
    sim_time_s: float = 0.0
    trace: dict | None = None
    backward_s: float | None = None
    baseline_runs: str = ""
    baseline_iteration_s: float | None = None
    band: dict = field(default_factory=dict)

    @property
    def iteration_s(self) -> float:
        """Mean time per iteration (nan when nothing ran)."""
        t = self.iteration_times_s
        return float(t.mean()) if len(t) else float("nan")

    @property
    def iteration_std_s(self) -> float:
        """Standard deviation of the time per iteration."""
        t = self.iteration_times_s
        return float(t.std()) if len(t) else float("nan")

    @property
    def samples_per_s(self) -> float:
        """Throughput of the whole job."""
        it = self.iteration_s
        return self.samples_per_iteration / it if it > 0 else float("nan")

    def summary(self) -> dict:
        """Mean over ranks of each breakdown category, and the slowest rank's compute."""
        out = {k: float(np.mean(v)) for k, v in self.breakdown.items() if len(v)}
        if "compute_s" in self.breakdown and len(self.breakdown["compute_s"]):
            out["compute_max_s"] = float(np.max(self.breakdown["compute_s"]))
        return out

    def _rounding_zero(self, value: float) -> float:
        """``value``, or 0.0 where it is zero within the rounding of the event times it
        was summed from: each iteration's figures are differences of simulated times up
        to ``sim_time_s``, each off by up to one ulp of it, summed over the iterations
        (a noiseless run's ``iteration_std_s`` came out as 1.92e-16 s, not 0)."""
        n = max(len(self.iteration_times_s), 1)
        scale = max(self.sim_time_s, float(np.sum(self.iteration_times_s)))
        return 0.0 if abs(value) <= 4 * n * np.finfo(float).eps * scale else value

    def to_rows(self) -> list[dict]:
        """One flat row (what tables and sweeps take)."""
        row: dict = {
            "cluster": self.cluster, "workload": self.workload, "algorithm": self.algorithm,
            "nodes": self.nodes, "ranks": self.ranks, "mode": self.mode,
            "network": self.network, "noise": self.noise, "seed": self.seed,
            "fits": self.fits, "iterations": len(self.iteration_times_s),
        }
        if self.fits:
            row.update(iteration_s=self.iteration_s,
                       iteration_std_s=self._rounding_zero(self.iteration_std_s),
                       samples_per_s=self.samples_per_s)
            row.update({k: self._rounding_zero(v) for k, v in self.summary().items()})
            if self.backward_s is not None:
                row["backward_s"] = self.backward_s
            if self.efficiency is not None:
                row["efficiency"] = self.efficiency
            if self.analytical_iteration_s is not None:
                row["analytical_iteration_s"] = self.analytical_iteration_s
        if self.memory:
            row["memory_per_device_bytes"] = self.memory.get("per_device_bytes")
            row["memory_capacity_bytes"] = self.memory.get("capacity_bytes")
            if not self.fits:
                row["memory_resource"] = self.memory.get("resource")
                row["memory_shortfall_bytes"] = self.memory.get("shortfall_bytes")
        if self.curve:
            row["final_accuracy"] = self.curve[-1]["accuracy"]
            row["final_loss"] = self.curve[-1]["loss"]
        for k, v in self.counters.items():
            row[k] = v
        if self.surrogate:
            row["surrogate"] = self.surrogate
        if self.band and self.fits:   # each banded value followed by its range
            row = {k2: v2 for k, v in row.items() for k2, v2 in (
                ((k, v), (f"{k}_low", self.band[k][0]), (f"{k}_high", self.band[k][1]))
                if k in self.band else ((k, v),))}
        return [row]

    def to_dict(self) -> dict:
        """JSON-ready: the row, per-iteration times, per-rank breakdown, memory, curve."""
        d = dict(self.to_rows()[0])
        d["iteration_times_s"] = [float(x) for x in self.iteration_times_s]
        d["breakdown_per_rank"] = {k: [float(x) for x in v] for k, v in self.breakdown.items()
                                   if len(v) <= 4096}
        d["memory"] = dict(self.memory)
        d["curve"] = list(self.curve)
        d["sim_time_s"] = self.sim_time_s
        return d
