"""The pipelined double binary tree: its segment count and its time from its plans.

NCCL's double binary tree (two complementary binary trees, each carrying half the
vector) pipelines ``k`` segments through trees of depth ``D``: ``k + D - 1`` steps per
direction (reduce, then broadcast), of which the first ``D - 1`` fill the pipeline and
the last ``D - 1`` drain it with only some edges busy, and the ``k - D + 1`` between
keep every edge busy. The fill and drain steps do not depend on ``k`` once
``k >= D - 1``, so the pipeline's time is that of the ``D - 1``-segment pipeline (all
fill and drain, costed step by step: :func:`.stepcost.plan_time_s`) plus
``k - D + 1`` steady steps (every edge of both trees carrying one segment), each at
the segment size ``n / (2 k)``; a shorter pipeline is costed step by step. The
segment count is :func:`dbt_segments`, the rule the simulator uses too.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> summit = get_cluster("summit")
>>> t = dbt_time_s(summit, 16, 6, np.array([1e6, 1e8]), 0.0)
>>> bool(t[1] > t[0] > 0)
True
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .hardware import Cluster
from .netplan import plan_collective
from .stepcost import device_links, latency_s, level_betas, path_hockney, plan_time_s, step_s

__all__ = ["MAX_SEGMENTS", "dbt_segments", "dbt_time_s", "pipeline_segments"]


#: Most pipeline segments of the double binary tree (NCCL's chunking bounds it).
MAX_SEGMENTS = 256


def dbt_segments(depth: int, n_bytes: float, alpha_s: float, beta_s_per_B: float,
                 max_segments: int = MAX_SEGMENTS) -> int:
    """Pipeline segments of the double binary tree: ``k = sqrt((D - 1) n beta / alpha)``.

    The ``k`` that minimises ``(D - 1 + k)(alpha + n beta / k)``, rounded, in
    ``1..max_segments``; ``alpha`` and ``beta`` of the path between the first and
    the last rank.

    Parameters
    ----------
    depth : int
        Depth of the double binary tree.
    n_bytes : float
        Vector size.
    alpha_s, beta_s_per_B : float
        Hockney figures of the first-to-last path.
    max_segments : int
        Cap on the segments.

    Examples
    --------
    >>> dbt_segments(10, 1e8, 5e-6, 1e-10), dbt_segments(10, 1e3, 5e-6, 1e-10)
    (134, 1)
    """
    return int(pipeline_segments(depth, n_bytes, alpha_s, beta_s_per_B, max_segments))


def pipeline_segments(depth: ArrayLike, n_bytes: ArrayLike, alpha_s: ArrayLike,
                      beta_s_per_B: ArrayLike, max_segments: int = MAX_SEGMENTS) -> np.ndarray:
    """:func:`dbt_segments`, vectorized (as floats).

    Parameters
    ----------
    depth, n_bytes, alpha_s, beta_s_per_B : array_like
        As in :func:`dbt_segments`, broadcast together.
    max_segments : int
        Cap on the segments.
    """
    a = np.asarray(alpha_s, dtype=float)
    k = np.sqrt(np.maximum(np.asarray(depth, dtype=float) - 1, 0) * np.asarray(n_bytes)
                * np.asarray(beta_s_per_B) / np.where(a > 0, a, 1.0))
    return np.asarray(np.where(a > 0, np.clip(np.round(k), 1, max_segments), max_segments))


def _steady_step_s(cluster: Cluster, chunk: np.ndarray, lat: np.ndarray, busy: np.ndarray,
                   recv: float, gamma_s_per_B: ArrayLike) -> np.ndarray:
    """One steady pipeline step per direction, every edge of both trees carrying one
    ``chunk``-byte segment (``lat``, ``busy``: the reduction step and the broadcast step;
    per-size factors at the segment's size)."""
    red = (step_s(cluster, lat[0], busy[0], None, chunk)
           + np.asarray(gamma_s_per_B) * chunk * recv)
    return np.asarray(red + step_s(cluster, lat[1], busy[1], None, chunk))


def dbt_time_s(cluster: Cluster, nodes: int, ranks_per_node: int, n_bytes: ArrayLike,
               gamma_s_per_B: float, ranks: int | tuple[int, ...] | None = None,
               ends: tuple[int, int] | None = None) -> np.ndarray:
    """Seconds of the pipelined double binary tree allreduce (see the module docstring).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes, ranks_per_node : int
        Ranks placed block-wise.
    n_bytes : array_like
        Bytes of each rank's vector (vectorized).
    gamma_s_per_B : float
        Reduction cost per byte.
    ranks : int or tuple of int, optional
        The first ``ranks`` ranks, or these rank ids (as in :func:`.plan_collective`).
    ends : tuple of int, optional
        The first and last rank of the collective (their path sets the segment
        count); default ``0`` and the last rank.

    Returns
    -------
    ndarray
        Seconds, the shape of ``n_bytes``.
    """
    n = np.asarray(n_bytes, dtype=float)
    topo = cluster.network.topology
    dev = device_links(cluster, ranks_per_node)
    steady = plan_collective(topo, nodes, ranks_per_node, dev, "allreduce",
                             "double-binary-tree", "ring", ranks)
    depth = steady.dbt_depth
    first, last = ends if ends is not None else (0, nodes * ranks_per_node - 1)
    a, b = path_hockney(cluster, nodes, ranks_per_node, first, last)
    k = pipeline_segments(depth, n, a, b)
    k0 = max(depth - 1, 1)
    out = np.zeros(n.shape)
    full = k >= k0
    if full.any():
        fill = plan_collective(topo, nodes, ranks_per_node, dev, "allreduce",
                               "double-binary-tree", "ring", ranks, segments=k0)
        lat = latency_s(cluster, dev, steady.inter, steady.hops)
        busy = (steady.load * level_betas(cluster, steady.levels)).max(axis=1, initial=0.0)
        kf = np.where(full, k, k0)
        between = (kf - k0) * _steady_step_s(cluster, n / (2 * kf), lat, busy,
                                             float(steady.recv[0]), gamma_s_per_B)
        out = np.where(full, plan_time_s(cluster, fill, n * k0 / kf, gamma_s_per_B) + between,
                       out)
    for kk in np.unique(k[~full]).astype(int).tolist():
        exact = plan_collective(topo, nodes, ranks_per_node, dev, "allreduce",
                                "double-binary-tree", "ring", ranks, segments=kk)
        out = np.where(k == kk, plan_time_s(cluster, exact, n, gamma_s_per_B), out)
    return out
