"""Built-in hardware and model catalogs, with the public source of every figure.

Registries are plain dicts; each getter raises :class:`ConfigError` naming the
valid entries when a name is unknown.

Examples
--------
>>> get_device("v100-sxm2").peak_fp32_flops / 1e12
15.7
>>> get_cluster("summit").node.devices_per_node
6
>>> get_model("sumit")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: model: unknown name 'sumit'; valid: ...
"""

from __future__ import annotations

from dlscale.perfmodel.catalog.clusters import CLUSTERS, NETWORKS
from dlscale.perfmodel.catalog.devices import DEVICES, FRACTION_DERIVATIONS
from dlscale.perfmodel.catalog.links import LINKS
from dlscale.perfmodel.catalog.models import MODELS
from dlscale.perfmodel.catalog.nodes import NODES
from dlscale.perfmodel.catalog.rows import CATALOG_KINDS, catalog_rows
from dlscale.perfmodel.catalog.runtimes import RUNTIMES, get_runtime, runtime_rows
from dlscale.perfmodel.catalog.workloads import WORKLOADS
from dlscale.perfmodel.errors import unknown_name
from dlscale.perfmodel.machine.hardware import Cluster, Device, Link, NodeSpec
from dlscale.perfmodel.training.workload import Model, Workload

__all__ = [
    "CATALOG_KINDS",
    "CLUSTERS",
    "DEVICES",
    "FRACTION_DERIVATIONS",
    "LINKS",
    "MODELS",
    "NETWORKS",
    "NODES",
    "RUNTIMES",
    "WORKLOADS",
    "catalog_rows",
    "get_cluster",
    "get_device",
    "get_link",
    "get_model",
    "get_node",
    "get_runtime",
    "get_workload",
    "runtime_rows",
]


def get_device(name: str) -> Device:
    """The device called ``name`` (see :data:`DEVICES`).

    Parameters
    ----------
    name : str
        A key of :data:`DEVICES`.

    Returns
    -------
    Device

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.
    """
    if name not in DEVICES:
        raise unknown_name("device", name, DEVICES)
    return DEVICES[name]


def get_link(name: str) -> Link:
    """The link called ``name`` (see :data:`LINKS`).

    Parameters
    ----------
    name : str
        A key of :data:`LINKS`.

    Returns
    -------
    Link

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.
    """
    if name not in LINKS:
        raise unknown_name("link", name, LINKS)
    return LINKS[name]


def get_node(name: str) -> NodeSpec:
    """The node called ``name`` (see :data:`NODES`).

    Parameters
    ----------
    name : str
        A key of :data:`NODES`.

    Returns
    -------
    NodeSpec

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.
    """
    if name not in NODES:
        raise unknown_name("node", name, NODES)
    return NODES[name]


def get_cluster(name: str) -> Cluster:
    """The cluster called ``name`` (see :data:`CLUSTERS`).

    Parameters
    ----------
    name : str
        A key of :data:`CLUSTERS`.

    Returns
    -------
    Cluster

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.

    Examples
    --------
    >>> get_cluster("cori-knl").network.topology.family
    'dragonfly'
    """
    if name not in CLUSTERS:
        raise unknown_name("cluster", name, CLUSTERS)
    return CLUSTERS[name]


def get_model(name: str) -> Model:
    """The model called ``name`` (see :data:`MODELS`).

    Parameters
    ----------
    name : str
        A key of :data:`MODELS`.

    Returns
    -------
    Model

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.
    """
    if name not in MODELS:
        raise unknown_name("model", name, MODELS)
    return MODELS[name]


def get_workload(name: str) -> Workload:
    """The preset workload called ``name`` (see :data:`WORKLOADS`).

    Parameters
    ----------
    name : str
        A key of :data:`WORKLOADS`.

    Returns
    -------
    Workload

    Raises
    ------
    ConfigError
        An unknown name; the message lists the valid ones and the closest.
    """
    if name not in WORKLOADS:
        raise unknown_name("workload", name, WORKLOADS)
    return WORKLOADS[name]
