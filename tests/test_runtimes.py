"""Software stacks (runtimes): cited terms, each term's direction, the stack's own
allreduce choice, and predict and simulate agreeing on it per row."""

import dataclasses
import json
import math

import numpy as np
import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import CLUSTERS, RUNTIMES, get_cluster, get_workload
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.machine.hardware import Torus
from dlscale.perfmodel.machine.runtime import TRANSPORT_EFFICIENCY, with_transport
from dlscale.perfmodel.training.iteration import iteration_times
from dlscale.perfmodel.training.predict import predict
from dlscale.perfmodel.training.rank_layout import layout
from dlscale.perfmodel.training.sync import auto_choice, workload_allreduce
from dlscale.simulator.training.run import simulate_training

SUMMIT = get_cluster("summit")
RESNET = get_workload("resnet50")


def _stack(cluster, **kw):
    return dataclasses.replace(cluster, runtime=dataclasses.replace(cluster.runtime, **kw))


def test_every_runtime_has_its_terms_and_a_source():
    from dlscale.perfmodel.catalog import runtime_rows

    rows = runtime_rows()
    assert [r["name"] for r in rows] == list(RUNTIMES)
    for r in rows:
        assert r["source"].strip() and r["stack"].strip(), r["name"]
        for key in ("coordination", "cycle_ms", "fusion_cap", "auto_rule", "transport",
                    "transport_efficiency", "progress_cores", "compute_slowdown"):
            assert r[key] not in (None, ""), (r["name"], key)


def test_every_preset_names_a_catalog_stack():
    assert {c.runtime.name for c in CLUSTERS.values()} <= set(RUNTIMES)
    assert SUMMIT.runtime.name == "horovod-nccl"
    assert get_cluster("cori-knl").runtime.name == "mpi"


def test_transport_tcp_is_slower_than_rdma_and_applied_once():
    rdma = _stack(SUMMIT, transport="rdma")
    tcp = _stack(SUMMIT, transport="tcp")
    w = dataclasses.replace(RESNET, collective="ring")
    t_rdma = iteration_times(rdma, w, [64]).comm_s[0]
    t_tcp = iteration_times(tcp, w, [64]).comm_s[0]
    assert t_tcp > t_rdma
    once = with_transport(rdma)
    assert with_transport(once) is once
    assert once.node.nic.bandwidth_Bps == pytest.approx(
        SUMMIT.node.nic.bandwidth_Bps * TRANSPORT_EFFICIENCY["rdma"])
    # an Ethernet TCP link is sockets whatever the stack: latency floor 10 us
    k80 = with_transport(get_cluster("k80-8gpu"))
    assert k80.node.nic.latency_s >= 10e-6


def test_longer_cycle_is_slower_for_a_small_model():
    w = get_workload("lenet")
    short = iteration_times(_stack(SUMMIT, cycle_s=1e-3), w, [4]).iteration_s[0]
    long = iteration_times(_stack(SUMMIT, cycle_s=5e-3), w, [4]).iteration_s[0]
    assert long - short == pytest.approx(2e-3, rel=0.2)
    # no background loop: no wait at all
    none = iteration_times(_stack(SUMMIT, cycle_s=0.0), w, [4]).iteration_s[0]
    assert none < short


def test_rank0_negotiation_grows_linearly_and_the_cache_does_not():
    nodes = [512, 4608]
    rank0 = iteration_times(_stack(SUMMIT, coordination="rank0"), RESNET, nodes).comm_s
    cache = iteration_times(_stack(SUMMIT, coordination="cache"), RESNET, nodes).comm_s
    none = iteration_times(_stack(SUMMIT, coordination="none"), RESNET, nodes).comm_s
    assert (none <= cache).all() and (cache < rank0).all()
    assert rank0[1] - rank0[0] > 5 * (cache[1] - cache[0])


def test_fusion_cap_splits_buckets():
    from dlscale.perfmodel.training.sync import buckets

    per_layer = buckets(RESNET, RUNTIMES["mlsl"])
    fused = buckets(RESNET, RUNTIMES["horovod-nccl"])
    assert len(per_layer.bytes) == per_layer.tensors > len(fused.bytes)
    assert buckets(RESNET, RUNTIMES["nccl"]).bytes.max() <= 25 * 1024**2 + 4 * 2.4e6


def test_auto_is_the_stack_rule():
    cori = get_cluster("cori-knl")               # MPI: MPICH thresholds
    lay = layout(cori, RESNET, [8])
    t, names = workload_allreduce(cori, RESNET, lay, np.array([[1e3], [1e8]]))
    assert names[:, 0].tolist() == ["recursive-doubling", "rabenseifner"]
    # NCCL: only ring and tree ever chosen, the faster by the model
    lay = layout(SUMMIT, RESNET, [2, 64, 4608])
    for row in auto_choice(SUMMIT, RESNET, lay):
        assert set(row.tolist()) <= {"ring", "double-binary-tree"}
    t, names = workload_allreduce(SUMMIT, RESNET, lay, np.array([[1e8]]))
    ring = workload_allreduce(SUMMIT, dataclasses.replace(RESNET, collective="ring"), lay,
                              np.array([[1e8]]))[0]
    assert (t <= ring + 1e-15).all()


def test_default_collective_is_the_stacks_and_ring_is_slower_at_scale():
    quiet = dataclasses.replace(SUMMIT, noise="none")   # the collectives alone
    pred = predict(quiet, RESNET, [1, 4608])
    ring = predict(quiet, dataclasses.replace(RESNET, collective="ring"), [1, 4608])
    assert RESNET.collective == "auto"
    assert pred.efficiency[1] > 0.9 > 0.3 > ring.efficiency[1]


FAMILIES = {
    "fat-tree": SUMMIT,
    "dragonfly": get_cluster("cori-knl"),
    "torus": dataclasses.replace(SUMMIT, name="summit-torus", network=dataclasses.replace(
        SUMMIT.network, topology=Torus((4, 4, 4)))),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_predict_and_simulate_choose_the_same_allreduce_per_row(family):
    cluster = FAMILIES[family]
    w = get_workload("googlenet")
    nodes = [1, 2, 8, 64]
    rows = predict(cluster, w, nodes).to_rows()
    for n, row in zip(nodes, rows, strict=True):
        sim = simulate_training(cluster, w, n, iterations=2, network="fast",
                                efficiency=False).to_rows()[0]
        assert sim["allreduce"] == row["allreduce"], (family, n)


def test_expected_slowest_rank_matches_the_simulated_draws():
    c = dataclasses.replace(SUMMIT, noise="lognormal:0.05")
    w = get_workload("googlenet")
    pred = iteration_times(c, w, [1, 4]).iteration_s
    for n, p in zip([1, 4], pred, strict=True):
        sim = simulate_training(c, w, n, iterations=150, network="analytical",
                                efficiency=False)
        assert sim.iteration_s == pytest.approx(p, rel=0.01)
        assert sim.analytical_iteration_s == pytest.approx(p, rel=1e-12)
    # the run's own --noise (not the cluster's) sets the analytical reference too
    sim = simulate_training(SUMMIT, w, 4, iterations=2, network="analytical",
                            noise="lognormal:0.05", efficiency=False)
    assert sim.analytical_iteration_s == pytest.approx(pred[1], rel=1e-12)
    assert pred[1] > iteration_times(SUMMIT, w, [4]).iteration_s[0]


def test_cluster_file_names_its_runtime(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('base = "summit"\nruntime = "gloo"\nnoise = "lognormal:0.02"\n')
    c = load_cluster(f)
    assert (c.runtime.name, c.noise) == ("gloo", "lognormal:0.02")
    f.write_text('base = "summit"\nruntime = "glu"\n')
    with pytest.raises(ConfigError, match="runtime: unknown name 'glu'"):
        load_cluster(f)
    f.write_text('base = "summit"\nnoise = "gauss"\n')
    with pytest.raises(ConfigError, match="noise: unknown name 'gauss'"):
        load_cluster(f)


def test_cli_names_runtime_and_chosen_allreduce(capsys):
    assert main(["predict", "summit", "resnet50", "--nodes", "1,512", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["runtime"] == "horovod-nccl"
    assert doc["meta"]["allreduce_chosen"] == "ring 1, double-binary-tree 512 nodes"
    assert [r["allreduce"] for r in doc["rows"]] == ["ring", "double-binary-tree"]
    assert main(["predict", "summit", "resnet50", "--nodes", "2", "--runtime", "gloo"]) == 0
    out = capsys.readouterr().out
    assert "runtime gloo" in out.splitlines()[0] and "auto (gloo's choice)" in out
    assert main(["predict", "summit", "resnet50", "--runtime", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--runtime: unknown name 'nope'" in err[0]
    assert main(["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2",
                 "--runtime", "mpi", "--network", "analytical"]) == 0
    out = capsys.readouterr().out
    assert "runtime mpi" in out and "rabenseifner" in out


def test_catalog_runtimes_lists_them(capsys):
    assert main(["catalog", "runtimes", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["name"] for r in rows} == set(RUNTIMES)
    assert all(not math.isnan(r["transport_efficiency"]) for r in rows)


def test_sweep_varies_the_runtime(tmp_path):
    from dlscale.study import load_study
    from dlscale.sweep import run_sweep

    f = tmp_path / "st.toml"
    f.write_text('cluster = "summit"\nworkload = "resnet50"\nnodes = [2, 512]\n'
                 'fidelity = "analytical"\n'
                 '[vary]\nruntime = ["horovod-nccl", "horovod-legacy-nccl", "gloo"]\n')
    res = run_sweep(load_study(f), executor="serial", quiet=True, plots=False)
    assert not res.failures
    got = {(r["runtime"], r["nodes"]): r for r in res.rows}
    assert got[("gloo", 512)]["allreduce"] in ("ring", "rabenseifner")
    assert got[("horovod-nccl", 512)]["allreduce"] in ("ring", "double-binary-tree")
    assert (got[("horovod-legacy-nccl", 512)]["iteration_s"]
            > got[("horovod-nccl", 512)]["iteration_s"])


def test_plan_defaults_to_the_stacks_choice(tmp_path):
    from dlscale.plan import plan

    res = plan("resnet50", ["summit"], epochs=1, nodes=[64, 512])
    assert {r["collective"] for r in res.rows} == {"auto"}
    assert {r["runtime"] for r in res.rows} == {"horovod-nccl"}
    assert all(r["allreduce"] in ("ring", "double-binary-tree") for r in res.rows)
    res = plan("resnet50", ["summit"], epochs=1, nodes=[64], runtime="mpi")
    assert {r["allreduce"] for r in res.rows} <= {"recursive-doubling", "rabenseifner"}


def test_mlsl_progress_cores_take_compute_from_cpu_ranks_only():
    # Intel Caffe's launcher pins 2 MLSL servers per process on a Xeon, 4 on a KNL:
    # the rank computes on the rest, so a compute-bound step is longer (by at most the
    # core ratio: fewer cores are also filled better by the same batch); a GPU rank's
    # compute is untouched
    skx = get_cluster("stampede2-skx")
    base = iteration_times(_stack(skx, progress_cores=()), RESNET, [1]).compute_s[0]
    mlsl = iteration_times(_stack(skx, progress_cores=(("cpu", 2.0),)), RESNET, [1]).compute_s[0]
    assert base < mlsl <= base * 24 / 22
    assert layout(_stack(skx, progress_cores=(("cpu", 2.0),)), RESNET, [1]).compute_fraction \
        == pytest.approx(22 / 24)
    knl = get_cluster("stampede2-knl")
    lay = layout(dataclasses.replace(knl, runtime=RUNTIMES["mlsl"]), RESNET, [1])
    assert lay.compute_fraction == pytest.approx(64 / 68)
    gpu = iteration_times(dataclasses.replace(SUMMIT, runtime=RUNTIMES["mlsl"]), RESNET, [1])
    # (the same stack without its progress cores: MLSL charges no overlap slowdown)
    plain = dataclasses.replace(SUMMIT, runtime=dataclasses.replace(RUNTIMES["mlsl"],
                                                                    progress_cores=()))
    assert gpu.compute_s[0] == iteration_times(plain, RESNET, [1]).compute_s[0]
    # both fidelities take it from the layout
    c = _stack(skx, progress_cores=(("cpu", 2.0),))
    r = simulate_training(c, RESNET, 2, iterations=3, efficiency=False)
    assert r.iteration_s == pytest.approx(r.analytical_iteration_s, rel=0.02)


def test_progress_cores_are_checked():
    with pytest.raises(ConfigError, match=r"progress_cores: each entry must be \[kind, cores\]"):
        _stack(SUMMIT, progress_cores=(("tpu", 1.0),))
    with pytest.raises(ConfigError, match="progress_cores"):
        _stack(SUMMIT, progress_cores=(("cpu", -1.0),))
    # 4 ranks on a 2-socket node of 24-core sockets: 12 cores each; 12 servers leave none
    skx = _stack(get_cluster("stampede2-skx"), progress_cores=(("cpu", 12.0),))
    w = dataclasses.replace(RESNET, ranks_per_node=4)
    with pytest.raises(ConfigError, match="leave none of the 12 cores"):
        predict(skx, w, [1])


def test_progress_cores_from_a_toml_runtime(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('base = "stampede2-skx"\n[runtime]\nname = "mine"\nstack = "x"\n'
                 'coordination = "none"\ncycle_s = 0.0\nfusion_cap_bytes = 0.0\n'
                 'algorithms = ["ring"]\nselection = "model"\ntransport = "rdma"\n'
                 'progress_cores = [["cpu", 4]]\n')
    c = load_cluster(str(f))
    assert c.runtime.compute_fraction("cpu", 24) == pytest.approx(20 / 24)
