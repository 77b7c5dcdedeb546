"""What one ``predict`` computes: each value once per node count (issue 28, values
that travel), and a cost per node count that does not grow with the curve (issue 27
item 4). Counted, not timed: calls, node counts handed to each call, cached entries."""

import collections
import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute import roofline
from dlscale.perfmodel.training import easgd as training_easgd
from dlscale.perfmodel.training import iteration, outside, predict, ranges, rank_layout
from dlscale.perfmodel.training import sync as training_sync

#: the functions whose calls are counted, and the modules that hold them
COUNTED = {"layout": rank_layout, "iteration_times": iteration, "layout_times": iteration,
           "layer_times": roofline}
HOLDERS = (rank_layout, iteration, roofline, predict, training_sync, training_easgd,
           outside, ranges)


@pytest.fixture
def calls(monkeypatch):
    """Per counted function, the node counts of each call (layer_times: its batches)."""
    seen = collections.defaultdict(list)
    for name, home in COUNTED.items():
        orig = getattr(home, name)

        def wrapped(*args, _orig=orig, _name=name, **kwargs):
            out = _orig(*args, **kwargs)
            if _name == "layer_times":
                seen[_name].append(np.size(args[3]))
            elif _name == "layout_times":
                seen[_name].append(tuple(args[2].nodes.astype(int).tolist()))
            else:
                seen[_name].append(tuple(np.atleast_1d(args[2]).astype(int).tolist()))
            return out
        for mod in HOLDERS:
            if getattr(mod, name, None) is orig:
                monkeypatch.setattr(mod, name, wrapped)
    return seen


def _all_counts(seen, name):
    return [nd for call in seen[name] for nd in call]


@pytest.mark.parametrize("change, baseline, extra", [
    ({}, "node", 0),                         # the baseline is the curve's own 1-node run
    ({"collective": "ring"}, "node", 1),     # the baseline runs auto: one run more, 1 node
    ({}, "device", 1),                       # the baseline is one device alone
    ({"algorithm": "sync-easgd"}, "node", 0),
    ({"algorithm": "async-sgd"}, "node", 0),
    ({"scaling": "strong", "global_batch": 4096}, "node", 0),
])
def test_one_predict_computes_each_value_once_per_node_count(calls, change, baseline, extra):
    w = dataclasses.replace(get_workload("resnet50"), **change)
    nodes = [1, 4, 4, 16, 2]                 # 1 and 4 twice: computed once each
    out = predict.predict(get_cluster("summit"), w, nodes, baseline=baseline)
    assert len(out) == 5
    assert calls["iteration_times"] == []    # predict hands its layout on
    assert len(calls["layout"]) == 1 + extra
    assert len(calls["layout_times"]) == 1 + extra
    assert len(calls["layer_times"]) == 1 + extra
    assert calls["layout"][0] == (1, 2, 4, 16)
    assert calls["layout_times"][0] == (1, 2, 4, 16)
    assert sorted(_all_counts(calls, "layout")) == sorted([1, 2, 4, 16] + [1] * extra)


def test_a_node_count_gives_the_same_row_in_any_curve():
    """Rows do not depend on the other node counts asked for, their order or repeats."""
    c, w = get_cluster("summit"), get_workload("resnet50")
    curve = predict.predict(c, w, [16, 1, 4, 4, 2]).to_rows()
    alone = {nd: predict.predict(c, w, [nd]).to_rows()[0] for nd in (1, 2, 4, 16)}
    assert [row["nodes"] for row in curve] == [16, 1, 4, 4, 2]
    for row in curve:
        assert row == alone[row["nodes"]]


def _traced_peak(monkeypatch, nodes):
    """Peak bytes traced while predicting ``nodes`` (caches emptied, kept small)."""
    import tracemalloc

    from dlscale.perfmodel.network import model as netmodel
    from dlscale.perfmodel.network import pipelined_tree
    from dlscale.perfmodel.network import plan as netplan
    monkeypatch.setattr(netplan.plan_collective, "max_bytes", 2 << 20)
    monkeypatch.setattr(netplan._packed, "max_bytes", 2 << 20)
    monkeypatch.setattr(netplan, "CHUNK_MESSAGES", 50_000)
    for cache in (netplan.plan_collective, netplan._packed, netplan.plan_curve,
                  pipelined_tree._parts, netmodel._own_levels, netmodel._layers):
        cache.cache_clear()
    netplan._layout.clear()
    c, w = get_cluster("summit"), get_workload("resnet50")
    predict.predict(c, w, [2])               # imports and compiled kernels: not counted
    tracemalloc.start()
    try:
        predict.predict(c, w, nodes)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_of_a_curve_does_not_grow_with_its_node_counts(monkeypatch):
    """A curve of 100 node counts peaks at about what 10 of the same size do: nothing
    keeps every node count's plan (its flows: megabytes at thousands of ranks) alive
    (issue 27 item 4: 4 MB more per node count). Traced bytes, not time."""
    from dlscale.perfmodel.network import plan as netplan

    few = _traced_peak(monkeypatch, np.arange(200, 210))
    many = _traced_peak(monkeypatch, np.arange(200, 300))
    # the plans kept are bounded by bytes (2 MB each for plans and packed chunks here):
    # since the compiled walks (fatwalk, treekernel) a few counts peak at 0.4 MB, below
    # what the bounded caches may hold; every plan of 100 counts kept would be 50 MB
    bounded = netplan.plan_collective.max_bytes + netplan._packed.max_bytes
    assert many < 1.5 * few + bounded, (few, many)


def _fresh_caches(monkeypatch, keep_bytes):
    """Empty the network model's caches; the plans and packed chunks then kept to
    ``keep_bytes`` (the step arrays, kilobytes each, are kept for a whole curve)."""
    from dlscale.perfmodel.network import model as netmodel
    from dlscale.perfmodel.network import pipelined_tree
    from dlscale.perfmodel.network import plan as netplan
    for cache in (netplan.plan_collective, netplan._packed):
        monkeypatch.setattr(cache, "max_bytes", keep_bytes)
    for cache in (netplan.plan_collective, netplan._packed, netplan._steps, netplan.plan_curve,
                  pipelined_tree._parts, netmodel._own_levels, netmodel._layers):
        cache.cache_clear()
    netplan._layout.clear()
    for memo in getattr(netmodel, "MEMOS", ()):
        memo.clear()


def test_the_band_builds_each_plan_once_per_node_count(monkeypatch):
    """The band's corners (fast, slow, serial, exchange-bound, step-bound: six predicts in all) price the central
    answer's plans on their own links instead of building them again: each plan is
    built once per node count even where the caches keep none of them (a curve of
    thousands of node counts), and the answers are the same bits (issue 27 item 4:
    7 plans per node count before)."""
    from dlscale.perfmodel.network import plan as netplan

    c, w = get_cluster("summit"), get_workload("resnet50")
    nodes = [1, 3, 8, 64, 100]
    _fresh_caches(monkeypatch, 256 << 20)
    roomy = ranges.predict_range(c, w, nodes).to_rows()
    _fresh_caches(monkeypatch, 1)            # the newest entry only
    built = collections.Counter()
    real = netplan.plan_collective.fn

    def counted(*args, **kwargs):
        built[args[1:] + tuple(sorted(kwargs.items()))] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(netplan.plan_collective, "fn", counted)
    tight = ranges.predict_range(c, w, nodes).to_rows()
    assert tight == roomy
    assert built and max(built.values()) == 1, [k[:5] for k, v in built.items() if v > 1]


def test_the_band_computes_each_value_once_per_node_count_and_corner(calls):
    """The band (issue 25) is six answers: the central one and the fast, slow, serial,
    exchange-bound and step-bound corners. Each corner has its own links (transport efficiency: every
    allreduce's price), its own dispatch floor (the layer times) and overlap and input
    pipeline (the iteration times), so each of the six computes its layout, layer
    times and iteration times once per node count, and none more; the plans behind
    the allreduces are built once for all six
    (test_the_band_builds_each_plan_once_per_node_count)."""
    c, w = get_cluster("summit"), get_workload("resnet50")
    out = ranges.predict_range(c, w, [1, 4, 4, 16, 2])
    assert len(out) == 5 and out.band is not None
    corners = len(ranges.corners(c, w))
    assert corners == 5
    assert calls["iteration_times"] == []
    for name in ("layout", "layout_times"):
        assert calls[name] == [(1, 2, 4, 16)] * (1 + corners), name
    assert calls["layer_times"] == [1] * (1 + corners)     # weak scaling: one batch
