"""What every training process needs: the run context and the per-rank compute profile.

:class:`RunContext` bundles the configuration of one simulated run (cluster,
workload, node count, the :class:`~dlscale.simulator.training.net.TrainingNetwork`, the straggler
model and its generator, the trace recorder and, in co-simulation, the numerics).
:class:`ComputeProfile` holds one rank's noise-free compute times from the roofline
model (:func:`dlscale.perfmodel.compute.roofline.layer_times`, :func:`~dlscale.perfmodel.compute.roofline.update_s`);
a rank's actual times are these times its noise factor.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.perfmodel.training.iteration import layout
>>> c, w = get_cluster("summit"), get_workload("resnet50")
>>> prof = compute_profile(c, w, layout(c, w, 1))
>>> bool(prof.backward_s > prof.forward_s > prof.update_s > 0)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlscale.perfmodel.compute.dispatch import dispatch_s_per_op
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.outside import loader_bound, loader_s
from dlscale.perfmodel.training.rank_layout import Layout
from dlscale.perfmodel.training.workload import Workload
from dlscale.simulator.training.net import TrainingNetwork
from dlscale.simulator.training.stragglers import Noise
from dlscale.simulator.training.trace import TraceRecorder

if TYPE_CHECKING:  # training_cosim imports this module
    from dlscale.simulator.training.cosim import Numerics

__all__ = ["Breakdown", "ComputeProfile", "RunContext", "RunOutcome", "compute_profile"]


@dataclass(frozen=True)
class ComputeProfile:
    """Noise-free compute of one rank for one iteration.

    Attributes
    ----------
    forward_layers_s, backward_layers_s : ndarray
        Per layer, model order.
    forward_s, backward_s : float
        Sums.
    backward_done_s : ndarray
        Time from the start of the backward pass until layer ``i``'s gradient is
        ready (the backward pass runs from the last layer to the first).
    update_s : float
        Optimizer step of the worker (SGD with momentum when ``momentum`` is set).
    """

    forward_layers_s: np.ndarray
    backward_layers_s: np.ndarray
    forward_s: float
    backward_s: float
    backward_done_s: np.ndarray
    update_s: float


def compute_profile(cluster: Cluster, workload: Workload, lay: Layout,
                    momentum: bool | None = None) -> ComputeProfile:
    """Roofline times of one rank (batch ``lay.batch_per_rank[0]``, share ``lay.share``)."""
    lt = layer_times(workload.model, cluster.node.device, workload.precision,
                     float(lay.batch_per_rank[0]), lay.share, lay.compute_fraction,
                     dispatch_s_per_op(workload))
    f, b = np.asarray(lt.forward_s, dtype=float), np.asarray(lt.backward_s, dtype=float)
    done = np.cumsum(b[::-1])[::-1]
    mom = workload.momentum > 0 if momentum is None else momentum
    upd = update_s(workload.model.params, cluster.node.device, mom, lay.share)
    return ComputeProfile(f, b, float(f.sum()), float(b.sum()), done, float(upd))


@dataclass
class Breakdown:
    """Per-rank accumulators (seconds summed over iterations)."""

    ranks: int
    compute_s: np.ndarray = field(init=False)
    comm_s: np.ndarray = field(init=False)
    exposed_comm_s: np.ndarray = field(init=False)
    straggler_wait_s: np.ndarray = field(init=False)
    master_queue_s: np.ndarray = field(init=False)

    #: The categories, in the order of :meth:`rank_parts`.
    PARTS = ("compute_s", "comm_s", "exposed_comm_s", "straggler_wait_s", "master_queue_s")

    def __post_init__(self) -> None:
        for name in self.PARTS:
            setattr(self, name, np.zeros(self.ranks))

    def per_iteration(self, iterations: np.ndarray | int) -> dict[str, np.ndarray]:
        """Each category divided by the iterations (per rank, or one count for all)."""
        n = np.maximum(np.asarray(iterations, dtype=float), 1.0)
        return {k: getattr(self, k) / n for k in self.PARTS}

    def rank_parts(self, rank: int) -> np.ndarray:
        """Rank ``rank``'s seconds so far in each category (:attr:`PARTS` order)."""
        return np.array([getattr(self, k)[rank] for k in self.PARTS])


@dataclass(frozen=True)
class RunOutcome:
    """What one training process returns (synchronous, EASGD rounds and asynchronous alike).

    Attributes
    ----------
    iteration_times_s : ndarray
        Seconds of each measured iteration (synchronous: of the slowest rank;
        asynchronous: one per ``ranks`` step completions).
    breakdown : dict of str to ndarray
        Per-rank seconds per iteration by category
        (:meth:`Breakdown.per_iteration`).
    sim_time_s : float
        Simulated time at the end of the run.
    counters : dict
        Event counts of the run (exchanges, lost updates, ...).
    """

    iteration_times_s: np.ndarray
    breakdown: dict[str, np.ndarray]
    sim_time_s: float
    counters: dict[str, Any]


@dataclass
class RunContext:
    """One run's configuration and shared state (see module docstring)."""

    cluster: Cluster
    workload: Workload
    nodes: int
    lay: Layout
    net: TrainingNetwork
    noise: Noise
    rng: np.random.Generator
    iterations: int
    tracer: TraceRecorder | None = None
    numerics: Numerics | None = None

    @property
    def loader_s(self) -> float:
        """Seconds one node's input pipeline takes per iteration (0: no bound;
        :func:`dlscale.perfmodel.training.outside.loader_s`)."""
        samples = float(self.lay.global_batch[0]) / self.nodes
        return float(loader_s(self.cluster, self.workload, samples))

    @property
    def loader_limit(self) -> str:
        """What sets the input pipeline's pace: ``"storage"`` or ``"input-pipeline"``
        (:func:`dlscale.perfmodel.training.outside.loader_bound`)."""
        return loader_bound(self.cluster, self.workload)[1]

    @property
    def ranks(self) -> int:
        """Ranks (workers) of the run."""
        return int(self.lay.ranks[0])

    @property
    def algorithm(self) -> str:
        """The workload's training algorithm."""
        return self.workload.algorithm
