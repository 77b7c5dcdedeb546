import numpy as np
import pytest

from dlscale.perfmodel.contention import effective_beta_s_per_B, hockney_params, topology_factor
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.hardware import (
    Cluster,
    Crossbar,
    Device,
    Dragonfly,
    FatTree,
    Link,
    NetworkSpec,
    NodeSpec,
    Torus,
)

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)


def _cluster(topology, per_node=1, nic_Bps=10e9, link_Bps=10e9):
    node = NodeSpec("n", GPU, per_node, Link("nvlink", 50e9, 2e-6), Link("nic", nic_Bps, 1e-6))
    return Cluster("c", node, NetworkSpec("net", topology, Link("l", link_Bps, 1e-6)))


def test_crossbar_and_non_blocking_tree_have_no_contention():
    assert np.all(topology_factor(Crossbar(100), [2, 100], [1, 50], 10e9, 10e9) == 1)
    ft = FatTree(3, 18, ((18, 18), (18, 18)), 5000, rails=2)
    assert np.all(topology_factor(ft, 4000, [1, 64, 2048], 23e9, 12.5e9) == 1)


def test_tapered_fat_tree_slows_long_steps_only():
    ft = FatTree(2, 28, ((28, 20),), 1736)
    f = topology_factor(ft, 1024, np.array([1, 7, 14, 28, 512]), 12.5e9, 12.5e9)
    assert f.tolist() == pytest.approx([1.0, 1.0, 1.0, 1.4, 1.4])
    # all nodes inside one leaf: nothing crosses the taper
    assert topology_factor(ft, 28, 16, 12.5e9, 12.5e9) == 1.0
    # two tapered levels multiply
    ft2 = FatTree(3, 4, ((4, 2), (4, 2)), 1024)
    assert topology_factor(ft2, 1024, 512, 10e9, 10e9) == pytest.approx(4.0)


def test_dragonfly_minimal_vs_valiant():
    kw = dict(groups=10, routers_per_group=4, terminals_per_router=4, global_links_per_router=2,
              max_nodes=160)
    minimal = Dragonfly(**kw)
    valiant = Dragonfly(**kw, routing="valiant")
    # 16 nodes per group send to one other group over 8/9 links
    assert topology_factor(minimal, 160, 16, 10e9, 10e9) == pytest.approx(16 / (8 / 9))
    assert topology_factor(valiant, 160, 16, 10e9, 10e9) == pytest.approx(2 * 16 / 8)
    assert topology_factor(minimal, 16, 16, 10e9, 10e9) == 1.0


def test_torus_flows_per_link():
    t = Torus((8, 8))
    assert topology_factor(t, 64, [1, 2, 4, 8, 32], 10e9, 10e9).tolist() == [1, 2, 4, 1, 4]


def test_ring_sees_the_slowest_link_and_distance_algorithms_see_the_taper():
    c = _cluster(FatTree(2, 4, ((4, 2),), 64), per_node=4)
    ring = effective_beta_s_per_B(c, "ring", [1, 2, 64], 4)
    assert ring.tolist() == pytest.approx([1 / 50e9, 1e-10, 1e-10])
    rd = effective_beta_s_per_B(c, "recursive-doubling", [1, 64], 4)
    assert rd[0] == pytest.approx(1 / 50e9)
    # 8 steps over 256 ranks: 2 inside the node, then 4 ranks per NIC, x2 taper for the long ones
    assert rd[1] > 4e-10
    assert effective_beta_s_per_B(c, "binomial-tree", [64], 4) == pytest.approx([1e-10])


def test_hockney_params_and_unknown_algorithm():
    c = _cluster(Crossbar(8))
    par = hockney_params(c)
    assert par["inter_alpha_s"] == 1e-6 and par["intra_beta_s_per_B"] == pytest.approx(2e-11)
    with pytest.raises(ConfigError, match=r"allreduce algorithm: unknown name 'hierarchical'"):
        effective_beta_s_per_B(c, "hierarchical", [2], 1)


def test_inter_node_latency_is_the_path_latency():
    # A rank on a multi-device node sits behind the intra-node link: NIC + intra latency.
    c = _cluster(Crossbar(8), per_node=4)
    par = hockney_params(c)
    assert par["nic_alpha_s"] == 1e-6
    assert par["inter_alpha_s"] == pytest.approx(1e-6 + c.node.intra_link.latency_s)
    assert hockney_params(_cluster(Crossbar(8)))["inter_alpha_s"] == 1e-6


@pytest.mark.parametrize(("cluster", "nodes"), [("summit", 2), ("summit", 1), ("cori-knl", 2)])
@pytest.mark.parametrize("n_bytes", [8.0, 1e5, 67e6])
def test_ring_allreduce_closed_form_agrees_with_simulated_fast_mode(cluster, nodes, n_bytes):
    # Same per-message latency (path rule) and bottleneck bandwidth in both fidelities:
    # 12 ranks on two Summit nodes (6 GPUs behind NVLink each), 2 ranks on two Cori KNL
    # nodes (the host is the rank). Before the path rule the closed form charged 0.6 us
    # per inter-node Summit message against the simulator's 3.6 us.
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.perfmodel.collectives import ring_allreduce_s
    from dlscale.simulator.network import SimulatedNetwork

    c = get_cluster(cluster)
    r = c.node.devices_per_node
    par = hockney_params(c)
    alpha = par["inter_alpha_s"] if nodes > 1 else par["intra_alpha_s"]
    beta = float(effective_beta_s_per_B(c, "ring", nodes, r)[0])
    closed = float(ring_allreduce_s(n_bytes, nodes * r, alpha, beta))
    net = SimulatedNetwork.from_cluster(c, nodes, mode="fast")
    assert net.allreduce_s(n_bytes, nodes * r, "ring") == pytest.approx(closed, rel=0.05)
    if nodes > 1:
        assert net.transfer_s(0, nodes * r - 1, 0.0) == pytest.approx(alpha, rel=1e-9)
