"""The analytical network model: a collective's time from the loads it puts on each level.

One model answers every closed-form question about the network (``predict``, the
simulator's ``analytical`` backend, sweeps, the tuner behind ``auto``): a
collective's algorithm is a schedule of steps (:mod:`dlscale.perfmodel.network.schedules`, the same steps the
simulator routes), and each step costs

``latency of its longest path + n_step * max_level(load_level / bandwidth_level)
+ gamma * (bytes a rank reduces)``,

with the per-level loads counted by :func:`dlscale.perfmodel.network.linkload.step_load` for the ranks
placed block-wise on the cluster's topology, and the path latency summed along the
links (half the intra-node latency at each device end, half the NIC's at each host
end, ``hop_latency_s`` per switch-to-switch link). Every link of the machine
counts: a spine or global link slower than the NICs slows every step whose flows
cross it, in proportion to how many cross it at once.

The loads of a step do not depend on the bytes or the link speeds, so they are
computed once per (topology, nodes, ranks per node, algorithm) and cached
(:mod:`dlscale.perfmodel.network.plan`); a sweep over bandwidths or message sizes reuses them. The steps
are priced by :mod:`dlscale.perfmodel.network.stepcost`: summed, or, where a schedule of distinct steps meets
different loads within a step, along the longest chain of messages through the ranks
(:mod:`dlscale.perfmodel.network.rendezvous`, the rule the simulator's fast mode applies too). The pipelined
double binary tree is costed from its filling, draining and steady steps
(:mod:`dlscale.perfmodel.network.pipelined_tree`).

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

import sys
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from dlscale.perfmodel.errors import ConfigError, unknown_name
from dlscale.perfmodel.limits import GAMMA_RANGE_S_PER_B
from dlscale.perfmodel.machine.hardware import Cluster, Topology
from dlscale.perfmodel.network.fatwalk import applies, fat_walk
from dlscale.perfmodel.network.packedflows import PackedFlows
from dlscale.perfmodel.network.pipelined_tree import dbt_curve_time_s, dbt_segments, dbt_time_s
from dlscale.perfmodel.network.plan import (
    CollectivePlan,
    keep_steps,
    packed_curve,
    plan_collective,
    plan_curve,
    plan_key,
    plan_steps,
)
from dlscale.perfmodel.network.schedules import ALGORITHMS, FLAT_ALLREDUCE, build_schedule
from dlscale.perfmodel.network.stepcost import (
    device_links,
    latency_s,
    level_betas,
    packed_time_s,
    path_hockney,
    path_load,
    plan_time_s,
    step_s,
    steps_total_s,
)
from dlscale.perfmodel.network.walkmemo import companions, figures, recall, remember

__all__ = ["CollectivePlan", "collective_time_s", "dbt_segments", "limiting_level",
           "limiting_levels", "path_hockney", "path_load", "plan_collective",
           "time_per_node_count"]



















def _check_names(collective: str, algorithm: str, inter_algorithm: str) -> None:
    if collective not in ALGORITHMS:
        raise unknown_name("collective", collective, ALGORITHMS)
    if algorithm not in ALGORITHMS[collective]:
        raise unknown_name(f"{collective} algorithm", algorithm, ALGORITHMS[collective])
    if inter_algorithm not in FLAT_ALLREDUCE:
        raise unknown_name("inter algorithm", inter_algorithm, FLAT_ALLREDUCE)




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
        A collective and algorithm of :data:`dlscale.perfmodel.network.analytical.COLLECTIVE_ALGORITHMS`; the flat
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
        p = total
    elif isinstance(ranks, (int, np.integer)):
        p = int(ranks)
        if not 1 <= p <= total:
            raise ConfigError(f"ranks: must be in 1..{total}, got {ranks!r}")
        key = p
    else:
        key = tuple(int(x) for x in ranks)
        p = len(key)
        if not key or min(key) < 0 or max(key) >= total or len(set(key)) != p:
            raise ConfigError(f"ranks: need distinct rank ids in 0..{total - 1}")
    if p < 2:
        return 0.0 if n.ndim == 0 else np.zeros(n.shape)
    dev = device_links(cluster, ranks_per_node)
    plan = plan_collective(plan_key(cluster), nodes, ranks_per_node, dev, collective,
                           algorithm, inter_algorithm, key)
    if plan.dbt_depth:
        out = dbt_time_s(cluster, nodes, ranks_per_node, n, gamma_s_per_B, key)
    else:
        out = plan_time_s(cluster, plan, n, gamma_s_per_B)
    return float(out) if np.ndim(out) == 0 else out








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
    dev = device_links(cluster, ranks_per_node)
    plan = plan_collective(plan_key(cluster), nodes, ranks_per_node, dev, collective,
                           algorithm, inter_algorithm)
    if not plan.levels:
        return "latency"
    per = plan.load * level_betas(cluster, plan.levels)                    # (S, L)
    arg = per.argmax(axis=1)
    weight = per.max(axis=1) * (plan.repeat if not plan.dbt_depth else 1.0)
    share = np.bincount(arg, weights=weight, minlength=len(plan.levels))
    return plan.levels[int(share.argmax())]


def limiting_levels(cluster: Cluster, collective: str, algorithms: Sequence[str],
                    nodes: ArrayLike, ranks_per_node: int,
                    inter_algorithm: str = "ring") -> list[str]:
    """:func:`limiting_level` at each node count, by its own algorithm (the same
    answers; each algorithm's node counts in one pass); ``""`` where the algorithm is
    ``""``.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    collective : str
        The collective.
    algorithms : sequence of str
        The algorithm at each node count (``""``: none).
    nodes : array_like of int
        Node counts.
    ranks_per_node : int
        Ranks per node, placed block-wise.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> limiting_levels(get_cluster("summit"), "allreduce", ["ring", "ring", ""], [1, 64, 2], 6)
    ['intra', 'host', '']
    """
    counts = [int(x) for x in np.atleast_1d(nodes)]
    out = [""] * len(counts)
    for alg in sorted(set(algorithms) - {""}):
        idx = [i for i, a in enumerate(algorithms) if a == alg]
        got = _levels(cluster, collective, alg, tuple(counts[i] for i in idx), ranks_per_node,
                      inter_algorithm)
        for i, level in zip(idx, got, strict=True):
            out[i] = level
    return out


def _levels(cluster: Cluster, collective: str, algorithm: str, nodes: tuple[int, ...],
            ranks_per_node: int, inter_algorithm: str) -> list[str]:
    out = ["latency"] * len(nodes)
    multi = tuple(sorted({nd for nd in nodes if nd * ranks_per_node > 1}))
    if not multi:
        return out
    dev = device_links(cluster, ranks_per_node)
    curve = plan_curve(plan_key(cluster), multi, ranks_per_node, dev,
                       collective, algorithm, inter_algorithm)
    if not curve.levels:
        return out
    # a level a node count's plan lacks is never its answer (as in limiting_level,
    # whose arrays hold only the plan's levels); padded steps weigh 0
    own = _own_levels(plan_key(cluster), multi, ranks_per_node, dev,
                      collective, algorithm, inter_algorithm)
    per = np.where(own[:, None, :], curve.load * level_betas(cluster, curve.levels), -1.0)
    arg = per.argmax(axis=-1)                                              # (N, S)
    dbt = collective == "allreduce" and algorithm == "double-binary-tree"
    weight = np.where(curve.repeat > 0, per.max(axis=-1) * (curve.repeat if not dbt else 1.0),
                      0.0)
    share = np.zeros((len(multi), len(curve.levels)))
    for s in range(arg.shape[1]):                   # step by step, as bincount adds
        np.add.at(share, (np.arange(len(multi)), arg[:, s]), weight[:, s])
    best = np.where(own, share, -1.0).argmax(axis=-1)
    answer = {nd: curve.levels[int(b)] if own[i].any() else "latency"
              for i, (nd, b) in enumerate(zip(multi, best, strict=True))}
    return [answer.get(nd, "latency") for nd in nodes]


@lru_cache(maxsize=1024)
def _own_levels(topology: Topology, nodes: tuple[int, ...], ranks_per_node: int, dev: bool,
                collective: str, algorithm: str, inter_algorithm: str) -> np.ndarray:
    """Which levels of :func:`dlscale.perfmodel.network.plan.plan_curve`'s union each node count's plan has."""
    curve = plan_curve(topology, nodes, ranks_per_node, dev, collective, algorithm,
                       inter_algorithm)
    own = np.zeros((len(nodes), len(curve.levels)), dtype=bool)
    for i, nd in enumerate(nodes):                  # its step arrays: the same levels
        pl = plan_steps(topology, nd, ranks_per_node, dev, collective, algorithm,
                        inter_algorithm)
        own[i, [curve.levels.index(lvl) for lvl in pl.levels]] = True
    own.flags.writeable = False
    return own


def _critical_paths(cluster: Cluster, dev: bool, nodes: tuple[int, ...], ranks_per_node: int,
                    collective: str, algorithm: str, inter_algorithm: str, n: np.ndarray,
                    g: np.ndarray, out: np.ndarray) -> None:
    """Write into ``out[..., j]`` the critical path of each node count whose plan keeps
    its flows: answers kept before (:mod:`dlscale.perfmodel.network.walkmemo`) as they are,
    then one compiled walk per packed chunk of the other distinct node counts (a curve
    and the same curve after its one-node baseline share the chunks and their memo),
    on this machine and on the companion machines of :func:`~dlscale.perfmodel.network.walkmemo.priced_with`,
    whose answers are kept; a node count listed again is one more block of rows
    (identical rows priced once)."""
    plans = (plan_key(cluster), ranks_per_node, dev, collective, algorithm, inter_algorithm)
    at: dict[int, list[int]] = {}
    for j, nd in enumerate(nodes):
        if nd * ranks_per_node > 1:
            at.setdefault(nd, []).append(j)
    fig = figures(cluster)
    todo = tuple(nd for nd in sorted(at) if not _recalled(fig, plans, nd, at[nd], n, g, out))
    if not todo:
        return
    others = [(o, figures(o)) for o in companions(cluster, dev, ranks_per_node)]
    if _fused(plan_key(cluster), collective, algorithm, todo, ranks_per_node):
        _walk_fused(cluster, others, (collective, algorithm, inter_algorithm), ranks_per_node,
                    dev, todo, at, n, g, out)
        return
    walked: set[int] = set()
    for packed, cols in packed_curve(plan_key(cluster), todo, ranks_per_node, dev,
                                     collective, algorithm, inter_algorithm):
        chunk = tuple(todo[c] for c in cols)
        walked.update(chunk)
        _price_chunk(cluster, dev, nodes, chunk, packed, n, g, out)
        _keep(fig, plans, chunk, at, n, g, out)
        for other, fo in others:
            theirs = np.full(out.shape, np.nan)
            _price_chunk(other, dev, nodes, chunk, packed, n, g, theirs)
            _keep(fo, plans, chunk, at, n, g, theirs)
    for nd in set(todo) - walked:              # no flows: summed, never walked
        remember((plans, nd), _FLOWLESS)


#: Kept for a node count whose plan has no flows (its steps are summed).
_FLOWLESS = float("nan")

#: Messages (about ``p log2 p`` per plan) from which a curve's plans on a fat tree are
#: walked by :func:`dlscale.perfmodel.network.fatwalk.fat_walk` (compiled, no plan
#: built) instead of packed, where numba is not loaded yet: below, loading it (about
#: 0.9 s of CPU) costs more than building the plans (about 12 ms more per Summit
#: node count of 2,304 nodes: 75 such counts); the same answers either way.
FUSED_MESSAGES = 1 << 24


def _fused(topology: Topology, collective: str, algorithm: str, todo: tuple[int, ...],
           ranks_per_node: int) -> bool:
    """Whether ``todo``'s plans are walked by :func:`~dlscale.perfmodel.network.fatwalk.fat_walk`."""
    if not applies(topology, collective, algorithm):
        return False
    if any(ph.repeat != 1 for ph in build_schedule(collective, algorithm, 4, 1.0)):
        return False                        # repeated steps: no flows, summed
    work = sum(nd * ranks_per_node * (nd * ranks_per_node).bit_length() for nd in todo)
    return work >= FUSED_MESSAGES or "numba" in sys.modules


def _walk_fused(cluster: Cluster, others: list[tuple[Cluster, tuple[object, ...]]],
                names: tuple[str, str, str], rpn: int, dev: bool, todo: tuple[int, ...],
                at: dict[int, list[int]], n: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    """:func:`_critical_paths` by :func:`~dlscale.perfmodel.network.fatwalk.fat_walk`: each
    node count's distinct (size, reduction cost) cases on this machine and its companions
    at once; its step arrays left for :func:`~dlscale.perfmodel.network.plan.plan_steps`,
    its answers kept as the packed walk keeps them."""
    collective, algorithm, inter = names
    topology = plan_key(cluster)
    plans = (topology, rpn, dev, collective, algorithm, inter)
    machines = [cluster] + [o for o, _ in others]
    figs = [figures(cluster)] + [fo for _, fo in others]
    for nd in todo:
        cases = sorted({(float(x), float(g[j])) for j in at[nd] for x in n[..., j].ravel().tolist()})
        xs = np.array([x for x, _ in cases])
        gs = np.array([y for _, y in cases])
        got, steps = fat_walk(topology, nd, rpn, dev, collective, algorithm, machines, xs, gs,
                              inter)
        keep_steps((topology, nd, rpn, dev, collective, algorithm, inter), steps)
        if got is None:                   # no flows: summed, never walked
            remember((plans, nd), _FLOWLESS)
            continue
        for k, fo in enumerate(figs):
            value = {c: float(v) for c, v in zip(cases, got[k].tolist(), strict=True)}
            for j in at[nd]:
                col = [value[(float(x), float(g[j]))] for x in n[..., j].ravel().tolist()]
                for x, v in zip(n[..., j].ravel().tolist(), col, strict=True):
                    remember((fo, plans, nd, float(x), float(g[j])), v)
                if k == 0:
                    out[..., j] = np.array(col, dtype=float).reshape(n.shape[:-1])


def _recalled(fig: tuple[object, ...], plans: tuple[object, ...], nd: int, cols: list[int],
              n: np.ndarray, g: np.ndarray, out: np.ndarray) -> bool:
    """Whether every answer of node count ``nd`` (at ``out[..., cols]``) was kept:
    then written into ``out`` (left NaN where its plan has no flows)."""
    if recall((plans, nd)) is not None:
        return True
    got = []
    for j in cols:
        col = n[..., j].ravel()
        vals = [recall((fig, plans, nd, float(x), float(g[j]))) for x in col.tolist()]
        if any(v is None for v in vals):
            return False
        got.append((j, vals))
    for j, vals in got:
        out[..., j] = np.array(vals, dtype=float).reshape(n.shape[:-1])
    return True


def _keep(fig: tuple[object, ...], plans: tuple[object, ...], chunk: tuple[int, ...],
          at: dict[int, list[int]], n: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    """Keep the answers of the node counts ``chunk`` written in ``out``."""
    for nd in chunk:
        for j in at[nd]:
            for x, v in zip(n[..., j].ravel().tolist(), out[..., j].ravel().tolist(),
                            strict=True):
                remember((fig, plans, nd, float(x), float(g[j])), v)


def _price_chunk(cluster: Cluster, dev: bool, nodes: tuple[int, ...], chunk: tuple[int, ...],
                 packed: PackedFlows, n: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    """Write into ``out[..., j]`` the critical paths of the node counts ``chunk`` packed
    in ``packed`` (one chunk of a curve: each plan is walked on its own, so a chunk
    gives the bits the whole curve packed at once gives)."""
    layers = _layers(nodes, chunk)
    lead, J = n.shape[:-1], len(chunk)
    sizes, gammas = np.zeros((*lead, J)), np.zeros((*lead, J))
    j0, i0 = layers[0]
    sizes[..., i0], gammas[..., i0] = n[..., j0], g[j0]
    blocks = [(sizes, gammas)]
    for j, i in layers[1:]:
        sz, gm = sizes.copy(), gammas.copy()
        sz[..., i], gm[..., i] = n[..., j], g[j]
        blocks.append((sz, gm))
    both = np.concatenate([np.concatenate([sz, gm], axis=-1).reshape(-1, 2 * J)
                           for sz, gm in blocks])
    first: dict[bytes, int] = {}                                 # buckets share sizes
    pick: list[int] = []
    back = np.empty(len(both), dtype=np.int64)
    for r, row in enumerate(both):
        k = first.setdefault(row.tobytes(), len(pick))
        if k == len(pick):
            pick.append(r)
        back[r] = k
    rows = both[pick]
    priced = packed_time_s(cluster, packed, dev, rows[:, :J].copy(), rows[:, J:].copy())
    per_block = priced[back].reshape((len(blocks), *lead, J))
    for k, (j, i) in enumerate(layers):
        out[..., j] = per_block[k][..., i]


@lru_cache(maxsize=1024)
def _layers(nodes: tuple[int, ...], packed: tuple[int, ...]) -> list[tuple[np.ndarray,
                                                                             np.ndarray]]:
    """For the ``k``-th listing of each packed node count: its positions in ``nodes``
    and its plan's index in ``packed``, as two index arrays per ``k``."""
    plan_of = {nd: i for i, nd in enumerate(packed)}
    layers: list[tuple[list[int], list[int]]] = []
    seen: dict[int, int] = {}
    for j, nd in enumerate(nodes):
        if nd in plan_of:
            k = seen[nd] = seen.get(nd, -1) + 1
            if k == len(layers):
                layers.append(([], []))
            layers[k][0].append(j)
            layers[k][1].append(plan_of[nd])
    return [(np.array(j, dtype=np.int64), np.array(i, dtype=np.int64)) for j, i in layers]


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
    nodes = tuple(np.atleast_1d(nodes).astype(np.int64).tolist())
    n = np.asarray(n_bytes, dtype=float)
    n = np.broadcast_to(n, np.broadcast_shapes(n.shape, (len(nodes),)))
    g = np.broadcast_to(np.asarray(gamma_s_per_B, dtype=float), (len(nodes),))
    _check_names(collective, algorithm, inter_algorithm)
    if np.any(~np.isfinite(n)) or np.any(n < 0):
        raise ConfigError(f"n_bytes: must be finite and >= 0, got {n_bytes!r}")
    lo, hi = GAMMA_RANGE_S_PER_B
    if not np.all((g >= lo) & (g <= hi)):        # NaN and infinities fail too
        raise ConfigError(f"gamma_s_per_B: a reduction cost per byte must lie in [{lo:g}, "
                          f"{hi:g}] s/B, got {gamma_s_per_B!r}")
    for nd in sorted({min(nodes), max(nodes)}) if nodes else ():
        cluster.check_nodes(nd)
    dev = device_links(cluster, ranks_per_node)
    dbt = collective == "allreduce" and algorithm == "double-binary-tree"
    # plans costed on their critical path (see .netplan), every node count's at once;
    # first, so that each such plan is built once: its steps stay for plan_curve
    walked = np.full(n.shape, np.nan)
    if not dbt:
        _critical_paths(cluster, dev, nodes, ranks_per_node, collective, algorithm,
                        inter_algorithm, n, g, walked)
    curve = plan_curve(plan_key(cluster), nodes, ranks_per_node, dev,
                   collective, algorithm, inter_algorithm)
    ranks = np.asarray(curve.ranks)
    if dbt:
        out = np.zeros(n.shape)
        idx = np.flatnonzero(ranks > 1)
        if len(idx):
            out[..., idx] = dbt_curve_time_s(cluster, tuple(nodes[j] for j in idx),
                                             ranks_per_node, n[..., idx], g[idx])
        return out
    lat = latency_s(cluster, dev, curve.inter, curve.hops)                  # (N, S)
    busy = (curve.load * level_betas(cluster, curve.levels)).max(axis=-1, initial=0.0)
    nn = n[..., None]                                                       # (..., N, 1)
    step = step_s(cluster, lat, busy, curve.size, nn) + g[:, None] * nn * curve.recv
    out = np.where(np.isnan(walked), steps_total_s(curve.repeat, step), walked)
    return np.where(ranks > 1, out, 0.0)
