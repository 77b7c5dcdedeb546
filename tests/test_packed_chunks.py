"""A curve's critical paths priced chunk by chunk, with the plan and chunk caches
bounded by bytes: the same bits as one packing of the whole curve."""

from __future__ import annotations

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.network import model as netmodel
from dlscale.perfmodel.network import plan as netplan
from dlscale.perfmodel.network import walkmemo
from dlscale.perfmodel.network.model import time_per_node_count


def _clear() -> None:
    """Empty the plans, the chunks and the walked answers kept (walkmemo): each call
    then packs and walks its chunks anew."""
    for memo in walkmemo.MEMOS:
        memo.clear()
    netplan.plan_collective.cache_clear()
    netplan._packed.cache_clear()
    netplan._layout.clear()


@pytest.mark.parametrize("name, algorithm", [("summit", "rabenseifner"),
                                             ("cori-knl", "recursive-doubling"),
                                             ("stampede2-knl", "binomial-tree")])
def test_chunks_and_bounded_caches_give_the_same_bits(monkeypatch, name, algorithm):
    # the packed walk itself (a fat tree's plans are walked by fatwalk once numba is
    # loaded: tests/test_fatwalk.py holds it to these bits)
    monkeypatch.setattr(netmodel, "_fused", lambda *args: False)
    cluster = get_cluster(name)
    nodes = [1, 2, 3, 5, 8, 12, 13, 20, 33, 33, 7]
    sizes = np.array([[1e3], [4e6], [1e8]])
    _clear()
    whole = time_per_node_count(cluster, "allreduce", algorithm, sizes, nodes, 2, 1e-11)
    monkeypatch.setattr(netplan, "CHUNK_MESSAGES", 50)
    monkeypatch.setattr(netplan.plan_collective, "max_bytes", 1)
    monkeypatch.setattr(netplan._packed, "max_bytes", 1)
    for _ in range(2):                            # chunks built, then asked again
        _clear()
        for _ in range(2):
            for memo in walkmemo.MEMOS:
                memo.clear()
            chunked = time_per_node_count(cluster, "allreduce", algorithm, sizes, nodes, 2,
                                          1e-11)
            assert chunked.tobytes() == whole.tobytes()
        layout = next(iter(netplan._layout.values()))
        assert len(layout) > 1 or len(layout[0]) == 1              # chunks of a few plans
        assert netplan.plan_collective.cache_info()[2] == 1     # the newest plan only
    _clear()


def test_plan_cache_is_bounded_by_bytes(monkeypatch):
    monkeypatch.setattr(netmodel, "_fused", lambda *args: False)     # the packed walk
    _clear()
    time_per_node_count(get_cluster("summit"), "allreduce", "recursive-doubling", 1e6,
                        list(range(1, 40)), 6)
    _hits, misses, entries, held = netplan.plan_collective.cache_info()
    assert entries == misses and held <= netplan.PLAN_BYTES
    assert 0 < netplan._packed.cache_info()[3] <= netplan.PACKED_BYTES
    _clear()
