"""Fat trees: the k-ary fat tree and the general multi-level (tapered, multi-rail) form.

The family lives in :mod:`dlscale.perfmodel.machine.topologies.fattree` (its
description, graph and router, issue 28: one module per family); this module keeps
the graph builders' import path.

Examples
--------
>>> G = fat_tree_graph(4)
>>> sum(1 for _, k in G.nodes(data="kind") if k == "host"), G.number_of_edges()
(16, 48)
"""

from __future__ import annotations

from dlscale.perfmodel.machine.topologies.fattree import (
    fat_tree_graph,
    multilevel_fat_tree_graph,
    xgft_graph,
    xgft_params,
)

__all__ = ["fat_tree_graph", "multilevel_fat_tree_graph", "xgft_graph", "xgft_params"]
