"""SimulatedNetwork: fast mode held against flow mode, and both against the closed forms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.network import collectives as cf
from dlscale.perfmodel.network.analytical import AnalyticalNetwork, NetworkModel
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.network.trace import write_json_atomic
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, xgft_graph
from dlscale.simulator.topology.torus import torus_graph

DEV = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)

#: The built-in families at small scale (fast vs flow).
TOPOLOGIES = {
    "fat-tree-k4": lambda: fat_tree_graph(4),
    "fat-tree-tapered-2rail": lambda: xgft_graph((4, 4), (2, 2)),
    "dragonfly": lambda: dragonfly_graph(5, 4, 2, 1),
    "torus": lambda: torus_graph((4, 4)),
}
FLAT = ["ring", "recursive-doubling", "rabenseifner", "binomial-tree", "double-binary-tree"]


def crossbar_cluster(devices=1, nodes=64):
    node = NodeSpec("n", DEV, devices, Link("shm", 20e9, 0.5e-6), Link("ib", 12.5e9, 1e-6))
    return Cluster("x", node, NetworkSpec("net", Crossbar(nodes), Link("sw", 12.5e9, 1e-6)))


@pytest.mark.parametrize("topo", list(TOPOLOGIES))
@pytest.mark.parametrize("placement", ["linear", "topology"])
def test_fast_mode_within_5_percent_of_flow_mode(topo, placement):
    """Fast (lock-step, most loaded link) against flow-level max-min, 1 MB allreduce.

    Agreement is within 5% for every algorithm and built-in topology with linear or
    topology-aware placement, except the pipelined double binary tree on the dragonfly
    (fast mode 7.5% slower: it counts the chunks of a step as fully overlapping)."""
    net = SimulatedNetwork(TOPOLOGIES[topo](), placement=placement)
    for alg in FLAT:
        if alg == "double-binary-tree" and topo == "dragonfly":
            continue
        fast = net.simulate("allreduce", 1e6, None, alg, mode="fast").time_s
        flow = net.simulate("allreduce", 1e6, None, alg, mode="flow").time_s
        assert fast == pytest.approx(flow, rel=0.05), alg


@pytest.mark.parametrize("topo", list(TOPOLOGIES))
def test_fast_ring_with_random_placement_within_5_percent(topo):
    net = SimulatedNetwork(TOPOLOGIES[topo](), placement="random", seed=3)
    fast = net.simulate("allreduce", 1e6, None, "ring", mode="fast").time_s
    flow = net.simulate("allreduce", 1e6, None, "ring", mode="flow").time_s
    assert fast == pytest.approx(flow, rel=0.05)


def test_hierarchical_fast_vs_flow_on_cluster():
    net = SimulatedNetwork.from_cluster(crossbar_cluster(devices=4, nodes=8), 8)
    fast = net.simulate("allreduce", 4e6, None, "hierarchical", mode="fast").time_s
    flow = net.simulate("allreduce", 4e6, None, "hierarchical", mode="flow").time_s
    assert fast == pytest.approx(flow, rel=0.05)


@pytest.mark.parametrize("mode", ["fast", "flow"])
@pytest.mark.parametrize("p", [2, 5, 8, 16])
def test_no_contention_agrees_with_closed_form_within_2_percent(mode, p):
    """A crossbar of single-device nodes has no contention: simulation == Hockney."""
    c = crossbar_cluster()
    sim = SimulatedNetwork.from_cluster(c, 16, mode=mode)
    ana = AnalyticalNetwork(c)
    for n in (1e3, 1e6):
        for alg in FLAT:
            tol = 0.03 if alg == "double-binary-tree" else 0.02  # integer vs continuous segments
            if alg == "double-binary-tree" and p < 4:
                continue  # closed form counts D = ceil(log2 p) levels; p = 2, 3 use fewer
            assert sim.allreduce_s(n, p, alg) == pytest.approx(ana.allreduce_s(n, p, alg),
                                                               rel=tol), (alg, n)
        for col in ("reduce-scatter", "allgather", "broadcast", "reduce", "parameter-server"):
            assert sim.collective_s(col, n, p) == pytest.approx(ana.collective_s(col, n, p),
                                                                rel=0.02), col


def test_hierarchical_agrees_with_closed_form():
    c = crossbar_cluster(devices=4, nodes=8)
    net = SimulatedNetwork.from_cluster(c, 8)
    n = 8e6
    # path parameters of the simulated graph: device -> NIC -> switch -> NIC -> device
    intra = (c.node.intra_link.latency_s, 1 / c.node.intra_link.bandwidth_Bps)
    inter = (c.node.nic.latency_s + c.node.intra_link.latency_s, 1 / c.node.nic.bandwidth_Bps)
    closed = cf.hierarchical_allreduce_s(n, 8, 4, intra, inter)
    assert net.allreduce_s(n, 32, "hierarchical") == pytest.approx(closed, rel=0.02)


def test_placement_changes_ring_contention_and_is_seeded():
    G = xgft_graph((4, 4), (1, 1), host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9)
    linear = SimulatedNetwork(G).allreduce_s(16e6, 16)
    rand = [SimulatedNetwork(G, placement="random", seed=s).allreduce_s(16e6, 16) for s in (1, 1, 2)]
    assert rand[0] == rand[1]
    assert min(rand) > 1.5 * linear  # 4:1 tapered leaves: a scattered ring crosses them


def test_torus_topology_placement_beats_linear_on_rings():
    G = torus_graph((4, 4), host_bandwidth_Bps=10e9, link_bandwidth_Bps=1e9)
    topo = SimulatedNetwork(G, placement="topology").allreduce_s(16e6, 16)
    linear = SimulatedNetwork(G, placement="linear").allreduce_s(16e6, 16)
    assert topo < linear


def test_result_fields_and_json():
    net = SimulatedNetwork(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9,
                                          host_latency_s=0.0, hop_latency_s=0.0))
    res = net.simulate("allreduce", 16e6, 16, "ring")
    assert len(res.step_times_s) == 30 and res.step_times_s.sum() == pytest.approx(res.time_s)
    # every host link carries 2 (p-1)/p n bytes each way
    host = res.link_level == "host"
    assert res.link_bytes[host] == pytest.approx(np.full(host.sum(), 30e6))
    top = res.top_links(3)
    assert top[0]["utilisation"] == pytest.approx(1.0)
    json.dumps(res.to_dict())


def test_trace_has_rank_and_link_tracks(tmp_path):
    net = SimulatedNetwork(fat_tree_graph(4))
    for mode in ("fast", "flow"):
        tr = net.simulate("allreduce", 1e6, 16, "rabenseifner", mode=mode, trace=True).trace
        ev = tr["traceEvents"]
        assert {e["tid"] for e in ev if e["ph"] == "X"} == set(range(16))
        assert any(e["ph"] == "C" and e["pid"] == 2 for e in ev)
        path = tmp_path / f"{mode}.json"
        write_json_atomic(tr, path)
        assert json.loads(path.read_text())["otherData"]["mode"] == mode


def test_protocol_and_transfer():
    G = fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9, host_latency_s=1e-6,
                       hop_latency_s=0.0)
    net = SimulatedNetwork(G)
    assert isinstance(net, NetworkModel)
    assert net.transfer_s(0, 15, 1e9) == pytest.approx(1.0 + 2e-6)
    assert net.transfer_s(3, 3, 1e9) == 0.0
    sub = net.allreduce_s(1e6, [0, 5, 10, 15], "recursive-doubling")
    assert sub > 0


def test_bad_input_messages():
    net = SimulatedNetwork(fat_tree_graph(4))
    with pytest.raises(ConfigError, match=r"ranks: must be in 1..16"):
        net.allreduce_s(1e6, 17)
    with pytest.raises(ConfigError, match="ranks: rank ids must be distinct"):
        net.allreduce_s(1e6, [1, 1])
    with pytest.raises(ConfigError, match="mode: unknown name 'slow'"):
        SimulatedNetwork(fat_tree_graph(4), mode="slow")
    with pytest.raises(ConfigError, match=r"placement: unknown name 'lineer'.*did you mean 'linear'"):
        SimulatedNetwork(fat_tree_graph(4), placement="lineer")


@pytest.mark.parametrize("devices", [1, 4])
def test_auto_resolves_with_the_closed_form_and_runs_that_algorithm(devices):
    c = crossbar_cluster(devices, nodes=64 // devices)
    net = SimulatedNetwork.from_cluster(c, 64 // devices, gamma_s_per_B=1e-11)
    ana = AnalyticalNetwork(c, gamma_s_per_B=1e-11)
    seen = set()
    for n in (8.0, 1e9):
        for p in (8, 48, 64):
            res = net.simulate("allreduce", n, p, "auto")
            name = net.resolve_allreduce(n, p)
            assert res.algorithm == name == ana.resolve_allreduce(n, p)
            assert res.time_s == net.simulate("allreduce", n, p, name).time_s
            seen.add(name)
    assert len(seen) >= 2   # tiny and large messages resolve differently
    assert net.allreduce_s(1e9, 64, "auto") == net.allreduce_s(1e9, 64, net.resolve_allreduce(1e9, 64))


def test_auto_uses_the_graphs_point_to_point_parameters():
    net = SimulatedNetwork(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9,
                                          host_latency_s=1e-6, hop_latency_s=1e-7))
    a = net.transfer_s(0, 15, 0.0)
    b = (net.transfer_s(0, 15, 1e9) - a) / 1e9
    for n in np.geomspace(8, 1e9, 9):
        assert net.resolve_allreduce(float(n), 16) == cf.best_allreduce(float(n), 16, a, b)[1]
    with pytest.raises(ConfigError, match=r"allreduce algorithm: unknown name 'atuo'; valid: auto"):
        net.simulate("allreduce", 1e6, 4, "atuo")
    with pytest.raises(ConfigError, match="n_bytes"):
        net.resolve_allreduce(-1.0, 4)


def test_cli_simulate_collective_auto_records_the_algorithm_run(capsys):
    from dlscale.cli import main
    from dlscale.perfmodel.catalog import get_cluster

    assert main(["simulate", "summit", "--nodes", "2", "--collective", "auto",
                 "--size-bytes", "8", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    net = SimulatedNetwork.from_cluster(get_cluster("summit"), 2)
    assert doc["algorithm"] == net.resolve_allreduce(8.0, 12) != "auto"
