"""Critical paths kept per machine and node count, and walked for companion machines.

A plan costed on its critical path (:attr:`dlscale.perfmodel.network.plan.CollectivePlan.flows`:
recursive doubling, trees, Rabenseifner) is the costly part of a scaling curve:
building and packing its flows takes tens of milliseconds at thousands of ranks, its
compiled walk a few, and a curve of thousands of node counts cannot keep every plan
(megabytes each). Two things spare the rebuilding:

- every walked answer is kept, one float per (machine figures, plan, node count,
  size, reduction cost), bounded by :data:`MEMO_ENTRIES`; a node count's answer does
  not depend on the other node counts walked beside it, so a kept one is the same
  bits as a new walk;
- a question asked on several machines that share the topology's shape and differ in
  their link figures only (the band's corners, :func:`dlscale.perfmodel.training.ranges.predict_range`:
  the same plans, the links as each corner's transport delivers them) names them in
  :func:`priced_with`: each chunk of plans walked for the machine asked is walked for
  them as well while its flows are at hand, and their own questions find the answers
  kept.

Examples
--------
>>> from dlscale.perfmodel.catalog import get_cluster
>>> summit = get_cluster("summit")
>>> figures(summit) == figures(summit), len(companions(summit, True, 6))
(True, 0)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.network.linkload import level_bandwidths_Bps
from dlscale.perfmodel.network.plan import plan_key
from dlscale.perfmodel.network.stepcost import device_links

__all__ = [
    "MEMOS",
    "MEMO_ENTRIES",
    "companions",
    "figures",
    "priced_with",
    "recall",
    "remember",
]

#: Walked answers kept (about 200 bytes each): every node count of a 4,608-count curve
#: at a few sizes on the band's four machines.
MEMO_ENTRIES = 1 << 18

_walked: OrderedDict[Hashable, float] = OrderedDict()
#: The memos a test empties to start afresh.
MEMOS = (_walked,)
_COMPANIONS: ContextVar[tuple[Cluster, ...]] = ContextVar("walk_companions", default=())


def figures(cluster: Cluster) -> tuple[Hashable, ...]:
    """Every figure of ``cluster`` that prices a plan's steps: the bandwidth of each
    level, the device link's, NIC's and switch hops' latencies and the message factors
    (what :func:`dlscale.perfmodel.network.stepcost.packed_time_s` reads).

    Parameters
    ----------
    cluster : Cluster
        The machine.
    """
    return (tuple(sorted(level_bandwidths_Bps(cluster).items())),
            cluster.node.intra_link.latency_s, cluster.node.nic.latency_s,
            cluster.network.hop_latency_s, cluster.network.message_factors)


@contextmanager
def priced_with(clusters: Sequence[Cluster]) -> Iterator[None]:
    """Inside, every chunk of plans walked for a machine is also walked for each of
    ``clusters`` that has the same plans (same topology shape and device links) and
    other figures, and their answers kept (see the module docstring).

    Parameters
    ----------
    clusters : sequence of Cluster
        The companion machines, as they are priced (their links as the transport
        delivers them).
    """
    token = _COMPANIONS.set(tuple(clusters))
    try:
        yield
    finally:
        _COMPANIONS.reset(token)


def companions(cluster: Cluster, dev: bool, ranks_per_node: int) -> list[Cluster]:
    """The companion machines (:func:`priced_with`) whose plans are ``cluster``'s and
    whose figures differ from its and from each other's.

    Parameters
    ----------
    cluster : Cluster
        The machine asked.
    dev : bool
        Whether its ranks sit behind a device link.
    ranks_per_node : int
        Ranks per node.
    """
    key, seen = plan_key(cluster), {figures(cluster)}
    out = []
    for other in _COMPANIONS.get():
        fig = figures(other)
        if (fig not in seen and plan_key(other) == key
                and device_links(other, ranks_per_node) == dev):
            seen.add(fig)
            out.append(other)
    return out


def recall(key: Hashable) -> float | None:
    """The answer kept under ``key``, or None.

    Parameters
    ----------
    key : hashable
        Machine figures, plan, node count, size and reduction cost.
    """
    hit = _walked.get(key)
    if hit is not None:
        _walked.move_to_end(key)
    return hit


def remember(key: Hashable, value: float) -> None:
    """Keep ``value`` under ``key`` (the least recently used go past :data:`MEMO_ENTRIES`).

    Parameters
    ----------
    key : hashable
        As for :func:`recall`.
    value : float
        Seconds.
    """
    _walked[key] = value
    _walked.move_to_end(key)
    while len(_walked) > MEMO_ENTRIES:
        _walked.popitem(last=False)
