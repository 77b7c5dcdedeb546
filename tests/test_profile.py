import json
import os

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.hardware import (
    Cluster,
    Crossbar,
    Device,
    Link,
    NetworkSpec,
    NodeSpec,
)
from dlscale.perfmodel.machine.profile import (
    SCHEMA_VERSION,
    MachineProfile,
    apply_profile,
    load_profile,
    save_profile,
)


def _profile(**kw):
    args = dict(
        p2p={"intra-node": {"latency_s": 4e-7, "bandwidth_Bps": 6e9,
                            "segments": [{"min_bytes": 1, "max_bytes": 8, "alpha_s": 4e-7,
                                          "beta_s_per_B": 0.0}]}},
        kernels={"stream_triad_Bps": 1.2e10, "gemm_flops": 5e10, "reduce_Bps": 4e9,
                 "noise": {"model_fwd_bwd_s": 0.03}},
        provenance={"hosts": ["vm"], "ranks": 2},
        notes=["one host: no inter-node figures"],
    )
    args.update(kw)
    return MachineProfile(**args)


def _cluster(kind="cpu", fast_bw=0.0):
    dev = Device("d", kind, 2, 2e9, 1e11, 2e11, 2e11, 8e9, 2e10, 0.5,
                 fast_memory_bytes=16e9 if fast_bw else 0.0, fast_memory_bandwidth_Bps=fast_bw)
    node = NodeSpec("n", dev, 2, Link("shm", 1e10, 1e-6), Link("nic", 1e10, 2e-6))
    return Cluster("c", node, NetworkSpec("net", Crossbar(4), Link("wire", 1e10, 1e-7)))


def test_roundtrip_through_file(tmp_path):
    prof = _profile()
    path = save_profile(prof, tmp_path / "sub" / "p.json")
    assert load_profile(path) == prof
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert next(iter(data)) == "schema_version"
    assert [p.name for p in path.parent.iterdir()] == ["p.json"]  # no temp file left


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    save_profile(_profile(), path)
    before = path.read_text()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        save_profile(_profile(kernels={"gemm_flops": 1e9}), path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


def test_load_rejects_other_schema_version(tmp_path):
    path = tmp_path / "p.json"
    data = _profile().to_dict()
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"schema_version: must be 1, got 99 \(re-run `dlscale calibrate`"):
        load_profile(path)


def test_load_errors_name_file_and_field(tmp_path):
    with pytest.raises(ConfigError, match="profile: no such file"):
        load_profile(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match=r"bad.json'.*not valid JSON"):
        load_profile(bad)
    data = _profile().to_dict()
    data["p2p"]["intra-node"]["bandwidth_Bps"] = -1
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"profile.p2p.intra-node.bandwidth_Bps: must be a positive number, got -1"):
        load_profile(bad)
    data = _profile().to_dict()
    del data["p2p"]["intra-node"]["latency_s"]
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"profile.p2p.intra-node.latency_s: missing"):
        load_profile(bad)
    data = _profile().to_dict()
    data["colectives"] = {}
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"unknown fields \['colectives'\]"):
        load_profile(bad)


def test_rejects_unknown_regime_and_kernel():
    with pytest.raises(ConfigError, match="unknown regime 'inter'; valid: intra-node, inter-node"):
        _profile(p2p={"inter": {"latency_s": 1e-6, "bandwidth_Bps": 1e9}})
    with pytest.raises(ConfigError, match="unknown figure 'triad'"):
        _profile(kernels={"triad": 1e9})
    with pytest.raises(ConfigError, match="neither p2p nor kernels"):
        MachineProfile()


def test_quantile_tables_are_checked():
    ok = [1e-4 + 1e-8 * i for i in range(1001)]
    prof = _profile(kernels={"model_fwd_bwd_s": 1e-4, "quantiles": {"model_fwd_bwd_s": ok}})
    assert prof.kernels["quantiles"]["model_fwd_bwd_s"][1000] == pytest.approx(1.1e-4)
    for bad in (ok[:1000], ok[::-1], [*ok[:1000], float("nan")], [-1.0] * 1001, "fast"):
        with pytest.raises(ConfigError, match=r"profile.kernels.quantiles.model_fwd_bwd_s: "
                                              r"must be a list of 1001 non-decreasing numbers"):
            _profile(kernels={"model_fwd_bwd_s": 1e-4, "quantiles": {"model_fwd_bwd_s": bad}})


def test_link_params_no_silent_fallback():
    prof = _profile()
    assert prof.link_params("intra-node") == (4e-7, 1 / 6e9)
    with pytest.raises(ConfigError, match=r"no 'inter-node' measurements \(has: intra-node\)"):
        prof.link_params("inter-node")
    assert prof.gamma_s_per_B == pytest.approx(1 / 4e9)


def test_apply_one_host_profile_keeps_network():
    cl = _cluster()
    new = apply_profile(cl, _profile())
    assert new.node.intra_link.bandwidth_Bps == 6e9
    assert new.node.intra_link.latency_s == 4e-7
    assert new.node.nic == cl.node.nic and new.network.link == cl.network.link
    # host figures are shared by the node's 2 devices
    assert new.node.device.memory_bandwidth_Bps == 6e9
    assert new.node.device.sustained_fraction == pytest.approx(0.125)
    assert cl.node.intra_link.bandwidth_Bps == 1e10  # input untouched


def test_apply_inter_node_and_knl():
    prof = _profile(p2p={"intra-node": {"latency_s": 4e-7, "bandwidth_Bps": 6e9},
                         "inter-node": {"latency_s": 1.5e-6, "bandwidth_Bps": 1.1e10}},
                    kernels={"stream_triad_Bps": 1e11, "stream_triad_host_Bps": 9e11,
                             "gemm_flops": 9e12})
    cl = _cluster(kind="knl", fast_bw=4.9e11)
    new = apply_profile(cl, prof)
    assert new.node.nic.latency_s == 1.5e-6 and new.network.link.bandwidth_Bps == 1.1e10
    assert new.node.device.fast_memory_bandwidth_Bps == 4.5e11  # host figure / 2 devices
    assert new.node.device.memory_bandwidth_Bps == 2e10
    assert new.node.device.sustained_fraction == 1.0  # clipped at peak
    with pytest.raises(ConfigError, match="profile: must be a MachineProfile, got dict"):
        apply_profile(cl, prof.to_dict())


def test_apply_leaves_gpu_compute_and_memory_alone():
    cl = _cluster(kind="gpu")
    new = apply_profile(cl, _profile())
    assert new.node.device == cl.node.device  # CPU kernels say nothing about a GPU
    assert new.node.intra_link.bandwidth_Bps == 6e9


def test_a_flat_segment_on_a_one_node_machine_names_the_file_the_fit_and_the_fix(tmp_path):
    """Issue 26 item 2: predict refused such a profile with 'segments[0].beta_s_per_B:
    must be > 0', naming neither the file nor what to do."""
    import dataclasses

    from dlscale.perfmodel.machine.config import load_cluster

    path = save_profile(_profile(), tmp_path / "profile.json")
    one = _cluster()
    one = dataclasses.replace(one, network=dataclasses.replace(one.network,
                                                               topology=Crossbar(1)))
    with pytest.raises(ConfigError) as err:
        load_cluster(one, profile=path)
    msg = str(err.value)
    assert msg.startswith(f"profile {str(path)!r}: p2p.intra-node.segments[0].beta_s_per_B: 0.0")
    assert "piecewise Hockney fit of intra-node ping-pongs on vm (1-8 B" in msg
    assert "re-run `dlscale calibrate`" in msg and "delete p2p.intra-node.segments" in msg
    load_cluster(_cluster(), profile=path)  # on 4 nodes the intra-node fit gives no factors


def test_calibration_writes_no_segment_without_a_bandwidth(monkeypatch):
    """Issue 26 item 2: a flat small-message segment (beta at its bound 0, as on an
    oversubscribed host) went into the profile as it was."""
    import numpy as np

    import dlscale.validation.calibrate_run as cr

    sizes = [2 ** k for k in range(0, 21)]
    n = np.array(sizes, dtype=float)
    flat = np.where(n < 512, 2e-5, 2e-5 + n / 4e9).tolist()      # flat below 512 B
    monkeypatch.setattr(cr.mb, "pingpong", lambda *a, **k: {"sizes_bytes": sizes, "one_way_s": flat,
                                                        "spread": [0.0] * len(sizes)})
    monkeypatch.setattr(cr.mb, "exchange", lambda *a, **k: {"sizes_bytes": sizes, "time_s": flat,
                                                        "spread": [0.0] * len(sizes)})
    monkeypatch.setattr(cr.mb, "streaming", lambda *a, **k: {
        "sizes_bytes": sizes, "per_msg_s": flat, "send_overhead_s": 1e-6,
        "bandwidth_Bps": (n / np.array(flat)).tolist(), "spread": [0.0] * len(sizes)})

    class Comm:
        def Get_rank(self):
            return 0

    assert cr.fit_piecewise_hockney(sizes, flat).segments[0].beta_s_per_B == 0  # the raw fit
    entry = cr._p2p(Comm(), (0, 1), sizes, 1.0)
    assert entry["segments"] and all(s["beta_s_per_B"] > 0 for s in entry["segments"])
    assert entry["fit_notes"][0].startswith("segment 1-256 B: no size dependence (beta 0), "
                                            "merged into 512-")
    prof = MachineProfile(p2p={"intra-node": {k: v for k, v in entry.items()
                                              if k != "fit_notes"}})
    apply_profile(_cluster_one_node(), prof)   # the factors exist: every segment has a beta


def _cluster_one_node():
    import dataclasses

    c = _cluster()
    return dataclasses.replace(c, network=dataclasses.replace(c.network, topology=Crossbar(1)))
