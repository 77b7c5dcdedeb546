import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import RUNTIMES
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.network import collectives as col
from dlscale.perfmodel.training.iteration import efficiency, iteration_times
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import HOROVOD_CYCLE_S, buckets
from dlscale.perfmodel.training.workload import Layer, Model, Workload

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
CPU = Device("c", "cpu", 24, 2.1e9, 1.6e12, 3.2e12, 3.2e12, 96e9, 128e9, 0.5)
INTRA = Link("nvlink", 50e9, 2e-6)
NIC = Link("ib", 10e9, 1e-6)
HOST = Link("pcie", 12e9, 5e-6)


#: The stack these closed forms are written for: Horovod's rank-0 negotiation and 5 ms
#: cycle, the links' figures as delivered (no transport efficiency on top).
LEGACY = dataclasses.replace(RUNTIMES["horovod-legacy-mpi"], links_measured=True)


def cluster(dev=GPU, per_node=1, max_nodes=4096):
    node = NodeSpec("n", dev, per_node, INTRA, NIC, host_link=HOST)
    # noise none: the closed forms below are written for devices of one rate
    return Cluster("c", node, NetworkSpec("x", Crossbar(max_nodes), NIC), runtime=LEGACY,
                   noise="none")


def model(n_layers=6, params=2_000_000, flops=4e9):
    layers = tuple(Layer(f"l{i}", "conv", params, flops, 50_000) for i in range(n_layers))
    return Model("m", layers, (3, 64, 64), "none", 1000)


def workload(**kw):
    args = dict(name="w", model=model(), batch_per_device=16, fusion_threshold_bytes=16e6,
                collective="ring")
    args.update(kw)
    return Workload(**args)


def gamma(c):
    return 3.0 / c.node.device.training_memory_bandwidth_Bps


def test_one_rank_has_no_communication():
    w = workload()
    t = iteration_times(cluster(), w, 1)
    assert t.comm_s[0] == 0 and t.exposed_comm_s[0] == 0
    lt = layer_times(w.model, GPU, "fp32", 16)
    assert t.iteration_s[0] == pytest.approx(lt.total_s + update_s(w.model.params, GPU))


def test_no_overlap_single_bucket_closed_form():
    c = cluster()
    w = workload(overlap=False, fusion_threshold_bytes=1e9)
    nodes = np.array([2, 8, 100])
    t = iteration_times(c, w, nodes)
    lt = layer_times(w.model, GPU, "fp32", 16)
    compute = lt.total_s + update_s(w.model.params, GPU)
    neg = ((nodes - 1) + np.ceil(np.log2(nodes))) * NIC.latency_s
    ring = col.ring_allreduce_s(w.gradient_bytes, nodes, NIC.latency_s, 1 / NIC.bandwidth_Bps, gamma(c))
    assert t.iteration_s == pytest.approx(compute + HOROVOD_CYCLE_S / 2 + neg + ring)
    # one buffer: its cycle wait, negotiation and ring, all exposed without overlap
    assert t.comm_s == pytest.approx(HOROVOD_CYCLE_S / 2 + neg + ring)
    assert t.exposed_comm_s == pytest.approx(HOROVOD_CYCLE_S / 2 + neg + ring)


def test_bucketing_greedy_from_last_layer():
    b = buckets(workload(fusion_threshold_bytes=16e6))   # 8 MB per layer -> pairs
    assert b.bytes.tolist() == [16e6, 16e6, 16e6]
    assert b.first_layer.tolist() == [4, 2, 0]
    assert b.tensors == 6
    assert buckets(workload(fusion_threshold_bytes=0)).bytes.size == 6
    assert buckets(workload(fusion_threshold_bytes=1e12)).bytes.tolist() == [48e6]


def _naive_chain(c, w, nodes):
    """Bucket chain one node count and one bucket at a time."""
    lt = layer_times(w.model, GPU, w.precision, w.batch_per_device)
    fwd, bwd_layers = lt.forward_s.sum(), lt.backward_s
    upd = update_s(w.model.params, GPU)
    bk = buckets(w)
    out = []
    for n in nodes:
        t_bwd, end = 0.0, 0.0
        neg = ((n - 1) + np.ceil(np.log2(n))) * NIC.latency_s
        done = {}
        for i in range(len(bwd_layers) - 1, -1, -1):
            t_bwd += bwd_layers[i]
            done[i] = t_bwd
        for nbytes, first in zip(bk.bytes, bk.first_layer, strict=True):
            start = max(done[first] + HOROVOD_CYCLE_S / 2, end)
            end = start + neg + col.ring_allreduce_s(nbytes, n, NIC.latency_s, 1e-10, gamma(c))
        out.append(fwd + max(t_bwd, end) + upd)
    return np.array(out)


@pytest.mark.parametrize("threshold", [0.0, 16e6, 1e9])
def test_overlap_matches_naive_bucket_loop(threshold):
    c = cluster()
    w = workload(fusion_threshold_bytes=threshold)
    nodes = np.array([2, 3, 16, 512, 4096])
    assert iteration_times(c, w, nodes).iteration_s == pytest.approx(_naive_chain(c, w, nodes))


def test_overlap_hides_communication():
    c = cluster()
    on = iteration_times(c, workload(), [64])
    off = iteration_times(c, workload(overlap=False), [64])
    assert on.iteration_s[0] < off.iteration_s[0]
    assert on.comm_s[0] == pytest.approx(off.comm_s[0])


def test_graph_aware_negotiation_scales_better_than_rank0():
    c = cluster()
    nodes = np.array([2, 4096])
    fusion = iteration_times(c, workload(overlap=False), nodes)
    graph = iteration_times(c, workload(overlap=False, grouping="graph-aware"), nodes)
    assert np.all(graph.comm_s < fusion.comm_s)
    # 3 buckets x ~4096 alpha of rank-0 gather at 4096 nodes
    assert fusion.comm_s[1] - graph.comm_s[1] > 3 * 4000 * NIC.latency_s


def test_fp16_halves_gradient_bytes():
    c = cluster()
    fast = dataclasses.replace(NIC, latency_s=0.0)
    c = dataclasses.replace(c, node=dataclasses.replace(c.node, nic=fast))
    w32 = workload(overlap=False, fusion_threshold_bytes=1e12, grouping="graph-aware")
    t32 = iteration_times(c, w32, [64])
    t16 = iteration_times(c, dataclasses.replace(w32, precision="fp16"), [64])
    wait = c.runtime.cycle_wait_s  # one buffer's cycle wait is in comm_s, not halved
    assert (t32.comm_s[0] - wait) / (t16.comm_s[0] - wait) == pytest.approx(2.0, rel=1e-6)
    assert t16.compute_s[0] < t32.compute_s[0]


def test_hierarchical_with_one_rank_per_node_equals_ring():
    c = cluster()
    nodes = np.array([2, 32, 1000])
    ring = iteration_times(c, workload(), nodes)
    hier = iteration_times(c, workload(collective="hierarchical"), nodes)
    assert hier.iteration_s == pytest.approx(ring.iteration_s)


def test_collective_choice_matters_for_small_latency_bound_models():
    c = cluster()
    tiny = Model("t", (Layer("fc", "fc", 1000, 1e6, 10),), (10,), "none", 1)
    w = workload(model=tiny, batch_per_device=1)
    ring = iteration_times(c, w, [1024]).comm_s[0]
    rab = iteration_times(c, dataclasses.replace(w, collective="rabenseifner"), [1024]).comm_s[0]
    assert rab < ring


def test_strong_scaling_shrinks_the_per_rank_batch():
    c = cluster()
    w = workload(scaling="strong", global_batch=1024)
    lay = layout(c, w, [1, 4, 64])
    assert lay.batch_per_rank.tolist() == [1024.0, 256.0, 16.0]
    t = iteration_times(c, w, [1, 4, 64])
    assert np.all(np.diff(t.compute_s) < 0)
    assert t.samples_per_s == pytest.approx(1024 / t.iteration_s)


def test_cpu_ranks_share_the_node():
    c = cluster(CPU, per_node=2)
    w = workload(ranks_per_node=4, batch_per_device=8)
    lay = layout(c, w, [1, 3])
    assert lay.share == 0.5 and lay.ranks.tolist() == [4.0, 12.0]
    assert lay.batch_per_rank.tolist() == [4.0, 4.0]
    one = iteration_times(c, workload(ranks_per_node=2, batch_per_device=8), 1)
    four = iteration_times(c, w, 1)
    # half the device and half the samples per rank: the same forward + backward;
    # the weight update of the whole model runs at half the bandwidth
    params = w.model.params
    assert four.compute_s[0] - update_s(params, CPU, share=0.5) == pytest.approx(
        one.compute_s[0] - update_s(params, CPU, share=1.0), rel=1e-9)


def test_sparse_allgather_grows_with_ranks_densified_does_not():
    emb = Layer("emb", "embedding", 30_000 * 512, 0.0, 50 * 512, sparse_gradient=True)
    body = Layer("body", "fc", 20_000_000, 2e9, 50 * 512)
    m = Model("tr", (emb, body), (50,), "none", 1, sparse_rows_per_sample=50)
    c = cluster()
    nodes = np.array([2, 16, 128])
    sparse = iteration_times(c, workload(model=m, sparse_as_dense=False), nodes)
    dense = iteration_times(c, workload(model=m, sparse_as_dense=True), nodes)
    assert np.all(np.diff(sparse.comm_s) > 0)
    assert sparse.comm_s[-1] / sparse.comm_s[1] > 5
    assert dense.comm_s[-1] / dense.comm_s[1] < 1.2


def test_sync_easgd_beats_original_easgd_on_one_gpu_node():
    c = cluster(per_node=8, max_nodes=1)
    m = model(n_layers=4, params=15_000_000, flops=2e8)
    orig = iteration_times(c, workload(model=m, algorithm="easgd"), 1)
    sync = iteration_times(c, workload(model=m, algorithm="sync-easgd"), 1)
    sync_no = iteration_times(c, workload(model=m, algorithm="sync-easgd", overlap=False), 1)
    assert orig.iteration_s[0] > sync_no.iteration_s[0] >= sync.iteration_s[0]
    W = m.params * 4
    rnd = col.parameter_server_s(W, 8, HOST.latency_s, 1 / HOST.bandwidth_Bps, 3 / GPU.memory_bandwidth_Bps)
    copy = 2 * (HOST.latency_s + W / HOST.bandwidth_Bps)
    assert orig.comm_s[0] == pytest.approx(rnd + copy)
    tree = col.reduce_s(W, 8, INTRA.latency_s, 1 / INTRA.bandwidth_Bps, gamma(c)) + col.broadcast_s(
        W, 8, INTRA.latency_s, 1 / INTRA.bandwidth_Bps)
    assert sync.comm_s[0] == pytest.approx(tree)


def test_tau_amortizes_the_exchange():
    c = cluster()
    for alg in ("easgd", "sync-easgd", "async-easgd"):
        t1 = iteration_times(c, workload(algorithm=alg, tau=1, overlap=False), [8])
        t4 = iteration_times(c, workload(algorithm=alg, tau=4, overlap=False), [8])
        assert t4.comm_s[0] < t1.comm_s[0]
        assert t4.iteration_s[0] <= t1.iteration_s[0]


def test_async_throughput_saturates_at_the_master():
    c = cluster()
    nodes = np.array([1, 2, 4, 64, 1024])
    w = workload(algorithm="async-sgd")
    t = iteration_times(c, w, nodes)
    W = w.model.params * 4
    link = 2 * (NIC.latency_s + W / NIC.bandwidth_Bps)
    service = link + 3 * W / GPU.memory_bandwidth_Bps
    cap = 16 / service                    # samples per second the master can serve
    assert np.all(t.samples_per_s <= cap * (1 + 1e-12))
    assert t.samples_per_s[-1] == pytest.approx(cap)
    assert np.all(np.diff(t.samples_per_s) >= 0)
    hog = iteration_times(c, workload(algorithm="hogwild-sgd"), nodes)
    msgd = iteration_times(c, workload(algorithm="async-msgd"), nodes)
    assert hog.samples_per_s[-1] > t.samples_per_s[-1] > msgd.samples_per_s[-1]


def test_easgd_family_exchanges_less_often_than_sgd_baselines():
    c = cluster()
    for easgd, sgd in (("async-easgd", "async-sgd"), ("async-measgd", "async-msgd"),
                       ("hogwild-easgd", "hogwild-sgd")):
        e = iteration_times(c, workload(algorithm=easgd, tau=8), [256])
        s = iteration_times(c, workload(algorithm=sgd), [256])
        assert e.samples_per_s[0] > s.samples_per_s[0]


def test_efficiency_definition_and_determinism():
    assert efficiency([10.0, 15.0], [1, 2], 10.0).tolist() == [1.0, 0.75]
    c = cluster()
    a = iteration_times(c, workload(), np.arange(1, 200))
    b = iteration_times(c, workload(), np.arange(1, 200))
    assert np.array_equal(a.iteration_s, b.iteration_s)


class _FixedNetwork:
    """A NetworkModel answering every allreduce with ``t`` seconds, recording the calls."""

    def __init__(self, t):
        self.t, self.calls = t, []

    def allreduce_s(self, n_bytes, ranks, algorithm="ring"):
        self.calls.append((n_bytes, ranks, algorithm))
        return self.t

    def collective_s(self, collective, n_bytes, ranks, algorithm=None):
        raise AssertionError("not asked")

    def transfer_s(self, src_rank, dst_rank, n_bytes):
        raise AssertionError("not asked")


def test_network_answers_bucket_and_bitvector_allreduces():
    c = cluster(per_node=4)
    w = workload(overlap=False, grouping="graph-aware", collective="rabenseifner")
    net = _FixedNetwork(0.01)
    t = iteration_times(c, w, [1, 8], network=net)
    base = iteration_times(c, w, [1, 8])
    bk = buckets(w)
    assert len(bk.bytes) == 3
    # one allreduce per bucket plus one bit-vector negotiation per bucket, each 0.01 s
    want = base.compute_s + HOROVOD_CYCLE_S / 2 + len(bk.bytes) * 2 * 0.01
    assert t.iteration_s == pytest.approx(want, rel=1e-12)
    assert np.all(t.iteration_s != base.iteration_s)
    assert {(r, a) for _, r, a in net.calls} == {(4, "rabenseifner"), (4, "recursive-doubling"),
                                                 (32, "rabenseifner"), (32, "recursive-doubling")}
    assert sorted(b for b, r, a in net.calls if a == "rabenseifner" and r == 32) == bk.bytes.tolist()


def test_network_only_for_sync_sgd():
    with pytest.raises(ConfigError, match=r"network: only sync-sgd takes a network model, got "
                                          r"algorithm 'easgd'"):
        iteration_times(cluster(), workload(algorithm="easgd"), 1, network=_FixedNetwork(0.0))


def test_auto_collective_is_the_least_of_every_collective_with_its_contention():
    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.perfmodel.training.sync import auto_choice, workload_allreduce
    from dlscale.perfmodel.training.workload import COLLECTIVES

    # a stack that has every algorithm and tunes by the model: auto is the least of all
    c, w = get_cluster("summit"), get_workload("resnet50")
    every = tuple(k for k in COLLECTIVES if k != "auto")
    c = dataclasses.replace(c, runtime=dataclasses.replace(c.runtime, algorithms=every))
    lay = layout(c, w, [1, 2, 16, 256, 4096])
    nb = np.geomspace(8, 1e9, 12)[:, None]
    fixed = {k: workload_allreduce(c, dataclasses.replace(w, collective=k), lay, nb)[0]
             for k in COLLECTIVES if k != "auto"}
    auto = workload_allreduce(c, dataclasses.replace(w, collective="auto"), lay, nb)[0]
    stack = np.stack([np.broadcast_to(v, auto.shape) for v in fixed.values()])
    np.testing.assert_allclose(auto, stack.min(axis=0), rtol=1e-12)
    names = auto_choice(c, w, lay)
    assert len(names) == len(buckets(w).bytes) and names[0].shape == (5,)
    # the sync-SGD iteration with auto is no slower than with any fixed collective
    t_auto = iteration_times(c, dataclasses.replace(w, collective="auto"), [1, 64, 4096])
    for k in fixed:
        t = iteration_times(c, dataclasses.replace(w, collective=k), [1, 64, 4096])
        assert np.all(t_auto.iteration_s <= t.iteration_s * (1 + 1e-12))
