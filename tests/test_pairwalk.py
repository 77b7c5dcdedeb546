"""Recursive doubling walked pair by pair (issue 27 item 4): the message walk's bits on
random fat trees (rails, tapers, levels), crossbars, ranks per node, device links,
machines with and without per-size factors and cases; and a curve's walk count."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, FatTree
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.network import fatwalk, pairwalk
from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS


def _machines(factors: bool):
    summit = with_transport(get_cluster("summit"))
    knl = with_transport(get_cluster("stampede2-knl"))
    if factors:
        f = dataclasses.replace(MESSAGE_FACTORS["smpi-default"], cross_traffic=0.0)
        knl = dataclasses.replace(knl, network=dataclasses.replace(knl.network,
                                                                   message_factors=f))
    return [summit, knl]


@st.composite
def _trees(draw):
    if draw(st.booleans()):
        nodes = draw(st.integers(1, 300))
        return Crossbar(max_nodes=nodes), nodes
    levels = draw(st.integers(1, 4))
    down_up = tuple((draw(st.integers(1, 9)), draw(st.integers(1, 9)))
                    for _ in range(levels - 1))
    tree = FatTree(levels, draw(st.integers(1, 9)), down_up, 100000,
                   rails=draw(st.sampled_from([1, 2, 3, 4, 8])))
    return tree, draw(st.integers(1, 400))


@settings(max_examples=150, deadline=None)
@given(_trees(), st.integers(1, 9), st.booleans(), st.booleans(),
       st.lists(st.sampled_from([16.0, 24.0, 3e5, 1e8, 7.5e9]), min_size=1, max_size=3),
       st.sampled_from([0.0, 1e-10, 3e-11]))
def test_the_pair_walk_gives_the_message_walks_bits(tree, rpn, dev, factors, sizes, gamma):
    topo, nodes = tree
    if nodes * rpn < 2:
        rpn = 2
    machines = _machines(factors)
    n = np.array(sizes)
    g = np.full(len(n), gamma)
    got, _ = fatwalk.fat_walk(topo, nodes, rpn, dev, "allreduce", "recursive-doubling",
                              machines, n, g)
    value, load, hops, inter, recv, uneven, red = fatwalk.message_walk(
        topo, nodes, rpn, dev, machines, n, g)
    m, _ = fatwalk._tree(topo, nodes)
    mine = pairwalk.pair_walk(nodes * rpn, rpn, dev, *fatwalk._tree(topo, nodes),
                              fatwalk._kernel("_tables")(nodes * rpn, rpn,
                                                         *fatwalk._tree(topo, nodes)),
                              fatwalk._cases(machines, dev, fatwalk._levels(topo, len(m)),
                                             n, g, np.ones(len(red))))
    for a, b in zip(mine, (value, load, hops, inter, recv, uneven, red), strict=True):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert (got is None) == (not uneven)
    if got is not None:
        assert got.ravel().tobytes() == value.tobytes()


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 9, 1000, 27648])
def test_the_pair_walks_step_count_is_the_schedules(p):
    assert pairwalk.steps_of(p) == len(fatwalk._doubling_of(p)[4])


def test_a_curves_negotiation_walks_pairs_not_messages(monkeypatch):
    """Horovod's negotiation on a Summit curve: one pair walk per node count, no message
    walk (counted, not timed; before: one message walk of ``p log2 p`` messages each)."""
    from dlscale.perfmodel.catalog import get_workload
    from dlscale.perfmodel.network import model as netmodel
    from dlscale.perfmodel.training import ranges
    from tests.test_fatwalk import _empty_caches

    nodes = [2, 3, 5, 8, 13, 21, 34, 55, 89]
    monkeypatch.setattr(netmodel, "FUSED_MESSAGES", 0)
    _empty_caches()
    asked, walked = [], []
    real_kernel, real_pairs = fatwalk._kernel, pairwalk.pair_walk

    def kernel(name):
        asked.append(name)
        return real_kernel(name)

    def pairs(p, *args):
        walked.append(p)
        return real_pairs(p, *args)
    monkeypatch.setattr(fatwalk, "_kernel", kernel)
    monkeypatch.setattr(fatwalk, "pair_walk", pairs)
    ranges.predict_range(get_cluster("summit"), get_workload("resnet50"), nodes)
    assert "_walk" not in asked and "_doubling" not in asked, asked
    assert sorted(walked) == [6 * nd for nd in [1, *nodes]]     # and the one-node baseline


def test_the_kept_buffers_serve_a_smaller_count_after_a_larger():
    """The work buffers kept between node counts (pair walk and tree kernel): a count
    after a larger one gets its own answer, bit for bit, as after a smaller one."""
    from dlscale.perfmodel.network import treekernel

    summit = with_transport(get_cluster("summit"))
    topo = summit.network.topology
    n, g = np.array([16.0]), np.array([0.0])

    def both(nodes):
        walk = fatwalk.message_walk(topo, nodes, 6, True, [summit], n, g)
        got, _ = fatwalk.fat_walk(topo, nodes, 6, True, "allreduce", "recursive-doubling",
                                  [summit], n, g)
        tree = treekernel._counted(topo, nodes, 6, True, -1)
        return [walk[0].tobytes(), None if got is None else got.tobytes(),
                *[np.asarray(x).tobytes() for x in tree]]
    first = both(7)
    both(4608)
    assert both(7) == first
    assert both(7)[0] == both(7)[1]


def test_the_kept_buffers_grow_for_the_ranks_whatever_the_cases_before():
    """Each kept buffer is checked against its own need: many cases (sizes) at a small
    count used to leave the clocks' buffer large enough while the core-rank buffer
    (sized by ranks only) was not, and the compiled walk wrote past it (heap corruption,
    a crash of a later test). Now the larger count's walk is the message walk's, bit
    for bit, after any history."""
    summit = with_transport(get_cluster("summit"))
    topo = summit.network.topology
    pairwalk._WORK[:] = [np.empty(0), np.empty(0, np.int64)]    # as in a fresh process
    many, g_many = np.linspace(16.0, 1e8, 40), np.zeros(40)
    one, g_one = np.array([16.0]), np.array([0.0])
    fatwalk.fat_walk(topo, 40, 6, True, "allreduce", "recursive-doubling", [summit],
                     many, g_many)
    m, w = fatwalk._tree(topo, 600)
    need = pairwalk._needs(600 * 6, 6, 1, len(m),
                           fatwalk._kernel("_tables")(600 * 6, 6, m, w)[4].shape[1])
    assert len(pairwalk._WORK[1]) < need[1]                      # the old trap
    got, _ = fatwalk.fat_walk(topo, 600, 6, True, "allreduce", "recursive-doubling",
                              [summit], one, g_one)
    walk = fatwalk.message_walk(topo, 600, 6, True, [summit], one, g_one)
    assert len(pairwalk._WORK[1]) >= need[1] and len(pairwalk._WORK[0]) >= need[0]
    assert got is None or got.ravel().tobytes() == walk[0].tobytes()

def test_the_kept_core_rank_buffer_grows_with_the_ranks_not_only_the_work():
    """A long vector on few ranks, then a short one on many: the float buffer is big
    enough for the second, the core-rank buffer was not (numba does not check bounds:
    the walk wrote past it, and ``dlscale validate published --write-readme`` crashed
    with a segmentation fault in a later allocation). Fails before the fix."""
    summit = with_transport(get_cluster("summit"))
    topo = summit.network.topology

    def walk(nodes, sizes):
        n = np.full(sizes, 16.0)
        g = np.zeros(sizes)
        m, _ = fatwalk._tree(topo, nodes)
        pairwalk.pair_walk(nodes * 6, 6, True, *fatwalk._tree(topo, nodes),
                           fatwalk._kernel("_tables")(nodes * 6, 6, *fatwalk._tree(topo, nodes)),
                           fatwalk._cases([summit], True, fatwalk._levels(topo, len(m)),
                                          n, g, np.ones(sizes)))
    walk(2, 200)                      # 12 ranks, 200 messages: 9,600 floats, 24 ranks kept
    walk(100, 1)                      # 600 ranks, 1 message: 512 core ranks
    assert len(pairwalk._WORK[1]) >= 512


@pytest.mark.parametrize("nodes, rpn", [(37, 3), (200, 6), (150, 7)])
def test_rows_past_the_tables_slots_are_costed_again_with_the_same_bits(monkeypatch, nodes,
                                                                        rpn):
    """A step's distinct rows past half of :func:`pairwalk._rows`' hash table are costed
    whenever met (its slots made 4 here, the rows run in Python): the message walk's
    bits all the same."""
    summit = with_transport(get_cluster("summit"))
    knl = _machines(True)[1]
    topo = FatTree(3, 4, ((3, 2), (5, 3)), 100000, rails=3)
    n, g = np.array([24.0, 7.5e9]), np.array([1e-10, 0.0])
    m, w = fatwalk._tree(topo, nodes)
    p = nodes * rpn
    args = (p, rpn, True, m, w, fatwalk._kernel("_tables")(p, rpn, m, w),
            fatwalk._cases([summit, knl], True, fatwalk._levels(topo, len(m)), n, g,
                           np.ones(pairwalk.steps_of(p))))
    pairwalk.pair_walk(*args)                           # compiled, buffers sized
    monkeypatch.setattr(pairwalk, "_SLOTS", 4)
    monkeypatch.setattr(pairwalk, "_rows", pairwalk._rows.py_func)
    mine = pairwalk._COMPILED[0].py_func(*args[:5], *args[5], *args[6], *pairwalk._WORK)
    ref = fatwalk.message_walk(topo, nodes, rpn, True, [summit, knl], n, g)
    for a, b in zip(mine, ref, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
