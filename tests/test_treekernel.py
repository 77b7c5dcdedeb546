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



def _one_depth_messages(rng, p, D):
    """Two trees' messages by key (each key 0-2 messages per tree, all of one depth
    there, as the double binary tree's ranks as children and as parents), shuffled:
    keys, coordinates, and where tree 2 begins."""
    key, coord = [], []
    for _ in range(2):
        depth, n = rng.integers(0, D, p), rng.integers(0, 3, p)
        k = rng.permutation(np.repeat(np.arange(p), n))
        key.append(k)
        coord.append(depth[k])
    return (np.concatenate(key).astype(np.int64), np.concatenate(coord).astype(np.int64),
            len(key[0]))


def _by_depth(ka, kb, two, coord, T1, K, D, lo, hi):
    """The rank windows as _count takes them from each rank's depths per tree."""
    oa, ob = np.zeros(len(lo), np.int64), np.zeros(len(lo), np.int64)
    codes, ok = treekernel._depth_codes(ka, coord, T1, K, D)
    if ok:
        treekernel._codes_max(codes, D, lo, hi, oa)
    if ok and two:
        codes, ok = treekernel._depth_codes(kb, coord, T1, K, D)
        if ok:
            treekernel._codes_max(codes, D, lo, hi, ob)
    return oa, ob, ok


@pytest.mark.parametrize("seed", range(12))
def test_the_rank_windows_by_depth_are_the_sliding_counts(seed):
    """The rank windows counted from each rank's one depth per tree
    (:func:`treekernel._depth_codes`, :func:`treekernel._codes_max`) are
    :func:`treekernel._window_max`'s, and a
    rank at two depths of a tree, or with three messages there, is left to it."""
    treekernel._kernel()
    rng = np.random.default_rng(seed)
    p, D = int(rng.integers(3, 300)), int(rng.integers(1, 12))
    key, coord, T1 = _one_depth_messages(rng, p, D)
    for segments in (-1, 0, 1, 4):
        lo, hi = treekernel._windows(D, segments)
        order, start = treekernel._by_coord(coord, D)
        want = treekernel._window_max(order, start, key, key, False, p, lo, hi)
        for two in (False, True):
            a, b, ok = _by_depth(key, key, two, coord, T1, p, D, lo, hi)
            assert ok and a.tobytes() == want[0].tobytes()
            assert b.tobytes() == (a if two else np.zeros(len(lo), np.int64)).tobytes()
    lo, hi = treekernel._windows(D, -1)
    x = int(key[0])
    for extra in ([x, x], [x] if D > 1 else []):      # three messages; a second depth
        if not extra:
            continue
        other = (coord[0] + 1) % D if len(extra) == 1 else coord[0]
        k2 = np.concatenate([key[:1], np.array(extra), key[1:]]).astype(np.int64)
        c2 = np.concatenate([coord[:1], np.full(len(extra), other), coord[1:]])
        assert not _by_depth(k2, k2, True, c2, T1 + len(extra), p, D, lo, hi)[2]
