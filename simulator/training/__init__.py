"""Simulated training: SimPy processes for every rank, on a simulated or analytical network.

:func:`simulate_training` (``run``) checks the configuration and memory, builds the
run's :class:`~dlscale.simulator.training.common.RunContext` (``common``: layout,
straggler model from ``stragglers``, seeded generator, the
:class:`~dlscale.simulator.training.net.TrainingNetwork` of ``net`` that answers the
communication from the closed forms or a
:class:`~dlscale.simulator.network.SimulatedNetwork`), and runs the algorithm's
process: synchronous SGD (``sync``), the round-based EASGD and Sync EASGD
(``easgd_rounds``), the asynchronous and Hogwild masters (``easgd``, with the shared
link of ``master``). With co-simulation (``cosim``, learning-rate schedules in
``schedules_lr``) real kernels train a small model in the order the events dictate;
``target`` runs to a target accuracy (``target_report`` compares algorithms). The
result is a :class:`TrainingResult` (``result``); ``trace`` records Chrome traces,
``plots`` draws them.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.simulator.training import simulate_training
>>> r = simulate_training(get_cluster("summit"), get_workload("resnet50"), 2, iterations=3)
>>> r.ranks
12
"""

from dlscale.simulator.training.net import (
           DEFAULT_NETWORK,
           NETWORKS,
           TrainingNetwork,
           make_training_network,
)
from dlscale.simulator.training.result import TrainingResult
from dlscale.simulator.training.run import simulate_training

__all__ = ["DEFAULT_NETWORK", "NETWORKS", "TrainingNetwork", "TrainingResult",
           "make_training_network", "simulate_training"]
