"""Without noise, the simulated training agrees with the analytical model (routed network,
the default, unless a test names the analytical one)."""

import dataclasses

import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.machine.hardware import Crossbar, Torus
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.workload import ALGORITHMS
from dlscale.simulator.training.run import simulate_training


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("cluster,workload,nodes", [
    ("cori-knl", "googlenet", 4),       # workers not master-bound
    ("cori-knl", "googlenet", 64),      # master saturated for the async family
    ("summit", "resnet50", 2),          # 12 GPUs, NVLink + EDR
])
def test_iteration_time_within_2_percent(algorithm, cluster, workload, nodes):
    r = simulate_training(get_cluster(cluster), get_workload(workload), nodes,
                          algorithm=algorithm, iterations=40, efficiency=False, noise="none")
    assert r.iteration_s == pytest.approx(r.analytical_iteration_s, rel=0.02)


def test_sync_sgd_agrees_without_overlap_and_graph_aware():
    import dataclasses
    w = dataclasses.replace(get_workload("resnet50"), overlap=False, grouping="graph-aware",
                            fusion_threshold_bytes=4e6)
    r = simulate_training(get_cluster("summit"), w, 3, iterations=3, efficiency=False,
                          network="analytical", noise="none")
    assert r.counters["buckets"] > 10
    assert r.iteration_s == pytest.approx(r.analytical_iteration_s, rel=1e-9)
    # routed (the default network): 18 ranks fold onto 16 for the bit-vector allreduce;
    # both fidelities cost the fold on its critical path through the ranks
    fast = simulate_training(get_cluster("summit"), w, 3, iterations=3, efficiency=False,
                             noise="none")
    assert fast.network == "fast"
    assert fast.iteration_s == pytest.approx(r.iteration_s, rel=1e-6)


def test_sync_easgd_with_tau_and_without_overlap():
    import dataclasses
    w = dataclasses.replace(get_workload("googlenet"), tau=4, overlap=False)
    r = simulate_training(get_cluster("cori-knl"), w, 16, algorithm="sync-easgd",
                          iterations=40, efficiency=False)
    assert r.iteration_s == pytest.approx(r.analytical_iteration_s, rel=1e-9)


def _family(cluster, topology, name):
    return dataclasses.replace(cluster, name=name, network=dataclasses.replace(
        cluster.network, topology=topology))


SUMMIT = get_cluster("summit")
FAMILY_CLUSTERS = {
    "fat-tree": SUMMIT,
    "tapered-fat-tree": get_cluster("stampede2-knl"),
    "dragonfly": get_cluster("cori-knl"),
    "torus": _family(SUMMIT, Torus((4, 4, 4)), "summit-torus"),
    "crossbar": _family(SUMMIT, Crossbar(max_nodes=64), "summit-crossbar"),
}


@pytest.mark.parametrize("family", FAMILY_CLUSTERS)
@pytest.mark.parametrize("algorithm,collective", [("sync-sgd", "auto"),
                                                  ("sync-sgd", "recursive-doubling"),
                                                  ("sync-easgd", "auto")])
@pytest.mark.parametrize("nodes", [3, 12])
def test_training_agrees_on_every_topology_family(family, algorithm, collective, nodes):
    # the training layer, not only the collectives (test_netmodel's grid): predict's
    # iteration and the simulator's on its routed network, within 2% on each family,
    # at node counts that are not powers of two; without overlap, so the whole
    # exchange is in the iteration
    w = dataclasses.replace(get_workload("alexnet"), collective=collective, overlap=False)
    cluster = FAMILY_CLUSTERS[family]
    r = simulate_training(cluster, w, nodes, algorithm=algorithm, iterations=3,
                          efficiency=False)
    assert r.network == "fast"
    p = predict(cluster, dataclasses.replace(w, algorithm=algorithm), [nodes])
    assert p.exposed_comm_s[0] > 0.05 * p.iteration_s[0], "the exchange must count"
    assert r.iteration_s == pytest.approx(r.analytical_iteration_s, rel=0.02), family


@pytest.mark.parametrize("cluster,nodes,factors", [
    ("dgx1-v100", 1, "smpi-default"),   # one node: the negotiation crosses NVLink
    ("summit", 2, "smpi-default"),
    ("dgx1-v100", 1, "profile"),        # a calibration's intra-node fit (f_lat(0) 0.006)
])
def test_rank0_negotiation_pays_the_zero_byte_message_factor(cluster, nodes, factors):
    """Legacy Horovod's rank-0 negotiation costs ``(p - 1 + ceil(log2 p))`` zero-byte
    latencies. Simulate priced them as zero-byte messages (the per-size factors
    applied), predict at the path's bare latency: with the profile of
    examples/profiles/this-host.json on a DGX-1, predict 0.1588 s against
    simulate's 0.1465 s."""
    from dlscale.perfmodel.catalog.runtimes import apply_runtime
    from dlscale.perfmodel.machine.profile import apply_profile, load_profile
    from dlscale.perfmodel.network.msgfactors import get_message_factors

    c = dataclasses.replace(get_cluster(cluster), noise="none")
    if factors == "profile":
        from pathlib import Path

        root = Path(__file__).resolve().parents[1]
        c = apply_profile(c, load_profile(root / "examples" / "profiles" / "this-host.json"))
    else:
        c = dataclasses.replace(c, network=dataclasses.replace(
            c.network, message_factors=get_message_factors(factors)))
    c = apply_runtime(c, "horovod-legacy-nccl")
    w = get_workload("resnet50")
    pred = float(predict(c, w, [nodes]).iteration_s[0])
    for network in ("analytical", "fast"):
        r = simulate_training(c, w, nodes, iterations=3, efficiency=False, network=network)
        assert r.iteration_s == pytest.approx(pred, rel=1e-6), network


def test_sync_easgd_with_overlap_times_the_steady_rounds():
    """With overlap one round is in flight: the first block of steps waits for no round,
    so averaging it in put a communication-bound run below the closed form by
    (round - step) / iterations (cori-knl alexnet, 16 nodes, global batch 512, 20
    iterations: 0.2905 s against 0.3005 s). It fills the pipeline and is left out."""
    w = dataclasses.replace(get_workload("alexnet"), scaling="strong", global_batch=512,
                            overlap=True)
    c = dataclasses.replace(get_cluster("cori-knl"), noise="none")
    r = simulate_training(c, w, 16, algorithm="sync-easgd", iterations=20, efficiency=False)
    it = r.analytical_iteration_s
    assert r.summary()["compute_max_s"] < 0.5 * it      # the round, not the step, sets it
    assert r.iteration_s == pytest.approx(it, rel=1e-9)


@pytest.mark.parametrize("tau", [1, 2])
def test_sync_easgd_with_overlap_averages_its_parts_over_the_steady_rounds(tau):
    """The parts are averaged over the steps the iteration times span: the first block
    (the pipeline's fill, which waits for no round) is left out of both. It was left
    out of iteration_s only, so exposed_comm_s took the first block's zero wait into
    its mean: here 0.1888 s against predict's 0.1987 s (tau 1, 20 iterations; tau 2
    0.04365 against 0.04850), compute_s + exposed_comm_s 0.0099 s short of
    iteration_s; on 64 Summit nodes (AlexNet, 40 steps) 0.04097 s against 0.04655."""
    w = dataclasses.replace(get_workload("alexnet"), scaling="strong", global_batch=512,
                            overlap=True, tau=tau, algorithm="sync-easgd")
    c = dataclasses.replace(get_cluster("cori-knl"), noise="none")
    p = predict(c, w, [16])
    r = simulate_training(c, w, 16, iterations=20, efficiency=False)
    s = r.summary()
    assert s["exposed_comm_s"] > 0.3 * s["compute_s"]       # the round is exposed
    assert s["compute_s"] + s["exposed_comm_s"] == pytest.approx(r.iteration_s, rel=1e-9)
    assert s["exposed_comm_s"] == pytest.approx(float(p.exposed_comm_s[0]), rel=1e-9)
    assert s["comm_s"] == pytest.approx(float(p.comm_s[0]), rel=1e-9)


@pytest.mark.parametrize("algorithm", ["easgd", "async-easgd", "async-measgd", "async-sgd",
                                       "async-msgd"])
@pytest.mark.parametrize("nodes", [1, 8])
def test_a_masters_parts_are_the_closed_forms_parts(algorithm, nodes):
    """compute_s, comm_s and exposed_comm_s of the master-based algorithms, not only the
    iteration: the wait for the master (a locked master's queue, the original EASGD's
    round of turns) is communication in both, and the original EASGD's weight copy over
    the host link is communication, not compute. Simulate counted the queue in
    master_queue_s only and the round's other turns as straggler wait (Summit, 8
    nodes, async-sgd: comm_s 0.0092 s against predict's 0.329 s) and the host copy as
    compute (easgd, 1 node: compute_s 0.1322 against 0.1279 s)."""
    w = dataclasses.replace(get_workload("resnet50"), algorithm=algorithm)
    c = dataclasses.replace(get_cluster("summit"), noise="none")
    p = predict(c, w, [nodes])
    # the parts are averaged over the steps the iteration times span (the start-up's
    # left out of both); a saturated master's queue still fills over the first rounds
    # and drains as the workers finish: a residue falling as 1 / iterations, 1.2% of
    # its comm_s after 40 steps per worker, 0.24% after 200
    r = simulate_training(c, w, nodes, iterations=200, efficiency=False)
    s = r.summary()
    assert r.iteration_s == pytest.approx(float(p.iteration_s[0]), rel=0.02)
    for key in ("compute_s", "comm_s", "exposed_comm_s"):
        assert s[key] == pytest.approx(float(getattr(p, key)[0]), rel=0.02), key
    assert s["master_queue_s"] <= s["exposed_comm_s"] * (1 + 1e-12)


@pytest.mark.parametrize("algorithm", ["async-sgd", "async-easgd", "hogwild-sgd"])
@pytest.mark.parametrize("nodes,rel", [(1, 1e-9), (8, 0.02)])
def test_a_short_asynchronous_runs_parts_sum_to_its_iteration(algorithm, nodes, rel):
    """A worker's compute and exposed communication (its exchange and the wait for the
    master) make up its step: they are averaged over the steps iteration_s spans. The
    parts took every step, the start-up's too (the workers join the master one after
    the other), while iteration_s leaves its first block out: after 20 steps on 8
    Summit nodes (async-sgd) compute_s + exposed_comm_s was 4.6% short of iteration_s
    (comm_s 6.3% short of predict's), on 1 node 0.03% over. Averaged over the same
    steps: 1.7% short on 8 nodes (the saturated master's queue filling over the first
    rounds and draining as workers finish; 0.17% after 200 steps), exact on 1."""
    w = dataclasses.replace(get_workload("resnet50"), algorithm=algorithm)
    c = dataclasses.replace(get_cluster("summit"), noise="none")
    r = simulate_training(c, w, nodes, iterations=20, efficiency=False)
    s = r.summary()
    assert s["compute_s"] + s["exposed_comm_s"] == pytest.approx(r.iteration_s, rel=rel)


@pytest.mark.parametrize("cluster,workload,algorithm,nodes", [
    ("summit", "alexnet", "async-sgd", [1, 2]),          # a locked master
    ("summit", "alexnet", "hogwild-sgd", [1, 2]),        # a lock-free one
    ("dgx-h100-superpod", "googlenet", "easgd", [1, 2]),  # the round-robin rounds
    ("summit", "alexnet", "sync-easgd", [1, 64]),        # the reduce + broadcast rounds
])
def test_the_masters_and_rounds_wait_for_the_input_pipeline_as_predict_does(
        cluster, workload, algorithm, nodes):
    """Each list has a node count whose step the input pipeline bounds (predict's
    limit) and one it does not: simulate refused every asynchronous and EASGD run at
    the first ("simulated for sync-sgd only"); its workers now wait for their batches
    (the node's loader rate, outside.loader_s) and agree with predict at both."""
    c = dataclasses.replace(get_cluster(cluster), noise="none")
    w = dataclasses.replace(get_workload(workload), algorithm=algorithm)
    p = predict(c, w, nodes)
    assert sorted(str(b) == "input-pipeline" for b in p.bottleneck) == [False, True]
    for i, n in enumerate(nodes):
        r = simulate_training(c, w, n, iterations=40, efficiency=False)
        assert r.iteration_s == pytest.approx(float(p.iteration_s[i]), rel=0.02), n
