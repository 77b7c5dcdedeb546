"""Routes kept pair by pair and phase costs kept per (pattern, sizes): the same bits
as routing and pricing every phase afresh."""

from __future__ import annotations

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.simulator.network.fastmode import RouteCache, run_fast
from dlscale.simulator.network.schedules import build_schedule
from dlscale.simulator.network.simulated import SimulatedNetwork
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.routing import PairRoutes, make_router, route


def _same(a, b) -> None:
    for f in ("links", "pair", "fraction", "latency_s"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y), f


@pytest.mark.parametrize("name", ["summit", "cori-knl", "p100-cluster"])
def test_pair_routes_equal_route_on_subsets_and_new_pairs(name):
    net = SimulatedNetwork.from_cluster(get_cluster(name), 6)
    table, router = net.table, net.router
    assert router.pairwise
    ends = net.rank_nodes
    rng = np.random.default_rng(1)
    full_s, full_t = rng.choice(ends, 200), rng.choice(ends, 200)
    pr = PairRoutes(table, router, blocks=2)
    _same(pr.route(full_s, full_t), route(table, router, full_s, full_t))
    for _ in range(6):                 # mostly known pairs, some new, some to oneself
        pick = rng.choice(200, 120, replace=False)
        s, t = full_s[pick].copy(), full_t[pick].copy()
        s[:10], t[10:20] = rng.choice(ends, 10), s[10:20]
        _same(pr.route(s, t), route(table, router, s, t))
        new_s, new_t = rng.choice(ends, 50), rng.choice(ends, 50)   # a new block
        _same(pr.route(new_s, new_t), route(table, router, new_s, new_t))
    assert len(pr._blocks) <= 2


def test_valiant_dragonfly_is_not_pairwise():
    G = dragonfly_graph(groups=5, routers_per_group=2, terminals_per_router=2,
                        global_links_per_router=2, routing="valiant")
    assert not make_router(G).pairwise


def test_priced_phases_equal_fresh_cache_at_every_size():
    net = SimulatedNetwork.from_cluster(get_cluster("summit"), 9)
    p = len(net.rank_nodes)
    shared = RouteCache()
    for size, alg, seg in [(1e6, "double-binary-tree", 5), (3e7, "double-binary-tree", 9),
                           (1e6, "double-binary-tree", 5), (2e5, "recursive-doubling", 1),
                           (4e6, "rabenseifner", 1)]:
        phases = build_schedule("allreduce", alg, p, size, segments=seg)
        a = run_fast(phases, net.table, net.router, net.rank_nodes, shared, 1e-11,
                     net.message_factors)
        b = run_fast(phases, net.table, net.router, net.rank_nodes, RouteCache(), 1e-11,
                     net.message_factors)
        assert a["time_s"] == b["time_s"]
        assert np.array_equal(a["step_times_s"], b["step_times_s"])
        assert np.array_equal(a["link_bytes"], b["link_bytes"])
