"""GPUs under one PCIe switch share its host uplink when they all stage at once (issue 25)."""

from __future__ import annotations

import dataclasses

import pytest

from dlscale.perfmodel.catalog import get_cluster, get_runtime, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.ps import ps_plan


def _ps(cluster):
    return dataclasses.replace(cluster, runtime=get_runtime("parameter-server"))


def test_the_dgx1_pairs_share_their_uplink():
    c = _ps(get_cluster("dgx1-p100"))
    assert c.node.devices_per_host_link == 2       # NVIDIA/nccl#671: GPU 0 and 1 under one switch
    w = dataclasses.replace(get_workload("resnet50"), data="synthetic")
    plan = ps_plan(c, w, 1)
    assert plan.host_Bps == pytest.approx(c.node.host_link.bandwidth_Bps / 2)
    # one GPU alone (the device baseline) has the uplink to itself
    one = dataclasses.replace(c, node=dataclasses.replace(c.node, devices_per_node=1))
    assert ps_plan(one, w, 1).host_Bps == pytest.approx(c.node.host_link.bandwidth_Bps)


def test_sharing_moves_eight_gpus_below_linear():
    c = dataclasses.replace(_ps(get_cluster("dgx1-p100")), noise="none")   # the link alone
    w = dataclasses.replace(get_workload("resnet50"), data="synthetic")
    shared = float(predict(c, w, [1], baseline="device").efficiency[0])
    own = dataclasses.replace(c, node=dataclasses.replace(c.node, devices_per_host_link=1))
    alone = float(predict(own, w, [1], baseline="device").efficiency[0])
    assert alone == pytest.approx(1.0)
    assert 0.9 < shared < 0.99


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, 2000])
def test_bad_sharing_is_refused(bad):
    node = get_cluster("dgx1-p100").node
    with pytest.raises(ConfigError, match="devices_per_host_link: must be an integer"):
        dataclasses.replace(node, devices_per_host_link=bad)
