"""What a collective plan's steps cost on a machine: latency, link time, reduction.

A plan (:mod:`dlscale.perfmodel.network.plan`) holds each step's loads per level in units of the vector
size; this module prices them for a cluster's links. Each step costs

``latency of its longest path + n_step * max_level(load_level / bandwidth_level)
+ gamma * (bytes a rank reduces)``,

with the path latency summed along the links (half the intra-node latency at each
device end, half the NIC's at each host end, ``hop_latency_s`` per switch-to-switch
link) and the per-size factors of :mod:`dlscale.perfmodel.network.msgfactors` at the step's largest message.
A plan's time is the sum of its steps, or, for a plan that keeps each message's own
loads, the longest chain of messages through the ranks (:mod:`dlscale.perfmodel.network.rendezvous`): the
rank clocks advance in the compiled walk of :mod:`dlscale.perfmodel.network.chainwalk`, over one
plan or a whole curve's plans packed together (:mod:`dlscale.perfmodel.network.packedflows`), bit-equal to
the numpy walk :func:`walk_s` kept as its reference.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> from dlscale.perfmodel.network.plan import plan_collective
>>> summit = get_cluster("summit")
>>> plan = plan_collective(summit.network.topology, 2, 1, False, "allreduce", "ring")
>>> round(float(plan_time_s(summit, plan, 23e6, 0.0)) * 1e3, 3)   # 2 steps of 11.5 MB at 23 GB/s
1.001
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.machine.hardware import Cluster, Topology
from dlscale.perfmodel.network.chainwalk import longest_chains
from dlscale.perfmodel.network.linkload import StepLoad, level_bandwidths_Bps, step_load
from dlscale.perfmodel.network.packedflows import PackedFlows
from dlscale.perfmodel.network.plan import CollectivePlan, shape_key
from dlscale.perfmodel.network.rendezvous import advance_clocks

#: Priced critical paths a plan keeps (the oldest goes first): few, since up to
#: 65,536 plans are cached (a sweep over link speeds prices each plan anew anyway).
PRICED_PER_PLAN = 8

__all__ = ["PRICED_PER_PLAN", "critical_path_s", "device_links", "latency_s", "level_betas",
           "packed_time_s", "path_hockney", "path_load", "plan_time_s", "step_s", "steps_total_s",
           "walk_s"]


def device_links(cluster: Cluster, ranks_per_node: int) -> bool:
    """Whether ranks sit behind a device link (a node with several devices or ranks).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    ranks_per_node : int
        Ranks on each node.
    """
    return cluster.node.devices_per_node > 1 or ranks_per_node > 1


def level_betas(cluster: Cluster, levels: tuple[str, ...]) -> np.ndarray:
    """Seconds per byte of one link of each level (:func:`dlscale.perfmodel.network.linkload.level_bandwidths_Bps`).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    levels : tuple of str
        Level names, as in a plan.
    """
    bw = level_bandwidths_Bps(cluster)
    return np.array([1.0 / bw[lvl] for lvl in levels])


def latency_s(cluster: Cluster, device_links: bool, inter: np.ndarray,
              hops: np.ndarray) -> np.ndarray:
    """Latency along a path: the device link, the NIC if it leaves the node, the hops.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    device_links : bool
        Ranks sit behind a device link (its latency on every path).
    inter : ndarray of bool
        Whether each path leaves its node (the NIC's latency).
    hops : ndarray of int
        Switch-to-switch hops of each path (``network.hop_latency_s`` each).
    """
    node = cluster.node
    return ((node.intra_link.latency_s if device_links else 0.0)
            + inter * node.nic.latency_s + hops * cluster.network.hop_latency_s)


def steps_total_s(repeat: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The steps' seconds summed over the last axis, ``sum_j repeat_j step_j``, left to
    right.

    A curve's steps are padded with zero repeats to its longest node count's; numpy's
    pairwise sum adds in an order that depends on the axis' length, so a node count's
    time moved by an ulp with the other counts asked beside it (stampede2-skx googlenet
    on 2 nodes: ``comm_s`` 0.008105232319066366 alone, ...364 beside 4 and 8 nodes).
    A running sum adds the padding's zeros last: the same bits whatever the list.

    Parameters
    ----------
    repeat : ndarray
        Each step's repeat count (0 for padding), on the last axis.
    step : ndarray
        Each step's seconds, broadcast against ``repeat``.

    Returns
    -------
    ndarray
        Seconds, the last axis summed.

    Examples
    --------
    >>> a = steps_total_s(np.array([1.0, 1, 1, 1]), np.array([0.1, 0.2, 0.3, 1e-17]))
    >>> b = steps_total_s(np.array([1.0, 1, 1, 1, 0, 0, 0, 0]),
    ...                   np.array([0.1, 0.2, 0.3, 1e-17, 0, 0, 0, 0]))
    >>> bool(a == b)
    True
    """
    terms = np.asarray(repeat * step, dtype=float)
    if terms.shape[-1] == 0:
        return np.zeros(terms.shape[:-1])
    return np.cumsum(terms, axis=-1)[..., -1]


def step_s(cluster: Cluster, lat: np.ndarray, busy: np.ndarray, size: np.ndarray | None,
           nn: np.ndarray) -> np.ndarray:
    """Latency and bandwidth time of steps (:func:`dlscale.perfmodel.network.msgfactors.message_time_s` with
    each step's largest message picking the factors).

    Parameters
    ----------
    cluster : Cluster
        The machine (its per-size message factors).
    lat : ndarray
        Latency of each step's path.
    busy : ndarray
        Seconds per byte of ``n`` of each step's most loaded level.
    size : ndarray or None
        Each step's largest message in units of ``n`` (None: ``n``).
    nn : ndarray
        Vector sizes, broadcast against the steps.
    """
    factors = cluster.network.message_factors
    if factors is None:
        return np.asarray(lat + nn * busy)
    m = nn * (1.0 if size is None else size)
    fl, fb = factors.at(m)
    return np.asarray(fl * lat + nn * busy / fb)


def plan_time_s(cluster: Cluster, plan: CollectivePlan, n: ArrayLike,
                gamma_s_per_B: float) -> np.ndarray:
    """Seconds of a plan: each step's latency + its most loaded level's time + the
    reduction, times its repeats, summed; a plan with
    :attr:`~dlscale.perfmodel.network.plan.CollectivePlan.flows` on its critical path (:func:`critical_path_s`).

    Parameters
    ----------
    cluster : Cluster
        The machine whose links price the plan.
    plan : CollectivePlan
        Loads of the collective's steps (:func:`dlscale.perfmodel.network.plan.plan_collective`).
    n : array_like
        Vector sizes in bytes (vectorized).
    gamma_s_per_B : float
        Reduction cost per byte.

    Returns
    -------
    ndarray
        Seconds, the shape of ``n``.
    """
    if plan.flows is not None:
        return critical_path_s(cluster, plan, n, gamma_s_per_B)
    lat = latency_s(cluster, plan.device_links, plan.inter, plan.hops)
    busy = (plan.load * level_betas(cluster, plan.levels)).max(axis=1, initial=0.0)
    nn = np.asarray(n, dtype=float)[..., None]
    step = step_s(cluster, lat, busy, plan.size, nn) + gamma_s_per_B * nn * plan.recv
    return np.asarray(steps_total_s(plan.repeat, step))


def critical_path_s(cluster: Cluster, plan: CollectivePlan, n: ArrayLike,
                    gamma_s_per_B: float) -> np.ndarray:
    """The longest chain of messages through the ranks (:mod:`dlscale.perfmodel.network.rendezvous`): each
    message costs what its own path meets (its class's latency and most loaded link),
    by the same step formula as :func:`plan_time_s`; the rank clocks advance in the
    compiled walk of :func:`packed_time_s`, bit-equal to :func:`walk_s`.

    Parameters
    ----------
    cluster : Cluster
        The machine whose links price the plan.
    plan : CollectivePlan
        A plan with per-message classes (``plan.flows``).
    n : array_like
        Vector sizes in bytes (vectorized).
    gamma_s_per_B : float
        Reduction cost per byte.

    Returns
    -------
    ndarray
        Seconds, the shape of ``n``.
    """
    packed = plan.packed()
    assert packed is not None
    nn = np.asarray(n, dtype=float)
    sizes, back = np.unique(nn, return_inverse=True)    # layers often share a size
    hit = packed_time_s(cluster, packed, plan.device_links, sizes.reshape(-1, 1),
                        np.full((len(sizes), 1), float(gamma_s_per_B)), plan.priced)
    return np.asarray(hit[back.ravel(), 0].reshape(nn.shape))


def packed_time_s(cluster: Cluster, packed: PackedFlows, device_links: bool, n: np.ndarray,
                  gamma_s_per_B: np.ndarray,
                  memo: dict[tuple[object, ...], np.ndarray] | None = None) -> np.ndarray:
    """Critical paths of packed plans (:mod:`dlscale.perfmodel.network.packedflows`), each at its own sizes.

    Each class's message costs :func:`step_s` of its path at its plan's size (0 for a
    message to oneself), then :func:`dlscale.perfmodel.network.chainwalk.longest_chains` walks the
    rank clocks of every plan, with the reduction ``gamma * n * recv`` after a step.

    Parameters
    ----------
    cluster : Cluster
        The machine whose links price the plans.
    packed : PackedFlows
        ``J`` plans.
    device_links : bool
        Ranks sit behind a device link.
    n : ndarray, shape (B, J)
        Vector sizes in bytes: row ``b`` prices plan ``j`` at ``n[b, j]``.
    gamma_s_per_B : ndarray, shape (B, J)
        Reduction cost per byte, per row and plan.
    memo : dict, optional
        Priced answers by machine figures and sizes (default ``packed.priced``): a
        repeated question (a sweep that changes the model, not the network) is
        answered from it; it keeps the last :data:`PRICED_PER_PLAN`.

    Returns
    -------
    ndarray, shape (B, J)
        Seconds.
    """
    memo = packed.priced if memo is None else memo
    betas = level_betas(cluster, packed.levels)
    both = np.concatenate([n, gamma_s_per_B], axis=1)
    # every machine figure the pricing reads, and the sizes and reduction costs
    key = (betas.tobytes(), cluster.node.intra_link.latency_s, cluster.node.nic.latency_s,
           cluster.network.hop_latency_s, cluster.network.message_factors, device_links,
           n.shape, both.tobytes())
    hit = memo.get(key)
    if hit is None:
        # rows priced before on this machine (the largest bucket after all buckets)
        known = _known_rows(memo, key)
        found = [known.get(row.tobytes()) for row in both]
        todo = [i for i, r in enumerate(found) if r is None]
        hit = np.zeros(n.shape)
        for i, r in enumerate(found):
            if r is not None:
                hit[i] = r
        if todo:
            m = n[todo]
            busy = (packed.load * betas).max(axis=1, initial=0.0)
            lat = latency_s(cluster, device_links, packed.inter, packed.hops)
            cost = np.where(packed.moves, step_s(cluster, lat, busy, packed.size,
                                                 m[:, packed.plan]), 0.0)
            hit[todo] = longest_chains(packed.steps, np.ascontiguousarray(cost, dtype=float),
                                       np.ascontiguousarray(gamma_s_per_B[todo] * m,
                                                            dtype=float))
        if len(memo) >= PRICED_PER_PLAN:
            memo.pop(next(iter(memo)))
        memo[key] = hit
    return hit


def _known_rows(memo: dict[tuple[object, ...], np.ndarray],
                key: tuple[object, ...]) -> dict[bytes, np.ndarray]:
    """Answers in ``memo`` for the machine of ``key``, by the bytes of their row of
    sizes and reduction costs."""
    out: dict[bytes, np.ndarray] = {}
    for k, v in memo.items():
        shape, rows = k[-2], k[-1]
        if k[:-2] == key[:-2] and isinstance(rows, bytes) and isinstance(shape, tuple):
            width = len(rows) // max(int(shape[0]), 1)
            for i in range(int(shape[0])):
                out[rows[i * width:(i + 1) * width]] = v[i]
    return out


def walk_s(cluster: Cluster, plan: CollectivePlan, n: ArrayLike,
           gamma_s_per_B: float) -> np.ndarray:
    """:func:`critical_path_s` by :func:`dlscale.perfmodel.network.rendezvous.advance_clocks` step by step in
    numpy (the reference the compiled walk is held to; slower).

    Parameters
    ----------
    cluster : Cluster
        The machine whose links price the plan.
    plan : CollectivePlan
        A plan with per-message classes (``plan.flows``).
    n : array_like
        Vector sizes in bytes (vectorized).
    gamma_s_per_B : float
        Reduction cost per byte.

    Returns
    -------
    ndarray
        Seconds, the shape of ``n``.
    """
    assert plan.flows is not None
    nn = np.asarray(n, dtype=float)
    col = nn.reshape(-1, 1)
    betas = level_betas(cluster, plan.levels)
    p = max(int(max(st.src.max(initial=0), st.dst.max(initial=0))) for st in plan.flows) + 1
    clock = np.zeros((len(col), p))
    for st in plan.flows:
        lat = latency_s(cluster, plan.device_links, st.inter, st.hops)
        busy = (st.load * betas).max(axis=1, initial=0.0)
        cost = np.where(st.moves, step_s(cluster, lat, busy, np.asarray(st.size), col), 0.0)
        red = None
        if st.recv is not None and gamma_s_per_B:
            red = gamma_s_per_B * col * st.recv[:p]
        clock = advance_clocks(clock, st.src, st.dst, cost[:, st.cls], red, st.distinct)
    return np.asarray(clock.max(axis=1).reshape(nn.shape))


@lru_cache(maxsize=1 << 16)
def _path_load_cached(topology: Topology, nodes: int, ranks_per_node: int,
                      device_links: bool, src: int, dst: int) -> StepLoad:
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
    dev = device_links(cluster, ranks_per_node)
    return _path_load_cached(shape_key(cluster.network.topology), nodes, ranks_per_node, dev, src, dst)


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
    dev = device_links(cluster, ranks_per_node)
    s = path_load(cluster, nodes, ranks_per_node, src, dst)
    if src == dst:
        return 0.0, 0.0
    bw = level_bandwidths_Bps(cluster)
    beta = max(v / bw[k] for k, v in s.load.items())
    return float(latency_s(cluster, dev, np.array(s.inter), np.array(s.hops))), float(beta)
