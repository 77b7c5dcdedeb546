"""A profiler trace of a multi-rank run: its communication is not compute.

NCCL's kernels (launched from the backward pass by DDP's hooks) and TensorFlow's
collective ops ran beside the compute; counting them as backward work, and sharing the
exposed communication at the step's end into the compute as idle time, charged the
communication twice (once as measured compute, once by the model's own allreduce).
The compute measured beside communication already holds its slowdown, so the model
does not charge that again either.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster, get_workload
from dlscale.perfmodel.compute.overlap import compute_slowdown
from dlscale.perfmodel.compute.traces import read_trace

SCALE = 250       # the times below are in units of 250 us: a 200 ms step of ResNet-50


def _x(event, cat, ts, dur, **args):
    ev = {"ph": "X", "name": event, "cat": cat, "ts": ts * SCALE, "dur": dur * SCALE,
          "pid": 1, "tid": 1}
    if args:
        ev["args"] = args
    return ev


def _pytorch(comm: bool) -> list[dict]:
    """One step: forward 0-300, backward 300-800 (kernels, 40 units of launch gaps),
    and with ``comm`` an NCCL allreduce 600-950 launched from the backward pass: the
    step then ends at 950, 150 units of it exposed communication."""
    evs = [_x("ProfilerStep#1", "user_annotation", 0, 950 if comm else 800),
           _x("aten::conv2d", "cpu_op", 0, 300),
           _x("autograd::engine::evaluate_function: ConvolutionBackward0", "cpu_op", 300, 500),
           _x("cudaLaunchKernel", "cuda_runtime", 10, 5, correlation=1),
           _x("cudaLaunchKernel", "cuda_runtime", 310, 5, correlation=2),
           _x("implicit_gemm", "kernel", 20, 280, correlation=1),
           _x("wgrad_kernel", "kernel", 320, 480, correlation=2)]
    if comm:
        evs += [_x("cudaLaunchKernel", "cuda_runtime", 590, 5, correlation=3),
                _x("record_param_comms", "cpu_op", 590, 10),
                _x("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, "
                   "ncclWork*)", "kernel", 600, 350, correlation=3)]
    return evs


def _tensorflow(comm: bool) -> list[dict]:
    meta = {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0/stream:all"}}
    evs = [meta,
           _x("Conv2D", "Op", 0, 300, name="conv1/Conv2D", op="Conv2D"),
           _x("Conv2DBackpropFilter", "Op", 300, 500, name="gradients/conv1/Conv2D_grad",
              op="Conv2DBackpropFilter")]
    if comm:
        evs.append(_x("HorovodAllreduce", "Op", 600, 350,
                      name="gradients/HorovodAllreduce_conv1_grad", op="HorovodAllreduce"))
    return evs


@pytest.mark.parametrize("make", [_pytorch, _tensorflow])
def test_communication_kernels_are_not_compute(tmp_path, make):
    one, many = (tmp_path / "one.json", tmp_path / "many.json")
    one.write_text(json.dumps({"traceEvents": make(False)}))
    many.write_text(json.dumps({"traceEvents": make(True)}))
    a, b = read_trace(one), read_trace(many)
    assert a.communication_s == 0 and not a.measured(64, "x").beside_communication
    assert b.communication_s == pytest.approx(350 * SCALE * 1e-6)
    # the compute of the multi-rank step is the compute of the one-rank step
    assert b.forward_s == pytest.approx(a.forward_s)
    assert b.backward_s == pytest.approx(a.backward_s)
    assert b.measured(64, "x").beside_communication


def test_compute_measured_beside_communication_is_not_slowed_again(tmp_path):
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"traceEvents": _pytorch(True)}))
    c, w = get_cluster("summit"), get_workload("resnet50")
    assert compute_slowdown(c, w) > 0
    m = read_trace(path).measured(64, "x")
    w2 = dataclasses.replace(w, model=dataclasses.replace(w.model, measured=m))
    assert compute_slowdown(c, w2) == 0.0
    m1 = dataclasses.replace(m, beside_communication=False)
    w1 = dataclasses.replace(w, model=dataclasses.replace(w.model, measured=m1))
    from dlscale.perfmodel.training.predict import predict

    slowed = predict(c, w1, [4]).iteration_s
    not_slowed = predict(c, w2, [4]).iteration_s
    assert np.all(not_slowed < slowed)
    assert "measured beside communication" in m.describe()


def test_the_command_line_says_the_communication_was_left_out(tmp_path, capsys):
    from dlscale.cli import main

    path = tmp_path / "many.json"
    path.write_text(json.dumps({"traceEvents": _pytorch(True)}))
    assert main(["predict", "summit", "resnet50", "--nodes", "2", "--trace", f"{path}@64"]) == 0
    out = capsys.readouterr().out
    assert "communication's 87.5 ms per iteration left out of the compute" in out
    assert "measured beside communication" in out
