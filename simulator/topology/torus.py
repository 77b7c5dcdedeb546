"""n-dimensional tori with wrap-around links and one host per router.

The family lives in :mod:`dlscale.perfmodel.machine.topologies.torus` (its
description, graph and router, issue 28: one module per family); this module keeps
the graph builder's import path.

Examples
--------
>>> G = torus_graph((4, 4))
>>> G.number_of_nodes(), sum(1 for *_, lvl in G.edges(data="level") if lvl == "torus")
(32, 32)
"""

from __future__ import annotations

from dlscale.perfmodel.machine.topologies.torus import (
    box_index,
    snake_order,
    snake_position,
    torus_extent,
    torus_graph,
    torus_router_index,
)

__all__ = ["box_index", "snake_order", "snake_position", "torus_extent", "torus_graph",
           "torus_router_index"]
