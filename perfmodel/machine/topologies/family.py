"""What a topology family registers in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES`.

One :class:`Family` per family module, holding what each layer asks of the family: its
description (the frozen dataclass the TOML reader builds), the graph of a cluster's
network and the switches it holds (the simulator's builder), and the router of that
graph. The layers read the table when they ask, so a family registered there reaches
``predict`` and ``simulate`` with no other line.

Examples
--------
>>> from dlscale.perfmodel.machine.topologies import FAMILIES
>>> f = FAMILIES["torus"]
>>> f.name, f.description((4, 4)).max_nodes, f.switches(f.description((4, 4)), 4)
('torus', 16, 4)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

__all__ = ["Family", "FamilyView", "LevelLoads"]

T = TypeVar("T")

#: ``f(topology, nodes, src_host, dst_host, weight) -> ({level: per-flow load}, hops)``:
#: the loads a collective step's inter-node flows put on the family's levels.
LevelLoads = Callable[..., tuple[dict[str, np.ndarray], np.ndarray]]


@dataclass(frozen=True)
class Family:
    """A topology family: the one entry that registers it.

    Attributes
    ----------
    description : type
        The family's description, a frozen dataclass implementing
        :class:`~dlscale.perfmodel.machine.topologies.Topology`; its ``family`` field's
        default is the family's name.
    graph : callable
        ``graph(cluster, topology, nodes) -> networkx.Graph``: the inter-node network
        of the first ``nodes`` nodes, hosts ``0..nodes-1``, whose
        ``G.graph["routing"]`` describes it to the router.
    switches : callable
        ``switches(topology, nodes) -> int``: the switches or routers ``graph``
        builds, counted from the sizes alone (the simulator refuses a graph too large
        before building it).
    route : callable
        ``route(params, seed) -> Router``: the router of the graphs whose
        ``G.graph["routing"]["family"]`` is this family's name, built from that
        description (:class:`dlscale.simulator.topology.routing.Router`).
    loads : callable, optional
        The analytical loads (:data:`LevelLoads`); ``None`` where the family's entry
        is in :data:`dlscale.perfmodel.network.linkload.LEVEL_LOADS` (the built-in
        families' for now).
    """

    description: type
    graph: Callable[[Any, Any, int], Any]
    switches: Callable[[Any, int], int]
    route: Callable[[dict[str, Any], int], Any]
    loads: LevelLoads | None = None

    @property
    def name(self) -> str:
        """The family's name: its description's ``family`` (as TOML writes it)."""
        return str(self.description.family)  # type: ignore[attr-defined]


class FamilyView(Mapping[str, T], Generic[T]):
    """A layer's table keyed by family name, read from the family table when asked.

    ``pick(family)`` is what the layer keeps of each :class:`Family`; ``extra`` holds
    entries of the layer's own that are no family (the simulator's ``"cluster"``
    router, which joins a node's insides to the network's router). A family
    registered in ``table`` after this view was made is in it.

    Examples
    --------
    >>> from dlscale.perfmodel.machine.topologies import FAMILIES
    >>> names = FamilyView(FAMILIES, lambda f: f.name, {"own": "x"})
    >>> names["torus"], names["own"], len(names) == len(FAMILIES) + 1
    ('torus', 'x', True)
    """

    def __init__(self, table: Mapping[str, Family], pick: Callable[[Family], T],
                 extra: Mapping[str, T] | None = None) -> None:
        self._table, self._pick, self._extra = table, pick, dict(extra or {})

    def __getitem__(self, name: str) -> T:
        if name in self._table:
            return self._pick(self._table[name])
        return self._extra[name]

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (k for k in self._extra if k not in self._table)

    def __len__(self) -> int:
        return len(self._table) + sum(1 for k in self._extra if k not in self._table)
