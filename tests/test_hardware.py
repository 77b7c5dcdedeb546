import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import Device, FatTree, Link


def _device(**kw):
    args = dict(name="d", kind="gpu", cores=80, clock_hz=1.5e9, peak_fp64_flops=7e12,
                peak_fp32_flops=14e12, peak_fp16_flops=112e12, memory_bytes=16e9,
                memory_bandwidth_Bps=900e9, sustained_fraction=0.5)
    args.update(kw)
    return Device(**args)


def test_device_rejects_non_positive_bandwidth():
    with pytest.raises(ConfigError, match=r"device 'd'\.memory_bandwidth_Bps: must be a positive number, got 0"):
        _device(memory_bandwidth_Bps=0)


def test_device_rejects_unknown_precision():
    with pytest.raises(ConfigError, match="precision: must be one of fp64, fp32, fp16, got 'fp8'"):
        _device().peak_flops("fp8")


def test_link_rejects_negative_latency():
    with pytest.raises(ConfigError, match=r"link 'l'\.latency_s"):
        Link("l", 1e9, -1.0)


def test_fat_tree_needs_one_pair_per_upper_level():
    with pytest.raises(ConfigError, match="needs 2 \\(down, up\\) pairs for 3 levels, got 1"):
        FatTree(levels=3, nodes_per_leaf=18, down_up=((18, 18),), max_nodes=100)
    assert FatTree(2, 28, ((28, 20),), 1000).oversubscription(1) == pytest.approx(1.4)
