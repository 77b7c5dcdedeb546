"""The compiled critical path equals the numpy walk of the rank clocks, bit for bit.

``stepcost.critical_path_s`` and ``netmodel.time_per_node_count`` price plans that
keep each message's loads with the compiled walk of ``perfmodel.network.chainwalk`` (one call
for a whole curve of node counts); ``stepcost.walk_s`` is the reference: the rank
clocks advanced step by step by ``rendezvous.advance_clocks``, as before.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, FatTree, Torus
from dlscale.perfmodel.network.chainwalk import ChainSteps, longest_chains
from dlscale.perfmodel.network.model import (
    collective_time_s,
    limiting_level,
    limiting_levels,
    time_per_node_count,
)
from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS
from dlscale.perfmodel.network.plan import plan_collective, plan_key
from dlscale.perfmodel.network.schedules import ALGORITHMS
from dlscale.perfmodel.network.stepcost import critical_path_s, device_links, walk_s

SUMMIT = get_cluster("summit")
#: one machine per topology family the plan tests use
MACHINES = {
    "fat-tree": SUMMIT,
    "tapered-fat-tree": get_cluster("stampede2-knl"),
    "tapered-2to1": dataclasses.replace(SUMMIT, network=dataclasses.replace(
        SUMMIT.network, topology=FatTree(3, 18, ((18, 9), (18, 18)), 4608, rails=2))),
    "dragonfly": get_cluster("cori-knl"),
    "torus": dataclasses.replace(SUMMIT, network=dataclasses.replace(
        SUMMIT.network, topology=Torus((4, 4, 3)))),
    "crossbar": dataclasses.replace(SUMMIT, network=dataclasses.replace(
        SUMMIT.network, topology=Crossbar(64))),
}
#: (collective, algorithm, inter algorithm) whose plans can keep per-message loads
SCHEDULES = [("allreduce", "recursive-doubling", "ring"), ("allreduce", "binomial-tree", "ring"),
             ("allreduce", "rabenseifner", "ring"),
             ("allreduce", "hierarchical", "recursive-doubling"),
             ("allreduce", "hierarchical", "binomial-tree"), ("broadcast", "binomial", "ring"),
             ("reduce", "binomial", "ring")]
NODES = (2, 3, 5, 12, 36)


def _machine(name: str, rng: np.random.Generator, factors: bool):
    """A preset with random link speeds and latencies (and per-size factors or none)."""
    c = MACHINES[name]
    s = lambda: float(rng.uniform(0.2, 5.0))   # noqa: E731
    node = dataclasses.replace(
        c.node, nic=dataclasses.replace(c.node.nic, bandwidth_Bps=c.node.nic.bandwidth_Bps * s(),
                                        latency_s=c.node.nic.latency_s * s()),
        intra_link=dataclasses.replace(c.node.intra_link, latency_s=c.node.intra_link.latency_s
                                       * s(), bandwidth_Bps=c.node.intra_link.bandwidth_Bps * s()))
    net = dataclasses.replace(
        c.network, hop_latency_s=c.network.hop_latency_s * s(),
        link=dataclasses.replace(c.network.link, bandwidth_Bps=c.network.link.bandwidth_Bps * s()),
        message_factors=MESSAGE_FACTORS["smpi-default"] if factors else None)
    return dataclasses.replace(c, node=node, network=net)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(MACHINES)), st.sampled_from(SCHEDULES),
       st.sampled_from(NODES), st.integers(1, 6), st.booleans(), st.integers(0, 2**32 - 1))
def test_the_compiled_walk_equals_the_numpy_walk(name, schedule, nodes, rpn, factors, seed):
    rng = np.random.default_rng(seed)
    cluster = _machine(name, rng, factors)
    nodes = min(nodes, cluster.max_nodes)
    collective, algorithm, inter = schedule
    assume(nodes * rpn >= 2)
    dev = device_links(cluster, rpn)
    plan = plan_collective(plan_key(cluster), nodes, rpn, dev, collective, algorithm,
                           inter)
    assume(plan.flows is not None)
    sizes = np.concatenate([[0.0], 10 ** rng.uniform(0, 9, 4)])
    gamma = float(rng.choice([0.0, rng.uniform(1e-12, 1e-9)]))
    fresh = dataclasses.replace(plan)                       # no memo: priced here
    np.testing.assert_array_equal(critical_path_s(cluster, fresh, sizes, gamma),
                                  walk_s(cluster, plan, sizes, gamma))


@pytest.mark.parametrize("name", sorted(MACHINES))
@pytest.mark.parametrize("algorithm", ["recursive-doubling", "binomial-tree", "rabenseifner"])
def test_a_curve_priced_at_once_equals_each_node_count_walked(name, algorithm):
    rng = np.random.default_rng(len(name) * 7 + len(algorithm))
    cluster = _machine(name, rng, factors=name == "fat-tree")
    nodes = [n for n in (1, 2, 3, 5, 12, 36) if n <= cluster.max_nodes]
    sizes = np.array([[8.0], [3e5], [3e5], [1e8]])      # two buckets of one size
    gamma = rng.uniform(1e-12, 1e-10, len(nodes))
    got = time_per_node_count(cluster, "allreduce", algorithm, sizes, nodes, 3, gamma)
    dev = device_links(cluster, 3)
    walked = 0
    for j, nd in enumerate(nodes):
        plan = plan_collective(plan_key(cluster), nd, 3, dev, "allreduce", algorithm)
        if plan.flows is not None:
            np.testing.assert_array_equal(got[:, j], walk_s(cluster, plan, sizes[:, 0],
                                                            float(gamma[j])))
            walked += 1
    assert walked >= 3


def test_node_counts_listed_twice_keep_their_own_sizes_and_reduction_costs():
    # the baseline's one node is listed again in predict; here each copy has its own
    cluster = _machine("torus", np.random.default_rng(5), factors=True)
    nodes = [3, 5, 3, 12, 5, 1]
    sizes = np.array([[1e3, 2e6, 5e7, 8.0, 2e6, 4e4], [3e8, 3e8, 3e8, 3e8, 3e8, 3e8]])
    gamma = np.array([1e-11, 2e-11, 3e-11, 1e-11, 2e-11, 0.0])
    got = time_per_node_count(cluster, "allreduce", "binomial-tree", sizes, nodes, 3, gamma)
    dev = device_links(cluster, 3)
    walked = 0
    for j, nd in enumerate(nodes):
        plan = plan_collective(plan_key(cluster), nd, 3, dev, "allreduce",
                               "binomial-tree")
        if plan.flows is not None:
            np.testing.assert_array_equal(got[:, j], walk_s(cluster, plan, sizes[:, j],
                                                            float(gamma[j])))
            walked += 1
    assert walked == 5           # all but one node, both copies of 3 and of 5


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_the_pipelined_tree_of_a_curve_equals_each_node_count_alone(name):
    cluster = _machine(name, np.random.default_rng(len(name)), factors=name == "torus")
    nodes = [n for n in (1, 2, 3, 5, 12, 36) if n <= cluster.max_nodes]
    sizes = np.array([[8.0], [3e4], [1e8]])          # short pipelines and full ones
    got = time_per_node_count(cluster, "allreduce", "double-binary-tree", sizes, nodes, 3,
                              1e-11)
    for j, nd in enumerate(nodes):
        one = collective_time_s(cluster, "allreduce", "double-binary-tree", sizes[:, 0], nd, 3,
                                1e-11)
        np.testing.assert_array_equal(got[:, j], one)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_limiting_levels_of_a_curve_are_each_node_counts_own(name):
    cluster = _machine(name, np.random.default_rng(len(name) + 1), factors=False)
    nodes = [n for n in (1, 2, 3, 5, 12, 36, 2) if n <= cluster.max_nodes]
    for rpn in (1, 4):
        for algorithm in ALGORITHMS["allreduce"]:
            got = limiting_levels(cluster, "allreduce", [algorithm] * len(nodes), nodes, rpn)
            assert got == [limiting_level(cluster, "allreduce", algorithm, nd, rpn)
                           for nd in nodes], (algorithm, rpn)
    mixed = ["ring", "", "recursive-doubling", "double-binary-tree", "ring", "", "ring"]
    got = limiting_levels(cluster, "allreduce", mixed[:len(nodes)], nodes, 3)
    assert got == [limiting_level(cluster, "allreduce", a, nd, 3) if a else ""
                   for a, nd in zip(mixed[:len(nodes)], nodes, strict=True)]


def test_the_kernel_checks_its_packing_before_any_work():
    i = lambda *v: np.array(v, dtype=np.int64)   # noqa: E731
    m = lambda *v: np.array(v, dtype=np.int32)   # noqa: E731
    with pytest.raises(ValueError, match="src, dst"):
        ChainSteps(i(2), i(0, 1), i(0, 1), i(0), i(-1), m(0), m(2), m(0), np.zeros(0), 1)
    with pytest.raises(ValueError, match="step_msgs"):
        ChainSteps(i(2), i(0, 1), i(0, 2), i(0), i(-1), m(0), m(1), m(0), np.zeros(0), 1)
    with pytest.raises(TypeError, match="recv"):
        ChainSteps(i(2), i(0, 1), i(0, 1), i(0), i(-1), m(0), m(1), m(0), [], 1)
    with pytest.raises(ValueError, match="back"):
        ChainSteps(i(2), i(0, 1), i(0, 1), i(0), i(-1), m(0), m(1), m(0), np.zeros(0), 1, m(3))
    steps = ChainSteps(i(2), i(0, 1), i(0, 1), i(0), i(-1), m(0), m(1), m(0), np.zeros(0), 1)
    with pytest.raises(ValueError, match="cost, scale"):
        longest_chains(steps, np.ones((1, 2)), np.zeros((1, 1)))
    assert longest_chains(steps, np.array([[2.5]]), np.zeros((1, 1))).tolist() == [[2.5]]


def test_exchanges_are_walked_as_one_record_each():
    # recursive doubling: every pair exchanges; the packing folds a <-> b into one
    # record (the walk above holds the result to the numpy walk)
    plan = plan_collective(SUMMIT.network.topology, 5, 6, True, "allreduce",
                           "recursive-doubling")
    assert plan.flows is not None
    packed = plan.packed()
    assert packed is not None
    messages = sum(len(st.src) for st in plan.flows)
    folded = int((packed.steps.back >= 0).sum())
    assert folded > messages / 4                 # most steps are pairwise exchanges
    assert len(packed.steps.src) == messages - folded
