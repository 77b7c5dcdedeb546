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
    to a row, each with its ``_low`` and ``_high`` where the row's rate has its band
    (the high rate and the cited figures' fast ends give the low time)."""
    from dlscale.perfmodel.training.outside import time_to_train_s

    ends = [("", "samples_per_s", "central")]
    if "samples_per_s_low" in row and "samples_per_s_high" in row:
        ends += [("_low", "samples_per_s_high", "low"), ("_high", "samples_per_s_low", "high")]
    for suffix, key, end in ends:
        t = time_to_train_s(cluster, workload, {**row, "samples_per_s": row.get(key)}, end)
        row[f"time_to_train_s{suffix}"] = t
        row[f"node_hours{suffix}"] = row["nodes"] * t / 3600.0
        row[f"cost{suffix}"] = row[f"node_hours{suffix}"] * cluster.price_per_node_hour
