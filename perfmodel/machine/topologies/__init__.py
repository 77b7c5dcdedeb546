"""Network topology families: one module each, registered in :data:`FAMILIES`.

Each family module holds the whole family: its description (a frozen dataclass), its
routing rules and closed-form traits (level bandwidths, bisection, shape), the graph
the simulator builds of it and the router of that graph, gathered in the module's
``FAMILY`` (a :class:`~.family.Family`); :data:`FAMILIES` is the table every layer
reads (the TOML reader, the simulator's graph builders and routers). The closed
form's per-level loads of the built-in families are still in
:data:`dlscale.perfmodel.network.linkload.LEVEL_LOADS`; a new family gives its own as
``Family(loads=...)``.

Examples
--------
>>> sorted(FAMILIES)
['crossbar', 'dragonfly', 'fat-tree', 'torus']
>>> FAMILIES["torus"].description((4, 4)).max_nodes
16
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from dlscale.perfmodel.machine.topologies import crossbar, dragonfly, fattree, torus
from dlscale.perfmodel.machine.topologies.crossbar import Crossbar
from dlscale.perfmodel.machine.topologies.dragonfly import Dragonfly
from dlscale.perfmodel.machine.topologies.family import Family
from dlscale.perfmodel.machine.topologies.fattree import FatTree
from dlscale.perfmodel.machine.topologies.torus import Torus

__all__ = ["FAMILIES", "TOPOLOGIES", "BuiltinTopology", "Crossbar", "Dragonfly", "Family",
           "FatTree", "Topology", "Torus"]


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
      (:func:`dlscale.simulator.topology.cluster.network_graph`, with the family's
      ``graph``) and routes over it with the router its
      ``G.graph["routing"]["family"]`` names (the family's ``route``, a
      :class:`~dlscale.simulator.topology.routing.Router`).

    A new family is one module in this package: a frozen dataclass with these
    members, its graph builder, switch count and router, and its closed-form loads,
    gathered in one :class:`~.family.Family`, plus its line in :data:`FAMILIES`; the
    simulator's :data:`~dlscale.simulator.topology.cluster.GRAPH_BUILDERS` and
    :data:`~dlscale.simulator.topology.routing.ROUTERS` read that table when they are
    asked. A user's own graph needs none of this (``simulate(..., topology=GRAPHML)``
    routes it by equal-cost multipath).

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


#: Family name (as written in TOML ``[network] topology = ...``) -> the family: its
#: description, graph builder, switch count and router (:class:`~.family.Family`). The
#: one place a family is registered: one line each.
FAMILIES: dict[str, Family] = {f.name: f for f in (
    fattree.FAMILY,
    dragonfly.FAMILY,
    torus.FAMILY,
    crossbar.FAMILY,
)}

#: The topology families built in (what ``NetworkSpec.topology`` holds; the TOML
#: reader picks the member by the table's keys).
BuiltinTopology = FatTree | Dragonfly | Torus | Crossbar

#: Topology family names, as written in TOML ``[network] topology = ...``.
TOPOLOGIES: tuple[str, ...] = tuple(FAMILIES)
