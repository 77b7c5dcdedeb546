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
from dlscale.perfmodel.hardware import FatTree
from dlscale.perfmodel.msgfactors import MESSAGE_FACTORS
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
    # two full leaves of a 6:1 tapered Summit: Rabenseifner's far steps share the up-links
    summit = get_cluster("summit")
    tapered = dataclasses.replace(summit, network=dataclasses.replace(
        summit.network, topology=FatTree(3, 18, ((18, 3), (18, 18)), 4608, rails=2)))
    net = SimulatedNetwork.from_cluster(tapered, 36, mode="flow")
    phases = build_schedule("allreduce", "rabenseifner", 216, 8e6)
    a, b = both(net, phases, 216)
    assert b["time_s"] == pytest.approx(a["time_s"], rel=1e-9)
    # and the contention is real: the same pattern on the untapered tree is faster
    full = SimulatedNetwork.from_cluster(summit, 36, mode="flow")
    assert full.allreduce_s(8e6, 216, "rabenseifner") < 0.7 * b["time_s"]


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

    import dlscale.simulator.network.flowengine as fe

    class Tty(io.StringIO):
        def isatty(self):
            return True

    net = NETS["cori dragonfly"]
    quiet = net.allreduce_s(1e5, 6, "ring")
    err = Tty()
    monkeypatch.setattr(fe, "PROGRESS_MESSAGES", 10)
    monkeypatch.setattr(fe, "_TICK", 8)
    monkeypatch.setattr(fe.sys, "stderr", err)
    shown = net.allreduce_s(1e5, 6, "ring")
    assert shown == quiet
    assert "flow mode" in err.getvalue() and "msg" in err.getvalue()
    assert not fe._BAR  # closed
