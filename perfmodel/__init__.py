"""Analytical performance model: configuration, catalogs and closed-form costs."""

from dlscale.perfmodel.errors import ConfigError, DlscaleError, OutOfMemoryError
from dlscale.perfmodel.machine.hardware import Cluster, Device, Link, NetworkSpec, NodeSpec
from dlscale.perfmodel.training.workload import ALGORITHMS, COLLECTIVES, Layer, Model, Workload

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "Cluster",
    "ConfigError",
    "Device",
    "DlscaleError",
    "Layer",
    "Link",
    "Model",
    "NetworkSpec",
    "NodeSpec",
    "OutOfMemoryError",
    "Workload",
]
