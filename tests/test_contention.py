import pytest

from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.network.contention import hockney_params

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)


def _cluster(topology, per_node=1, nic_Bps=10e9, link_Bps=10e9):
    node = NodeSpec("n", GPU, per_node, Link("nvlink", 50e9, 2e-6), Link("nic", nic_Bps, 1e-6))
    return Cluster("c", node, NetworkSpec("net", topology, Link("l", link_Bps, 1e-6)))


def test_hockney_params():
    c = _cluster(Crossbar(8))
    par = hockney_params(c)
    assert par["inter_alpha_s"] == 1e-6 and par["intra_beta_s_per_B"] == pytest.approx(2e-11)


def test_inter_node_latency_is_the_path_latency():
    # A rank on a multi-device node sits behind the intra-node link: NIC + intra latency.
    c = _cluster(Crossbar(8), per_node=4)
    par = hockney_params(c)
    assert par["nic_alpha_s"] == 1e-6
    assert par["inter_alpha_s"] == pytest.approx(1e-6 + c.node.intra_link.latency_s)
    assert hockney_params(_cluster(Crossbar(8)))["inter_alpha_s"] == 1e-6
