"""The compiled flow engine (simulator/network/flowengine.py) gives the SimPy engine's times:
same model, one numba loop with incremental max-min."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import FatTree
from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.network.fastmode import RouteCache
from dlscale.simulator.network.flowmode import run_flow
from dlscale.simulator.network.schedules import build_schedule


def _networks():
    summit = get_cluster("summit")
    tapered = dataclasses.replace(summit, network=dataclasses.replace(
        summit.network, topology=FatTree(3, 18, ((18, 3), (18, 18)), 4608, rails=2)))
    return {
        "summit (2 rails, NVLink)": SimulatedNetwork.from_cluster(summit, 3, mode="flow"),
        "6:1 tapered leaves": SimulatedNetwork.from_cluster(tapered, 20, mode="flow"),
        "cori dragonfly": SimulatedNetwork.from_cluster(get_cluster("cori-knl"), 6, mode="flow"),
        "random placement": SimulatedNetwork.from_cluster(get_cluster("stampede2-knl"), 12,
                                                          mode="flow", placement="random",
                                                          seed=3),
    }


NETS = _networks()


def both(net, phases, ranks, gamma=0.0, factors=None):
    nodes = net.rank_nodes[np.arange(ranks)]
    out = [run_flow(phases, net.table, net.router, nodes, RouteCache(), gamma,
                    factors=factors, engine=e) for e in ("simpy", "compiled")]
    return out


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(NETS)),
       algorithm=st.sampled_from(["ring", "rabenseifner", "recursive-doubling",
                                  "binomial-tree", "double-binary-tree", "hierarchical"]),
       frac=st.floats(0.05, 1.0), n_bytes=st.sampled_from([0.0, 1.0, 3e3, 1e5, 7e6]),
       gamma=st.sampled_from([0.0, 2e-10]), smpi=st.booleans())
def test_compiled_engine_matches_simpy_engine(name, algorithm, frac, n_bytes, gamma, smpi):
    net = NETS[name]
    p = max(1, round(frac * net.max_ranks))
    groups = None
    if algorithm == "hierarchical":  # whole nodes only
        rpn = int(np.sum(net.rank_host == net.rank_host[0]))
        p = max(rpn, p - p % rpn)
        hosts = net.rank_host[:p]
        _, first, inv = np.unique(hosts, return_index=True, return_inverse=True)
        groups = [np.flatnonzero(inv == g) for g in np.argsort(first)]
    phases = build_schedule("allreduce", algorithm, p, n_bytes, groups=groups,
                            segments=3 if algorithm == "double-binary-tree" else 1)
    a, b = both(net, phases, p, gamma, MESSAGE_FACTORS["smpi-default"] if smpi else None)
    assert b["time_s"] == pytest.approx(a["time_s"], rel=1e-9, abs=1e-15)
    np.testing.assert_allclose(b["step_times_s"], a["step_times_s"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b["phase_times_s"], a["phase_times_s"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(b["link_bytes"], a["link_bytes"])


def test_contended_flows_share_links_in_both_engines():
    # two full leaves of a 6:1 tapered Summit: recursive doubling's far steps share the
    # up-links
    summit = get_cluster("summit")
    tapered = dataclasses.replace(summit, network=dataclasses.replace(
        summit.network, topology=FatTree(3, 18, ((18, 3), (18, 18)), 4608, rails=2)))
    net = SimulatedNetwork.from_cluster(tapered, 36, mode="flow")
    phases = build_schedule("allreduce", "recursive-doubling", 216, 8e6)
    a, b = both(net, phases, 216)
    assert b["time_s"] == pytest.approx(a["time_s"], rel=1e-9)
    # and the contention is real: the same pattern on the untapered tree is faster
    full = SimulatedNetwork.from_cluster(summit, 36, mode="flow")
    assert full.allreduce_s(8e6, 216, "recursive-doubling") < 0.8 * b["time_s"]


def test_traces_use_the_simpy_engine_and_agree():
    net = NETS["summit (2 rails, NVLink)"]
    res = net.simulate("allreduce", 1e6, 18, "ring", trace=True)
    plain = net.simulate("allreduce", 1e6, 18, "ring")
    assert res.time_s == pytest.approx(plain.time_s, rel=1e-9)
    assert res.trace["traceEvents"]


def test_unknown_engine_is_refused():
    net = NETS["cori dragonfly"]
    with pytest.raises(ConfigError, match="engine: unknown value 'numba'; valid: auto"):
        run_flow(build_schedule("allreduce", "ring", 4, 1e3), net.table, net.router,
                 net.rank_nodes[:4], RouteCache(), engine="numba")


def test_empty_and_single_rank_schedules():
    net = NETS["cori dragonfly"]
    for p in (1, 2):
        a, b = both(net, build_schedule("allreduce", "ring", p, 0.0), p)
        assert a["time_s"] == b["time_s"]


def test_long_runs_show_progress(monkeypatch):
    import io

    import dlscale.simulator.network.flowwatch as fe

    net = NETS["random placement"]   # shared links: the event loop
    quiet = net.allreduce_s(1e5, 12, "ring")
    err = io.StringIO()              # not a terminal: shown too once the run is long
    monkeypatch.setattr(fe, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(fe, "POLL_WORK", 8)
    monkeypatch.setattr(fe.sys, "stderr", err)
    shown = net.allreduce_s(1e5, 12, "ring")
    assert shown == quiet
    assert "flow mode" in err.getvalue() and "msg" in err.getvalue()
    assert not fe._WATCH  # closed


#: SMPI's factors without its cross-traffic (with it, every message shares its back
#: route's links with a neighbour's: no schedule runs without events).
NO_CROSS = dataclasses.replace(MESSAGE_FACTORS["smpi-default"], cross_traffic=0.0)


def _both_compiled(net, algorithm, p, factors=NO_CROSS):
    from dlscale.simulator.network.flowmode import _run_compiled, prepare_flow
    from dlscale.simulator.network.flowsteps import independent

    nodes = net.rank_nodes[np.arange(p)]
    phases = build_schedule("allreduce", algorithm, p, 3e5, segments=2)
    args = (phases, net.table, net.router, nodes, RouteCache(), 2e-10, factors)
    fast, slow = (_run_compiled(*args, events=e) for e in (False, True))
    sched = prepare_flow(*args)
    alone = independent(sched.msg_off, sched.msg_src, sched.msg_dst, sched.sub_off,
                        sched.sub_msg, sched.sub_links, sched.sub_bytes)
    return fast, slow, alone


@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize("algorithm", ["ring", "rabenseifner", "double-binary-tree"])
def test_steps_without_events_match_the_event_loop(name, algorithm):
    """Where messages cannot meet, the recurrence (flowsteps) gives the event loop's times."""
    net = NETS[name]
    fast, slow, _ = _both_compiled(net, algorithm, net.max_ranks)
    np.testing.assert_allclose(fast["step_times_s"], slow["step_times_s"], rtol=1e-12,
                               atol=1e-15)


def test_shared_links_are_seen():
    # a ring on a linear placement: each link carries one neighbour message, no events
    _, _, alone = _both_compiled(NETS["summit (2 rails, NVLink)"], "ring", 18)
    assert alone
    # with SMPI's cross-traffic a neighbour's message loads the same links in part
    fast, slow, alone = _both_compiled(NETS["summit (2 rails, NVLink)"], "ring", 18,
                                       MESSAGE_FACTORS["smpi-default"])
    assert not alone and fast["time_s"] == slow["time_s"]
    # on a random placement over several leaves, neighbours' messages share up-links
    net = SimulatedNetwork.from_cluster(get_cluster("stampede2-knl"), 96, mode="flow",
                                        placement="random", seed=3)
    fast, slow, alone = _both_compiled(net, "ring", 96)
    assert not alone
    assert fast["time_s"] == slow["time_s"]


def test_a_large_ring_runs_without_events(monkeypatch):
    # 2 x 1,535 steps of 1,536 messages: its cost grew with p^2 in the event loop
    # (issue 27.6), whose messages it no longer runs
    import dlscale.simulator.network.flowmode as fm

    def no_events(*args, **kwargs):
        raise AssertionError("the ring ran through the event loop")

    monkeypatch.setattr(fm, "run_compiled", no_events)
    summit = get_cluster("summit")
    net = SimulatedNetwork.from_cluster(summit, 256, mode="flow")
    flow = net.allreduce_s(1e6, 1536, "ring")
    fast = SimulatedNetwork.from_cluster(summit, 256).allreduce_s(1e6, 1536, "ring")
    assert flow == pytest.approx(fast, rel=0.02)
