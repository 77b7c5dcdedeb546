"""Dragonfly networks (Kim, Dally, Scott and Abts, ISCA 2008), as Cray Aries builds them.

The family lives in :mod:`dlscale.perfmodel.machine.topologies.dragonfly` (its
description, graph and router, issue 28: one module per family); this module keeps
the graph builder's import path.

Examples
--------
>>> G = dragonfly_graph(groups=5, routers_per_group=4, terminals_per_router=2,
...                     global_links_per_router=1)
>>> sum(1 for *_, lvl in G.edges(data="level") if lvl == "global")
10
"""

from __future__ import annotations

from dlscale.perfmodel.machine.topologies.dragonfly import dragonfly_global_port, dragonfly_graph

__all__ = ["dragonfly_global_port", "dragonfly_graph"]
