"""The pipelined double binary tree: its segment count and its time from its plans.

NCCL's double binary tree (two complementary binary trees, each carrying half the
vector) pipelines ``k`` segments through trees of depth ``D``: ``k + D - 1`` steps per
direction (reduce, then broadcast), of which the first ``D - 1`` fill the pipeline and
the last ``D - 1`` drain it with only some edges busy, and the ``k - D + 1`` between
keep every edge busy. The fill and drain steps do not depend on ``k`` once
``k >= D - 1``, so the pipeline's time is that of the ``D - 1``-segment pipeline (all
fill and drain, costed step by step: :func:`dlscale.perfmodel.network.stepcost.plan_time_s`) plus
``k - D + 1`` steady steps (every edge of both trees carrying one segment), each at
the segment size ``n / (2 k)``; a shorter pipeline is costed step by step. The
segment count is the one of least costed time (:func:`_best_full`, then fewer
segments than ``D - 1`` where they cost less), so a slower link never gives a faster
pipeline; the simulator, which routes one schedule, takes :func:`dbt_segments`, the
square-root rule on the end-to-end path's figures.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> summit = get_cluster("summit")
>>> t = dbt_time_s(summit, 16, 6, np.array([1e6, 1e8]), 0.0)
>>> bool(t[1] > t[0] > 0)
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.machine.hardware import Cluster, Topology
from dlscale.perfmodel.network.plan import CollectivePlan, plan_collective, plan_key, plan_steps
from dlscale.perfmodel.network.stepcost import (
    device_links,
    latency_s,
    level_betas,
    plan_time_s,
    step_s,
    steps_total_s,
)

__all__ = ["MAX_SEGMENTS", "dbt_best_segments", "dbt_curve_time_s", "dbt_segments", "dbt_time_s",
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
    fills: tuple[_Stack, ...]    # the (depth - 1)-segment pipelines, by step count


@lru_cache(maxsize=256)
def _parts(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int, dev: bool,
           ranks: int | tuple[int, ...] | None) -> _Parts:
    # the steady plans under the key plan_curve gave them (no ``ranks`` when all take
    # part): each is built once
    # (their step arrays, kept for a whole curve, where all take part)
    steady = [plan_steps(topology, nd, ranks_per_node, dev, "allreduce", "double-binary-tree",
                         "ring") if ranks is None else
              plan_collective(topology, nd, ranks_per_node, dev, "allreduce",
                              "double-binary-tree", "ring", ranks) for nd in nodes]
    depth = np.array([pl.dbt_depth for pl in steady])
    groups: dict[int, tuple[list[CollectivePlan], list[int]]] = {}
    for j, nd in enumerate(nodes):
        fill = plan_collective(topology, nd, ranks_per_node, dev, "allreduce",
                               "double-binary-tree", "ring", ranks,
                               segments=max(int(depth[j]) - 1, 1))
        grp = groups.setdefault(len(fill.repeat), ([], []))
        grp[0].append(fill)
        grp[1].append(j)
    return _Parts(depth, _stack(steady, list(range(len(nodes)))),
                  tuple(_stack(pl, c) for pl, c in groups.values()))


def _sum_of_steps(cluster: Cluster, st: _Stack, dev: bool, n: np.ndarray,
                  gamma: np.ndarray) -> np.ndarray:
    """:func:`dlscale.perfmodel.network.stepcost.plan_time_s` of stacked plans without flows, each at its sizes
    ``n[..., i]`` (the same operations, so the same bits)."""
    lat = latency_s(cluster, dev, st.inter, st.hops)                          # (G, S)
    busy = (st.load * level_betas(cluster, st.levels)).max(axis=-1, initial=0.0)
    nn = n[..., None]
    step = step_s(cluster, lat, busy, st.size, nn) + gamma[:, None] * nn * st.recv
    return np.asarray(steps_total_s(st.repeat, step))


def dbt_curve_time_s(cluster: Cluster, nodes: tuple[int, ...], ranks_per_node: int,
                     n_bytes: ArrayLike, gamma_s_per_B: ArrayLike,
                     ranks: int | tuple[int, ...] | None = None) -> np.ndarray:
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
    ranks
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
    return _dbt_curve(cluster, nodes, ranks_per_node, n_bytes, gamma_s_per_B, ranks)[0]


def dbt_best_segments(cluster: Cluster, nodes: int, ranks_per_node: int, n_bytes: float,
                      gamma_s_per_B: float, ranks: int | tuple[int, ...] | None = None) -> int:
    """The segment count :func:`dbt_time_s` prices (the one of least costed time).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> summit = get_cluster("summit")
    >>> dbt_best_segments(summit, 16, 6, 1e3, 0.0), dbt_best_segments(summit, 16, 6, 1e8, 0.0)
    (1, 110)
    """
    k = _dbt_curve(cluster, (nodes,), ranks_per_node, np.array([float(n_bytes)]),
                   np.array([gamma_s_per_B], dtype=float), ranks)[1]
    return int(k[0])


def _dbt_curve(cluster: Cluster, nodes: tuple[int, ...], ranks_per_node: int,
               n_bytes: ArrayLike, gamma_s_per_B: ArrayLike,
               ranks: int | tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(seconds, segment count)`` of :func:`dbt_curve_time_s`."""
    n = np.asarray(n_bytes, dtype=float)
    g = np.broadcast_to(np.asarray(gamma_s_per_B, dtype=float), (len(nodes),))
    topo = plan_key(cluster)
    dev = device_links(cluster, ranks_per_node)
    parts = _parts(topo, tuple(nodes), ranks_per_node, dev, ranks)
    k0 = np.maximum(parts.depth - 1, 1).astype(float)
    steady = parts.steady
    lat = latency_s(cluster, dev, steady.inter, steady.hops)                   # (N, 2)
    busy = (steady.load * level_betas(cluster, steady.levels)).max(axis=-1, initial=0.0)

    def fill_s(x: np.ndarray) -> np.ndarray:
        """The ``k0``-segment pipeline (fill and drain) of an ``x``-byte vector."""
        fill = np.zeros(n.shape)
        for st in parts.fills:
            fill[..., st.cols] = _sum_of_steps(cluster, st, dev, x[..., st.cols], g[st.cols])
        return fill

    def steady_s(chunk: np.ndarray) -> np.ndarray:
        return _steady_step_s(cluster, chunk, lat, busy, steady.recv[:, 0], g)

    def full_s(kf: np.ndarray) -> np.ndarray:
        """The pipeline of ``kf >= k0`` segments (``kf`` of the shape of ``n``)."""
        return np.asarray(fill_s(n * k0 / kf) + (kf - k0) * steady_s(n / (2 * kf)))

    if cluster.network.message_factors is None:
        zero = np.zeros(n.shape)
        # the pipeline of k segments costs a + b k + c / k (every step affine in its size)
        slope = np.broadcast_to(steady_s(zero), n.shape)
        curve = k0 * (fill_s(n) - fill_s(zero) - (steady_s(n / 2) - slope))
        best = _best_full(full_s, n, k0, slope, curve)
    else:
        best = _best_full(full_s, n, k0, None, None)
    out = full_s(best)
    # fewer segments than the pipeline's depth: costed step by step, searched where the
    # depth's own count is the best of the full pipelines
    for j in np.flatnonzero((best == k0).reshape(-1, len(nodes)).any(axis=0)
                            & (k0 > 1)).tolist():
        out[..., j], best[..., j] = _short_search(
            cluster, topo, nodes[j], ranks_per_node, dev, ranks, int(k0[j]), n[..., j],
            float(g[j]), out[..., j], best[..., j])
    return out, best


def _best_full(full_s: Callable[[np.ndarray], np.ndarray], n: np.ndarray, k0: np.ndarray,
               slope: np.ndarray | None, curve: np.ndarray | None) -> np.ndarray:
    """The segment count in ``k0..MAX_SEGMENTS`` of least costed time, per size.

    Without per-size factors every step is affine in its message size, so the
    pipeline of ``k`` segments costs ``a + b k + c / k`` (``b = slope``: a steady
    step's latency, ``c = curve``): convex in ``k``, its integer minimum at the floor
    or the ceiling of ``sqrt(c / b)``, or at ``k0`` where ``c <= 0``. With factors
    (``slope`` None) the cost is piecewise and every count is tried. Either way the
    result is the least cost over every count, which no speed changes: lowering a
    bandwidth raises each count's cost, so never the least (issue 27 item 13: the
    count came from the end-to-end path's figures, so a slower link could pick a
    cheaper count).
    """
    kmax = float(MAX_SEGMENTS)
    ka = np.broadcast_to(k0, n.shape).astype(float)
    if slope is not None and curve is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            star = np.where(curve > 0, np.sqrt(curve / slope), 0.0)
        star = np.nan_to_num(star, nan=kmax, posinf=kmax)
        cands = [ka, np.clip(np.floor(star), ka, kmax), np.clip(np.ceil(star), ka, kmax)]
    else:
        cands = [np.maximum(ka, float(k)) for k in range(1, MAX_SEGMENTS + 1)]
    best_k, best_t = ka, np.full(n.shape, np.inf)
    for kk in cands:
        t = full_s(kk)
        better = t < best_t
        best_k, best_t = np.where(better, kk, best_k), np.where(better, t, best_t)
    return np.asarray(best_k)


def _short_search(cluster: Cluster, topo: Topology, nodes: int, ranks_per_node: int,
                  dev: bool, ranks: int | tuple[int, ...] | None, k0: int, n: np.ndarray,
                  gamma: float, full: np.ndarray, full_k: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``full`` (the costs of the best pipelines of ``k0`` or more segments, of
    ``full_k`` segments), with the cost and the count of a pipeline of fewer segments
    where that costs less.

    Each count's cost is the step-by-step cost of its own plan; the counts are searched
    from ``k0 - 1`` down while the cost falls (the cost is convex in the count: a count
    that pays off less than the one above it pays off less than all below it), so only
    the plans of the counts passed are built.
    """
    out, seg = np.array(full, dtype=float), np.array(full_k, dtype=float)
    flat, kflat = out.reshape(-1), seg.reshape(-1)
    sizes = np.asarray(n, dtype=float).reshape(-1)
    active = np.ones(flat.shape, dtype=bool)
    for kk in range(k0 - 1, 0, -1):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        plan = plan_collective(topo, nodes, ranks_per_node, dev, "allreduce",
                               "double-binary-tree", "ring", ranks, segments=kk)
        t = np.asarray(plan_time_s(cluster, plan, sizes[idx], gamma))
        better = t < flat[idx]
        flat[idx[better]] = t[better]
        kflat[idx[better]] = kk
        active[idx[~better]] = False
    return out, seg


def dbt_time_s(cluster: Cluster, nodes: int, ranks_per_node: int, n_bytes: ArrayLike,
               gamma_s_per_B: float, ranks: int | tuple[int, ...] | None = None
               ) -> np.ndarray:
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

    Returns
    -------
    ndarray
        Seconds, the shape of ``n_bytes``.
    """
    n = np.asarray(n_bytes, dtype=float)
    out = dbt_curve_time_s(cluster, (nodes,), ranks_per_node, n[..., None],
                           np.array([gamma_s_per_B], dtype=float), ranks)
    return np.asarray(out[..., 0])
