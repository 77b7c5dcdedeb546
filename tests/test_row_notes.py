"""Rows that would puzzle a reader say why: efficiency above 1, throughput that falls."""

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.measured import parse_rate
from dlscale.perfmodel.training.predict import predict


def _w(name, **kw):
    return dataclasses.replace(get_workload(name), **kw)


def _fast(name, **kw):
    """``name`` with a fast measured compute (50,000 samples/s at batch 64 on one device,
    0.35 TFLOPS of LeNet on a KNL chip), so that communication sets the rows."""
    w = get_workload(name)
    return dataclasses.replace(w, model=dataclasses.replace(w.model, measured=parse_rate("50000@64")),
                               **kw)


def test_efficiency_above_one_names_the_two_links():
    p = predict(get_cluster("stampede2-knl"), _w("lenet", algorithm="async-sgd"), [1, 2, 4])
    assert p.efficiency[1] > 1.0
    assert p.note[1].startswith("efficiency above 1") and "knl-shm" in p.note[1]
    assert p.note[0] == ""
    assert (p.note[2] != "") == bool(p.efficiency[2] > 1)


def test_a_throughput_drop_names_the_slower_level_on_the_path_to_the_master():
    p = predict(get_cluster("cori-knl"), _fast("lenet", algorithm="async-sgd"), [4, 5])
    assert p.samples_per_s[1] < p.samples_per_s[0]
    assert "crosses local links (5.25 GB/s" in p.note[1]


def test_a_throughput_drop_at_a_non_power_of_two_count_names_the_fold():
    p = predict(get_cluster("stampede2-knl"), _fast("lenet", collective="recursive-doubling"),
                [16, 17])
    assert p.samples_per_s[1] < p.samples_per_s[0]
    assert "non-power-of-two fold" in p.note[1] and "1 of the 17 ranks" in p.note[1]


@pytest.mark.parametrize("cluster", ["summit", "cori-knl", "stampede2-knl", "p100-cluster"])
@pytest.mark.parametrize("algorithm", ["sync-sgd", "async-sgd", "async-easgd", "sync-easgd"])
def test_no_row_above_one_or_below_its_predecessor_goes_unexplained(cluster, algorithm):
    c = get_cluster(cluster)
    for workload in ("lenet", "resnet50"):
        for collective in ("ring", "rabenseifner", "auto"):
            w = _w(workload, algorithm=algorithm, collective=collective)
            nodes = np.arange(1, min(c.max_nodes, 24) + 1)
            p = predict(c, w, nodes)
            above = p.efficiency > 1 + 1e-9
            drop = np.r_[False, p.samples_per_s[1:] < p.samples_per_s[:-1] * (1 - 1e-9)]
            assert all(p.note[above | drop]), (workload, collective)
            assert not any(p.note[~(above | drop)])
