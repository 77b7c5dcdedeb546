"""The node's storage read path bounds the samples/s real data can be fed at."""

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import CLUSTERS, get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.training.outside import loader_bound
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ranges import predict_range
from dlscale.perfmodel.training.repeatability import MEASUREMENT
from dlscale.perfmodel.training.storage import (
    FS_EFFICIENCY,
    ILSVRC2012_TRAIN_TAR_BYTES,
    MEAN_SAMPLE_BYTES,
    storage_rate_per_node,
)
from dlscale.simulator.training.run import simulate_training

GBE = 1e9 / 8          # one 1 Gb/s link, bytes/s


def _with_storage(name: str, read_Bps: float, path: str = "network"):
    c = get_cluster(name)
    return dataclasses.replace(c, node=dataclasses.replace(
        c.node, storage_read_Bps=read_Bps, storage_path=path))


def test_mean_ilsvrc2012_sample_is_the_train_tarball_over_its_images():
    assert ILSVRC2012_TRAIN_TAR_BYTES == 147_897_477_120
    assert MEAN_SAMPLE_BYTES["imagenet-1k"] == pytest.approx(147_897_477_120 / 1_281_167)


def test_storage_bounds_the_node_rate_in_both_fidelities():
    c, w = _with_storage("p100-cluster", GBE), get_workload("googlenet")
    per_node = GBE * FS_EFFICIENCY.central / MEAN_SAMPLE_BYTES["imagenet-1k"]
    p = predict(c, w, [1, 4])
    assert p.samples_per_s == pytest.approx([per_node, 4 * per_node])
    assert list(p.bottleneck) == ["storage", "storage"]
    assert p.note[0].startswith("storage-bound: 814 samples/s x 115.4 kB")
    s = simulate_training(c, w, 4, iterations=4)
    assert s.iteration_s == pytest.approx(float(p.iteration_s[1]))
    assert s.to_rows()[0]["limit"] == "storage"
    # without the storage described the same node trains faster, and no limit is set
    free = predict(get_cluster("p100-cluster"), w, [4])
    assert float(free.samples_per_s[0]) > float(p.samples_per_s[1])
    assert "limit" not in simulate_training(get_cluster("p100-cluster"), w, 4,
                                            iterations=2).to_rows()[0]


def test_a_faster_storage_link_moves_the_answer_until_the_step_binds():
    w = get_workload("googlenet")
    rates = [float(predict(_with_storage("p100-cluster", bw), w, [1]).samples_per_s[0])
             for bw in (GBE, 2 * GBE, 100 * GBE)]
    assert rates[0] < rates[1] < rates[2]
    assert rates[1] == pytest.approx(2 * rates[0])
    unbounded = float(predict(get_cluster("p100-cluster"), w, [1]).samples_per_s[0])
    assert rates[2] == pytest.approx(unbounded)   # 100 Gb/s feeds more than 4 P100 train


def test_synthetic_data_reads_nothing():
    w = dataclasses.replace(get_workload("googlenet"), data="synthetic")
    slow, none = _with_storage("p100-cluster", GBE), get_cluster("p100-cluster")
    assert storage_rate_per_node(slow, w) == np.inf
    assert predict(slow, w, [4]).iteration_s == pytest.approx(predict(none, w, [4]).iteration_s)
    assert simulate_training(slow, w, 4, iterations=2).iteration_s == pytest.approx(
        simulate_training(none, w, 4, iterations=2).iteration_s)


def test_local_disk_delivers_its_rated_rate():
    w = get_workload("googlenet")
    local, net = _with_storage("p100-cluster", GBE, "local"), _with_storage("p100-cluster", GBE)
    assert storage_rate_per_node(local, w, "low") == pytest.approx(
        GBE / MEAN_SAMPLE_BYTES["imagenet-1k"])
    p_local, p_net = predict(local, w, [1]), predict(net, w, [1])
    assert float(p_local.iteration_s[0]) < float(p_net.iteration_s[0])
    assert simulate_training(local, w, 1, iterations=2).iteration_s == pytest.approx(
        float(p_local.iteration_s[0]))


def test_loader_takes_the_lesser_of_decode_and_storage():
    w = get_workload("resnet50")
    # DGX-1: 40 cores decode 7,840 images/s; NFS over 10 GbE feeds 8,143
    assert loader_bound(_with_storage("dgx1-v100", 10 * GBE), w) == (7840.0, "input-pipeline")
    rate, what = loader_bound(_with_storage("dgx1-v100", GBE), w)
    assert what == "storage" and rate == pytest.approx(814.28, rel=1e-4)
    # a measured loader rate is the whole pipeline's: it replaces both bounds
    measured = dataclasses.replace(w, loader_rate=3000.0)
    assert loader_bound(_with_storage("dgx1-v100", GBE), measured) == (3000.0, "input-pipeline")


def test_band_spans_the_file_systems_cited_share():
    c, w = _with_storage("p100-cluster", GBE), get_workload("googlenet")
    row = predict_range(c, w, [1]).to_rows()[0]
    size = MEAN_SAMPLE_BYTES["imagenet-1k"]
    # (times a measurement's repeatability, which widens every rate's band)
    assert row["samples_per_s_high"] == pytest.approx(GBE * FS_EFFICIENCY.high / size
                                                      * MEASUREMENT.high)
    # the slow end also slows the step itself (compute rate, dispatch): no faster
    # than what the low share feeds
    assert row["samples_per_s_low"] <= GBE * FS_EFFICIENCY.low / size * (1 + 1e-9)


def test_no_preset_describes_its_storage():
    # no catalog machine cites a storage read path: "unknown", no bound
    assert all(get_cluster(name).node.storage_read_Bps == 0 for name in CLUSTERS)


def test_storage_fields_from_a_node_table(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('base = "p100-cluster"\n[node]\nstorage_read_Gbps = 10\n'
                 'storage_path = "local"\n')
    c = load_cluster(str(f))
    assert c.node.storage_read_Bps == pytest.approx(1.25e9)
    assert c.node.storage_path == "local"


@pytest.mark.parametrize("line,field", [("storage_read_Gbps = -1", "storage_read_Bps"),
                                        ("storage_read_Gbps = nan", "storage_read_Bps"),
                                        ("storage_read_Bps = 1e-3", "storage_read_Bps"),
                                        ('storage_path = "tape"', "storage_path")])
def test_bad_storage_refused_naming_the_field(tmp_path, line, field):
    f = tmp_path / "c.toml"
    f.write_text(f'base = "p100-cluster"\n[node]\n{line}\n')
    with pytest.raises(ConfigError, match=field) as err:
        load_cluster(str(f))
    assert "\n" not in str(err.value)


def test_fit_does_not_fit_a_decode_rate_that_storage_alone_bounds():
    from dlscale.perfmodel.fitting.scaling import candidates

    w = get_workload("googlenet")
    names = [p.name for p in candidates(_with_storage("p100-cluster", GBE), w)[0]]
    assert "input-pipeline" not in names          # p100-cluster describes no host cores
    names = [p.name for p in candidates(_with_storage("dgx1-v100", GBE), w)[0]]
    assert "input-pipeline" in names              # 40 host cores: their decode rate is
