"""Profiler traces and Horovod timelines at the edges (issue 27 items 8, 10, 11, 14;
issue 26 item 7): cost linear in the trace, capped expansion, values of any type,
traces of another model, the timeline alone, the ``@B`` part, one meaning of --trace."""

import gzip
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from dlscale.cli import main
from dlscale.perfmodel.compute import tracefile
from dlscale.perfmodel.compute.horovod import read_horovod_timeline
from dlscale.perfmodel.compute.traces import read_trace
from dlscale.perfmodel.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "examples" / "traces"
PYTORCH = TRACES / "pytorch_resnet50_v100_b64.json"
TENSORFLOW = TRACES / "tensorflow_resnet50_p100_b64.json"
HOROVOD = TRACES / "horovod_resnet50_4ranks.json"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_traces", ROOT / "benchmarks" / "bench_traces.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _python_calls(path: Path) -> int:
    """Python function calls (generator resumptions included) of one read_trace."""
    calls = 0

    def prof(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(prof)
    try:
        read_trace(path)
    finally:
        sys.setprofile(None)
    return calls


def test_reading_a_trace_costs_about_linear_in_its_size(tmp_path):
    # load-independent: Python calls, not seconds (the timing is benchmarks/bench_traces.py);
    # the reader before scanned every backward span for each kernel (calls x 4 per x 2)
    bench = _bench()
    small, big = tmp_path / "s.json", tmp_path / "b.json"
    n_small = bench.write_synthetic_trace(small, 150_000)
    n_big = bench.write_synthetic_trace(big, 600_000)
    assert n_big > 3.5 * n_small
    ratio = _python_calls(big) / _python_calls(small)
    assert ratio < 1.5 * n_big / n_small


def test_gzip_expansion_is_capped_before_it_is_held(tmp_path, monkeypatch):
    monkeypatch.setattr(tracefile, "MAX_TRACE_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (4 << 20) + b"]"))
    with pytest.raises(ConfigError, match=r"bomb.json.gz: [\d,]+ bytes of gzip expand to more "
                                          r"than the limit of 1,048,576 bytes"):
        read_trace(bomb)
    plain = tmp_path / "big.json"
    plain.write_bytes(b"[" + b" " * (2 << 20) + b"]")
    with pytest.raises(ConfigError, match=r"big.json: 2,097,154 bytes, over the limit of "
                                          r"1,048,576 bytes"):
        read_horovod_timeline(plain)
    # within the limit, gzip still reads (in chunks) the same
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(PYTORCH.read_bytes()))
    assert read_trace(gz) == read_trace(PYTORCH)


def _pytorch_events():
    return json.loads(PYTORCH.read_text())["traceEvents"]


def _kernel_index(events):
    return next(i for i, e in enumerate(events) if e.get("cat") == "kernel")


def _bad_trace(kind):
    events = _pytorch_events()
    k = _kernel_index(events)
    if kind == "cat":
        events[k]["cat"] = ["kernel"]
    elif kind == "correlation":
        events[k]["args"]["correlation"] = [1, 2]
    elif kind == "pid":
        events[k]["pid"] = [0]
    elif kind == "ts":
        events[k]["ts"] = 10 ** 400
    return {"traceEvents": events}, k


@pytest.mark.parametrize(("kind", "msg"), [
    ("cat", r"traceEvents\[{k}\].cat: must be a string, got \['kernel'\]"),
    ("correlation", r"traceEvents\[{k}\].args.correlation: must be an integer .*got \[1, 2\]"),
    ("pid", r"traceEvents\[{k}\].pid: must be an integer or a string, got \[0\]"),
    ("ts", r"traceEvents\[{k}\].ts: must be a number of microseconds, got 1000000"),
])
def test_trace_values_of_unexpected_types_are_one_line(tmp_path, capsys, kind, msg):
    doc, k = _bad_trace(kind)
    f = tmp_path / "t.json"
    f.write_text(json.dumps(doc))
    assert main(["predict", "summit", "resnet50", "--nodes", "1", "--trace", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert re.search(msg.format(k=k), err[0]), err[0]


def _timeline():
    return json.loads(HOROVOD.read_text())


@pytest.mark.parametrize(("edit", "msg"), [
    (lambda ev: ev[4].update(pid=[1]), r"traceEvents\[4\].pid: must be an integer or a string"),
    (lambda ev: ev[4].update(ts=float("nan")), r"traceEvents\[4\].ts: must be a finite number "
                                               r"of microseconds, got nan"),
    (lambda ev: ev[9].update(ts=float("inf")), r"traceEvents\[9\].ts: must be a finite number "
                                               r"of microseconds, got inf"),
    (lambda ev: ev[4].update(name=["NEGOTIATE_ALLREDUCE"]), r"traceEvents\[4\].name: must be "
                                                            r"a string"),
])
def test_timeline_values_of_unexpected_types_are_one_line(tmp_path, capsys, edit, msg):
    ev = _timeline()
    edit(ev)
    f = tmp_path / "h.json"
    f.write_text(json.dumps(ev))               # NaN and Infinity as JSON's extensions
    assert main(["predict", "summit", "resnet50", "--nodes", "1", "--horovod-timeline",
                 str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(msg, err[0]), err


def test_timeline_pids_of_mixed_types_and_non_ascii_digit_names(tmp_path):
    ev = _timeline()
    for e in ev:                                # the first tensor's process named by a string
        if e.get("pid") == 1:
            e["pid"] = "grad_fc"
    ev.insert(6, {"ph": "X", "name": "\u00b2", "ts": 1002100, "dur": 0, "pid": "grad_fc"})
    f = tmp_path / "h.json"
    f.write_text(json.dumps(ev))
    h = read_horovod_timeline(f)
    ref = read_horovod_timeline(HOROVOD)
    assert (h.ranks, h.tensors, h.allreduce_s) == (ref.ranks, ref.tensors, ref.allreduce_s)


@pytest.mark.parametrize(("model", "trace", "msg"), [
    ("vgg16", PYTORCH, "1 forward normalisation per iteration, but vgg16 has no norm layers"),
    ("lenet", PYTORCH, "3 forward convolutions per iteration, but lenet has 2 conv layers"),
    ("vgg16", TENSORFLOW, "1 forward normalisation per iteration, but vgg16 has no norm layers"),
    ("lenet", TENSORFLOW, "3 forward convolutions per iteration, but lenet has 2 conv layers"),
])
def test_a_trace_of_another_model_is_refused(capsys, model, trace, msg):
    assert main(["predict", "summit", model, "--nodes", "1", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0] and "a trace of another model" in err[0]


def test_the_horovod_timeline_acts_alone(capsys):
    assert main(["predict", "summit", "resnet50", "--nodes", "1,4", "--format", "json",
                 "--horovod-timeline", str(HOROVOD)]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["measured"].startswith("measured compute: the roofline's compute at batch 32; "
                                       "backward split by when 3 layers' gradients were ready")
    assert meta["horovod_timeline"]["ranks"] == 4
    assert main(["predict", "summit", "resnet50", "--nodes", "4", "--format", "json"]) == 0
    plain = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(["predict", "summit", "resnet50", "--nodes", "4", "--format", "json",
                 "--horovod-timeline", str(HOROVOD)]) == 0
    split = json.loads(capsys.readouterr().out)["rows"][0]
    # the measured readiness sets the backward pass's segments (fc1000 -> res2a_b -> conv1
    # 68 and 80 ms apart), so the backward time and when each bucket starts change
    assert split["backward_s"] > plain["backward_s"] + 0.05


@pytest.mark.parametrize("at", ["-1", "abc", "", "0", "6\u2074"])
def test_the_batch_after_at_is_named_when_wrong(capsys, at):
    assert main(["predict", "summit", "resnet50", "--nodes", "1", "--trace",
                 f"{PYTORCH}@{at}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"--trace: the batch after @ must be a positive integer (FILE@B, e.g. {PYTORCH}@64), " \
           f"got {at!r}" in err[0]
    assert "file not found" not in err[0]


def test_a_file_whose_name_holds_an_at_is_read_whole(tmp_path, capsys):
    f = tmp_path / "run@64.json"
    f.write_bytes(PYTORCH.read_bytes())
    assert main(["predict", "summit", "resnet50", "--nodes", "1", "--batch", "64",
                 "--trace", str(f)]) == 0
    assert "at batch 64" in capsys.readouterr().out
    assert main(["predict", "summit", "resnet50", "--nodes", "1", "--trace",
                 str(tmp_path / "missing.json@64")]) == 2
    assert "missing.json: file not found" in capsys.readouterr().err


@pytest.mark.parametrize("workload", [[], ["resnet50", "--iterations", "2"]])
def test_simulate_writes_with_trace_out_and_refuses_trace(tmp_path, capsys, workload):
    mine = tmp_path / "my_profile.json"
    mine.write_bytes(PYTORCH.read_bytes())
    argv = ["simulate", "summit", *workload, "--nodes", "2"]
    assert main([*argv, "--trace", str(mine)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "simulate writes its Chrome trace with --trace-out FILE.json" in err
    assert mine.read_bytes() == PYTORCH.read_bytes()        # the user's trace is untouched
    written = tmp_path / "sim.json"
    assert main([*argv, "--trace-out", str(written)]) == 0
    assert "traceEvents" in json.loads(written.read_text())
    # predict and plan keep --trace as the profiler trace they read; --trace-out is not theirs
    with pytest.raises(SystemExit):
        main(["predict", "summit", "resnet50", "--trace-out", str(written)])


@pytest.mark.parametrize("argv,flag", [
    (["predict", "summit", "resnet50", "--nodes", "1", "--trace"], "--trace"),
    (["predict", "summit", "resnet50", "--nodes", "1", "--horovod-timeline"],
     "--horovod-timeline"),
    (["fit", "summit", "resnet50", "--rates"], "--rates"),
    (["fit", "summit", "resnet50", "--horovod-timeline"], "--horovod-timeline"),
])
def test_a_missing_input_file_names_its_flag(tmp_path, capsys, argv, flag):
    out = tmp_path / "fit.json"
    extra = ["-o", str(out)] if argv[0] == "fit" else []
    assert main([*argv, str(tmp_path / "missing.json"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{flag}: {tmp_path / 'missing.json'}: file not found" in err[0]
    assert main([*argv, str(tmp_path), *extra]) == 2
    assert f"{flag}: {tmp_path}: is a folder, not a file" in capsys.readouterr().err
    assert not out.exists()
