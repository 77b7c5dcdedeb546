"""Why a prediction row looks surprising: efficiency above 1, throughput that falls.

Two things a scaling curve can show that a reader will question, each explained in
the row by the mechanism that causes it (:func:`row_notes`):

efficiency above 1
    The asynchronous algorithms' one-node baseline exchanges with its master over the
    node's own link (shared memory, PCIe); across nodes the exchange takes the path
    between nodes, which can be faster. The note names both links' bandwidths.
throughput below the previous node count's
    Synchronous SGD: recursive doubling and Rabenseifner on a rank count that is not a
    power of two first fold the extra ranks onto partners (MPICH's rule), which costs a
    whole vector exchange more; or the allreduce's algorithm or its limiting level
    changed. The asynchronous family: the path from the last worker to the master
    crosses a slower level of the topology than before (e.g. the first node on another
    router). Otherwise the note gives the two throughputs.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster, get_workload
>>> from dlscale.perfmodel.training.predict import predict
>>> import dataclasses
>>> w = dataclasses.replace(get_workload("lenet"), algorithm="async-sgd")
>>> p = predict(get_cluster("stampede2-knl"), w, [2])
>>> round(float(p.efficiency[0]), 3), p.note[0]
(1.087, 'efficiency above 1: the 1-node baseline reaches its master over knl-shm (6 GB/s); across nodes the path is limited by host links (12.5 GB/s)')
"""

from __future__ import annotations

import numpy as np

from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.linkload import level_bandwidths_Bps
from dlscale.perfmodel.network.model import path_load
from dlscale.perfmodel.network.registry import FOLDING
from dlscale.perfmodel.training.rank_layout import Layout
from dlscale.perfmodel.training.workload import Workload

__all__ = ["path_limit", "row_notes"]

_FOLDING = FOLDING
_ASYNC = ("async-easgd", "async-measgd", "hogwild-easgd", "async-sgd", "async-msgd",
          "hogwild-sgd", "easgd")


def path_limit(cluster: Cluster, nodes: int, ranks_per_node: int, src: int,
               dst: int) -> tuple[str, float]:
    """The level that limits one message's bandwidth, and that level's bandwidth (B/s).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    nodes, ranks_per_node : int
        Ranks placed block-wise.
    src, dst : int
        The two ranks.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_cluster
    >>> path_limit(get_cluster("cori-knl"), 5, 1, 4, 0)
    ('local', 5250000000.0)
    """
    s = path_load(cluster, nodes, ranks_per_node, src, dst)
    bw = level_bandwidths_Bps(cluster)
    level = max(s.load, key=lambda k: s.load[k] / bw[k])
    return level, bw[level] / s.load[level]


def _gbps(x: float) -> str:
    return f"{x / 1e9:.3g} GB/s"


def row_notes(cluster: Cluster, workload: Workload, lay: Layout, samples_per_s: np.ndarray,
              efficiency: np.ndarray, allreduce: np.ndarray,
              network_limit: np.ndarray) -> np.ndarray:
    """One note per node count (``""`` where nothing needs explaining).

    Throughput is compared with the previous node count of the same curve, in the
    order asked for.

    Parameters
    ----------
    cluster : Cluster
        The machine.
    workload : Workload
        What is trained.
    lay : Layout
        Ranks per node count.
    samples_per_s, efficiency : ndarray
        Throughput and efficiency per node count.
    allreduce, network_limit : ndarray of str
        The algorithm run and the level that limits it.
    """
    n = len(lay.nodes)
    notes = np.full(n, "", dtype=object)
    alg = workload.algorithm
    r = lay.ranks_per_node
    node = cluster.node
    for i in range(n):
        nodes, p = int(lay.nodes[i]), int(lay.ranks[i])
        if efficiency[i] > 1 + 1e-9 and alg in _ASYNC and nodes > 1:
            local = node.host_link if (alg == "easgd" and node.host_link is not None) \
                else node.intra_link
            level, bw = path_limit(cluster, nodes, r, p - 1, 0)
            notes[i] = (f"efficiency above 1: the 1-node baseline reaches its master over "
                        f"{local.name} ({_gbps(local.bandwidth_Bps)}); across nodes the path "
                        f"is limited by {level} links ({_gbps(bw)})")
        elif i > 0 and samples_per_s[i] < samples_per_s[i - 1] * (1 - 1e-9) \
                and lay.nodes[i] > lay.nodes[i - 1]:
            notes[i] = _drop(cluster, lay, i, alg, allreduce, network_limit, samples_per_s)
    return notes


def _drop(cluster: Cluster, lay: Layout, i: int, alg: str, allreduce: np.ndarray,
          network_limit: np.ndarray, sps: np.ndarray) -> str:
    nodes, p = int(lay.nodes[i]), int(lay.ranks[i])
    prev_nodes, prev_p = int(lay.nodes[i - 1]), int(lay.ranks[i - 1])
    r = lay.ranks_per_node
    where = "1 node's" if prev_nodes == 1 else f"{prev_nodes} nodes'"
    head = f"throughput below {where} ({sps[i]:,.0f} vs {sps[i - 1]:,.0f}/s): "
    if alg == "sync-sgd":
        a = str(allreduce[i])
        if prev_p == 1:
            return head + (f"the gradients are now allreduced ({a}, limited by "
                           f"{network_limit[i]} links)")
        if a in _FOLDING and p & (p - 1):
            core = 1 << (p.bit_length() - 1)
            return head + (f"non-power-of-two fold: {a} first folds {p - core} of the {p} "
                           f"ranks onto partners (MPICH), a whole vector exchange more")
        if a != str(allreduce[i - 1]):
            return head + f"the allreduce changes from {allreduce[i - 1]} to {a}"
        if str(network_limit[i]) != str(network_limit[i - 1]):
            return head + (f"the allreduce is now limited by {network_limit[i]} links "
                           f"(was {network_limit[i - 1]})")
    elif alg in _ASYNC and prev_p > 1:
        now = path_limit(cluster, nodes, r, p - 1, 0)
        before = path_limit(cluster, prev_nodes, r, prev_p - 1, 0)
        if now[1] < before[1]:
            return head + (f"the path to the master now crosses {now[0]} links "
                           f"({_gbps(now[1])}; was {before[0]}, {_gbps(before[1])})")
    elif alg in _ASYNC and prev_p == 1 and nodes > 1:
        level, bw = path_limit(cluster, nodes, r, p - 1, 0)
        return head + f"the master is now reached across nodes ({level} links, {_gbps(bw)})"
    return head.rstrip(": ")
