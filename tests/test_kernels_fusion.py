"""Fusion buffers: Horovod threshold grouping, given grouping, pack/unpack round trip."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.kernels import allreduce_inplace, fusion_groups, make_plan, pack_group, unpack_group


def test_threshold_grouping_is_greedy_in_order():
    assert fusion_groups([10, 20, 30, 100, 5], threshold_bytes=60) == [[0, 1, 2], [3], [4]]
    assert fusion_groups([], threshold_bytes=60) == []
    assert fusion_groups([61], threshold_bytes=60) == [[0]]


@settings(max_examples=20, deadline=None)
@given(sizes=st.lists(st.sampled_from([0, 1, 3, 7, 64, 97]), min_size=1, max_size=8),
       thr=st.sampled_from([8, 100, 1000]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_pack_unpack_round_trip(sizes, thr, dtype, seed):
    rng = np.random.default_rng(seed)
    ts = [rng.standard_normal(s).astype(dtype) for s in sizes]
    orig = [t.copy() for t in ts]
    plan = make_plan(ts, threshold_bytes=thr)
    assert sorted(i for g in plan.groups for i in g) == list(range(len(ts)))
    for g, members in enumerate(plan.groups):
        buf = pack_group(ts, plan, g)
        assert buf.size == sum(ts[i].size for i in members) == plan.group_elements[g]
        if len(members) > 1:
            assert plan.group_bytes(g) <= thr
        np.testing.assert_array_equal(buf, np.concatenate([ts[i] for i in members]))
        for i in members:
            ts[i][:] = 0
        unpack_group(buf, ts, plan, g)
    for a, b in zip(ts, orig, strict=True):
        np.testing.assert_array_equal(a, b)


def test_given_grouping_and_fused_allreduce():
    # graph-aware grouping: tensors 2 and 0 together, 1 alone; 3 ranks' gradients reduced per group
    ranks = [[np.full((2, 2), r + 1.0), np.full(3, 10.0 * r), np.arange(4.0)] for r in range(3)]
    plan = make_plan(ranks[0], groups=[[2, 0], [1]])
    assert plan.offsets == (4, 0, 0)
    for g in range(2):
        bufs = np.stack([pack_group(ts, plan, g) for ts in ranks])
        allreduce_inplace(bufs, "ring")
        for r, ts in enumerate(ranks):
            unpack_group(bufs[r], ts, plan, g)
    for ts in ranks:
        assert ts[0].tolist() == [[6.0, 6.0], [6.0, 6.0]]
        assert ts[1].tolist() == [30.0, 30.0, 30.0]
        assert ts[2].tolist() == [0.0, 3.0, 6.0, 9.0]


def test_fusion_bad_inputs():
    ts = [np.ones(2), np.ones(3)]
    with pytest.raises(ValueError, match="give exactly one of threshold_bytes and groups"):
        make_plan(ts)
    with pytest.raises(ValueError, match=r"groups: must be non-empty and use each of the 2 tensor indices exactly once, got \[\[0\]\]"):
        make_plan(ts, groups=[[0]])
    with pytest.raises(TypeError, match=r"tensors\[1\]: dtype float32 differs from tensors\[0\] dtype float64"):
        make_plan([np.ones(2), np.ones(2, np.float32)], threshold_bytes=10)
    plan = make_plan(ts, threshold_bytes=100)
    with pytest.raises(ValueError, match="group: must be < 1, got 1"):
        pack_group(ts, plan, 1)
    with pytest.raises(ValueError, match="buffer: must hold 5 elements of float64, got 4 of float64"):
        unpack_group(np.ones(4), ts, plan, 0)
    with pytest.raises(ValueError, match="threshold_bytes: must be an integer >= 1, got 0"):
        fusion_groups([1], 0)
