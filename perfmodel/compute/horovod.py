"""Horovod timelines (``HOROVOD_TIMELINE=file.json``): measured negotiation, allreduce, overlap.

Horovod's coordinator writes a Chrome-trace JSON list (``horovod/common/timeline.cc``):
each tensor is a process (``ph: "M"``, ``name: "process_name"``, ``args.name`` the
tensor name); for every allreduce of it, a ``B``/``E`` pair ``NEGOTIATE_ALLREDUCE``
(from the first rank reporting the tensor ready to the last), with one ``X`` tick of
``dur`` 0 per rank named by the rank number, then a ``B``/``E`` pair ``ALLREDUCE`` (the
operation) holding nested activities (``QUEUE``, ``MEMCPY_IN_FUSION_BUFFER``,
``NCCL_ALLREDUCE`` or ``MPI_ALLREDUCE``, ``MEMCPY_OUT_FUSION_BUFFER``...). ``E`` events
carry no name; ``ts`` is in microseconds. Older Horovod leaves the list unterminated;
it is closed here.

:func:`read_horovod_timeline` returns, per iteration (the k-th allreduce of every
tensor belongs to iteration k): the time any tensor is in negotiation, the time any
allreduce runs (intervals' union), the exposed part of the latter (after the last
tensor of the iteration became ready on every rank, i.e. after the backward pass) and
so the overlap; the rank count (the rank ticks); and when each tensor became ready
relative to the first one (the backward pass's progress, for per-layer checks).

Examples
--------
>>> import json, pathlib, tempfile
>>> ev = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "grad_fc"}},
...       {"ph": "B", "name": "NEGOTIATE_ALLREDUCE", "ts": 0, "pid": 1},
...       {"ph": "X", "name": "0", "ts": 0, "pid": 1, "dur": 0},
...       {"ph": "X", "name": "1", "ts": 100, "pid": 1, "dur": 0},
...       {"ph": "E", "ts": 100, "pid": 1},
...       {"ph": "B", "name": "ALLREDUCE", "ts": 100, "pid": 1},
...       {"ph": "E", "ts": 600, "pid": 1}]
>>> p = pathlib.Path(tempfile.mkdtemp()) / "hvd.json"
>>> _ = p.write_text(json.dumps(ev)[:-1])          # unterminated, as old Horovod leaves it
>>> h = read_horovod_timeline(p)
>>> h.ranks, h.iterations, round(h.allreduce_s * 1e6), round(h.exposed_s * 1e6)
(2, 1, 500, 500)
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlscale.perfmodel.compute.tracefile import (
    event_args,
    finite,
    intervals_union_s,
    load_events,
    shown,
)
from dlscale.perfmodel.errors import ConfigError

__all__ = ["HorovodTimeline", "read_horovod_timeline"]

_US = 1e-6
_OPS = ("ALLREDUCE", "ALLGATHER", "BROADCAST", "ALLTOALL", "REDUCESCATTER")
#: A rank tick's name: the rank in ASCII digits ("²" is a digit to str.isdigit, not a rank).
_RANK = re.compile(r"[0-9]{1,9}")


@dataclass(frozen=True)
class HorovodTimeline:
    """What one Horovod timeline measured, per iteration (see the module docstring).

    Attributes
    ----------
    ranks, iterations, tensors : int
    negotiation_s : float
        Time some tensor is being negotiated.
    allreduce_s : float
        Time some collective runs (union over tensors, nested activities included).
    exposed_s : float
        Collective time after the iteration's last tensor was ready on every rank.
    ready_s : tuple of (str, float)
        Per tensor, when it became ready (first rank) after the iteration's first
        tensor, mean over iterations, in order of readiness.
    messages : tuple of (tuple of str, float)
        Per collective as it ran: the tensors it carried (those whose operation spans
        the same interval, as Horovod's fusion buffer runs them) and its mean seconds
        over the iterations, in order of their start.
    """

    ranks: int
    iterations: int
    tensors: int
    negotiation_s: float
    allreduce_s: float
    exposed_s: float
    ready_s: tuple[tuple[str, float], ...]
    messages: tuple[tuple[tuple[str, ...], float], ...] = ()

    @property
    def overlap(self) -> float:
        """Share of the collective time hidden behind the backward pass."""
        return 1.0 - self.exposed_s / self.allreduce_s if self.allreduce_s > 0 else 0.0

    def layer_ready(self, layer_names: Sequence[str]) -> tuple[tuple[str, float], ...]:
        """``(layer, seconds after the first of them was ready)`` for the tensors that
        name a layer of the model.

        A tensor names the longest layer name found in it between separators (``_``,
        ``.``, ``/``, start or end): ``..._gradients_res2a_b_bn_FusedBatchNorm_grad_0``
        is ``res2a_b_bn``, not ``res2a_b``; ``allreduce.conv1.weight`` is ``conv1``. A
        layer with several tensors (weight, bias) is ready at its first.

        Examples
        --------
        >>> h = HorovodTimeline(2, 1, 2, 0.0, 0.0, 0.0, (("grad_fc_w", 0.001), ("grad_conv1_w", 0.004)))
        >>> h.layer_ready(["conv1", "fc"])
        (('fc', 0.0), ('conv1', 0.003))
        """
        best: dict[str, float] = {}
        for tensor, t in self.ready_s:
            hits = [n for n in layer_names
                    if re.search(rf"(^|[_./]){re.escape(n)}($|[_./])", tensor)]
            if hits:
                name = max(hits, key=len)
                best[name] = min(t, best.get(name, t))
        if not best:
            return ()
        first = min(best.values())
        return tuple(sorted(((n, t - first) for n, t in best.items()), key=lambda x: (x[1], x[0])))

    def describe(self) -> str:
        """One line for output headers."""
        return (f"Horovod timeline ({self.ranks} ranks, {self.iterations} iterations, "
                f"{self.tensors} tensors): negotiation {self.negotiation_s * 1e3:.3g} ms, "
                f"collectives {self.allreduce_s * 1e3:.3g} ms, exposed {self.exposed_s * 1e3:.3g} "
                f"ms per iteration ({self.overlap:.0%} overlapped)")


def _number(path: Path, i: int, ev: dict[str, Any], key: str) -> float:
    v = ev.get(key)
    if not finite(v):
        raise ConfigError(f"{path}: traceEvents[{i}].{key}: must be a finite number of "
                          f"microseconds, got {shown(v)}")
    return float(v)


def read_horovod_timeline(path: str | Path) -> HorovodTimeline:
    """Parse a Horovod timeline; malformed input is a one-line ConfigError naming the event."""
    path = Path(path)
    events = load_events(path, "Horovod timeline")
    names: dict[Any, str] = {}
    stacks: dict[Any, list[tuple[str, float]]] = defaultdict(list)
    nego: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    ops: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    ranks = set()
    for i, ev in enumerate(events):
        ph, pid = ev.get("ph"), ev.get("pid")
        if ph == "M":
            if ev.get("name") == "process_name" and "name" in event_args(ev):
                names[pid] = str(event_args(ev)["name"])
            continue
        if ph == "B":
            name = ev.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{path}: traceEvents[{i}]: a B event needs a name, got "
                                  f"{shown(name)}")
            stacks[pid].append((name, _number(path, i, ev, "ts")))
        elif ph == "E":
            if not stacks[pid]:
                raise ConfigError(f"{path}: traceEvents[{i}]: E event of pid {pid!r} at ts "
                                  f"{shown(ev.get('ts'))} closes nothing (no open B event)")
            name, start = stacks[pid].pop()
            end = _number(path, i, ev, "ts")
            if end < start:
                raise ConfigError(f"{path}: traceEvents[{i}].ts: E at {end:g} before its B at "
                                  f"{start:g} ({name})")
            if name.startswith("NEGOTIATE_"):
                nego[pid].append((start, end))
            elif name in _OPS and not stacks[pid]:
                ops[pid].append((start, end))
        elif ph == "X" and _RANK.fullmatch(ev.get("name") or ""):
            ranks.add(int(ev["name"]))
    if not ops:
        raise ConfigError(f"{path}: no ALLREDUCE (or other collective) B/E pairs: not a "
                          f"Horovod timeline, or recorded before the first step")
    counts = [len(v) for v in ops.values()]
    iterations = int(statistics.median(counts))
    if iterations < 1:
        raise ConfigError(f"{path}: no complete iteration found")
    tensors = sorted(ops, key=repr)  # pids may mix integers and strings
    nego_union = intervals_union_s(s for v in nego.values() for s in v)
    op_union = intervals_union_s(s for v in ops.values() for s in v)
    exposed = 0.0
    ready: dict[str, list[float]] = defaultdict(list)
    messages: dict[tuple[str, ...], list[float]] = defaultdict(list)
    first_start: dict[tuple[str, ...], float] = {}
    for k in range(iterations):
        it_ops = [ops[t][k] for t in tensors if len(ops[t]) > k]
        spans: dict[tuple[float, float], list[str]] = defaultdict(list)
        for t in tensors:
            if len(ops[t]) > k:
                spans[ops[t][k]].append(names.get(t, str(t)))
        for (a, b), carried in spans.items():
            key = tuple(sorted(carried))
            messages[key].append(b - a)
            first_start.setdefault(key, a - min(x for x, _ in it_ops))
        it_nego = [(t, nego[t][k]) for t in tensors if len(nego[t]) > k]
        if it_nego:
            all_ready = max(span[1] for _, span in it_nego)
            first = min(span[0] for _, span in it_nego)
            for t, span in it_nego:
                ready[names.get(t, str(t))].append(span[0] - first)
        else:
            all_ready = min(a for a, _ in it_ops)
        exposed += intervals_union_s((max(a, all_ready), b) for a, b in it_ops if b > all_ready)
    ready_s = tuple(sorted(((n, statistics.fmean(v) * _US) for n, v in ready.items()),
                           key=lambda x: (x[1], x[0])))
    return HorovodTimeline(
        ranks=max(ranks) + 1 if ranks else 0, iterations=iterations, tensors=len(tensors),
        negotiation_s=nego_union * _US / iterations, allreduce_s=op_union * _US / iterations,
        exposed_s=exposed * _US / iterations, ready_s=ready_s,
        messages=tuple((key, statistics.fmean(v) * _US) for key, v in
                       sorted(messages.items(), key=lambda kv: (first_start[kv[0]], kv[0]))))
