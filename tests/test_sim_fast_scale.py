"""The routed fast mode at scale computes each route once (issue 27 item 5).

A pipelined tree's filling and draining steps are some of its full step's pairs
(``Phase.within``, ``rows``) and its steady steps hold the full step's arrays: fast
mode takes their routes as rows of the full step's, and every answer is the same,
bit for bit, as routing each step afresh. Counted here (bytes held, routes computed);
the timing is ``benchmarks/bench_scale.py`` (the 27,648-GPU ``simulate``).
"""

from __future__ import annotations

import numpy as np
import pytest

import dlscale.simulator.network.fastmode as fastmode
import dlscale.simulator.network.simulated as simulated
from dlscale.perfmodel.catalog import CLUSTERS, get_cluster
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.schedules import Phase
from dlscale.simulator.network.fastmode import RouteCache, run_fast
from dlscale.simulator.network.schedules import build_schedule
from dlscale.simulator.network.simulated import SimulatedNetwork
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.graphml import validate_graph
from dlscale.simulator.topology.intranode import star_node_graph
from dlscale.simulator.topology.linktable import LinkTable


def _plain(phases: list[Phase]) -> list[Phase]:
    """The same steps, each with arrays of its own and no full step named."""
    return [Phase(p.src.copy(), p.dst.copy(), p.nbytes.copy(), p.reduce, p.repeat, p.label)
            for p in phases]


def test_the_tree_steps_are_rows_of_the_full_step_and_share_its_arrays():
    phases = build_schedule("allreduce", "double-binary-tree", 27648, 66e6, segments=102)
    assert len(phases) == 2 * (102 + 15 - 1)
    parts = [p for p in phases if p.within is not None]
    assert len(parts) == 4 * 14                       # filling and draining, both ways
    for p in parts:
        assert p.rows is not None
        for f in ("src", "dst", "nbytes"):
            np.testing.assert_array_equal(getattr(p, f), getattr(p.within, f)[p.rows])
    held = {id(a): a.nbytes for p in phases for a in (p.src, p.dst, p.nbytes)}
    held.update({id(p.rows): p.rows.nbytes for p in parts})
    # each step's own arrays: 232 steps of up to 55,294 messages, 24 B each, 200 MB
    assert sum(held.values()) < 60e6
    assert len({id(p.src) for p in phases if p.within is None}) == 2


@pytest.mark.parametrize("name,nodes", [("summit", 9), ("p100-cluster", 6), ("cori-knl", 33)])
@pytest.mark.parametrize("segments", [1, 3, 40])
def test_a_tree_priced_from_rows_of_its_full_step_is_the_tree_routed_step_by_step(
        name, nodes, segments):
    net = SimulatedNetwork.from_cluster(get_cluster(name), nodes)
    phases = build_schedule("allreduce", "double-binary-tree", net.max_ranks, 3e7,
                            segments=segments)
    args = (net.table, net.router, net.rank_nodes)
    a = run_fast(phases, *args, RouteCache(), 1e-11, net.message_factors)
    b = run_fast(_plain(phases), *args, RouteCache(), 1e-11, net.message_factors)
    for key in ("time_s", "phase_times_s", "step_times_s", "link_bytes"):
        np.testing.assert_array_equal(a[key], b[key])
    for x, y in zip(a["phase_link_time"], b["phase_link_time"], strict=True):
        assert x[:3] == y[:3] and np.array_equal(x[3], y[3])


def test_a_tree_is_routed_once_per_direction(monkeypatch):
    net = SimulatedNetwork.from_cluster(get_cluster("summit"), 16)
    routed = []
    real = fastmode.PairRoutes.route

    def counted(self, src, dst):
        routed.append(len(src))
        return real(self, src, dst)
    monkeypatch.setattr(fastmode.PairRoutes, "route", counted)
    phases = build_schedule("allreduce", "double-binary-tree", net.max_ranks, 3e7, segments=30)
    run_fast(phases, net.table, net.router, net.rank_nodes, RouteCache())
    assert routed == [2 * (net.max_ranks - 1)] * 2        # the full step, up and down


def test_a_router_that_is_not_pairwise_routes_every_step():
    G = dragonfly_graph(groups=5, routers_per_group=2, terminals_per_router=2,
                        global_links_per_router=2, routing="valiant")
    net = SimulatedNetwork(G)
    phases = build_schedule("allreduce", "double-binary-tree", net.max_ranks, 1e6, segments=4)
    args = (net.table, net.router, net.rank_nodes)
    a, b = run_fast(phases, *args, RouteCache()), run_fast(_plain(phases), *args, RouteCache())
    np.testing.assert_array_equal(a["step_times_s"], b["step_times_s"])


def test_link_lookup_is_the_sorted_search():
    net = SimulatedNetwork.from_cluster(get_cluster("summit"), 8)
    t: LinkTable = net.table
    rng = np.random.default_rng(3)
    u = rng.integers(0, len(t.nodes), 5000)
    v = t.dst[rng.integers(0, t.n_links, 5000)]
    adjacent = np.isin(u * len(t.nodes) + v, t.src * len(t.nodes) + t.dst)
    u, v = np.where(adjacent, u, v), v                 # adjacent pairs and pairs to oneself
    u[:100] = t.src[:100]
    v[:100] = t.dst[:100]
    got = t.lookup(u.reshape(50, 100), v.reshape(50, 100)).reshape(-1)
    keys = u * len(t.nodes) + v
    pos = np.searchsorted(t._keys, keys)
    want = np.where(u == v, -1, t._ids[np.minimum(pos, len(t._keys) - 1)])
    np.testing.assert_array_equal(got, want)
    assert got[:100].tolist() == list(range(100))
    a = int(t.src[0])
    far = next(w for w in range(len(t.nodes)) if w != a and not adjacent_to(t, a, w))
    with pytest.raises(ConfigError, match="not adjacent"):
        t.lookup([a, a], [int(t.dst[0]), far])


def adjacent_to(t: LinkTable, a: int, b: int) -> bool:
    return bool(((t.src == a) & (t.dst == b)).any())


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_the_built_in_cluster_graphs_need_no_check(name, monkeypatch):
    c = get_cluster(name)
    sizes = [n for n in sorted({1, min(2, c.max_nodes), min(5, c.max_nodes)})
             if n * c.node.devices_per_node >= 2]
    for nodes in sizes:
        validate_graph(cluster_graph(c, nodes))           # what from_cluster leaves out
    checked = []
    real = simulated.validate_graph
    monkeypatch.setattr(simulated, "validate_graph", lambda G: checked.append(G) or real(G))
    SimulatedNetwork.from_cluster(c, sizes[0])
    assert checked == []


def test_a_users_node_graph_is_checked_and_one_device_refused_as_before(monkeypatch):
    checked = []
    real = simulated.validate_graph
    monkeypatch.setattr(simulated, "validate_graph", lambda G: checked.append(G) or real(G))
    SimulatedNetwork.from_cluster(get_cluster("cori-knl"), 2, node_graph=star_node_graph(2, 1e9))
    assert len(checked) == 1
    with pytest.raises(ConfigError, match="at least 2 nodes with kind"):
        SimulatedNetwork.from_cluster(get_cluster("cori-knl"), 1)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_clock_step_is_advance_clocks_bit_for_bit(seed):
    from dlscale.perfmodel.network.rendezvous import advance_clocks

    rng = np.random.default_rng(seed)
    p, f = 50, 200                        # ranks that send and receive many times
    clock = rng.exponential(size=p)
    src, dst = rng.integers(0, p, f), rng.integers(0, p, f)
    msg = rng.exponential(size=f)
    before = clock.copy()
    got = fastmode._advance(clock, src, dst, msg)
    assert got.tobytes() == advance_clocks(clock, src, dst, msg).tobytes()
    assert clock.tobytes() == before.tobytes() != got.tobytes()   # a new array
    perm = rng.permutation(p)              # distinct senders and receivers
    got = fastmode._advance(clock, perm[: p // 2], perm[p // 2:], msg[: p // 2])
    want = advance_clocks(clock, perm[: p // 2], perm[p // 2:], msg[: p // 2], distinct=True)
    assert got.tobytes() == want.tobytes()
