"""What a long curve of ``predict`` counts per node count (issue 27 item 4: 4,608
counts within 10 s): compiled counts and walks, counted rather than timed, and the
rows of dense curves the same bits as the counts' one-by-one answers."""

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.network import model as netmodel
from dlscale.perfmodel.network import pipelined_tree, treekernel
from dlscale.perfmodel.network import plan as netplan
from dlscale.perfmodel.network.plan import plan_key
from dlscale.perfmodel.training import ranges


def _forget() -> None:
    """Empty every cache the network model keeps between questions."""
    for cache in (netplan.plan_collective, netplan._packed, netplan._steps,
                  netplan.plan_curve, pipelined_tree._parts, netmodel._own_levels,
                  netmodel._layers, treekernel._pipelines):
        cache.cache_clear()
    netplan._layout.clear()
    for memo in getattr(netmodel, "MEMOS", ()):
        memo.clear()


@pytest.fixture
def counted(monkeypatch):
    """The node counts the double binary tree's kernel counts, one entry per pass."""
    treekernel._kernel()                     # numba loaded: the compiled path is taken
    seen: list[tuple[int, int]] = []
    real = treekernel._counted

    def wrapped(topology, nodes, ranks_per_node, device_links, segments):
        seen.append((nodes, segments))
        return real(topology, nodes, ranks_per_node, device_links, segments)
    monkeypatch.setattr(treekernel, "_counted", wrapped)
    _forget()
    yield seen
    _forget()


def test_the_pipelined_tree_counts_each_node_count_once(counted):
    """The steady steps and the pipeline of ``D - 1`` segments are one pass of the
    kernel per node count (two before: 9,216 passes for Summit's 4,608 counts). At
    sizes whose best pipeline is longer than ``D - 1`` segments (a small message's
    search of shorter pipelines builds their plans too)."""
    summit = get_cluster("summit")
    nodes = (600, 601, 1000, 2304)
    t = netmodel.time_per_node_count(summit, "allreduce", "double-binary-tree",
                                     np.array([[1e7], [1e8]]), nodes, 6)
    assert t.shape == (2, 4) and bool((t > 0).all())
    assert sorted(nd for nd, _ in counted) == sorted(nodes), counted


def test_a_pipeline_asked_first_is_counted_on_its_own(counted):
    topo = plan_key(get_cluster("summit"))
    fill, depth = treekernel.tree_steps(topo, 40, 6, True, 7)
    assert counted == [(40, 7)] and len(fill) == 2 * (7 + depth - 1)


def _rows(cluster, workload, nodes):
    _forget()
    return ranges.predict_range(cluster, workload, nodes).to_rows()


@pytest.mark.parametrize("name, workload, nodes", [
    ("summit", "resnet50", [*range(1, 41), 511, 512, 513, 1000, 2304, 4608]),
    ("stampede2-knl", "resnet50", [*range(1, 33), 255, 256, 1000]),
    ("dgx-h100-superpod", "resnet50", list(range(1, 128))),
    ("p100-cluster", "resnet50", [*range(1, 65), 647, 648]),
])
def test_dense_curves_are_the_same_with_each_pipeline_counted_alone(monkeypatch, name,
                                                                    workload, nodes):
    """Rows (central answer and band) of a dense curve, with the pipelines counted
    beside the steady steps, are those of every pipeline counted on its own (the path
    before): the very bits."""
    treekernel._kernel()
    c = get_cluster(name)
    w = dataclasses.replace(get_workload(workload), collective="double-binary-tree") \
        if name != "summit" else get_workload(workload)
    fused = _rows(c, w, nodes)
    assert treekernel._pipelines.cache_info()[2] > 0          # the tree was priced
    monkeypatch.setattr(treekernel._pipelines, "get", lambda key: None)
    alone = _rows(c, w, nodes)
    _forget()
    assert fused == alone
