"""``--noise SPEC``: the per-rank compute noise ``predict`` and ``plan`` charge, one
parser entry and one policy for both (and for both their paths, data-parallel and
transformer).

The spec replaces the cluster's ``noise`` (:attr:`~dlscale.perfmodel.machine.hardware.
Cluster.noise`) of every cluster asked about; it is checked by the noise model's own
parser (:func:`~dlscale.perfmodel.machine.noise.make_noise`) before any work, so an
empty or unknown spec, a sigma out of range or a missing sample file is one line
naming the value and what is allowed.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> apply_noise(get_cluster("summit"), "none").noise
'none'
>>> apply_noise(get_cluster("summit"), None).noise
''
>>> apply_noise(get_cluster("summit"), "lognormal:7")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: --noise: lognormal sigma must be a number in [0, 2] (log-standard deviation of the compute-time factors), got 7.0
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.noise import make_noise

__all__ = ["add_noise_arg", "apply_noise", "with_noise"]


def add_noise_arg(parser: argparse.ArgumentParser) -> None:
    """``--noise SPEC`` (default: each cluster's own)."""
    parser.add_argument("--noise", metavar="SPEC",
                        help="per-rank compute noise: none, lognormal:SIGMA, empirical:FILE; "
                             "each iteration is charged its expected slowest rank (default: "
                             "the cluster's; where it gives none, a GPU's cited rate spread, "
                             "lognormal:0.0148)")


def apply_noise(cluster: Cluster, spec: str | None) -> Cluster:
    """``cluster`` with the noise ``spec`` (unchanged for ``None``).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    spec : str or None
        ``none``, ``lognormal:SIGMA``, ``empirical:FILE``; ``None`` keeps the cluster's.

    Returns
    -------
    Cluster

    Raises
    ------
    ConfigError
        A spec the noise model refuses, the flag named.
    """
    if spec is None:
        return cluster
    _check(spec)
    return dataclasses.replace(cluster, noise=spec)


def _check(spec: str) -> None:
    """Refuse a spec the noise model refuses, in one line naming ``--noise``."""
    try:
        make_noise(spec)
    except ConfigError as exc:
        msg = str(exc)
        raise ConfigError("--noise: " + (msg[len("noise: "):] if msg.startswith("noise: ")
                                         else msg)) from None


def with_noise(clusters: list[Any], spec: str | None) -> list[Any]:
    """Every cluster of a plan (a name, a file or a :class:`Cluster`) with the noise
    ``spec``: loaded and :func:`apply_noise`-d; the list as it is for ``None``.

    Examples
    --------
    >>> [c.noise for c in with_noise(["summit", "dgx1-v100"], "none")]
    ['none', 'none']
    >>> with_noise(["summit"], None)
    ['summit']
    """
    if spec is None:
        return clusters
    _check(spec)                      # before any cluster is read
    from dlscale.perfmodel.machine.config import load_cluster

    return [apply_noise(load_cluster(c), spec) for c in clusters]
