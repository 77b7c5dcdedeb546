"""The pairwise-exchange all-to-all (MPICH's ``MPIR_Alltoall_intra_pairwise``).

Held against a reference written here from MPICH's description (p - 1 steps, XOR
partners for a power of two, ``r + i`` otherwise; every block moved once) and
against the Hockney closed form on a machine without contention.
"""

from __future__ import annotations

import numpy as np
import pytest

from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.network.analytical import AnalyticalNetwork
from dlscale.perfmodel.network.collectives import alltoall_s
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.perfmodel.network.schedules import build_schedule


def _reference_exchange(p: int) -> list[set[tuple[int, int]]]:
    """MPICH's pairs, step by step (the loop of alltoall_intra_pairwise.c)."""
    pof2 = (p & (p - 1)) == 0
    steps = []
    for i in range(1, p):
        steps.append({(r, (r ^ i) if pof2 else (r + i) % p) for r in range(p)})
    return steps


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8, 13])
def test_schedule_is_mpich_pairwise_exchange(p):
    phases = build_schedule("alltoall", "pairwise", p, 1200.0)
    got = [set(zip(ph.src.tolist(), ph.dst.tolist(), strict=True)) for ph in phases]
    assert got == _reference_exchange(p)
    # every ordered pair of distinct ranks exactly once, n / p bytes each
    pairs = [pair for step in got for pair in step]
    assert sorted(pairs) == sorted((a, b) for a in range(p) for b in range(p) if a != b)
    assert all(np.all(ph.nbytes == 1200.0 / p) for ph in phases)
    assert not any(ph.reduce for ph in phases)


def _cluster(devices: int = 1) -> Cluster:
    dev = Device("c", "cpu", 24, 2e9, 1e12, 2e12, 2e12, 96e9, 100e9, 0.5)
    node = NodeSpec("n", dev, devices, Link("shm", 20e9, 0.5e-6), Link("ib", 1e9, 1e-6))
    return Cluster("t", node, NetworkSpec("net", Crossbar(16), Link("l", 1e9, 0.0),
                                          hop_latency_s=0.0))


@pytest.mark.parametrize("p", [2, 4, 5, 8])
def test_time_on_a_crossbar_is_the_hockney_form(p):
    """One rank per node on a crossbar: no two messages share a link, so each of the
    p - 1 steps costs alpha + n / p beta, the closed form."""
    c = _cluster()
    n = 8e6
    t = collective_time_s(c, "alltoall", "pairwise", n, p, 1)
    # one device per node: the rank is the host, the NIC latency alone
    assert t == pytest.approx(alltoall_s(n, p, 1e-6, 1 / 1e9), rel=1e-12)
    assert AnalyticalNetwork(c).collective_s("alltoall", n, p) == pytest.approx(t, rel=1e-12)


def test_shared_nic_slows_the_exchange():
    """Four ranks per node: the steps whose partners sit on the other node put four
    messages on each NIC, so the exchange over two nodes takes longer than the same
    ranks one per node."""
    n = 8e6
    spread = collective_time_s(_cluster(1), "alltoall", "pairwise", n, 8, 1)
    packed = collective_time_s(_cluster(4), "alltoall", "pairwise", n, 2, 4)
    assert packed > spread


def test_closed_form_checks_its_arguments():
    assert alltoall_s(1e6, 1, 1e-6, 1e-9) == 0.0
    with pytest.raises(Exception, match="n_bytes"):
        alltoall_s(-1.0, 4, 1e-6, 1e-9)


@pytest.mark.parametrize("mode", ["fast"])
def test_the_simulator_routes_the_same_exchange(mode):
    """The routed simulation runs the same phases: on a crossbar of one-rank nodes no
    two messages share a link, so it agrees with the closed form."""
    from dlscale.simulator.network import SimulatedNetwork

    c = _cluster()
    net = SimulatedNetwork.from_cluster(c, 8, mode=mode)
    res = net.simulate("alltoall", 8e6, 8)
    assert res.algorithm == "pairwise" and len(res.step_labels) == 7
    assert res.time_s == pytest.approx(collective_time_s(c, "alltoall", "pairwise", 8e6, 8, 1),
                                       rel=1e-6)
