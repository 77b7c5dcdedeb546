"""Max-min fair rates and the SimPy flow network."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.simulator.network.flow import FlowNetwork, maxmin_rates


def test_classic_maxmin_example():
    # Bertsekas & Gallager: three one-link flows and a long flow over both links
    links = np.array([[0, 1], [0, -1], [1, -1], [1, -1]])
    rates = maxmin_rates(links, np.array([1.0, 1.0]))
    assert rates.tolist() == pytest.approx([1 / 3, 2 / 3, 1 / 3, 1 / 3])


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(1, 6), st.integers(0, 10_000))
def test_maxmin_is_feasible_and_every_flow_has_a_saturated_bottleneck(F, L, seed):
    rng = np.random.default_rng(seed)
    H = 3
    links = rng.integers(-1, L, size=(F, H))
    links[:, 0] = rng.integers(0, L, size=F)
    for row in links:  # a route never crosses the same directed link twice
        for j in range(1, H):
            if row[j] in row[:j]:
                row[j] = -1
    cap = rng.uniform(1.0, 10.0, size=L)
    rate = maxmin_rates(links, cap)
    load = np.zeros(L)
    for f in range(F):
        for lk in set(links[f][links[f] >= 0].tolist()):
            load[lk] += rate[f]
    assert np.all(load <= cap * (1 + 1e-9))
    for f in range(F):
        mine = set(links[f][links[f] >= 0].tolist())
        # some link of the flow is saturated and no flow on it has a higher rate
        ok = False
        for lk in mine:
            users = [g for g in range(F) if lk in set(links[g].tolist())]
            if load[lk] >= cap[lk] * (1 - 1e-9) and rate[f] >= max(rate[users]) * (1 - 1e-9):
                ok = True
        assert ok


def test_flow_network_rates_change_when_a_flow_ends():
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([1e9]))
    done = {}
    for name, size in (("small", 1e9), ("big", 3e9)):
        ev = net.transfer(np.array([0]), size, 0.0)
        ev.callbacks.append(lambda _e, n=name: done.__setitem__(n, env.now))
    env.run()
    # both at 0.5 GB/s until small ends at 2 s, then big alone: 2 GB left at 1 GB/s
    assert done["small"] == pytest.approx(2.0)
    assert done["big"] == pytest.approx(4.0)


def test_flow_network_latency_and_empty_messages():
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([2e9, 1e9]))
    times = []
    net.transfer(np.array([0, 1]), 1e9, 1e-3).callbacks.append(lambda _e: times.append(env.now))
    net.transfer(np.array([-1]), 5e9, 2e-3).callbacks.append(lambda _e: times.append(env.now))
    env.run()
    assert times == pytest.approx([1.001, 2e-3][::-1]) or times == pytest.approx([2e-3, 1.001])


def test_rate_recorder_sees_link_loads():
    seen = []
    env = simpy.Environment()
    net = FlowNetwork(env, np.array([4.0, 4.0]), on_rates=lambda t, r: seen.append((t, r.copy())))
    net.transfer(np.array([0, 1]), 4.0, 0.0)
    net.transfer(np.array([0]), 4.0, 0.0)
    env.run()
    assert seen[0][1].tolist() == [4.0, 2.0]
