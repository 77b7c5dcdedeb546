"""The pipelined double binary tree's steps by depth windows (perfmodel/network/treewindows.py)
give the very plans the steps routed one by one give (issue 27 item 4: 79% of the
messages a Summit curve routed were these pipelines')."""

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, FatTree
from dlscale.perfmodel.network import plan as netplan

FIELDS = ("load", "repeat", "inter", "hops", "recv", "size")


def _both(monkeypatch, topo, nodes, rpn, dev, segments, ranks=None):
    args = (topo, nodes, rpn, dev, "allreduce", "double-binary-tree", "ring", ranks)
    fast = netplan._plan_collective(*args, segments=segments)
    with monkeypatch.context() as m:
        m.setattr(netplan, "windowed", lambda *a: None)
        routed = netplan._plan_collective(*args, segments=segments)
    return fast, routed


@pytest.mark.parametrize("topo", [
    netplan.shape_key(get_cluster("summit").network.topology),      # 3 levels, 2 rails
    FatTree(2, 4, ((4, 2),), 64),
    FatTree(3, 3, ((3, 2), (2, 2)), 200, rails=4),
    Crossbar(64),
])
@pytest.mark.parametrize("nodes, rpn", [(2, 1), (3, 2), (7, 6), (33, 3), (64, 1)])
@pytest.mark.parametrize("segments", [1, 2, 5, 13])
def test_windows_give_the_plans_of_the_routed_steps(monkeypatch, topo, nodes, rpn, segments):
    for dev in (True, False):
        fast, routed = _both(monkeypatch, topo, nodes, rpn, dev, segments)
        assert fast.levels == routed.levels
        for f in FIELDS:
            a, b = getattr(fast, f), getattr(routed, f)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f


def test_windows_of_some_ranks_and_of_a_large_curve_count(monkeypatch):
    topo = netplan.shape_key(get_cluster("summit").network.topology)
    for ranks in (2995, tuple(range(3, 3000, 2))):
        fast, routed = _both(monkeypatch, topo, 500, 6, True, 4, ranks)
        assert all(getattr(fast, f).tobytes() == getattr(routed, f).tobytes() for f in FIELDS)
    fast, routed = _both(monkeypatch, topo, 4608, 6, True, 14)
    assert all(getattr(fast, f).tobytes() == getattr(routed, f).tobytes() for f in FIELDS)


def test_rails_not_a_power_of_two_take_the_routed_steps():
    from dlscale.perfmodel.network.treewindows import windowed
    assert windowed(FatTree(2, 4, ((4, 2),), 64, rails=3), 8, 2, True, np.arange(16), 3) is None
    assert windowed(Crossbar(8), 1, 1, False, np.arange(1), 3) is None
