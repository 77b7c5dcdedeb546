from pathlib import Path

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import apply_overrides, load_cluster, read_toml
from dlscale.perfmodel.machine.hardware import FatTree, Link
from dlscale.perfmodel.machine.tomlmap import build

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "configs"


def test_full_cluster_file_parses_into_si_units():
    c = load_cluster(EXAMPLES / "cluster-full.toml")
    assert c.node.device.peak_fp32_flops == pytest.approx(15.7e12)
    assert c.node.device.memory_bytes == pytest.approx(16e9)
    assert c.node.memory_bytes == 256 * 1024**3
    assert c.node.nic.latency_s == pytest.approx(1e-6)
    assert c.network.hop_latency_s == pytest.approx(90e-9)
    assert isinstance(c.network.topology, FatTree)
    assert c.network.topology.down_up == ((24, 12),)
    assert c.max_nodes == 576


def test_node_count_above_topology_is_rejected():
    c = load_cluster(EXAMPLES / "cluster-full.toml")
    with pytest.raises(ConfigError, match=r"nodes: 577 is more than cluster 'my-v100-cluster' holds \(fat-tree of 576 nodes\)"):
        c.check_nodes(577)
    with pytest.raises(ConfigError, match="nodes: must be a positive integer, got 0"):
        c.check_nodes(0)


def _write(tmp_path, text):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_toml_syntax_error_names_file_and_line(tmp_path):
    p = _write(tmp_path, 'name = "x"\n[node\n')
    with pytest.raises(ConfigError, match=r"c\.toml: TOML syntax error: .*line 2"):
        read_toml(p)


def test_missing_file():
    with pytest.raises(ConfigError, match=r"nope\.toml: file not found"):
        load_cluster("nope.toml")


def test_unknown_key_lists_valid_ones_and_suggests(tmp_path):
    with pytest.raises(ConfigError, match=r"link\.bandwith_GBps: unknown key; valid: bandwidth_<.*GBps.*>, latency_<.*>, name, source \(did you mean 'bandwidth_GBps'\?\)"):
        build(Link, {"name": "x", "bandwith_GBps": 1}, "link")


def test_wrong_type_and_non_positive_values():
    with pytest.raises(ConfigError, match=r"link\.bandwidth_GBps: expected a number, got 'fast'"):
        build(Link, {"name": "x", "bandwidth_GBps": "fast", "latency_us": 1}, "link")
    with pytest.raises(ConfigError, match=r"link 'x'\.bandwidth_Bps: must be a positive number, got 0\.0"):
        build(Link, {"name": "x", "bandwidth_GBps": 0, "latency_us": 1}, "link")
    with pytest.raises(ConfigError, match=r"link: missing required field\(s\): bandwidth_Bps"):
        build(Link, {"name": "x", "latency_us": 1}, "link")


def test_unknown_topology_family(tmp_path):
    text = (EXAMPLES / "cluster-full.toml").read_text().replace('family = "fat-tree"', 'family = "fat-three"')
    with pytest.raises(ConfigError, match=r"network\.topology\.family: unknown value 'fat-three'; valid: crossbar, dragonfly, fat-tree, torus \(did you mean 'fat-tree'\?\)"):
        load_cluster(_write(tmp_path, text))


def test_overrides_by_dotted_path_keep_the_rest():
    c = load_cluster(EXAMPLES / "cluster-full.toml")
    c2 = apply_overrides(c, {"network.topology.max_nodes": 100, "node.nic.bandwidth_Gbps": 200})
    assert c2.max_nodes == 100
    assert c2.node.nic.bandwidth_Bps == pytest.approx(25e9)
    assert c2.node.device == c.node.device
    with pytest.raises(ConfigError, match=r"cluster\.network\.topology\.max_nodes: expected an integer, got 'many'"):
        apply_overrides(c, {"network.topology.max_nodes": "many"})


def test_base_may_be_another_file_relative_to_the_one_naming_it(tmp_path) -> None:
    from dlscale.perfmodel.machine.config import load_cluster, load_workload

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "fast.toml").write_text(
        'base = "summit"\n[network.link]\nbandwidth_GBps = 25.0\n')
    (tmp_path / "mine.toml").write_text('base = "sub/fast.toml"\nname = "mine"\n')
    c = load_cluster(tmp_path / "mine.toml")
    assert c.name == "mine" and c.network.link.bandwidth_Bps == 25e9
    assert c.node == load_cluster("summit").node
    (tmp_path / "w1.toml").write_text('base = "resnet50"\nbatch_per_device = 64\n')
    (tmp_path / "w2.toml").write_text('base = "w1.toml"\nprecision = "fp16"\n')
    w = load_workload(str(tmp_path / "w2.toml"))
    assert (w.batch_per_device, w.precision, w.model.name) == (64, "fp16", "resnet50")


def test_base_file_errors_name_the_field_and_value(tmp_path) -> None:
    from dlscale.perfmodel.machine.config import load_cluster

    (tmp_path / "a.toml").write_text('base = "b.toml"\n')
    (tmp_path / "b.toml").write_text('base = "a.toml"\n')
    with pytest.raises(ConfigError, match=r"cluster\.base: cycle .*a\.toml -> .*b\.toml -> "
                                          r".*a\.toml"):
        load_cluster(tmp_path / "a.toml")
    (tmp_path / "self.toml").write_text('base = "self.toml"\n')
    with pytest.raises(ConfigError, match=r"cluster\.base: cycle"):
        load_cluster(tmp_path / "self.toml")
    (tmp_path / "missing.toml").write_text('base = "gone.toml"\n')
    with pytest.raises(ConfigError, match=r"missing\.toml: cluster\.base: file not found: "
                                          r".*gone\.toml \(a base path is relative"):
        load_cluster(tmp_path / "missing.toml")
    (tmp_path / "num.toml").write_text("base = 3\n")
    with pytest.raises(ConfigError, match=r"cluster\.base: expected a preset name or the path "
                                          r"of a TOML file .*got 3"):
        load_cluster(tmp_path / "num.toml")


def test_a_nested_table_may_start_from_a_preset_of_its_kind(tmp_path) -> None:
    from dlscale.perfmodel.catalog import get_device, get_runtime

    f = tmp_path / "c.toml"
    f.write_text('base = "summit"\n[runtime]\nbase = "nccl"\nname = "mine"\n'
                 'algorithms = ["ring"]\n[node.device]\nbase = "p100-sxm2"\nmemory_GB = 32\n')
    c = load_cluster(str(f))
    nccl = get_runtime("nccl")
    assert c.runtime.name == "mine" and c.runtime.algorithms == ("ring",)
    assert c.runtime.fusion_cap_bytes == nccl.fusion_cap_bytes        # from nccl, not horovod
    assert c.runtime.coordination == nccl.coordination == "none"
    p100 = get_device("p100-sxm2")
    assert c.node.device.peak_fp32_flops == p100.peak_fp32_flops
    assert c.node.device.memory_bytes == 32e9
    f.write_text('base = "summit"\n[runtime]\nbase = "ncl"\n')
    with pytest.raises(ConfigError, match=r"runtime\.base: runtime: unknown name 'ncl'.*nccl"):
        load_cluster(str(f))
    f.write_text('base = "summit"\n[runtime]\nbase = 3\n')
    with pytest.raises(ConfigError, match=r"runtime\.base: expected a preset name, got 3"):
        load_cluster(str(f))


@pytest.mark.parametrize("text,field", [
    ('base = "summit"\n[runtime]\nname = "gloo"\n', "cluster.runtime.name"),
    ('base = "summit"\n[node.device]\nname = "a100-sxm4-80gb"\n', "cluster.node.device.name"),
    ('base = "summit"\nname = "cori-knl"\n', "cluster.name"),
])
def test_a_table_renamed_to_another_preset_is_refused(tmp_path, text, field):
    """``[runtime] name = "gloo"`` over Summit kept Horovod-NCCL's figures and printed
    'runtime gloo' on every row (an answer labelled as the preset's that is not its)."""
    with pytest.raises(ConfigError, match=rf"{field}: '.*' is the name of a preset.*base = "):
        load_cluster(_write(tmp_path, text))


@pytest.mark.parametrize("text,name", [
    ('base = "summit"\n[runtime]\nbase = "gloo"\ncycle_s = 0.01\n', "gloo"),   # the preset
    ('base = "summit"\n[runtime]\nname = "my-stack"\n', "my-stack"),          # its own name
    ('base = "summit"\n[runtime]\nname = "horovod-nccl"\n', "horovod-nccl"),  # the base's
])
def test_a_name_of_its_own_or_the_preset_itself_loads(tmp_path, text, name):
    assert load_cluster(_write(tmp_path, text)).runtime.name == name


@pytest.mark.parametrize("text,field", [
    ('base = "summit"\n[runtime]\nps_servers = 2\n', "cluster.runtime.ps_servers"),
    ('base = "summit"\n[runtime]\nps_strategy = "greedy"\n', "cluster.runtime.ps_strategy"),
    ('base = "summit"\n[runtime]\nshort_msg_bytes = 1e9\n', "cluster.runtime.short_msg_bytes"),
])
def test_a_runtime_field_the_runtime_never_reads_is_refused(tmp_path, text, field):
    """Over Horovod-NCCL (allreduce, its own selection) these loaded and changed nothing:
    the answer was the base's to the last bit."""
    with pytest.raises(ConfigError, match=rf"{field}: .*nothing would read"):
        load_cluster(_write(tmp_path, text))


def test_the_parameter_servers_fields_load_on_a_parameter_server_runtime(tmp_path):
    text = 'base = "summit"\n[runtime]\nbase = "parameter-server"\nps_servers = 2\n'
    assert load_cluster(_write(tmp_path, text)).runtime.ps_servers == 2
