"""The transformer layout simulated as events (simulator/training/pipeline*.py, issue 29).

Against ``predict`` where the two should agree (no noise, nothing shared, Selene's
non-blocking rail-optimised tree), against the flow model for the shortcuts the
simulation takes (groups alone, the tp ranks' flows bundled), and the contention of
groups that share links on a tapered tree.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.machine.hardware import FatTree
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.simulator.training.pipeline import simulate_pipeline
from dlscale.simulator.training.pipeline_schedule import (
    BACKWARD,
    FORWARD,
    producer,
    stage_order,
)
from dlscale.validation.megatron_selene import SELENE as _SELENE

#: Selene without the GPUs' rate spread (noise none): these tests hold the simulation
#: to the closed form and to the flow model exactly; the spread's agreement in
#: expectation is tests/test_llm_spread.py's
SELENE = dataclasses.replace(_SELENE, noise="none")
M39 = get_llm("gpt-39.1b")
M17 = get_llm("gpt-1.7b")


@pytest.mark.parametrize("schedule,v", [("gpipe", 1), ("1f1b", 1), ("interleaved", 2),
                                        ("interleaved", 3)])
def test_every_stage_runs_every_pass_once_after_its_input(schedule, v):
    p, m = 4, 8
    orders = [stage_order(schedule, s, p, m, v) for s in range(p)]
    for s, ops in enumerate(orders):
        assert len(ops) == len(set(ops)) == 2 * m * v
        pos = {op: i for i, op in enumerate(ops)}
        for op in ops:
            if op[0] == BACKWARD:
                assert pos[(FORWARD, op[1], op[2])] < pos[op]
            prod = producer(op, s, p, v)
            if prod is not None:
                assert prod[1] in orders[prod[0]]
    # Megatron's 1F1B warm-up: p - s - 1 forwards, then one more before the first backward
    if schedule == "1f1b":
        firsts = [next(i for i, op in enumerate(o) if op[0] == BACKWARD) for o in orders]
        assert firsts == [p - s for s in range(p)]


def _close(res, tol):
    assert res.iteration_s == pytest.approx(res.analytical.iteration_s, rel=tol), (
        res.iteration_s, res.analytical.iteration_s)


@pytest.mark.parametrize("lay,tol", [
    # one pipeline, nothing shared: the simulated schedule is the closed form's slots
    (ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=16, recompute="full"), 0.001),
    (ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=16, schedule="gpipe"), 0.001),
    # interleaved: predict charges the fill and drain (p - 1) / v full slots, transfers
    # and all-gathers included; the simulated fill has fewer of them
    (ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=16, schedule="interleaved",
                    virtual=2), 0.01),
    (ParallelLayout(tp=2, pp=4, dp=1, micro=1, global_batch=8), 0.001),
    # without tensor parallelism (no all-gather after a hand-over): a pass still waits
    # for its input (a defect: it did not, and the pipeline had no bubble)
    (ParallelLayout(tp=1, pp=4, dp=2, micro=1, global_batch=8), 0.001),
    # with data parallelism: the routed ring against the closed form's ring with a
    # share of the NIC; the simulated exchange overlaps the last backward pass as
    # predict's (bwd + tp) / v does, and its last pass carries the extras
    (ParallelLayout(tp=8, pp=4, dp=2, micro=1, global_batch=32, recompute="full",
                    dp_overlap=False), 0.005),
    (ParallelLayout(tp=4, pp=8, dp=2, micro=2, global_batch=64, schedule="interleaved",
                    virtual=3, zero=1), 0.01),
    (ParallelLayout(tp=8, pp=1, dp=4, micro=1, global_batch=16, sp=True), 0.02),
])
def test_simulation_agrees_with_predict_where_nothing_is_shared(lay, tol):
    _close(simulate_pipeline(SELENE, M39, lay), tol)


def _tree(up: int):
    topo = FatTree(levels=2, nodes_per_leaf=2, down_up=((2, up),), max_nodes=16, rails=8)
    return dataclasses.replace(SELENE, network=dataclasses.replace(SELENE.network,
                                                                   topology=topo))


LAY = ParallelLayout(tp=8, pp=4, dp=2, micro=8, global_batch=64)


def test_groups_sharing_a_tapered_tree_slow_each_other():
    # the two replicas of a stage sit on one leaf and send to the next leaf at once:
    # with one uplink per rail instead of two they share it
    full = simulate_pipeline(_tree(2), M17, LAY)
    tapered = simulate_pipeline(_tree(1), M17, LAY)
    assert full.groups_met == 0 and tapered.groups_met > 0
    assert tapered.iteration_s > full.iteration_s * 1.005
    assert tapered.pipeline_s > full.pipeline_s


def _deliveries(res):
    return sorted(res.log)


@pytest.mark.parametrize("cluster,model,lay", [
    (_tree(1), M17, LAY), (_tree(2), M17, LAY),
    # forward and backward messages into one node meet there while one of them is
    # half through: what is left of it moves into the flow model
    (SELENE, M39, ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=16,
                                 schedule="interleaved", virtual=2)),
])
def test_groups_alone_take_what_the_flow_model_gives_them(cluster, model, lay):
    a = simulate_pipeline(cluster, model, lay, keep_log=True)
    b = simulate_pipeline(cluster, model, lay, every_flow=True, keep_log=True)
    assert a.iteration_s == pytest.approx(b.iteration_s, rel=1e-9)
    assert np.allclose(a.stage_end_s, b.stage_end_s, rtol=1e-9)
    da, db = np.asarray(_deliveries(a)), np.asarray(_deliveries(b))
    assert da.shape == db.shape and np.array_equal(da[:, 0], db[:, 0])
    assert np.allclose(da[:, 1:], db[:, 1:], rtol=1e-9, atol=1e-12)


def test_bundled_tensor_ranks_change_no_rate():
    lay = ParallelLayout(tp=8, pp=4, dp=2, micro=2, global_batch=32)
    a = simulate_pipeline(_tree(1), M17, lay)
    b = simulate_pipeline(_tree(1), M17, lay, bundle=False, every_flow=True)
    assert a.bundled and not b.bundled
    assert a.iteration_s == pytest.approx(b.iteration_s, rel=1e-9)


def test_noise_is_seeded_and_slows_the_iteration():
    lay = ParallelLayout(tp=8, pp=4, dp=2, micro=1, global_batch=32)
    quiet = simulate_pipeline(SELENE, M39, lay)
    a = simulate_pipeline(SELENE, M39, lay, noise="lognormal:0.1", seed=1)
    b = simulate_pipeline(SELENE, M39, lay, noise="lognormal:0.1", seed=1)
    c = simulate_pipeline(SELENE, M39, lay, noise="lognormal:0.1", seed=2)
    assert a.iteration_s == b.iteration_s and np.array_equal(a.stage_end_s, b.stage_end_s)
    assert c.iteration_s != a.iteration_s
    assert min(a.iteration_s, c.iteration_s) > quiet.iteration_s


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_the_zero_stages_exchange_as_predict_prices_them(zero, precision):
    # after the flush (no overlap): the routed rings on the non-blocking tree are the
    # closed form's; ZeRO 2's reduce-scatter after every microbatch, ZeRO 3's gathers
    # before every pass; bf16 reduces fp32 gradients and gathers 16-bit weights
    lay = ParallelLayout(tp=8, pp=1, dp=4, micro=1, global_batch=16, zero=zero,
                         dp_overlap=False, precision=precision)
    _close(simulate_pipeline(SELENE, get_llm("gpt-7.5b"), lay), 1e-6)


def test_bundling_only_where_no_device_link_can_limit_a_flow():
    from dlscale.simulator.network import SimulatedNetwork
    from dlscale.simulator.training.pipeline_net import bundling_exact

    net = SimulatedNetwork.from_cluster(SELENE, 4)
    assert bundling_exact(net, np.array([[0, 8], [8, 16]]))
    assert not bundling_exact(net, np.array([[0, 8], [0, 1]]))     # one stays in its node
    link = dataclasses.replace(SELENE.node.intra_link, bandwidth_Bps=100e9)  # < 8 x 25 GB/s
    slow = dataclasses.replace(SELENE, node=dataclasses.replace(SELENE.node, intra_link=link))
    assert not bundling_exact(SimulatedNetwork.from_cluster(slow, 4), np.array([[0, 8]]))
    lay = ParallelLayout(tp=8, pp=4, dp=1, micro=1, global_batch=8)
    assert not simulate_pipeline(slow, M17, lay).bundled


def test_the_slowdown_beside_the_hidden_exchange_is_charged_and_traced():
    # the exchange hides behind the last backward pass (pp 1): the compute beside it
    # runs slower by the runtime's 18.9 %, predict's closed form, charged and shown
    lay = ParallelLayout(tp=8, pp=1, dp=4, micro=1, global_batch=16)
    res = simulate_pipeline(SELENE, M39, lay, trace=True)
    a = res.analytical
    beside = 0.189 * (a.dp_comm_s - a.dp_exposed_s)
    assert beside > 0
    slices = [e for e in res.trace["traceEvents"]
              if e.get("name") == "compute slowed beside the exchange"]
    assert slices and all(e["dur"] == pytest.approx(beside * 1e6, rel=1e-9) for e in slices)
    _close(res, 0.02)
