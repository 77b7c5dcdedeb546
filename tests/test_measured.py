"""The user's own measurements as inputs: a rate, per-layer times, profiler traces."""

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster, get_model, get_workload
from dlscale.perfmodel.compute.horovod import read_horovod_timeline
from dlscale.perfmodel.compute.measured import MeasuredCompute, parse_rate
from dlscale.perfmodel.compute.roofline import layer_times, update_s
from dlscale.perfmodel.compute.traces import read_trace
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.config import load_workload
from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Link, NetworkSpec, NodeSpec
from dlscale.perfmodel.training.predict import predict

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "examples" / "traces"
RESNET_LAYERS = [la.name for la in get_model("resnet50").layers]


def _with(workload, measured):
    return dataclasses.replace(workload, model=dataclasses.replace(workload.model, measured=measured))


def _one_v100():
    dev = get_cluster("summit").node.device
    link = Link("l", 10e9, 1e-6)
    return Cluster("one", NodeSpec("n", dev, 1, link, link), NetworkSpec("x", Crossbar(2), link))


def test_a_measured_rate_is_what_one_device_does_at_that_batch():
    w = _with(dataclasses.replace(get_workload("resnet50"), batch_per_device=128),
              parse_rate("1200@128"))
    p = predict(_one_v100(), w, 1)
    assert float(p.samples_per_s[0]) == pytest.approx(1200.0, rel=1e-9)
    # at another batch the roofline's batch curve carries it: smaller batch, lower rate
    p64 = predict(_one_v100(), dataclasses.replace(w, batch_per_device=64), 1)
    assert 0.7 * 1200 < float(p64.samples_per_s[0]) < 1200


def test_a_rate_above_what_any_algorithm_can_do_or_below_the_update_is_refused():
    w = _with(get_workload("resnet50"), parse_rate("90000@64"))
    with pytest.raises(ConfigError, match=r"^--measured-samples-per-s 90000@64: 9e\+04 samples/s "
                                          r"of resnet50 at batch 64 is .* at most 5.06 x"):
        predict(_one_v100(), w, 1)
    slow_update = _with(get_workload("resnet50"), MeasuredCompute(batch=1, samples_per_s=2000))
    # a measured rate that leaves less than the weight update for compute is impossible
    dev = get_cluster("summit").node.device
    assert 1 / 2000 < update_s(get_model("resnet50").params, dev)
    with pytest.raises(ConfigError, match=r"less than the weight update alone"):
        layer_times(slow_update.model, dev, "fp32", 1)


@pytest.mark.parametrize(("text", "msg"), [
    ("219", r"expected RATE@BATCH"), ("x@64", r"the rate must be a finite number > 0, got 'x'"),
    ("219@0", r"the batch must be a positive integer, got '0'"),
    ("inf@64", r"the rate must be a finite number > 0")])
def test_bad_rates_name_the_flag(text, msg):
    with pytest.raises(ConfigError, match=r"^--measured-samples-per-s: " + msg):
        parse_rate(text)


def test_per_layer_times_replace_their_layers_and_the_rest_keeps_the_totals():
    m = MeasuredCompute(batch=64, forward_s=0.08, backward_s=0.16,
                        layers=(("conv1", 0.01, 0.02), ("fc1000", 0.001, 0.002)))
    model = dataclasses.replace(get_model("resnet50"), measured=m)
    dev = get_cluster("summit").node.device
    t = layer_times(model, dev, "fp32", 64)
    i = RESNET_LAYERS.index("conv1")
    assert (t.forward_s[i], t.backward_s[i]) == pytest.approx((0.01, 0.02))
    assert t.forward_s.sum() == pytest.approx(0.08) and t.backward_s.sum() == pytest.approx(0.16)
    with pytest.raises(ConfigError, match=r"measured.layers\[0\]: no layer named 'conv9'.*"
                                          r"did you mean 'conv1'"):
        dataclasses.replace(get_model("resnet50"),
                            measured=MeasuredCompute(batch=1, layers=(("conv9", 1.0, 1.0),)))
    with pytest.raises(ConfigError, match=r"measured: forward_s and backward_s must be given together"):
        MeasuredCompute(batch=1, forward_s=1.0)


def test_a_workload_file_carries_a_measurement(tmp_path):
    f = tmp_path / "w.toml"
    f.write_text('base = "resnet50"\n[model.measured]\nbatch = 64\nforward_ms = 80\nbackward_ms = 160\n'
                 'layers = [["conv1", 0.01, 0.02]]\n')
    w = load_workload(f)
    assert w.model.measured.forward_s == pytest.approx(0.08)
    assert w.model.measured.layers == (("conv1", 0.01, 0.02),)


def test_pytorch_trace_forward_backward_and_iterations():
    t = read_trace(TRACES / "pytorch_resnet50_v100_b64.json")
    assert (t.framework, t.iterations) == ("pytorch", 2)
    # kernels: forward 68.7 ms busy, backward 133.3 ms busy, optimizer 4.3 ms; the 232 ms
    # step less the optimizer is shared between forward and backward by busy time
    assert t.optimizer_s == pytest.approx(4.3e-3)
    assert t.forward_s + t.backward_s == pytest.approx(0.232 - 4.3e-3, rel=1e-9)
    assert t.forward_s / t.backward_s == pytest.approx(68.7 / 133.3, rel=1e-9)


def test_tensorflow_timeline_gives_per_layer_times():
    t = read_trace(TRACES / "tensorflow_resnet50_p100_b64.json", RESNET_LAYERS)
    assert (t.framework, t.iterations) == ("tensorflow", 1)
    layers = {name: (f, b) for name, f, b in t.layers}
    # stream:all kernels (op time less 20 us each); backward from gradients/ scopes
    assert layers["res2a_b"] == pytest.approx((0.03798, 0.03998 + 0.03698))
    assert layers["conv1_relu"] == pytest.approx((0.00358, 0.00538))
    assert t.optimizer_s == pytest.approx(0.00258 + 0.00268)


def test_horovod_timeline_measures_negotiation_collectives_and_overlap(tmp_path):
    h = read_horovod_timeline(TRACES / "horovod_resnet50_4ranks.json")
    assert (h.ranks, h.iterations, h.tensors) == (4, 2, 3)
    assert h.negotiation_s == pytest.approx(3 * 1.45e-3)
    # exposed: the last tensor's (conv1, 37,632 B) allreduce after everything was ready
    # (250 us of queue, copies and the 9 us NCCL call; the other two finished long before)
    assert h.exposed_s == pytest.approx((250 + 37_632 // 4_096) * 1e-6)
    assert 0.9 < h.overlap < 1
    assert [n.split("gradients_")[1][:6] for n, _ in h.ready_s] == ["fc1000", "res2a_", "conv1_"]
    # an unterminated list (older Horovod) reads the same
    cut = tmp_path / "cut.json"
    cut.write_text((TRACES / "horovod_resnet50_4ranks.json").read_text().rstrip().rstrip("]") + ",\n")
    assert read_horovod_timeline(cut) == h


@pytest.mark.parametrize(("content", "msg"), [
    (b"{", r"not JSON \(Expecting property name"),
    (b'{"traceEvents": 3}', r"traceEvents: expected a list of events, got int"),
    (b'{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": -1}]}',
     r"traceEvents\[0\].dur: must be a number of microseconds >= 0, got -1"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1}]}',
     r"no ProfilerStep#N events"),
    (b'{"traceEvents": [{"ph": "X", "name": "foo", "ts": 0, "dur": 1}]}',
     r"not a PyTorch or TensorFlow profiler trace"),
    (b'[{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 0, "pid": 1}]', r"is a Horovod timeline"),
    (b"\xff\xfe", r"not UTF-8 text"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "ts": 0, "dur": 1, "args": [1]}]}',
     r"no ProfilerStep#N events"),
    (b'{"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 9}, '
     b'{"ph": "X", "cat": "cpu_op", "ts": 1, "dur": 1}]}', r"found no backward work"),
])
def test_malformed_traces_name_the_file_and_field(tmp_path, content, msg):
    f = tmp_path / "t.json"
    f.write_bytes(content)
    with pytest.raises(ConfigError, match=r"t.json: " + msg):
        read_trace(f)


def test_malformed_horovod_timelines(tmp_path):
    f = tmp_path / "h.json"
    f.write_text('[{"ph": "E", "ts": 5, "pid": 1}]')
    with pytest.raises(ConfigError, match=r"h.json: traceEvents\[0\]: E event of pid 1 at ts 5 "
                                          r"closes nothing"):
        read_horovod_timeline(f)
    f.write_text('[{"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 0, "pid": 1},'
                 '{"ph": "E", "ts": 1, "pid": 1}]')
    with pytest.raises(ConfigError, match=r"no ALLREDUCE \(or other collective\) B/E pairs"):
        read_horovod_timeline(f)


def test_gzipped_trace_reads_the_same(tmp_path):
    src = TRACES / "tensorflow_resnet50_p100_b64.json"
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    assert read_trace(gz, RESNET_LAYERS) == read_trace(src, RESNET_LAYERS)


def test_cli_predict_with_a_trace_and_a_timeline(capsys):
    rc = main(["predict", "summit", "resnet50", "--nodes", "1,4", "--batch", "64", "--format", "json",
               "--trace", str(TRACES / "pytorch_resnet50_v100_b64.json") + "@64",
               "--horovod-timeline", str(TRACES / "horovod_resnet50_4ranks.json")])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["meta"]["measured"].startswith(
        "measured compute: forward 77.44 ms + backward 150.3 ms at batch 64; backward split by "
        "when 3 layers' gradients were ready")
    assert doc["meta"]["horovod_timeline"]["ranks"] == 4
    t = read_trace(TRACES / "pytorch_resnet50_v100_b64.json")
    upd = update_s(get_model("resnet50").params, get_cluster("summit").node.device)
    # the low end of the band: no slowdown of the compute beside the allreduces
    assert doc["rows"][0]["compute_s_low"] == pytest.approx(t.forward_s + t.backward_s + upd)


@pytest.mark.parametrize("args", [
    ["predict", "summit", "resnet50", "--measured-samples-per-s", "1200"],
    ["predict", "summit", "resnet50", "--measured-samples-per-s", "1@1", "--trace", "x.json"],
    ["predict", "summit", "resnet50", "--trace", "no-such-file.json"],
    ["plan", "resnet50", "--cluster", "summit", "--measured-samples-per-s=-3@64"],
    ["simulate", "summit", "resnet50", "--measured-trace", "no-such-file.json"],
])
def test_cli_bad_measurements_exit_2_with_one_line(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0]
    assert not list(tmp_path.iterdir())          # nothing written


def test_simulate_and_plan_take_the_measurement(capsys, tmp_path):
    assert main(["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2",
                 "--measured-samples-per-s", "300@32"]) == 0
    out = capsys.readouterr().out
    assert "# measured compute: 300 samples/s at batch 32" in out
    assert main(["plan", "resnet50", "--cluster", "summit", "--samples", "1e7", "--nodes", "1,2",
                 "--collectives", "ring", "--algorithms", "sync-sgd", "--top", "1",
                 "--measured-samples-per-s", "300@32", "-o", str(tmp_path / "p.json")]) == 0
    assert "measured compute: 300 samples/s at batch 32" in capsys.readouterr().out


def test_readme_measured_section_shows_what_the_tool_prints(capsys, monkeypatch):
    import re
    import shlex

    monkeypatch.chdir(ROOT)
    section = (ROOT / "README.md").read_text().split("### Your own measurements as inputs", 1)[1]
    section = section.split("\n### ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", section, re.S)
    shown = re.findall(r"```text\n(.*?)```", section, re.S)
    assert len(commands) == len(shown) == 2
    for cmd, text in zip(commands, shown, strict=True):
        assert main(shlex.split(cmd.strip())[1:]) == 0
        assert capsys.readouterr().out == text


def test_a_sweep_varies_the_measured_rate(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text(f'cluster = "summit"\nworkload = "{ROOT}/examples/configs/resnet50-measured.toml"\n'
                     'nodes = [1]\n[vary]\n"model.measured.samples_per_s" = [250, 300]\n')
    assert main(["sweep", str(study), "-o", str(tmp_path / "out")]) == 0
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["rows"]
    per_device = [r["samples_per_s"] / 6 for r in rows]
    assert per_device[1] / per_device[0] == pytest.approx(300 / 250, rel=0.02)


def test_horovod_ready_times_split_the_backward_pass_over_the_layers():
    h = read_horovod_timeline(TRACES / "horovod_resnet50_4ranks.json")
    ready = h.layer_ready(RESNET_LAYERS)
    assert [n for n, _ in ready] == ["fc1000", "res2a_b", "conv1"]
    assert [r for _, r in ready] == pytest.approx([0.0, 0.068, 0.148])
    m = MeasuredCompute(batch=64, forward_s=0.08, backward_s=0.16, backward_ready=ready)
    model = dataclasses.replace(get_model("resnet50"), measured=m)
    t = layer_times(model, get_cluster("summit").node.device, "fp32", 64)
    done = t.backward_s[::-1].cumsum()[::-1]          # time the backward pass reaches layer i
    at = {n: done[RESNET_LAYERS.index(n)] for n, _ in ready}
    assert at["res2a_b"] - at["fc1000"] == pytest.approx(0.068)
    assert at["conv1"] - at["fc1000"] == pytest.approx(0.148)
    assert t.backward_s.sum() == pytest.approx(0.16) and t.forward_s.sum() == pytest.approx(0.08)
    # an offset against the model's layer order is skipped, not forced
    bad = dataclasses.replace(m, backward_ready=(("fc1000", 0.0), ("conv1", 0.05), ("res2a_b", 0.1)))
    t2 = layer_times(dataclasses.replace(model, measured=bad), get_cluster("summit").node.device,
                     "fp32", 64)
    assert t2.backward_s.sum() == pytest.approx(0.16)
    with pytest.raises(ConfigError, match=r"measured.backward_ready\[0\]: no layer named 'fc9'"):
        dataclasses.replace(get_model("resnet50"), measured=MeasuredCompute(
            batch=1, backward_ready=(("fc9", 0.0), ("conv1", 1.0))))


def test_cli_timeline_batch_must_match_the_measurement(capsys):
    rc = main(["predict", "summit", "resnet50", "--nodes", "1", "--measured-samples-per-s", "300@64",
               "--horovod-timeline", str(TRACES / "horovod_resnet50_4ranks.json") + "@32"])
    assert rc == 2
    assert "--horovod-timeline: batch 32 differs from the measured compute's batch 64" in \
        capsys.readouterr().err
