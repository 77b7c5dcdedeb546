"""A single non-blocking switch (a small cluster or one server's box): its description
and its graph, a one-level XGFT that :class:`~.fattree.FatTreeRouter` routes (the graph
says ``"fat-tree"``) -- the whole family, registered as :data:`FAMILY`.

Examples
--------
>>> FAMILY.name, FAMILY.switches(Crossbar(8), 4)
('crossbar', 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.topologies.family import Family
from dlscale.perfmodel.machine.topologies.fattree import FatTreeRouter, xgft_graph

if TYPE_CHECKING:
    import networkx as nx

    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["FAMILY", "Crossbar"]


@dataclass(frozen=True)
class Crossbar:
    """A single non-blocking switch (a small cluster or one server's box)."""

    max_nodes: int
    family: str = field(default="crossbar", init=False)

    def __post_init__(self) -> None:
        if self.max_nodes <= 0:
            raise ConfigError(f"crossbar.max_nodes: must be > 0, got {self.max_nodes!r}")

    def with_link_efficiency(self, efficiency: float) -> Crossbar:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> Crossbar:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """No switch-to-switch level: a flow crosses its two host links only."""
        return {}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """Half the nodes' injection: the switch does not block."""
        return float(injection_Bps)

    def shape(self) -> str:
        """Nothing beyond the family's name."""
        return ""


def _graph(cluster: Cluster, topo: Crossbar, nodes: int) -> nx.Graph:
    nic, link = cluster.node.nic, cluster.network.link
    return xgft_graph((nodes,), (1,), nodes, host_bandwidth_Bps=nic.bandwidth_Bps,
                      link_bandwidth_Bps=link.bandwidth_Bps, host_latency_s=nic.latency_s / 2,
                      hop_latency_s=cluster.network.hop_latency_s)



def _switches(topo: Crossbar, nodes: int) -> int:
    """Its one switch."""
    return 1


#: The crossbar's entry in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES`.
FAMILY = Family(Crossbar, graph=_graph, switches=_switches, route=FatTreeRouter)
