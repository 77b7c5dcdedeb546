"""Profiler traces as compute inputs: PyTorch's and TensorFlow's Chrome-trace JSON.

Both profilers write the Chrome trace-event format (a JSON object with a
``traceEvents`` list, or a bare list; ``.gz`` files are read too). Only complete
events (``ph: "X"``, ``ts`` and ``dur`` in microseconds) are timed. Parsed with the
standard library; no framework is needed.

PyTorch (``torch.profiler.profile(...).export_chrome_trace``):

- iterations are the ``ProfilerStep#N`` annotations (``torch.profiler.schedule``); a
  trace without them is refused, since its iteration count cannot be known;
- CPU operators (``cat: "cpu_op"``) inside an ``autograd::engine::evaluate_function``
  event, or named ``...Backward...``, are the backward pass; inside an
  ``Optimizer.step`` / ``Optimizer.zero_grad`` annotation the optimizer; inside
  ``enumerate(DataLoader)`` the input pipeline; the rest of the step is forward;
- GPU kernels (``cat: "kernel"``) are attributed through their ``args.correlation``
  to the ``cuda_runtime`` (or ``cuda_driver``) launch with the same id, and take the
  phase of the CPU operator the launch happened in (a kernel whose launch is not in
  the trace, by its own start). With kernels, a phase's time is the union of its
  kernels' intervals (device busy time); without, the union of its CPU operators'.

TensorFlow (the ``Timeline`` of ``RunMetadata``, TF1; the trace viewer's
``trace.json.gz``, TF2): events of the device processes (``process_name`` naming a
``/device:GPU:`` or, without one, ``/device:CPU:``; ``stream:all`` preferred where
present, so no kernel counts twice); an op whose scope (``args.name``, ``args.long_name``
or ``args.tf_op``) starts with ``gradients/`` or ``gradient_tape/`` or whose type
names a backprop (``...Backprop...``, ``...Grad...``) is backward, an ``Apply...``
op the optimizer, the rest forward. Iterations: the events of a ``Steps`` process
(TF2), else 1 (a TF1 timeline is one ``session.run``). The scope names each op's
layer: the first scope component that is a layer of the model gives per-layer times.

The step's idle time (launch gaps, host stalls) is shared between forward and
backward in proportion to their busy time, so one device at the traced batch runs
the traced step minus the optimizer and the input pipeline (the model adds its own
weight update).

Examples
--------
>>> import json, pathlib, tempfile
>>> events = [
...     {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
...      "ts": 0, "dur": 1000},
...     {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 290},
...     {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: "
...      "ConvolutionBackward0", "pid": 1, "tid": 2, "ts": 300, "dur": 600}]
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
>>> _ = p.write_text(json.dumps({"traceEvents": events}))
>>> t = read_trace(p)
>>> t.framework, t.iterations, round(t.forward_s * 1e6), round(t.backward_s * 1e6)
('pytorch', 1, 326, 674)
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.compute.tracefile import (
    Spans,
    event_args,
    finite,
    intervals_union_s,
    load_events,
    shown,
)
from dlscale.perfmodel.errors import ConfigError

if TYPE_CHECKING:
    from dlscale.perfmodel.training.workload import Model

__all__ = ["TraceCompute", "check_model", "event_args", "intervals_union_s", "load_events",
           "read_trace"]

_US = 1e-6
_BACKWARD_OP = re.compile(r"Backprop|Grad(?!ient)|_grad\b|Backward")
_STEP = re.compile(r"^ProfilerStep#\d+$")
#: Forward operators of a convolution or normalisation layer (the outermost ATen op,
#: which calls aten::convolution, or aten::_batch_norm_impl_index, in turn; instance_norm
#: calls batch_norm, so it is counted once there).
_TORCH_CONV = tuple(f"aten::conv{t}{d}d" for t in ("", "_transpose") for d in (1, 2, 3))
_TORCH_NORM = ("aten::batch_norm", "aten::layer_norm", "aten::group_norm")
_TF_KIND = {"Conv2D": "conv", "Conv3D": "conv", "DepthwiseConv2dNative": "conv",
            "FusedBatchNorm": "norm", "FusedBatchNormV2": "norm", "FusedBatchNormV3": "norm",
            "LRN": "norm"}
_KIND_WORDS = {"conv": "convolution", "norm": "normalisation"}
#: Communication, not compute, in a trace of a multi-rank run: NCCL's and RCCL's kernels
#: (``ncclKernel_*``, ``ncclDevKernel_*`` from NCCL 2.19, ``ncclAllReduceRingLLKernel_*``
#: in NCCL 2.3-2.6), PyTorch's collective CPU operators (``record_param_comms``,
#: ``c10d::allreduce_``, ``nccl:all_reduce``, ``gloo:all_reduce``), and TensorFlow's
#: collective ops by type (``NcclAllReduce``, ``HorovodAllreduce``, ``CollectiveReduceV2``).
_COMM_NAME = re.compile(r"^(nccl|rccl)|^(record_param_comms|c10d::|nccl:|gloo:|mpi:)", re.I)
_COMM_OP = re.compile(r"^(Nccl|Horovod|Collective)[A-Z]")


@dataclass(frozen=True)
class TraceCompute:
    """Compute per iteration extracted from a framework trace.

    Attributes
    ----------
    framework : {"pytorch", "tensorflow"}
    iterations : int
    forward_s, backward_s : float
        Seconds per iteration, idle time shared in proportion (module docstring).
    optimizer_s, step_s : float
        Optimizer busy time and whole step per iteration (``step_s`` 0 when unknown).
    layers : tuple of (str, float, float)
        Per-layer ``(name, forward_s, backward_s)`` where the trace names layers.
    op_counts : tuple of (str, int)
        Forward operators per iteration by layer kind (``"conv"``, ``"norm"``), to tell
        a trace of another model (:func:`check_model`).
    communication_s : float
        Seconds per iteration the trace's communication kernels or ops ran (the union of
        their intervals; 0 in a trace of one rank). They are not compute, and the time
        where only they ran (exposed communication) is not shared into the compute.
    """

    framework: str
    iterations: int
    forward_s: float
    backward_s: float
    optimizer_s: float = 0.0
    step_s: float = 0.0
    layers: tuple[tuple[str, float, float], ...] = ()
    op_counts: tuple[tuple[str, int], ...] = ()
    communication_s: float = 0.0

    def measured(self, batch: int, source: str) -> MeasuredCompute:
        """The :class:`~dlscale.perfmodel.compute.measured.MeasuredCompute` of this trace at
        ``batch``; a trace with communication beside its compute says so
        (``beside_communication``: its compute already holds the slowdown)."""
        return MeasuredCompute(batch=batch, forward_s=self.forward_s, backward_s=self.backward_s,
                               layers=self.layers, source=source,
                               beside_communication=self.communication_s > 0)


def _is_comm(ev: dict[str, Any]) -> bool:
    """Whether a trace event is communication (:data:`_COMM_NAME`, :data:`_COMM_OP`)."""
    name = str(ev.get("name", ""))
    return bool(_COMM_NAME.search(name) or _COMM_OP.match(name)
                or _COMM_OP.match(str(event_args(ev).get("op", ""))))


def _exposed_s(compute: list[tuple[float, float]], comm: list[tuple[float, float]],
               windows: Sequence[tuple[float, float]]) -> float:
    """Microseconds inside ``windows`` (the steps) where communication ran and no
    compute did."""
    starts = sorted(windows)
    inside = []
    for a, b in comm:
        i = bisect.bisect_right(starts, (a, math.inf)) - 1
        if i >= 0 and min(b, starts[i][1]) > a:
            inside.append((a, min(b, starts[i][1])))
    if not inside:
        return 0.0
    return intervals_union_s(compute + inside) - intervals_union_s(compute)


def _complete(path: Path, events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``ph: "X"`` events, with ``ts`` and ``dur`` checked (microseconds)."""
    out = []
    for i, ev in enumerate(events):
        if ev.get("ph") != "X":
            continue
        for key in ("ts", "dur"):
            v = ev.get(key)
            if not finite(v) or (key == "dur" and v < 0):
                raise ConfigError(f"{path}: traceEvents[{i}].{key}: must be a number of "
                                  f"microseconds{' >= 0' if key == 'dur' else ''}, got "
                                  f"{shown(v)}")
        if not finite(float(ev["ts"]) + float(ev["dur"])):
            raise ConfigError(f"{path}: traceEvents[{i}]: ts + dur overflows, got ts "
                              f"{shown(ev['ts'])} and dur {shown(ev['dur'])}")
        out.append(ev)
    return out


def _span(ev: dict[str, Any]) -> tuple[float, float]:
    return float(ev["ts"]), float(ev["ts"]) + float(ev["dur"])


def _share_idle(fwd: float, bwd: float, wall: float) -> tuple[float, float]:
    busy = fwd + bwd
    if wall <= busy or busy <= 0:
        return fwd, bwd
    return fwd * wall / busy, bwd * wall / busy


def _pytorch(path: Path, xs: list[dict[str, Any]]) -> TraceCompute:
    steps = [_span(e) for e in xs if _STEP.match(str(e.get("name", "")))]
    if not steps:
        raise ConfigError(f"{path}: no ProfilerStep#N events: record the trace with "
                          f"torch.profiler.schedule (and prof.step() per iteration) so the "
                          f"iterations can be counted")
    cpu = [e for e in xs if e.get("cat") == "cpu_op"]
    annotations = [e for e in xs if e.get("cat") == "user_annotation"]
    bwd_spans = [_span(e) for e in cpu if str(e.get("name", "")).startswith("autograd::engine::")
                 or "Backward" in str(e.get("name", ""))]
    opt_spans = [_span(e) for e in annotations if str(e.get("name", "")).startswith("Optimizer.")]
    data_spans = [_span(e) for e in annotations if str(e.get("name", "")).startswith("enumerate(DataLoader)")]

    opt_in, bwd_in, data_in, step_in = (Spans(s) for s in (opt_spans, bwd_spans, data_spans,
                                                            steps))

    def phase(t: float) -> str:
        if t in opt_in:
            return "opt"
        if t in bwd_in:
            return "bwd"
        if t in data_in:
            return "data"
        return "fwd" if t in step_in else "out"

    kernels = [e for e in xs if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    comm = [_span(e) for e in (kernels or cpu) if _is_comm(e)]
    kernels = [e for e in kernels if not _is_comm(e)]
    cpu = [e for e in cpu if not _is_comm(e)]
    spans: dict[str, list[tuple[float, float]]] = {"fwd": [], "bwd": [], "opt": [], "data": [],
                                                   "out": []}
    if kernels:
        launch = {}
        for e in xs:
            args = e.get("args")
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and isinstance(args, dict) \
                    and "correlation" in args:
                launch[args["correlation"]] = float(e["ts"])
        for k in kernels:
            args = k.get("args")
            c = args.get("correlation") if isinstance(args, dict) else None
            # a kernel whose launch fell outside the recorded window: its own start
            spans[phase(launch.get(c, float(k["ts"])))].append(_span(k))
    else:
        for e in cpu:
            spans[phase(float(e["ts"]))].append(_span(e))
    n = len(steps)
    fwd = intervals_union_s(spans["fwd"]) * _US / n
    bwd = intervals_union_s(spans["bwd"]) * _US / n
    opt = intervals_union_s(spans["opt"]) * _US / n
    comm = [c for c in comm if c[0] in step_in]
    exposed = _exposed_s(spans["fwd"] + spans["bwd"] + spans["opt"], comm, steps) * _US / n
    wall = (sum(b - a for a, b in steps) - intervals_union_s(data_spans)) * _US / n - opt \
        - exposed
    if fwd <= 0 or bwd <= 0:
        raise ConfigError(f"{path}: found no {'forward' if fwd <= 0 else 'backward'} work "
                          f"inside the ProfilerStep events (backward: autograd::engine:: "
                          f"operators or their kernels)")
    fwd, bwd = _share_idle(fwd, bwd, wall)
    names = Counter(str(e.get("name")) for e in cpu if float(e["ts"]) in step_in)
    convs = sum(names[c] for c in _TORCH_CONV) or names["aten::convolution"]
    counts = (("conv", convs // n), ("norm", sum(names[c] for c in _TORCH_NORM) // n))
    return TraceCompute("pytorch", n, fwd, bwd, opt, wall + opt + exposed, op_counts=counts,
                        communication_s=intervals_union_s(comm) * _US / n)


def _tf_scope(ev: dict[str, Any]) -> str:
    args = event_args(ev)
    scope = args.get("name") or args.get("long_name") or args.get("tf_op") or ev.get("name", "")
    return str(scope).split(":")[0]


def _tensorflow(path: Path, events: list[dict[str, Any]], xs: list[dict[str, Any]],
                layer_names: Sequence[str]) -> TraceCompute:
    names = {e.get("pid"): str(event_args(e).get("name", "")) for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    steps = [p for p, n in names.items() if n == "Steps"]
    for dev in ("/device:GPU:", "/device:CPU:"):
        pids = [p for p, n in names.items() if dev in n and "stream:all" in n] or \
               [p for p, n in names.items() if dev in n and "stream:" not in n
                and "memcpy" not in n.lower()]
        if pids:
            break
    else:
        raise ConfigError(f"{path}: no process_name naming a /device:GPU: or /device:CPU: "
                          f"(a TensorFlow timeline names its device processes)")
    ops = [e for e in xs if e.get("pid") in pids]
    comm = [_span(e) for e in ops if _is_comm(e)]
    ops = [e for e in ops if not _is_comm(e)]
    spans: dict[str, list[tuple[float, float]]] = {"fwd": [], "bwd": [], "opt": []}
    per_layer: dict[str, list[float]] = {}
    layer_set = set(layer_names)
    scopes: dict[str, set[str]] = {"conv": set(), "norm": set()}
    for e in ops:
        scope = _tf_scope(e)
        op = str(event_args(e).get("op", e.get("name", "")))
        parts = scope.split("/")
        if parts[0] in ("gradients", "gradient_tape") or _BACKWARD_OP.search(op):
            kind = "bwd"
        elif op.startswith(("Apply", "ResourceApply")):
            kind = "opt"
        else:
            kind = "fwd"
        spans[kind].append(_span(e))
        if kind == "fwd" and op in _TF_KIND:
            scopes[_TF_KIND[op]].add(scope)
        # gradient scopes append "_grad" to the forward op's name (TF1: conv1_relu_grad)
        layer = next((p for p in (q.removesuffix("_grad") for q in parts) if p in layer_set), None)
        if layer is not None and kind != "opt":
            acc = per_layer.setdefault(layer, [0.0, 0.0])
            acc[0 if kind == "fwd" else 1] += float(e["dur"]) * _US
    n = len([e for e in xs if e.get("pid") in steps]) or 1
    fwd = intervals_union_s(spans["fwd"]) * _US / n
    bwd = intervals_union_s(spans["bwd"]) * _US / n
    opt = intervals_union_s(spans["opt"]) * _US / n
    if fwd <= 0 or bwd <= 0:
        raise ConfigError(f"{path}: found no {'forward' if fwd <= 0 else 'backward'} ops on "
                          f"the device processes (backward: gradients/ or gradient_tape/ "
                          f"scopes, or Backprop/Grad op types)")
    all_ops = intervals_union_s(_span(e) for e in ops) * _US / n
    first = min(float(e["ts"]) for e in ops)
    last = max(float(e["ts"]) + float(e["dur"]) for e in ops)
    exposed = _exposed_s([_span(e) for e in ops], comm, [(first, last)]) * _US / n
    wall = (last - first) * _US / n - opt - exposed if n == 1 else all_ops - opt
    fwd_s, bwd_s = _share_idle(fwd, bwd, wall)
    layers = tuple((name, v[0] / n, v[1] / n) for name, v in per_layer.items() if sum(v) > 0)
    counts = tuple((k, len(v)) for k, v in scopes.items())
    return TraceCompute("tensorflow", n, fwd_s, bwd_s, opt, wall + opt + exposed, layers, counts,
                        intervals_union_s(comm) * _US / n)


def read_trace(path: str | Path, layer_names: Sequence[str] = ()) -> TraceCompute:
    """Forward and backward compute per iteration from a PyTorch or TensorFlow trace.

    ``layer_names``: the model's layers, matched against TensorFlow op scopes for
    per-layer times. The format is told by its events: ``ProfilerStep#`` /
    ``cpu_op`` (PyTorch) or ``/device:`` process names (TensorFlow); a Horovod
    timeline (``NEGOTIATE_ALLREDUCE``) is refused with a pointer to
    :func:`~dlscale.perfmodel.compute.horovod.read_horovod_timeline`.
    """
    path = Path(path)
    events = load_events(path, "profiler trace")
    xs = _complete(path, events)
    cats = {e.get("cat") for e in xs}
    names = {str(e.get("name", "")) for e in events}
    if "NEGOTIATE_ALLREDUCE" in names or "ALLREDUCE" in names:
        raise ConfigError(f"{path}: is a Horovod timeline, not a profiler trace (give it as "
                          f"--horovod-timeline)")
    if "cpu_op" in cats or any(_STEP.match(n) for n in names):
        return _pytorch(path, xs)
    if any(e.get("ph") == "M" and "/device:" in str(event_args(e).get("name", ""))
           for e in events):
        return _tensorflow(path, events, xs, layer_names)
    raise ConfigError(f"{path}: not a PyTorch or TensorFlow profiler trace: no cpu_op or "
                      f"ProfilerStep#N events and no /device: process names")


def check_model(trace: TraceCompute, model: Model, source: str) -> None:
    """Refuse a trace with more forward convolutions or normalisations per iteration than
    ``model`` has layers of that kind: it is a trace of another (larger) model.

    A trace with fewer is accepted (a profile of part of the network, as the samples in
    ``examples/traces/`` are). ``source`` names the trace in the message.

    Parameters
    ----------
    trace : TraceCompute
        What the trace measured, with its operator counts per iteration.
    model : Model
        The workload's model.
    source : str
        The trace's file, for the message.

    Examples
    --------
    >>> from dlscale.perfmodel.catalog import get_model
    >>> t = TraceCompute("pytorch", 1, 0.1, 0.2, op_counts=(("conv", 53), ("norm", 53)))
    >>> check_model(t, get_model("resnet50"), "t.json")
    >>> check_model(t, get_model("vgg16"), "t.json")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: t.json: 53 forward convolutions per iteration, but vgg16 has 13 conv layers: a trace of another model (trace vgg16's training, or give the traced model as the workload)
    """
    kinds = Counter(layer.kind for layer in model.layers)
    for kind, found in trace.op_counts:
        have = kinds.get(kind, 0)
        if found > have:
            raise ConfigError(f"{source}: {found} forward {_KIND_WORDS[kind]}"
                              f"{'s' if found > 1 else ''} per iteration, but "
                              f"{model.name} has {have or 'no'} {kind} layers: a trace of "
                              f"another model (trace {model.name}'s training, or give the "
                              f"traced model as the workload)")
