"""NCCL's binary tree: each rank's depth, set in one pass by falling lowest bit, is
the number of steps up to the root (issue 27 item 4: the walk up cost log2 p passes)."""

from __future__ import annotations

import numpy as np
import pytest

from dlscale.perfmodel.network.schedules import _btree


@pytest.mark.parametrize("p", [*range(1, 70), 1000, 4095, 4096, 4097, 27647, 27648])
def test_depth_is_the_steps_up_to_the_root(p):
    parent, depth = _btree(p)
    assert parent[0] == -1 and depth.dtype == np.int64
    x, steps = np.arange(p), np.zeros(p, dtype=np.int64)
    while (parent[x] >= 0).any():
        up = parent[x] >= 0
        steps[up] += 1
        x[up] = parent[x[up]]
    assert np.array_equal(depth, steps)
