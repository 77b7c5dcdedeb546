"""What a row's rate costs to train on: time to train, node-hours and the bill."""

from __future__ import annotations

from typing import Any

from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.training.workload import Workload

__all__ = ["add_training_metrics"]


def add_training_metrics(row: dict[str, Any], cluster: Cluster, workload: Workload) -> None:
    """Add ``time_to_train_s`` (``epochs`` over the model's data set, the evaluation
    passes and the start-up: :func:`dlscale.perfmodel.training.outside.time_to_train_s`),
    ``node_hours`` and ``cost`` (node-hours times the cluster's price per node-hour)
    to a row."""
    from dlscale.perfmodel.training.outside import time_to_train_s

    t = time_to_train_s(cluster, workload, row)
    row["time_to_train_s"] = t
    row["node_hours"] = row["nodes"] * t / 3600.0
    row["cost"] = row["node_hours"] * cluster.price_per_node_hour
