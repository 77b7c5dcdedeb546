"""Analytical performance model: configuration, catalogs and closed-form costs."""

from .errors import ConfigError, DlscaleError, OutOfMemoryError
from .hardware import Cluster, Device, Link, NetworkSpec, NodeSpec
from .workload import ALGORITHMS, COLLECTIVES, Layer, Model, Workload

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
