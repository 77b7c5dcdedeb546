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

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from .hardware import Cluster, Topology
from .linkload import level_bandwidths_Bps
from .netplan import CollectivePlan, plan_collective, shape_key
from .stepcost import (
    _path_load_cached,
    device_links,
    latency_s,
    level_betas,
    plan_time_s,
    step_s,
)

__all__ = ["MAX_SEGMENTS", "dbt_curve_time_s", "dbt_segments", "dbt_time_s",
           "pipeline_segments"]


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
                   recv: ArrayLike, gamma_s_per_B: ArrayLike) -> np.ndarray:
    """One steady pipeline step per direction, every edge of both trees carrying one
    ``chunk``-byte segment (``lat``, ``busy``: the reduction step and the broadcast step,
    on the last axis; per-size factors at the segment's size)."""
    red = (step_s(cluster, lat[..., 0], busy[..., 0], None, chunk)
           + np.asarray(gamma_s_per_B) * chunk * recv)
    return np.asarray(red + step_s(cluster, lat[..., 1], busy[..., 1], None, chunk))


@dataclass(frozen=True)
class _Stack:
    """Plans of one step count stacked along a leading axis (the node counts ``cols``)."""

    cols: np.ndarray
    levels: tuple[str, ...]
    load: np.ndarray
    repeat: np.ndarray
    inter: np.ndarray
    hops: np.ndarray
    recv: np.ndarray
    size: np.ndarray


def _stack(plans: list[CollectivePlan], cols: list[int]) -> _Stack:
    levels = tuple(sorted({lvl for pl in plans for lvl in pl.levels}))
    load = np.zeros((len(plans), len(plans[0].repeat), len(levels)))
    for i, pl in enumerate(plans):
        load[i][:, [levels.index(lvl) for lvl in pl.levels]] = pl.load
    size = [np.ones(len(pl.repeat)) if pl.size is None else pl.size for pl in plans]
    return _Stack(np.array(cols), levels, load, np.array([pl.repeat for pl in plans]),
                  np.array([pl.inter for pl in plans]), np.array([pl.hops for pl in plans]),
                  np.array([pl.recv for pl in plans]), np.array(size))


@dataclass(frozen=True)
class _Parts:
    """What prices the pipelined tree at ``N`` node counts, independent of speeds."""

    depth: np.ndarray            # (N,) tree depth
    steady: _Stack               # the steady reduction and broadcast steps, (N, 2)
    ends: _Stack                 # the first-to-last rank path, (N, 1): its Hockney figures
    fills: tuple[_Stack, ...]    # the (depth - 1)-segment pipelines, by step count


@lru_cache(maxsize=256)
def _parts(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int, dev: bool,
           ranks: int | tuple[int, ...] | None, ends: tuple[int, int] | None) -> _Parts:
    # the steady plans under the key plan_curve gave them (no ``ranks`` when all take
    # part): each is built once
    some = () if ranks is None else (ranks,)
    steady = [plan_collective(topology, nd, ranks_per_node, dev, "allreduce",
                              "double-binary-tree", "ring", *some) for nd in nodes]
    depth = np.array([pl.dbt_depth for pl in steady])
    loads = [_path_load_cached(topology, nd, ranks_per_node, dev,
                               *(ends or (0, nd * ranks_per_node - 1))) for nd in nodes]
    levels = tuple(sorted({lvl for s in loads for lvl in s.load}))
    path = _Stack(np.arange(len(nodes)), levels,
                  np.array([[[s.load.get(lvl, 0.0) for lvl in levels]] for s in loads]),
                  np.ones((len(nodes), 1)), np.array([[s.inter] for s in loads]),
                  np.array([[s.hops] for s in loads]), np.zeros((len(nodes), 1)),
                  np.ones((len(nodes), 1)))
    groups: dict[int, tuple[list[CollectivePlan], list[int]]] = {}
    for j, nd in enumerate(nodes):
        fill = plan_collective(topology, nd, ranks_per_node, dev, "allreduce",
                               "double-binary-tree", "ring", ranks,
                               segments=max(int(depth[j]) - 1, 1))
        grp = groups.setdefault(len(fill.repeat), ([], []))
        grp[0].append(fill)
        grp[1].append(j)
    return _Parts(depth, _stack(steady, list(range(len(nodes)))), path,
                  tuple(_stack(pl, c) for pl, c in groups.values()))


def _hockney(cluster: Cluster, ends: _Stack, dev: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` of each path, as :func:`.stepcost.path_hockney` computes them."""
    bw = level_bandwidths_Bps(cluster)
    per = ends.load[:, 0, :] / np.array([bw[k] for k in ends.levels])
    return latency_s(cluster, dev, ends.inter[:, 0], ends.hops[:, 0]), per.max(axis=-1)


def _sum_of_steps(cluster: Cluster, st: _Stack, dev: bool, n: np.ndarray,
                  gamma: np.ndarray) -> np.ndarray:
    """:func:`.stepcost.plan_time_s` of stacked plans without flows, each at its sizes
    ``n[..., i]`` (the same operations, so the same bits)."""
    lat = latency_s(cluster, dev, st.inter, st.hops)                          # (G, S)
    busy = (st.load * level_betas(cluster, st.levels)).max(axis=-1, initial=0.0)
    nn = n[..., None]
    step = step_s(cluster, lat, busy, st.size, nn) + gamma[:, None] * nn * st.recv
    return np.asarray((st.repeat * step).sum(axis=-1))


def dbt_curve_time_s(cluster: Cluster, nodes: tuple[int, ...], ranks_per_node: int,
                     n_bytes: ArrayLike, gamma_s_per_B: ArrayLike,
                     ranks: int | tuple[int, ...] | None = None,
                     ends: tuple[int, int] | None = None) -> np.ndarray:
    """:func:`dbt_time_s` at each of ``N`` node counts at once (the same result).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes : tuple of int
        Node counts (each with at least 2 ranks).
    ranks_per_node : int
        Ranks per node, placed block-wise.
    n_bytes : array_like, shape (..., N)
        Bytes of each rank's vector, per node count on the last axis.
    gamma_s_per_B : array_like, shape (N,)
        Reduction cost per byte, per node count.
    ranks, ends
        As in :func:`dbt_time_s` (the same at every node count).

    Returns
    -------
    ndarray
        Seconds, the shape of ``n_bytes``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> summit = get_cluster("summit")
    >>> t = dbt_curve_time_s(summit, (2, 16), 6, np.array([1e8, 1e8]), np.zeros(2))
    >>> bool(t[1] == dbt_time_s(summit, 16, 6, 1e8, 0.0))
    True
    """
    n = np.asarray(n_bytes, dtype=float)
    g = np.broadcast_to(np.asarray(gamma_s_per_B, dtype=float), (len(nodes),))
    topo = shape_key(cluster.network.topology)
    dev = device_links(cluster, ranks_per_node)
    parts = _parts(topo, tuple(nodes), ranks_per_node, dev, ranks, ends)
    depth = parts.depth
    a, b = _hockney(cluster, parts.ends, dev)
    k = pipeline_segments(depth, n, a, b)
    k0 = np.maximum(depth - 1, 1)
    full = k >= k0
    kf = np.where(full, k, k0)
    steady = parts.steady
    lat = latency_s(cluster, dev, steady.inter, steady.hops)                   # (N, 2)
    busy = (steady.load * level_betas(cluster, steady.levels)).max(axis=-1, initial=0.0)
    between = (kf - k0) * _steady_step_s(cluster, n / (2 * kf), lat, busy, steady.recv[:, 0],
                                         g)
    fill = np.zeros(n.shape)
    sized = n * k0 / kf
    for st in parts.fills:
        fill[..., st.cols] = _sum_of_steps(cluster, st, dev, sized[..., st.cols], g[st.cols])
    out = np.where(full, fill + between, 0.0)
    short = ~full
    for j in np.flatnonzero(short.reshape(-1, len(nodes)).any(axis=0)).tolist():
        kj = k[..., j]
        for kk in np.unique(kj[short[..., j]]).astype(int).tolist():
            exact = plan_collective(topo, nodes[j], ranks_per_node, dev, "allreduce",
                                    "double-binary-tree", "ring", ranks, segments=kk)
            out[..., j] = np.where(kj == kk, plan_time_s(cluster, exact, n[..., j],
                                                         float(g[j])), out[..., j])
    return out


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
    out = dbt_curve_time_s(cluster, (nodes,), ranks_per_node, n[..., None],
                           np.array([gamma_s_per_B], dtype=float), ranks, ends)
    return np.asarray(out[..., 0])
