"""The rendezvous rule both fidelities advance their rank clocks by."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.perfmodel.network.plan import plan_collective
from dlscale.perfmodel.network.rendezvous import advance_clocks
from dlscale.perfmodel.network.stepcost import plan_time_s


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
def test_the_fast_update_equals_the_general_one_for_pairwise_steps(p, seed):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(p)
    src, dst = perm[: p // 2 * 2: 2], perm[1: p // 2 * 2: 2]
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    clock = rng.random((3, p))
    msg = rng.random((3, len(src)))
    np.testing.assert_array_equal(advance_clocks(clock, src, dst, msg),
                                  advance_clocks(clock, src, dst, msg, distinct=True))


def test_a_message_waits_for_both_ends_and_no_one_else():
    clock = np.array([0.0, 2.0, 5.0])
    out = advance_clocks(clock, np.array([0]), np.array([1]), np.array([1.0]))
    assert out.tolist() == [3.0, 3.0, 5.0]


def test_uneven_steps_cost_their_critical_path_below_the_sum_of_step_maxima():
    # 4 Summit nodes, binomial tree: the subtrees straddle nodes unevenly, so the
    # slowest message of each step lies on different chains of ranks
    summit = get_cluster("summit")
    plan = plan_collective(summit.network.topology, 4, 6, True, "allreduce", "binomial-tree")
    assert plan.flows is not None
    import dataclasses
    bsp = float(plan_time_s(summit, dataclasses.replace(plan, flows=None), 64e6, 0.0))
    path = float(plan_time_s(summit, plan, 64e6, 0.0))
    assert path < 0.95 * bsp
    assert collective_time_s(summit, "allreduce", "binomial-tree", 64e6, 4, 6) == path


def test_a_ring_keeps_the_sum_of_its_steps():
    summit = get_cluster("summit")
    plan = plan_collective(summit.network.topology, 4, 6, True, "allreduce", "ring")
    assert plan.flows is None


def test_a_priced_path_is_kept_per_machine_and_size_and_moves_with_the_links():
    import dataclasses

    summit = get_cluster("summit")
    plan = plan_collective(summit.network.topology, 4, 6, True, "allreduce",
                           "recursive-doubling")
    assert plan.flows is not None
    sizes = np.array([1e3, 1e6, 1e6, 64e6])
    first = plan_time_s(summit, plan, sizes, 0.0)
    again = plan_time_s(summit, plan, sizes, 0.0)            # from the plan's memo
    np.testing.assert_array_equal(first, again)
    fresh = dataclasses.replace(plan)                         # no memo: priced anew
    assert not fresh.priced
    np.testing.assert_array_equal(plan_time_s(summit, fresh, sizes, 0.0), first)
    slow = dataclasses.replace(summit, node=dataclasses.replace(
        summit.node, nic=dataclasses.replace(summit.node.nic,
                                             bandwidth_Bps=summit.node.nic.bandwidth_Bps / 4)))
    assert (plan_time_s(slow, plan, sizes, 0.0)[1:] > first[1:]).all()
    later = dataclasses.replace(summit.node.nic, latency_s=summit.node.nic.latency_s * 10)
    slower = dataclasses.replace(summit, node=dataclasses.replace(summit.node, nic=later))
    assert plan_time_s(slower, plan, sizes, 0.0)[0] > first[0]
    assert plan_time_s(summit, plan, sizes, 1e-9)[-1] > first[-1]      # reduction cost
