import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.compute.memory import (
    dense_embedding_bytes,
    memory_per_rank,
    sparse_gather_bytes,
    sparse_rows_per_rank,
)
from dlscale.perfmodel.errors import OutOfMemoryError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.training.workload import Layer, Model, Workload

GPU = Device("g", "gpu", 80, 1.5e9, 7e12, 14e12, 112e12, 16e9, 900e9, 0.5)
KNL = Device("k", "knl", 68, 1.4e9, 3e12, 6e12, 6e12, 96e9, 90e9, 0.5,
             fast_memory_bytes=16e9, fast_memory_bandwidth_Bps=400e9, memory_mode="flat")


def _cluster(dev, per_node=1):
    node = NodeSpec("n", dev, per_node, Link("l", 10e9, 1e-6), Link("ib", 10e9, 1e-6))
    return Cluster("c", node, NetworkSpec("x", Crossbar(1000), Link("ib", 10e9, 1e-6)))


def _transformer(vocab=33_708, hidden=512, tokens=56):
    emb = Layer("emb", "embedding", vocab * hidden, 0.0, tokens * hidden, sparse_gradient=True)
    body = Layer("body", "fc", 10_000_000, 2e7, tokens * hidden)
    return Model("tr", (emb, body), (tokens,), "wmt", 1000, sparse_rows_per_sample=tokens)


def test_sparse_gather_grows_with_ranks_dense_does_not():
    w = Workload("w", _transformer(), batch_per_device=90, sparse_as_dense=False)
    rows = sparse_rows_per_rank(w)
    assert rows == pytest.approx(33_708 + 56 * 90)
    p = np.array([1, 50, 200])
    assert sparse_gather_bytes(w, p) == pytest.approx(p * rows * (512 * 4 + 8))
    assert dense_embedding_bytes(w) == pytest.approx(33_708 * 512 * 4)
    v_sparse = memory_per_rank(w, _cluster(GPU), p)
    v_dense = memory_per_rank(dataclasses.replace(w, sparse_as_dense=True), _cluster(GPU), p)
    assert np.all(np.diff(v_sparse.total_bytes) > 0)
    assert np.all(np.diff(v_dense.total_bytes) == 0)


def test_out_of_memory_names_resource_and_shortfall():
    w = Workload("w", _transformer(), batch_per_device=90, sparse_as_dense=False)
    v = memory_per_rank(w, _cluster(GPU), [1, 400])
    assert v.fits.tolist() == [True, False]
    assert v.shortfall_bytes[1] == pytest.approx(v.total_bytes[1] - 16e9)
    with pytest.raises(OutOfMemoryError, match=r"memory of g: needs \d+\.\d\d GiB per rank at 400 ranks, has 14\.90 GiB \(short by"):
        v.check()
    memory_per_rank(w, _cluster(GPU), [1]).check()  # fits: no error


def test_knl_flat_mode_splits_mcdram_between_ranks():
    fc = Layer("fc", "fc", 250_000_000, 1e9, 1000)
    w = Workload("w", Model("m", (fc,), (10,), "none", 1), 1, algorithm="sync-easgd",
                 ranks_per_node=8)
    v = memory_per_rank(w, _cluster(KNL), 8)
    assert v.capacity_bytes == pytest.approx(2e9)
    assert "MCDRAM of k (1/8 per rank)" == v.resource
    # weights + grads + center copy, no momentum for EASGD: 3 x 1 GB
    assert v.total_bytes[0] == pytest.approx(3e9 + 4e3)
    assert v.per_device_bytes[0] == pytest.approx(8 * v.total_bytes[0])
    assert not v.fits[0]


def test_mixed_precision_parts():
    fc = Layer("fc", "fc", 1_000_000, 1e9, 1000)
    w = Workload("w", Model("m", (fc,), (10,), "none", 1), 4, precision="fp16",
                 fusion_threshold_bytes=64e6)
    v = memory_per_rank(w, _cluster(GPU), 2)
    assert v.parameters_bytes[0] == pytest.approx(6e6)
    assert v.gradients_bytes[0] == pytest.approx(2e6)
    assert v.optimizer_bytes[0] == pytest.approx(4e6)
    assert v.activations_bytes[0] == pytest.approx(2 * 1000 * 4)
    assert v.buffers_bytes[0] == pytest.approx(64e6)


def test_activations_relu_in_place_keeps_one_tensor_upper_bound_two():
    # The documented counting rule: a ReLU runs in place (Caffe, PyTorch inplace=True,
    # MXNet's planner), so a conv-ReLU pair keeps one tensor; the high end of the
    # range keeps every op's output (two).
    from dlscale.perfmodel.catalog.layers import Net

    net = Net("n", (3, 8, 8))
    net.conv("c", 4, 3, pad=1)
    net.relu("r")
    assert [layer.kind for layer in net.layers] == ["conv", "act"]
    m = Model("m", tuple(net.layers), (3, 8, 8), "none", 1)
    w = Workload("w", m, 2, fusion_threshold_bytes=0)
    v = memory_per_rank(w, _cluster(GPU), 1)
    assert v.activations_bytes[0] == pytest.approx(4 * 2 * (4 * 8 * 8))
    high = memory_per_rank(w, _cluster(GPU), 1, end="high")
    assert high.activations_bytes[0] == pytest.approx(4 * 2 * (4 * 8 * 8) * 2)
