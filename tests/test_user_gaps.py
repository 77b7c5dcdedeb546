"""Issue 13, the user-facing gaps: efficiency against one device, simulate's --batch and
--precision, strong scaling with --global-batch and its flagged baseline, the rank
and backward-pass columns, and exposed communication in every output."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.roofline import layer_times
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.training.predict import one_device, predict


def test_device_baseline_is_one_device_alone() -> None:
    c, w = get_cluster("summit"), get_workload("resnet50")
    node = predict(c, w, [1, 4])
    dev = predict(c, w, [1, 4], baseline="device")
    c1, w1 = one_device(c, w)
    alone = predict(c1, w1, [1])
    assert c1.node.devices_per_node == 1 and alone.devices.tolist() == [1]
    np.testing.assert_allclose(dev.efficiency, dev.samples_per_s /
                               (dev.devices * alone.samples_per_s[0]))
    assert node.efficiency[0] == 1.0 and dev.efficiency[0] < 1.0   # 6 GPUs talk inside a node
    np.testing.assert_array_equal(node.samples_per_s, dev.samples_per_s)
    assert (dev.baseline, node.baseline) == ("device", "node")
    with pytest.raises(ConfigError, match="baseline: must be one of node, device, got 'gpu'"):
        predict(c, w, 1, baseline="gpu")
    # one rank driving both sockets of a node: no one-device configuration
    skx = get_cluster("stampede2-skx")
    with pytest.raises(ConfigError, match=r"baseline: 'device' needs a whole number of ranks "
                                          r"per device; .* 1 ranks per node on 2 devices"):
        predict(skx, dataclasses.replace(w, ranks_per_node=1), 1, baseline="device")


def test_rows_carry_ranks_backward_and_exposed_comm() -> None:
    c, w = get_cluster("stampede2-skx"), dataclasses.replace(get_workload("resnet50"),
                                                              ranks_per_node=4)
    p = predict(c, w, [1, 2])
    row = p.to_rows()[1]
    assert row["ranks"] == 8 and row["devices"] == 4
    lt = layer_times(w.model, c.node.device, w.precision, 32 * 2 / 4, 0.5)
    assert row["backward_s"] == pytest.approx(float(lt.backward_s.sum()))
    assert 0 < row["backward_s"] < row["compute_s"] and "exposed_comm_s" in row


def test_global_batch_flags_a_baseline_that_does_not_fit(capsys) -> None:
    # 1,536 on one node is 256 per 16 GB V100 in fp32: twice the 128 that NVIDIA's
    # DeepLearningExamples train there (768, their batch, fits since frameworks run
    # ReLU in place: tests/test_memory_cited.py)
    assert main(["predict", "summit", "resnet50", "--nodes", "1,64", "--global-batch", "1536",
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["meta"]["scaling"] == "strong" and doc["meta"]["baseline_fits"] is False
    assert [r["global_batch"] for r in doc["rows"]] == [1536, 1536]
    assert doc["rows"][1]["fits"] is True and doc["rows"][0]["fits"] is False
    assert "note: the baseline (one node running the whole global batch of 1536 samples) " \
           "does not fit" in captured.err
    assert main(["predict", "summit", "resnet50", "--nodes", "1,4", "--global-batch",
                 "192"]) == 0   # 32 per GPU on one node: the baseline fits
    out = capsys.readouterr().out
    assert "global batch 192" in out and "note:" not in out
    assert main(["predict", "summit", "resnet50", "--nodes", "4", "--baseline", "device"]) == 0
    assert "baseline: efficiency against 1 device alone" in capsys.readouterr().out


@pytest.mark.parametrize("argv, match", [
    (["predict", "summit", "resnet50", "--global-batch", "0"],
     "--global-batch: must be an integer >= 1"),
    (["predict", "summit", "resnet50", "--nodes", "64", "--global-batch", "100"],
     "global_batch: 100 samples cannot be split over 384 ranks"),
    (["predict", "summit", "resnet50", "--baseline", "rack"], "invalid choice: 'rack'"),
    (["simulate", "summit", "--precision", "fp16"], "--precision: sets the training workload"),
    (["simulate", "summit", "resnet50", "--batch", "0"],
     "batch_per_device: must be a positive integer, got 0"),
])
def test_bad_values_are_one_line_exit_2(capsys, argv, match) -> None:
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1


def test_simulate_takes_batch_and_precision_like_predict(capsys) -> None:
    argv = ["summit", "resnet50", "--nodes", "2", "--batch", "16", "--precision", "fp16"]
    assert main(["simulate", *argv, "--iterations", "2", "--format", "json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert main(["predict", *argv, "--format", "json"]) == 0
    ref = json.loads(capsys.readouterr().out)["rows"][0]
    assert ref["global_batch"] == 12 * 16
    assert run["samples_per_s"] * run["iteration_s"] == pytest.approx(12 * 16)
    assert run["analytical_iteration_s"] == pytest.approx(ref["iteration_s"])
    assert run["backward_s"] == pytest.approx(ref["backward_s"])
    assert main(["simulate", *argv, "--iterations", "2"]) == 0
    table = capsys.readouterr().out
    assert "backward_s" in table and "exposed_comm_s" in table and "ranks" in table


def test_sweep_rows_carry_ranks_backward_and_exposed_comm() -> None:
    from dlscale.sweep_points import COLUMNS, analytical

    assert {"ranks", "backward_s", "exposed_comm_s"} <= set(COLUMNS)
    rows = analytical(get_cluster("summit"), get_workload("resnet50"), [1, 2], [0, 0])
    assert [r["ranks"] for r in rows] == [6, 12]
    assert all(0 < r["backward_s"] < r["compute_s"] for r in rows)


def test_plan_takes_baseline_and_global_batch(tmp_path, capsys) -> None:
    out = tmp_path / "plan.json"
    base = ["plan", "resnet50", "--cluster", "summit", "--nodes", "1,16", "--collectives",
            "ring", "-o", str(out)]
    assert main(base) == 0
    node = {r["nodes"]: r["efficiency"] for r in json.loads(out.read_text())["rows"]}
    assert main([*base, "--baseline", "device"]) == 0
    dev = {r["nodes"]: r["efficiency"] for r in json.loads(out.read_text())["rows"]}
    assert node[1] == 1.0 and dev[1] < 1.0 and dev[16] < node[16]
    assert main([*base, "--global-batch", "4096"]) == 0   # 683 per GPU on one node: no fit
    rows = json.loads(out.read_text())["rows"]
    assert [r["nodes"] for r in rows] == [16] and rows[0]["devices"] == 96
    capsys.readouterr()


def test_sweep_baseline_device_is_its_own_study(tmp_path, capsys) -> None:
    study = tmp_path / "st.toml"
    study.write_text('name = "bl"\ncluster = "summit"\nworkload = "resnet50"\nnodes = [1, 4]\n')
    common = ["sweep", str(study), "--quiet", "--no-plots", "--executor", "serial",
              "--format", "none"]
    assert main([*common, "-o", str(tmp_path / "node")]) == 0
    assert main([*common, "-o", str(tmp_path / "dev"), "--baseline", "device"]) == 0
    node = json.loads((tmp_path / "node" / "results.json").read_text())["rows"]
    dev = json.loads((tmp_path / "dev" / "results.json").read_text())["rows"]
    assert node[0]["efficiency"] == 1.0 and dev[0]["efficiency"] < 1.0
    assert [r["samples_per_s"] for r in node] == [r["samples_per_s"] for r in dev]
    assert node[0]["key"] != dev[0]["key"]
    # resuming the node-baseline folder with the other baseline is refused
    assert main([*common, "-o", str(tmp_path / "node"), "--baseline", "device", "--resume"]) == 2
    assert "baseline 'device' here, None there" in capsys.readouterr().err


def test_simulate_baseline_device(capsys) -> None:
    from dlscale.simulator.training.run import simulate_training

    c, w = get_cluster("summit"), get_workload("resnet50")
    sim = simulate_training(c, w, 2, iterations=2, baseline="device")
    node = simulate_training(c, w, 2, iterations=2)
    ref = predict(c, w, [2], baseline="device")
    assert sim.efficiency == pytest.approx(float(ref.efficiency[0]), rel=0.02)
    assert sim.efficiency < node.efficiency
    assert simulate_training(c, w, 1, iterations=2, baseline="device").efficiency < 1.0
    assert main(["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2",
                 "--baseline", "device", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["baseline"] == "device"
    assert doc["runs"][0]["efficiency"] == pytest.approx(sim.efficiency)
