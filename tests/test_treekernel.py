"""The double binary tree's plans counted compiled (issue 27 item 4): the very step loads
of the numpy path (windows of depths, and the steady steps routed by step_load)."""

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, FatTree
from dlscale.perfmodel.network import plan as netplan
from dlscale.perfmodel.network import treekernel
from dlscale.perfmodel.network.linkload import step_load
from dlscale.perfmodel.network.schedules import double_binary_tree_edges
from dlscale.perfmodel.network.treewindows import windowed

TOPOLOGIES = {
    "summit": lambda: get_cluster("summit").network.topology.without_speeds(),
    "stampede2-knl": lambda: get_cluster("stampede2-knl").network.topology.without_speeds(),
    "dgx-h100-superpod": lambda: get_cluster("dgx-h100-superpod").network.topology
    .without_speeds(),
    "crossbar": lambda: Crossbar(8),
    "tiny": lambda: FatTree(2, 4, ((4, 2),), 16),
}


def _key(s):
    return (s.load, s.hops, s.inter, s.recv)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_tree_steps_are_the_numpy_paths(name):
    topo = TOPOLOGIES[name]()
    assert treekernel.applies(topo)
    for nodes in sorted({1, 2, 3, 5, 8, 13, 64, 100, 333} & set(range(1, topo.max_nodes + 1))):
        for rpn, dev in ((1, False), (1, True), (6, True)):
            p = nodes * rpn
            if p < 2:
                continue
            for segments in (0, 1, 3, 9):
                mine, depth = treekernel.tree_steps(topo, nodes, rpn, dev, segments)
                if segments:
                    ref = [s for s, _, _ in windowed(topo, nodes, rpn, dev, np.arange(p),
                                                     segments)]
                else:
                    child, parent, want = double_binary_tree_edges(p)
                    unit = np.ones(len(child))
                    ref = [step_load(topo, nodes, rpn, dev, child, parent, unit, per_flow=False),
                           step_load(topo, nodes, rpn, dev, parent, child, unit, per_flow=False)]
                    assert depth == want
                assert [_key(s) for s in mine] == [_key(s) for s in ref], (nodes, rpn, segments)


def test_rails_not_a_power_of_two_are_left_to_the_numpy_path():
    assert not treekernel.applies(FatTree(2, 4, ((4, 2),), 16, rails=3))


@pytest.mark.parametrize("segments", [0, 5])
def test_a_plan_is_the_same_either_way(monkeypatch, segments):
    topo = TOPOLOGIES["summit"]()
    netplan.plan_collective.cache_clear()
    monkeypatch.setattr(netplan, "_compiled_tree", lambda *args: False)
    ref = netplan.plan_collective(topo, 40, 6, True, "allreduce", "double-binary-tree",
                                  segments=segments)
    netplan.plan_collective.cache_clear()
    monkeypatch.setattr(netplan, "_compiled_tree", lambda *args: True)
    got = netplan.plan_collective(topo, 40, 6, True, "allreduce", "double-binary-tree",
                                  segments=segments)
    netplan.plan_collective.cache_clear()
    assert (got.levels, got.dbt_depth, got.device_links) == (ref.levels, ref.dbt_depth, ref.device_links)
    for key in ("load", "repeat", "inter", "hops", "recv", "size"):
        assert np.array_equal(getattr(got, key), getattr(ref, key)), key
