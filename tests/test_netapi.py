"""The NetworkModel protocol and its analytical implementation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_runtime
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.machine.runtime import mpich_short
from dlscale.perfmodel.network import collectives as cf
from dlscale.perfmodel.network.analytical import (
    COLLECTIVE_ALGORITHMS,
    AnalyticalNetwork,
    NetworkModel,
)

DEV = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)


def cluster(devices=4):
    node = NodeSpec("n", DEV, devices, Link("nvl", 50e9, 2e-6), Link("ib", 12.5e9, 1e-6))
    return Cluster("x", node, NetworkSpec("net", Crossbar(16), Link("sw", 12.5e9, 1e-6)))


def test_analytical_is_a_network_model():
    assert isinstance(AnalyticalNetwork(cluster()), NetworkModel)


def test_intra_and_inter_node_parameters():
    net = AnalyticalNetwork(cluster(4))
    # 4 ranks fit in one node: NVLink parameters
    assert net.allreduce_s(1e6, 4) == pytest.approx(cf.ring_allreduce_s(1e6, 4, 2e-6, 1 / 50e9))
    # 8 ranks span two nodes: NIC bandwidth, path latency NIC + NVLink (rank behind it)
    assert net.allreduce_s(1e6, 8) == pytest.approx(cf.ring_allreduce_s(1e6, 8, 3e-6, 1 / 12.5e9))
    assert net.allreduce_s(1e6, [0, 4], "recursive-doubling") == pytest.approx(
        cf.recursive_doubling_allreduce_s(1e6, 2, 3e-6, 1 / 12.5e9))
    assert net.transfer_s(0, 1, 1e6) == pytest.approx(2e-6 + 1e6 / 50e9)
    assert net.transfer_s(0, 4, 1e6) == pytest.approx(3e-6 + 1e6 / 12.5e9)
    # one device per node: the rank is the host, NIC latency alone
    assert AnalyticalNetwork(cluster(1)).transfer_s(0, 1, 1e6) == pytest.approx(1e-6 + 1e6 / 12.5e9)


def test_hierarchical_uses_node_counts():
    net = AnalyticalNetwork(cluster(4))
    expect = cf.hierarchical_allreduce_s(1e6, 3, 4, (2e-6, 1 / 50e9), (3e-6, 1 / 12.5e9))
    assert net.allreduce_s(1e6, 12, "hierarchical") == pytest.approx(expect)


def test_every_listed_collective_answers():
    net = AnalyticalNetwork(cluster(1), gamma_s_per_B=1e-11)
    for col, algs in COLLECTIVE_ALGORITHMS.items():
        for alg in algs:
            assert net.collective_s(col, 1e6, 8, alg) > 0
            assert net.collective_s(col, 1e6, 1, alg) == 0.0


def test_errors():
    net = AnalyticalNetwork(cluster(1))
    with pytest.raises(ConfigError, match=r"ranks: must be in 1\.\.16"):
        net.allreduce_s(1e6, 17)
    with pytest.raises(ConfigError, match="allreduce algorithm: unknown name 'rng'"):
        net.allreduce_s(1e6, 4, "rng")
    with pytest.raises(ConfigError, match="collective: unknown name"):
        net.collective_s("scatter", 1e6, 4)
    with pytest.raises(ConfigError, match="gamma_s_per_B"):
        AnalyticalNetwork(cluster(), gamma_s_per_B=-1)


def test_auto_follows_the_runtime_rule():
    """A stack that tunes by its model picks the fastest of its algorithms; an MPICH
    stack follows MPICH's size thresholds (the one rule, :mod:`.autopolicy`)."""
    every = dataclasses.replace(get_runtime("horovod-intel-mpi"),
                                algorithms=tuple(a for a in cf.AUTO_CANDIDATES))
    net = AnalyticalNetwork(dataclasses.replace(cluster(4), runtime=every), gamma_s_per_B=1e-11)
    mpich = AnalyticalNetwork(dataclasses.replace(cluster(4), runtime=get_runtime("mpi")),
                              gamma_s_per_B=1e-11)
    for n in (8.0, 1e4, 1e6, 1e9):
        for p in (2, 4, 8, 12, 64):
            t = {k: net.allreduce_s(n, p, k) for k in COLLECTIVE_ALGORITHMS["allreduce"]
                 if k != "auto"}
            name = net.resolve_allreduce(n, p)
            assert net.allreduce_s(n, p, "auto") == pytest.approx(min(t.values()), rel=1e-12)
            assert t[name] == min(t.values())
            short = bool(mpich_short(np.array([n]), np.array([p]), 4, 2048)[0])
            expect = "recursive-doubling" if short else "rabenseifner"
            assert mpich.resolve_allreduce(n, p) == expect
            assert mpich.allreduce_s(n, p, "auto") == mpich.allreduce_s(n, p, expect)
    with pytest.raises(ConfigError, match=r"valid: .*auto"):
        net.allreduce_s(1e6, 4, "atuo")
