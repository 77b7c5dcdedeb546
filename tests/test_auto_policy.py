"""One ``auto``: every caller resolves the same allreduce for the same question.

The training model (``predict`` and the training simulator,
:func:`dlscale.perfmodel.training.sync.workload_allreduce`), the analytical network
object and the routed simulation of a cluster's network all follow
:mod:`dlscale.perfmodel.network.autopolicy`; before it they disagreed in 33 of these 72 cases
(the network objects took the least time among every algorithm, whatever the stack).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import CLUSTERS, get_cluster, get_workload
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.network.analytical import AnalyticalNetwork
from dlscale.perfmodel.network.contention import hockney_params
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import workload_allreduce
from dlscale.simulator.network import SimulatedNetwork

SIZES = (1e3, 64e3, 4e6, 100e6)
WORKLOAD = dataclasses.replace(get_workload("resnet50"), collective="auto")


def _grid():
    for name in sorted(CLUSTERS):
        for nodes in (2, 8, 64):
            if nodes <= get_cluster(name).max_nodes:
                yield name, nodes


@pytest.mark.parametrize(("name", "nodes"), list(_grid()))
def test_every_caller_resolves_the_same_allreduce(name, nodes):
    cluster = get_cluster(name)
    lay = layout(cluster, WORKLOAD, [nodes])
    ranks = int(lay.ranks[0])
    net_cluster = with_transport(cluster)
    gamma = hockney_params(net_cluster)["gamma_s_per_B"] / lay.share
    analytical = AnalyticalNetwork(net_cluster, gamma)
    simulated = (SimulatedNetwork.from_cluster(net_cluster, nodes, gamma_s_per_B=gamma)
                 if nodes <= 8 else None)
    _, names = workload_allreduce(cluster, WORKLOAD, lay, np.array(SIZES)[:, None])
    for size, predicted in zip(SIZES, names[:, 0].tolist(), strict=True):
        assert analytical.resolve_allreduce(size, ranks) == predicted, (name, nodes, size)
        if simulated is not None:
            assert simulated.resolve_allreduce(size) == predicted, (name, nodes, size)
            # another placement of the same machine follows the same runtime's rule
            rt = cluster.runtime
            if rt.selection == "mpich":
                shuffled = SimulatedNetwork.from_cluster(net_cluster, nodes, placement="random",
                                                         gamma_s_per_B=gamma)
                assert shuffled.resolve_allreduce(size) == predicted, (name, nodes, size)


def test_a_bare_graph_takes_the_least_closed_form_time():
    """No runtime: the least time of the closed forms on the graph's measured
    point-to-point parameters (what the tuner of a library does)."""
    from dlscale.perfmodel.network.collectives import best_allreduce
    from dlscale.simulator.topology.fattree import fat_tree_graph
    net = SimulatedNetwork(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9,
                                          host_latency_s=1e-6, hop_latency_s=0.0))
    assert net.runtime is None
    a, b = net.path_hockney(0, 1)
    for size in SIZES:
        _, expect = best_allreduce(size, 16, a, b)
        assert net.resolve_allreduce(size, 16) == expect
