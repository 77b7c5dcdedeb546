"""The expert-parallel all-to-alls simulated as events (simulator/training/pipeline_expert.py).

Against ``predict`` where nothing is shared (Selene's non-blocking rail-optimised
tree, a DGX H100 node), the contention of expert groups that share a tapered tree's
uplinks, the data-parallel rings split as predict splits them, and the command.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dlscale.api import load_cluster, simulate_transformer
from dlscale.cli import main
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.machine.hardware import FatTree
from dlscale.perfmodel.training.parallel import ParallelLayout
from dlscale.simulator.training.pipeline import simulate_pipeline
from dlscale.validation.megatron_selene import SELENE as _SELENE

MOE = get_llm("mixtral-8x7b")
#: the machines without the GPUs' rate spread (noise none): these tests hold the
#: simulation to the closed form exactly (the spread: tests/test_llm_spread.py)
SELENE = dataclasses.replace(_SELENE, noise="none")
H100 = dataclasses.replace(load_cluster("dgx-h100-superpod"), noise="none")


def _tree(up: int):
    topo = FatTree(levels=2, nodes_per_leaf=2, down_up=((2, up),), max_nodes=16, rails=8)
    return dataclasses.replace(SELENE, network=dataclasses.replace(SELENE.network,
                                                                   topology=topo))


@pytest.mark.parametrize("cluster,lay,tol", [
    # inside one node: the pairwise steps on NVSwitch at NCCL's rate, as predict
    (H100, ParallelLayout(dp=8, ep=8, global_batch=8), 0.001),
    (H100, ParallelLayout(dp=8, ep=2, global_batch=8, recompute="full"), 0.001),
    # across nodes (ep x tp = 32 GPUs on 4 nodes), tensor ranks bundled per rail
    (SELENE, ParallelLayout(tp=8, dp=4, ep=4, global_batch=4), 0.001),
    # half the group inside a node, half across; with a pipeline
    (SELENE, ParallelLayout(tp=4, dp=4, ep=4, global_batch=4), 0.001),
    (SELENE, ParallelLayout(tp=8, pp=2, dp=4, ep=4, global_batch=16), 0.005),
    # two expert groups per stage and the experts' own data-parallel ring
    (SELENE, ParallelLayout(tp=8, dp=8, ep=4, global_batch=8), 0.01),
])
def test_simulation_agrees_with_predict_where_nothing_is_shared(cluster, lay, tol):
    res = simulate_pipeline(cluster, MOE, lay)
    # the all-to-alls weigh more than the tolerance: leaving them out would fail
    assert res.analytical.ep_comm_s > 2 * tol * res.analytical.iteration_s
    assert res.iteration_s == pytest.approx(res.analytical.iteration_s, rel=tol), (
        res.iteration_s, res.analytical.iteration_s)


def test_the_all_to_alls_are_events_forward_and_backward_per_layer():
    lay = ParallelLayout(dp=4, ep=4, global_batch=4)
    res = simulate_pipeline(H100, MOE, lay)
    # per replica: 32 layers x 4 all-to-alls x 3 pairwise steps, one group each; the
    # one dense ring of 2 (p - 1) steps
    assert res.groups_sent == 4 * (32 * 4 * 3 + 2 * 3)
    full = simulate_pipeline(H100, MOE, dataclasses.replace(lay, recompute="full"))
    assert full.groups_sent == 4 * (32 * 6 * 3 + 2 * 3)


def test_expert_groups_sharing_a_tapered_tree_slow_each_other():
    # the four replicas of an expert group sit on two leaves; the steps between
    # leaves send every rail's two nodes' messages up at once: one uplink per rail
    # instead of two halves their rate
    lay = ParallelLayout(tp=8, dp=4, ep=4, global_batch=4)
    full, tapered = simulate_pipeline(_tree(2), MOE, lay), simulate_pipeline(_tree(1), MOE, lay)
    assert full.groups_met == 0 and tapered.groups_met > 0
    assert full.iteration_s == pytest.approx(full.analytical.iteration_s, rel=1e-3)
    assert tapered.iteration_s > full.iteration_s * 1.1


@pytest.mark.parametrize("cluster,lay", [
    (_tree(1), ParallelLayout(tp=8, dp=4, ep=4, global_batch=4)),
    (SELENE, ParallelLayout(tp=4, dp=4, ep=4, global_batch=4)),
])
def test_groups_alone_take_what_the_flow_model_gives_them(cluster, lay):
    a = simulate_pipeline(cluster, MOE, lay, keep_log=True)
    b = simulate_pipeline(cluster, MOE, lay, every_flow=True, keep_log=True)
    c = simulate_pipeline(cluster, MOE, lay, bundle=False)
    assert a.iteration_s == pytest.approx(b.iteration_s, rel=1e-9)
    assert a.iteration_s == pytest.approx(c.iteration_s, rel=1e-9)
    da, db = np.asarray(sorted(a.log)), np.asarray(sorted(b.log))
    assert da.shape == db.shape and np.array_equal(da[:, 0], db[:, 0])
    assert np.allclose(da[:, 1:], db[:, 1:], rtol=1e-9, atol=1e-12)


def test_more_expert_parallelism_moves_the_simulated_iteration():
    one = simulate_pipeline(H100, MOE, ParallelLayout(dp=8, ep=1, global_batch=8))
    two = simulate_pipeline(H100, MOE, ParallelLayout(dp=8, ep=2, global_batch=8))
    eight = simulate_pipeline(H100, MOE, ParallelLayout(dp=8, ep=8, global_batch=8))
    assert len({one.iteration_s, two.iteration_s, eight.iteration_s}) == 3
    assert one.groups_sent < two.groups_sent < eight.groups_sent


def test_noise_is_seeded():
    lay = ParallelLayout(dp=8, ep=4, global_batch=8)
    a = simulate_pipeline(H100, MOE, lay, noise="lognormal:0.05", seed=3)
    b = simulate_pipeline(H100, MOE, lay, noise="lognormal:0.05", seed=3)
    quiet = simulate_pipeline(H100, MOE, lay)
    assert a.iteration_s == b.iteration_s and np.array_equal(a.stage_end_s, b.stage_end_s)
    assert a.iteration_s > quiet.iteration_s


def test_the_command_simulates_ep(capsys, tmp_path):
    out = tmp_path / "rows.json"
    argv = ["simulate", "dgx-h100-superpod", "mixtral-8x7b", "--nodes", "1", "--ep", "4",
            "--noise", "none", "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert ", ep 4," in text
    row = json.loads(out.read_text())["rows"][0]
    want = simulate_transformer("dgx-h100-superpod", "mixtral-8x7b", 1, ep=4,
                                noise="none").rows[0]
    assert row["ep"] == 4 and row["iteration_s"] == want["iteration_s"]
    assert row["iteration_s"] == pytest.approx(row["analytical_s"], rel=1e-3)


@pytest.mark.parametrize("kw,field", [({"ep": 0}, "ep"), ({"ep": 3}, "parallel.ep"),
                                      ({"ep": True}, "ep")])
def test_bad_ep_is_one_line(kw, field):
    from dlscale.perfmodel.errors import ConfigError

    with pytest.raises(ConfigError, match=field):
        simulate_transformer("dgx-h100-superpod", "mixtral-8x7b", 1, **kw)
