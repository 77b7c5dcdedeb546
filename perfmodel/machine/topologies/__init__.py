"""Network topology families: one module each, registered in :data:`FAMILIES`.

Each family module holds the family's description (a frozen dataclass), its routing
rules and its closed-form traits (level bandwidths, bisection, shape); the analytical
loads, the simulator's graph builder and its router key on the family's name in one
table each (see :class:`Topology`).

Examples
--------
>>> sorted(FAMILIES)
['crossbar', 'dragonfly', 'fat-tree', 'torus']
>>> FAMILIES["torus"]((4, 4)).max_nodes
16
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dlscale.perfmodel.machine.topologies.crossbar import Crossbar
from dlscale.perfmodel.machine.topologies.dragonfly import Dragonfly
from dlscale.perfmodel.machine.topologies.fattree import FatTree
from dlscale.perfmodel.machine.topologies.torus import Torus

__all__ = ["FAMILIES", "TOPOLOGIES", "BuiltinTopology", "Crossbar", "Dragonfly", "FatTree",
           "Topology", "Torus"]


@runtime_checkable
class Topology(Protocol):
    """What every network topology description provides: the extension point.

    :class:`FatTree`, :class:`Dragonfly`, :class:`Torus` and :class:`Crossbar`
    implement it. Each layer reads a topology through its family:

    - the TOML reader (:mod:`dlscale.perfmodel.machine.config`) builds one of :data:`BuiltinTopology` from
      ``[network] topology = FAMILY`` (:data:`TOPOLOGIES`);
    - the analytical model costs a collective step by the loads its flows put on each
      level of the family (:func:`dlscale.perfmodel.network.linkload.step_load`);
    - the simulator builds the family's graph
      (:func:`dlscale.simulator.topology.cluster.network_graph`) and routes over it
      with the router its ``G.graph["routing"]["family"]`` names
      (:data:`dlscale.simulator.topology.routing.ROUTERS`, a :class:`~dlscale.simulator.topology.routing.Router`).

    A new family is one module in this package (a frozen dataclass with these
    members and its routing rules) registered in :data:`FAMILIES`, plus one entry in
    each of the tables of the other layers that key on the family's name:
    :data:`dlscale.perfmodel.network.linkload.LEVEL_LOADS` (the closed form's loads),
    :data:`dlscale.simulator.topology.cluster.GRAPH_BUILDERS` (the graph) and
    :data:`dlscale.simulator.topology.routing.ROUTERS` (the router); a test fails
    while one is missing. A user's own graph needs none of this
    (``simulate(..., topology=GRAPHML)`` routes it by equal-cost multipath).

    Examples
    --------
    >>> isinstance(Torus((4, 4)), Topology), isinstance("torus", Topology)
    (True, False)
    """

    @property
    def family(self) -> str:
        """The family's name, one of :data:`TOPOLOGIES`."""
        ...

    @property
    def max_nodes(self) -> int:
        """Nodes the installed network holds."""
        ...

    def __hash__(self) -> int:
        """Hashable (a frozen dataclass): the analytical model caches link loads by it."""
        ...

    def with_link_efficiency(self, efficiency: float) -> Topology:
        """The network with the bandwidths of its own links (if any) scaled by ``efficiency``."""
        ...

    def without_speeds(self) -> Topology:
        """The same shape with no link speeds of its own: link loads' cache key."""
        ...

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """Bandwidth per direction of one link of each switch level, by level name."""
        ...

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """Bisection of the installed network; ``injection_Bps``: half the nodes' NICs."""
        ...

    def shape(self) -> str:
        """The family's shape for the one-line summary, ``""`` or ``", ..."``."""
        ...


#: Family name (as written in TOML ``[network] topology = ...``) -> its description.
FAMILIES: dict[str, type] = {"fat-tree": FatTree, "dragonfly": Dragonfly, "torus": Torus,
                             "crossbar": Crossbar}

#: The topology families built in (what ``NetworkSpec.topology`` holds; the TOML
#: reader picks the member by the table's keys).
BuiltinTopology = FatTree | Dragonfly | Torus | Crossbar

#: Topology family names, as written in TOML ``[network] topology = ...``.
TOPOLOGIES: tuple[str, ...] = tuple(FAMILIES)
