"""The fused fat-tree walk (issue 27 item 4): the packed walk's bits without building a
plan, and a curve's negotiation priced without one plan built per node count (counted,
not timed)."""

import collections
import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.machine.runtime import with_transport
from dlscale.perfmodel.network import fatwalk
from dlscale.perfmodel.network import model as netmodel
from dlscale.perfmodel.network import plan as netplan
from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS
from dlscale.perfmodel.network.stepcost import critical_path_s, device_links
from dlscale.perfmodel.training import predict, ranges


def _with_factors(cluster):
    """``cluster`` with SMPI's per-size factors (without its cross-traffic, which the
    fused walk leaves to the packed one)."""
    f = dataclasses.replace(MESSAGE_FACTORS["smpi-default"], cross_traffic=0.0)
    return dataclasses.replace(cluster, network=dataclasses.replace(cluster.network,
                                                                    message_factors=f))


CLUSTERS = {
    "summit": lambda: get_cluster("summit"),                       # 3 levels, 2 rails
    "stampede2-knl": lambda: get_cluster("stampede2-knl"),         # tapered 28:20
    "dgx-h100-superpod": lambda: get_cluster("dgx-h100-superpod"), # 8 rails
    "k80-8gpu": lambda: get_cluster("k80-8gpu"),                   # a crossbar
    "summit+factors": lambda: _with_factors(get_cluster("summit")),
}


@pytest.mark.parametrize("name", sorted(CLUSTERS))
@pytest.mark.parametrize("algorithm", ["recursive-doubling", "rabenseifner", "binomial-tree"])
def test_the_fused_walk_gives_the_packed_walks_bits(name, algorithm):
    c = with_transport(CLUSTERS[name]())
    topo = netplan.plan_key(c)
    assert fatwalk.applies(topo, "allreduce", algorithm)
    n, g = np.array([24.0, 3e5, 1e8]), np.array([0.0, 1e-10, 3e-11])
    for nodes in sorted({1, 2, 3, 7, 19, 64, 333} & set(range(1, c.max_nodes + 1))):
        for rpn in sorted({1, c.node.devices_per_node}):
            if nodes * rpn < 2:
                continue
            dev = device_links(c, rpn)
            got, steps = fatwalk.fat_walk(topo, nodes, rpn, dev, "allreduce", algorithm,
                                          [c, get_cluster("summit")], n, g)
            ref = netplan.plan_collective(topo, nodes, rpn, dev, "allreduce", algorithm)
            assert steps.levels == ref.levels
            for key in ("load", "repeat", "inter", "hops", "recv", "size"):
                assert np.array_equal(getattr(steps, key), getattr(ref, key)), key
            assert (got is None) == (ref.flows is None), (nodes, rpn)
            if got is not None:
                want = [critical_path_s(c, ref, x, y) for x, y in zip(n, g, strict=True)]
                assert got[0].tolist() == [float(v) for v in want], (nodes, rpn)


def test_other_families_and_schedules_are_left_to_the_packed_walk():
    summit = get_cluster("summit")
    topo = netplan.plan_key(summit)
    assert not fatwalk.applies(topo, "allreduce", "hierarchical")
    assert not fatwalk.applies(topo, "allreduce", "double-binary-tree")
    dragonfly = netplan.plan_key(get_cluster("perlmutter"))
    assert not fatwalk.applies(dragonfly, "allreduce", "recursive-doubling")


def _empty_caches():
    for cache in (netplan.plan_collective, netplan._packed, netplan._steps, netplan.plan_curve,
                  netmodel._own_levels, netmodel._layers):
        cache.cache_clear()
    netplan._layout.clear()
    from dlscale.perfmodel.network import walkmemo
    for memo in walkmemo.MEMOS:
        memo.clear()


def test_a_curves_negotiation_builds_no_plan_per_node_count(monkeypatch):
    """Horovod's negotiation (a 24-byte recursive-doubling allreduce at every node count,
    costed on its critical path) on Summit: no per-message plan is built for it, at any
    node count of a curve, with the band's six answers; one fused walk per node count
    (before: one plan of ``p log2 p`` messages per node count, 55% of a 4,608-count
    curve). The rows are the packed walk's."""
    c, w = get_cluster("summit"), get_workload("resnet50")
    nodes = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89]
    monkeypatch.setattr(netmodel, "_fused", lambda *args: False)      # the packed walk
    _empty_caches()
    packed = ranges.predict_range(c, w, nodes).to_rows()
    monkeypatch.undo()
    monkeypatch.setattr(netmodel, "FUSED_MESSAGES", 0)
    _empty_caches()
    built, walked = collections.Counter(), collections.Counter()
    real_plan, real_walk = netplan.plan_collective.fn, netmodel.fat_walk

    def plan(*args, **kwargs):
        built[args[5]] += 1
        return real_plan(*args, **kwargs)

    def walk(*args, **kwargs):
        walked[(args[5], args[1])] += 1
        return real_walk(*args, **kwargs)
    monkeypatch.setattr(netplan.plan_collective, "fn", plan)
    monkeypatch.setattr(netmodel, "fat_walk", walk)
    fused = ranges.predict_range(c, w, nodes).to_rows()
    assert fused == packed
    assert built["recursive-doubling"] == 0, built
    assert sorted(nd for (alg, nd) in walked if alg == "recursive-doubling") == nodes
    assert max(walked.values()) == 1, walked


def test_a_plain_predict_keeps_the_same_rows_with_the_fused_walk(monkeypatch):
    c, w = get_cluster("stampede2-knl"), dataclasses.replace(get_workload("resnet50"),
                                                             collective="recursive-doubling")
    nodes = [1, 2, 6, 17, 40]
    monkeypatch.setattr(netmodel, "_fused", lambda *args: False)
    _empty_caches()
    packed = predict.predict(c, w, nodes).to_rows()
    monkeypatch.undo()
    monkeypatch.setattr(netmodel, "FUSED_MESSAGES", 0)
    _empty_caches()
    assert predict.predict(c, w, nodes).to_rows() == packed


@pytest.mark.parametrize("p", [*range(2, 40), 1000, 4662, 27648])
def test_the_compiled_doubling_is_build_schedules(p):
    src, dst, ones, at, red = fatwalk._doubling_of(p)
    ref = fatwalk._schedule("allreduce", "recursive-doubling", p, "ring")
    for got, want in zip((src, dst, ones, at, red), (ref[0], ref[1], ref[2], ref[4], ref[5]),
                         strict=True):
        assert np.array_equal(got, want)
    assert (ref[2] == 1).all() and (ref[3] == 1).all() and (ref[6] == 1).all()


def test_the_doublings_buffers_serve_a_smaller_count_after_a_larger():
    """The buffers kept for the next node count: a smaller count after a larger one
    gives its own messages (the buffers' first part), not the larger's."""
    big = [x.copy() for x in fatwalk._doubling_of(27648)]
    small = fatwalk._doubling_of(7)
    ref = fatwalk._schedule("allreduce", "recursive-doubling", 7, "ring")
    assert np.array_equal(small[0], ref[0]) and np.array_equal(small[1], ref[1])
    again = fatwalk._doubling_of(27648)
    assert all(np.array_equal(a, b) for a, b in zip(big, again, strict=True))
