"""The analytical network model: a collective's time from the loads it puts on each level.

One model answers every closed-form question about the network (``predict``, the
simulator's ``analytical`` backend, sweeps, the tuner behind ``auto``): a
collective's algorithm is a schedule of steps (:mod:`.schedules`, the same steps the
simulator routes), and each step costs

``latency of its longest path + n_step * max_level(load_level / bandwidth_level)
+ gamma * (bytes a rank reduces)``,

with the per-level loads counted by :func:`.linkload.step_load` for the ranks
placed block-wise on the cluster's topology, and the path latency summed along the
links (half the intra-node latency at each device end, half the NIC's at each host
end, ``hop_latency_s`` per switch-to-switch link). Every link of the machine
counts: a spine or global link slower than the NICs slows every step whose flows
cross it, in proportion to how many cross it at once.

The loads of a step do not depend on the bytes or the link speeds, so they are
computed once per (topology, nodes, ranks per node, algorithm) and cached; a sweep
over bandwidths or message sizes reuses them.

The pipelined double binary tree runs the segment count of :func:`dbt_segments` (the
rule the simulator uses too); with up to :data:`EXACT_PIPELINE_SEGMENTS` segments
every pipeline step is costed, above that the pipeline is costed from its steady
state (every edge of both trees carrying one segment; filling and draining are then
charged as if full, a small overestimate).

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> summit = get_cluster("summit")
>>> t = collective_time_s(summit, "allreduce", "ring", 100e6, 512, 6)
>>> import dataclasses
>>> slow = dataclasses.replace(summit, network=dataclasses.replace(
...     summit.network, link=dataclasses.replace(summit.network.link, bandwidth_Bps=1e9)))
>>> collective_time_s(slow, "allreduce", "ring", 100e6, 512, 6) > 1.5 * t
True
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from .errors import ConfigError, unknown_name
from .hardware import Cluster, Dragonfly, Topology
from .linkload import StepLoad, level_bandwidths_Bps, step_load
from .schedules import ALGORITHMS, FLAT_ALLREDUCE, build_schedule, double_binary_tree_edges

__all__ = ["CollectivePlan", "collective_time_s", "dbt_segments", "limiting_level",
           "path_hockney", "path_load", "plan_collective", "time_per_node_count"]

#: Most pipeline segments of the double binary tree (NCCL's chunking bounds it).
MAX_SEGMENTS = 256
#: Up to this many segments the double binary tree's pipeline is costed step by step
#: (filling and draining dominate); above, from its steady state.
EXACT_PIPELINE_SEGMENTS = 8


@dataclass(frozen=True)
class CollectivePlan:
    """A collective's steps with their loads, in units of the vector size ``n``.

    Attributes
    ----------
    levels : tuple of str
        Levels that carry load in some step.
    load : ndarray, shape (S, L)
        Per step, the most loaded link of each level, in units of ``n`` bytes.
    repeat : ndarray, shape (S,)
        How many times each step runs.
    inter : ndarray of bool, shape (S,)
        Whether the step leaves a node (NIC latency).
    hops : ndarray of int, shape (S,)
        Most switch-to-switch hops of the step.
    recv : ndarray, shape (S,)
        Most a rank reduces in the step (units of ``n``; 0 in steps without reduction).
    device_links : bool
        Ranks sit behind a device link (intra-node latency on every path).
    dbt_depth : int
        Depth of the double binary tree (0: not a pipelined tree; then each step's
        load is per pipeline segment of ``n / (2 segments)`` bytes).
    ranks : ndarray or None
        For the plans of a whole curve stacked (arrays with a leading node-count
        axis): the rank count of each node count.
    size : ndarray or None, shape (S,)
        Largest message of each step in units of ``n`` (for the per-size factors of
        :mod:`.msgfactors`); None: every message ``n`` bytes.
    """

    levels: tuple[str, ...]
    load: np.ndarray
    repeat: np.ndarray
    inter: np.ndarray
    hops: np.ndarray
    recv: np.ndarray
    device_links: bool
    dbt_depth: int = 0
    ranks: np.ndarray | None = None
    size: np.ndarray | None = None


def _shape_key(topology: Topology) -> Topology:
    """The topology without its link speeds (loads do not depend on them)."""
    if isinstance(topology, Dragonfly):
        return dataclasses.replace(topology, local_bandwidth_Bps=None, global_bandwidth_Bps=None)
    return topology


def _assemble(loads: list[StepLoad], repeat: list[int], reduce: list[bool], scale: list[float],
              device_links: bool, dbt_depth: int = 0) -> CollectivePlan:
    levels = tuple(sorted({lvl for s in loads for lvl in s.load}))
    S = len(loads)
    arr = np.zeros((S, len(levels)))
    for i, s in enumerate(loads):
        for j, lvl in enumerate(levels):
            arr[i, j] = s.load.get(lvl, 0.0) * scale[i]
    return CollectivePlan(
        levels, arr, np.asarray(repeat, dtype=float),
        np.array([s.inter for s in loads], dtype=bool),
        np.array([s.hops for s in loads], dtype=np.int64),
        np.array([s.recv * sc if red else 0.0 for s, red, sc in zip(loads, reduce, scale,
                                                                    strict=True)]),
        device_links, dbt_depth, size=np.asarray(scale, dtype=float))


@lru_cache(maxsize=1 << 16)
def plan_collective(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
                    collective: str, algorithm: str,
                    inter_algorithm: str = "ring",
                    ranks: int | tuple[int, ...] | None = None,
                    segments: int = 0) -> CollectivePlan:
    """The per-step loads of ``collective`` by ``algorithm`` (cached; see module docstring).

    Parameters
    ----------
    topology : Topology
        The network's topology (its link speeds are ignored).
    nodes, ranks_per_node : int
        Ranks ``0..nodes * ranks_per_node - 1``, placed block-wise.
    device_links : bool
        Ranks sit behind a device link.
    collective, algorithm : str
        A collective and one of its algorithms (:data:`.schedules.ALGORITHMS`).
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.
    ranks : int or tuple of int, optional
        Only the first ``ranks`` ranks take part, or the ranks of these ids (the
        collective's rank ``i`` is ``ranks[i]``). Default: all.
    segments : int
        For the double binary tree: 0 for its steady state (every edge busy, see the
        module docstring), else every step of the pipeline with this many segments.
    """
    topology = _shape_key(topology)
    if isinstance(ranks, tuple):
        ids = np.asarray(ranks, dtype=np.int64)
    else:
        ids = np.arange(nodes * ranks_per_node if ranks is None else ranks, dtype=np.int64)
    p = len(ids)
    if collective == "allreduce" and algorithm == "double-binary-tree" and not segments:
        child, parent, depth = double_binary_tree_edges(p)
        child, parent = ids[child], ids[parent]
        unit = np.ones(len(child))
        red = step_load(topology, nodes, ranks_per_node, device_links, child, parent, unit)
        bc = step_load(topology, nodes, ranks_per_node, device_links, parent, child, unit)
        return _assemble([red, bc], [1, 1], [True, False], [1.0, 1.0], device_links, depth)
    groups = None
    if algorithm == "hierarchical":
        host = ids // ranks_per_node
        _, first, inverse = np.unique(host, return_index=True, return_inverse=True)
        groups = [np.flatnonzero(inverse == g) for g in np.argsort(first)]
    phases = build_schedule(collective, algorithm, p, 1.0, groups=groups,
                            inter_algorithm=inter_algorithm, segments=max(segments, 1))
    memo: dict[bytes, StepLoad] = {}
    loads, repeat, reduce, scale = [], [], [], []
    for ph in phases:
        if len(ph.nbytes) == 0:
            continue
        size = float(ph.nbytes.max())
        key = hashlib.blake2b(ph.pattern_key, digest_size=16).digest()
        if key not in memo:
            memo[key] = step_load(topology, nodes, ranks_per_node, device_links, ids[ph.src],
                                  ids[ph.dst], ph.nbytes / size)
        loads.append(memo[key])
        repeat.append(ph.repeat)
        reduce.append(ph.reduce)
        scale.append(size)
    return _assemble(loads, repeat, reduce, scale, device_links)


def _betas(cluster: Cluster, levels: tuple[str, ...]) -> np.ndarray:
    bw = level_bandwidths_Bps(cluster)
    return np.array([1.0 / bw[lvl] for lvl in levels])


def _latency(cluster: Cluster, device_links: bool, inter: np.ndarray,
             hops: np.ndarray) -> np.ndarray:
    node = cluster.node
    return ((node.intra_link.latency_s if device_links else 0.0)
            + inter * node.nic.latency_s + hops * cluster.network.hop_latency_s)


@lru_cache(maxsize=1 << 16)
def _path_load(topology: Topology, nodes: int, ranks_per_node: int, device_links: bool,
               src: int, dst: int) -> StepLoad:
    return step_load(topology, nodes, ranks_per_node, device_links, np.array([src]),
                     np.array([dst]), np.ones(1))


def path_load(cluster: Cluster, nodes: int, ranks_per_node: int, src: int,
              dst: int) -> StepLoad:
    """Per-level loads of one message between two ranks (cached per topology shape).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes, ranks_per_node : int
        Ranks placed block-wise.
    src, dst : int
        The two ranks.
    """
    dev = _device_links(cluster, ranks_per_node)
    return _path_load(_shape_key(cluster.network.topology), nodes, ranks_per_node, dev, src, dst)


def path_hockney(cluster: Cluster, nodes: int, ranks_per_node: int, src: int,
                 dst: int) -> tuple[float, float]:
    """``(alpha_s, beta_s_per_B)`` of one uncontended message between two ranks.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes, ranks_per_node, src, dst : int
        Nodes, ranks per node (placed block-wise), and the two rank ids.

    Returns
    -------
    tuple of (float, float)
        ``alpha_s`` (latencies along the path), ``beta_s_per_B`` (its slowest link).

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> a, b = path_hockney(get_cluster("summit"), 64, 6, 0, 383)
    >>> round(a * 1e6, 2), round(1 / b / 1e9, 1)   # NVLink 3 + NIC 0.6 + 2 hops of 90 ns
    (3.78, 23.0)
    """
    dev = _device_links(cluster, ranks_per_node)
    s = path_load(cluster, nodes, ranks_per_node, src, dst)
    if src == dst:
        return 0.0, 0.0
    bw = level_bandwidths_Bps(cluster)
    beta = max(v / bw[k] for k, v in s.load.items())
    return float(_latency(cluster, dev, np.array(s.inter), np.array(s.hops))), float(beta)


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
    return int(_segments(depth, n_bytes, alpha_s, beta_s_per_B, max_segments))


def _segments(depth: ArrayLike, n_bytes: ArrayLike, alpha_s: ArrayLike,
              beta_s_per_B: ArrayLike, max_segments: int = MAX_SEGMENTS) -> np.ndarray:
    """:func:`dbt_segments`, vectorized (as floats)."""
    a = np.asarray(alpha_s, dtype=float)
    k = np.sqrt(np.maximum(np.asarray(depth, dtype=float) - 1, 0) * np.asarray(n_bytes)
                * np.asarray(beta_s_per_B) / np.where(a > 0, a, 1.0))
    return np.asarray(np.where(a > 0, np.clip(np.round(k), 1, max_segments), max_segments))


def _dbt_steady_s(cluster: Cluster, n: np.ndarray, k: np.ndarray, depth: ArrayLike,
                  lat: np.ndarray, busy: np.ndarray, recv: ArrayLike,
                  gamma_s_per_B: ArrayLike) -> np.ndarray:
    """The pipelined double binary tree from its steady state: ``k + D - 1`` steps, each
    a reduction step and a broadcast step of one ``n / (2 k)``-byte segment (``lat``,
    ``busy``: last axis the two steps; per-size factors at the segment's size)."""
    chunk = n / (2 * k)
    fl: np.ndarray | float = 1.0
    fb: np.ndarray | float = 1.0
    factors = cluster.network.message_factors
    if factors is not None:
        fl, fb = factors.at(chunk)
    red = fl * lat[..., 0] + chunk * busy[..., 0] / fb + gamma_s_per_B * chunk * recv
    bc = fl * lat[..., 1] + chunk * busy[..., 1] / fb
    return np.array((k + np.asarray(depth) - 1) * (red + bc))


def _check_names(collective: str, algorithm: str, inter_algorithm: str) -> None:
    if collective not in ALGORITHMS:
        raise unknown_name("collective", collective, ALGORITHMS)
    if algorithm not in ALGORITHMS[collective]:
        raise unknown_name(f"{collective} algorithm", algorithm, ALGORITHMS[collective])
    if inter_algorithm not in FLAT_ALLREDUCE:
        raise unknown_name("inter algorithm", inter_algorithm, FLAT_ALLREDUCE)


def _device_links(cluster: Cluster, ranks_per_node: int) -> bool:
    return cluster.node.devices_per_node > 1 or ranks_per_node > 1


def collective_time_s(cluster: Cluster, collective: str, algorithm: str,
                      n_bytes: float | np.ndarray, nodes: int, ranks_per_node: int,
                      gamma_s_per_B: float = 0.0, inter_algorithm: str = "ring",
                      ranks: int | Sequence[int] | None = None) -> float | np.ndarray:
    """Seconds of ``collective`` by ``algorithm`` on ``nodes x ranks_per_node`` ranks.

    Vectorized over ``n_bytes``; ``ranks`` (default all) takes the first ``ranks``
    ranks only, or the ranks of these ids (in the collective's order). See the
    module docstring for the model.

    Parameters
    ----------
    cluster : Cluster
        The machine; its topology sets the loads of each step on each level.
    collective, algorithm, inter_algorithm : str
        A collective and algorithm of :data:`.netapi.COLLECTIVE_ALGORITHMS`; the flat
        algorithm among node leaders for ``hierarchical`` (default ring).
    n_bytes : float or ndarray
        Bytes of each rank's vector (of the gathered result for allgather).
    nodes, ranks_per_node : int
        Nodes and ranks per node.
    gamma_s_per_B : float, optional
        Reduction cost per byte (default 0).
    ranks : int or sequence of int, optional
        The ranks taking part (default all).

    Returns
    -------
    float or ndarray
        Seconds, the shape of ``n_bytes``.

    Raises
    ------
    ConfigError
        An unknown collective or algorithm (listing the valid ones) or bad ranks.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> c = get_cluster("stampede2-knl")
    >>> round(collective_time_s(c, "allreduce", "ring", 1e8, 2, 1) * 1e3, 3)  # 2 alpha + n / 12.5 GB/s
    8.002
    """
    _check_names(collective, algorithm, inter_algorithm)
    cluster.check_nodes(nodes)
    n = np.asarray(n_bytes, dtype=float)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ConfigError(f"n_bytes: must be finite and >= 0, got {n_bytes!r}")
    total = nodes * ranks_per_node
    key: int | tuple[int, ...] | None = None
    if ranks is None:
        ids = (0, total - 1)
        p = total
    elif isinstance(ranks, (int, np.integer)):
        p = int(ranks)
        if not 1 <= p <= total:
            raise ConfigError(f"ranks: must be in 1..{total}, got {ranks!r}")
        ids, key = (0, p - 1), p
    else:
        key = tuple(int(x) for x in ranks)
        p = len(key)
        if not key or min(key) < 0 or max(key) >= total or len(set(key)) != p:
            raise ConfigError(f"ranks: need distinct rank ids in 0..{total - 1}")
        ids = (key[0], key[-1])
    if p < 2:
        return 0.0 if n.ndim == 0 else np.zeros(n.shape)
    dev = _device_links(cluster, ranks_per_node)
    plan = plan_collective(cluster.network.topology, nodes, ranks_per_node, dev, collective,
                           algorithm, inter_algorithm, key)
    lat = _latency(cluster, dev, plan.inter, plan.hops)               # (S,)
    busy = (plan.load * _betas(cluster, plan.levels)).max(axis=1, initial=0.0)
    if plan.dbt_depth:
        a, b = path_hockney(cluster, nodes, ranks_per_node, ids[0], ids[1])
        k = _segments(plan.dbt_depth, n, a, b)
        out = _dbt_steady_s(cluster, n, k, plan.dbt_depth, lat, busy, plan.recv[0],
                            gamma_s_per_B)
        # a short pipeline spends most of its steps filling and draining, when only
        # some edges are busy: cost those steps one by one
        for kk in np.unique(k[k <= EXACT_PIPELINE_SEGMENTS]).astype(int).tolist():
            sel = k == kk
            exact = plan_collective(cluster.network.topology, nodes, ranks_per_node, dev,
                                    collective, algorithm, inter_algorithm, key, segments=kk)
            out = np.where(sel, _sum_steps(cluster, exact, n, gamma_s_per_B), out)
    else:
        out = _sum_steps(cluster, plan, n, gamma_s_per_B)
    return float(out) if np.ndim(out) == 0 else out


def _sum_steps(cluster: Cluster, plan: CollectivePlan, n: np.ndarray,
               gamma_s_per_B: float) -> np.ndarray:
    """Each step: latency + its most loaded level's time + the reduction, times repeats."""
    lat = _latency(cluster, plan.device_links, plan.inter, plan.hops)
    busy = (plan.load * _betas(cluster, plan.levels)).max(axis=1, initial=0.0)
    nn = np.asarray(n, dtype=float)[..., None]
    step = _step_s(cluster, lat, busy, plan.size, nn) + gamma_s_per_B * nn * plan.recv
    return np.asarray((plan.repeat * step).sum(axis=-1))


def _step_s(cluster: Cluster, lat: np.ndarray, busy: np.ndarray, size: np.ndarray | None,
            nn: np.ndarray) -> np.ndarray:
    """Latency and bandwidth time of steps (:func:`.msgfactors.message_time_s` with
    each step's largest message picking the factors)."""
    factors = cluster.network.message_factors
    if factors is None:
        return np.asarray(lat + nn * busy)
    m = nn * (1.0 if size is None else size)
    fl, fb = factors.at(m)
    return np.asarray(fl * lat + nn * busy / fb)


def limiting_level(cluster: Cluster, collective: str, algorithm: str, nodes: int,
                   ranks_per_node: int, inter_algorithm: str = "ring") -> str:
    """The level whose links set most of the collective's bandwidth time.

    ``"latency"`` when no step moves bytes (one rank).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    collective, algorithm : str
        The collective and its algorithm.
    nodes, ranks_per_node : int
        Ranks placed block-wise.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> limiting_level(get_cluster("summit"), "allreduce", "ring", 64, 6)
    'host'
    """
    p = nodes * ranks_per_node
    if p < 2:
        return "latency"
    dev = _device_links(cluster, ranks_per_node)
    plan = plan_collective(cluster.network.topology, nodes, ranks_per_node, dev, collective,
                           algorithm, inter_algorithm)
    if not plan.levels:
        return "latency"
    per = plan.load * _betas(cluster, plan.levels)                    # (S, L)
    arg = per.argmax(axis=1)
    weight = per.max(axis=1) * (plan.repeat if not plan.dbt_depth else 1.0)
    share = np.bincount(arg, weights=weight, minlength=len(plan.levels))
    return plan.levels[int(share.argmax())]


def time_per_node_count(cluster: Cluster, collective: str, algorithm: str,
                        n_bytes: ArrayLike, nodes: ArrayLike, ranks_per_node: int,
                        gamma_s_per_B: float | np.ndarray = 0.0,
                        inter_algorithm: str = "ring") -> np.ndarray:
    """:func:`collective_time_s` at each of ``N`` node counts.

    ``n_bytes`` broadcasts against ``(N,)`` (one size per node count, or a column of
    sizes ``(B, 1)`` for all); ``gamma_s_per_B`` is a scalar or one per node count.
    Returns seconds of shape ``broadcast(n_bytes, (N,))``.

    Parameters
    ----------
    cluster, collective, algorithm, ranks_per_node, inter_algorithm
        As in :func:`collective_time_s`.
    n_bytes : array_like
        Sizes, broadcast against the node counts.
    nodes : array_like of int
        Node counts, shape ``(N,)``.
    gamma_s_per_B : float or ndarray, optional
        Reduction cost per byte, scalar or one per node count.

    Returns
    -------
    ndarray
        Seconds, shape ``broadcast(n_bytes, (N,))``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> t = time_per_node_count(get_cluster("summit"), "allreduce", "ring",
    ...                         np.array([[1e6], [1e8]]), [1, 2, 4], 6)
    >>> t.shape, bool((t[1] > t[0]).all())
    ((2, 3), True)
    """
    nodes = tuple(int(x) for x in np.atleast_1d(nodes))
    n = np.asarray(n_bytes, dtype=float)
    n = np.broadcast_to(n, np.broadcast_shapes(n.shape, (len(nodes),)))
    g = np.broadcast_to(np.asarray(gamma_s_per_B, dtype=float), (len(nodes),))
    _check_names(collective, algorithm, inter_algorithm)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ConfigError(f"n_bytes: must be finite and >= 0, got {n_bytes!r}")
    for nd in set(nodes):
        cluster.check_nodes(nd)
    dev = _device_links(cluster, ranks_per_node)
    curve = _curve(_shape_key(cluster.network.topology), nodes, ranks_per_node, dev,
                   collective, algorithm, inter_algorithm)
    lat = _latency(cluster, dev, curve.inter, curve.hops)                   # (N, S)
    busy = (curve.load * _betas(cluster, curve.levels)).max(axis=-1, initial=0.0)
    if collective == "allreduce" and algorithm == "double-binary-tree":
        return _dbt_per_node_count(cluster, nodes, ranks_per_node, n, g, lat, busy, curve,
                                   inter_algorithm)
    nn = n[..., None]                                                       # (..., N, 1)
    step = _step_s(cluster, lat, busy, curve.size, nn) + g[:, None] * nn * curve.recv
    out = (curve.repeat * step).sum(axis=-1)
    return np.where(np.asarray(curve.ranks) > 1, out, 0.0)


def _dbt_per_node_count(cluster: Cluster, nodes: tuple[int, ...], ranks_per_node: int,
                        n: np.ndarray, g: np.ndarray, lat: np.ndarray, busy: np.ndarray,
                        curve: CollectivePlan, inter_algorithm: str) -> np.ndarray:
    """:func:`collective_time_s` of the double binary tree at every node count at once:
    the steady-state pipeline vectorized over sizes and node counts (the same formula),
    the short pipelines (at most :data:`EXACT_PIPELINE_SEGMENTS` segments) step by step."""
    ranks = np.asarray(curve.ranks)
    if not (ranks > 1).any():  # one rank everywhere: nothing to reduce
        return np.zeros(np.broadcast_shapes(n.shape, ranks.shape))
    dev = _device_links(cluster, ranks_per_node)
    topo = _shape_key(cluster.network.topology)
    depth = np.array([plan_collective(topo, nd, ranks_per_node, dev, "allreduce",
                                      "double-binary-tree", inter_algorithm).dbt_depth
                      if p > 1 else 1 for nd, p in zip(nodes, ranks, strict=True)], dtype=float)
    hock = np.array([path_hockney(cluster, nd, ranks_per_node, 0, int(p) - 1) if p > 1
                     else (1.0, 0.0) for nd, p in zip(nodes, ranks, strict=True)])
    k = _segments(depth, n, hock[:, 0], hock[:, 1])
    out = _dbt_steady_s(cluster, n, k, depth, lat, busy, curve.recv[:, 0], g)
    short = (k <= EXACT_PIPELINE_SEGMENTS) & (ranks > 1)
    if short.any():
        for j in np.unique(np.nonzero(short)[-1]).tolist():
            col = short[..., j]
            for kk in np.unique(k[..., j][col]).astype(int).tolist():
                sel = col & (k[..., j] == kk)
                exact = plan_collective(cluster.network.topology, nodes[j], ranks_per_node, dev,
                                        "allreduce", "double-binary-tree", inter_algorithm,
                                        None, segments=kk)
                out[..., j] = np.where(sel, _sum_steps(cluster, exact, n[..., j],
                                                       float(g[j])), out[..., j])
    return np.where(ranks > 1, out, 0.0)


@lru_cache(maxsize=1024)
def _curve(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int,
           device_links: bool, collective: str, algorithm: str,
           inter_algorithm: str) -> CollectivePlan:
    """The plans of every node count of a curve, padded to one array each (steps past a
    plan's end repeat 0 times), for one vectorized evaluation."""
    plans = [plan_collective(topology, nd, ranks_per_node, device_links, collective,
                             algorithm, inter_algorithm) if nd * ranks_per_node > 1 else None
             for nd in nodes]
    levels = tuple(sorted({lvl for pl in plans if pl is not None for lvl in pl.levels}))
    S = max([len(pl.repeat) for pl in plans if pl is not None], default=1)
    N, L = len(nodes), len(levels)
    load, repeat = np.zeros((N, S, L)), np.zeros((N, S))
    inter, hops, recv = np.zeros((N, S), bool), np.zeros((N, S), np.int64), np.zeros((N, S))
    size = np.ones((N, S))
    for j, pl in enumerate(plans):
        if pl is None:
            continue
        k = len(pl.repeat)
        cols = [levels.index(lvl) for lvl in pl.levels]
        load[j, :k][:, cols] = pl.load
        repeat[j, :k], inter[j, :k], hops[j, :k], recv[j, :k] = (pl.repeat, pl.inter,
                                                                 pl.hops, pl.recv)
        if pl.size is not None:
            size[j, :k] = pl.size
    return CollectivePlan(levels, load, repeat, inter, hops, recv, device_links,
                          ranks=np.array(nodes) * ranks_per_node, size=size)
