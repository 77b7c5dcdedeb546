"""A real training run's timeline in Horovod's format (``validate local --timeline``).

:func:`horovod_timeline` turns the clock readings a recorded run kept
(:func:`dlscale.validation.mpi_training.train` with ``record``; ``TrainingResult.spans``)
into the Chrome-trace JSON Horovod's coordinator writes (``HOROVOD_TIMELINE``,
``horovod/common/timeline.cc``), which ``dlscale fit --horovod-timeline`` reads
(:func:`dlscale.perfmodel.compute.horovod.read_horovod_timeline`):

- one process per tensor of the gradient (``fc1.weight``, ``fc1.bias``, ...; the run
  reduces its one flat gradient, which holds them in this order, with one
  ``MPI_Allreduce``, as Horovod's fusion buffer does: every tensor's spans have the
  same times). Per timed iteration, ``NEGOTIATE_ALLREDUCE`` from the first rank's
  call of the allreduce to the last one's, with one tick per rank (an ``X`` event of
  ``dur`` 0 named by the rank, at its call), then ``ALLREDUCE`` from the last rank's
  call to the last rank's return, holding the ``MPI_ALLREDUCE`` activity;
- one process per rank (``rank 0``, ...), not in Horovod's timelines, with what that
  rank did as complete events: ``COMPUTE`` (draw the mini-batch, forward and
  backward: one call of the numba kernel), ``EASGD_WORKER_UPDATE`` (Sync EASGD only),
  ``MPI_ALLREDUCE`` (from its call to its return: the wait for the other ranks
  included) and the update (``SGD_UPDATE`` or ``EASGD_CENTER_UPDATE``).

Times are microseconds from the first recorded iteration's start. The ranks of one
host share its monotonic clock (``time.perf_counter``: ``CLOCK_MONOTONIC`` on Linux),
so their readings are placed as read; ranks on several hosts are aligned at the exit
of the barrier before the timed iterations (to within that barrier's skew), and
``otherData.clock`` says which.

Examples
--------
>>> spans = {"algorithm": "sgd-allreduce", "hosts": ["h", "h"], "clock_refs": [0.0, 0.0],
...          "tensors": [("fc1.weight", 32), ("fc1.bias", 8)],
...          "marks": [[(1.0, 1.001, 1.001, 1.0015, 1.0016)],
...                    [(1.0, 1.0012, 1.0012, 1.0015, 1.0016)]]}
>>> doc = horovod_timeline(spans)
>>> [e["ts"] for e in doc["traceEvents"] if e.get("name") == "ALLREDUCE"]
[1200.0, 1200.0]
>>> doc["otherData"]["clock"]
'one host: every rank read the same monotonic clock'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["UPDATE", "horovod_timeline", "write_timeline"]

#: The update each algorithm takes after its allreduce (the span's name).
UPDATE = {"sgd-ring": "SGD_UPDATE", "sgd-allreduce": "SGD_UPDATE",
          "sync-easgd": "EASGD_CENTER_UPDATE"}
_US = 1e6


def _us(t: float) -> float:
    """Seconds as microseconds, to the nanosecond (what the clock resolves)."""
    return round(t * _US, 3)


def _offsets(spans: dict[str, Any]) -> tuple[list[float], str]:
    hosts, refs = spans["hosts"], spans["clock_refs"]
    if len(set(hosts)) <= 1:
        return [0.0] * len(hosts), "one host: every rank read the same monotonic clock"
    return ([r - refs[0] for r in refs],
            "several hosts: each rank's clock aligned at the exit of the barrier before the "
            "timed iterations (to within its skew)")


def horovod_timeline(spans: dict[str, Any], source: str = "") -> dict[str, Any]:
    """The Horovod-format timeline (``{"traceEvents": [...], ...}``) of a recorded run.

    Parameters
    ----------
    spans : dict
        ``TrainingResult.spans`` of a run recorded on two or more ranks.
    source : str, optional
        What ran (kept in ``otherData.source``).

    Raises
    ------
    ConfigError
        Fewer than two ranks, no iteration, or ranks with different iteration counts.
    """
    marks: Sequence[Sequence[Sequence[float]]] = spans["marks"]
    algorithm = str(spans["algorithm"])
    if len(marks) < 2:
        raise ConfigError(f"timeline: {len(marks)} rank(s); a timeline of collectives needs "
                          f"at least 2 (run under mpiexec -n 2 or more)")
    counts = {len(m) for m in marks}
    if counts == {0} or len(counts) != 1:
        raise ConfigError(f"timeline: ranks recorded {sorted(counts)} iterations; each must "
                          f"record the same number, at least 1")
    offsets, clock = _offsets(spans)
    aligned = [[[t - off for t in it] for it in rank] for rank, off in zip(marks, offsets,
                                                                         strict=True)]
    origin = min(rank[0][0] for rank in aligned)
    tensors = [str(name) for name, _ in spans["tensors"]]
    ranks = len(aligned)
    events: list[dict[str, Any]] = []
    for pid, name in enumerate(tensors, start=1):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                       "args": {"sort_index": pid}})
    rank_pid = [len(tensors) + 1 + r for r in range(ranks)]
    for r, pid in enumerate(rank_pid):
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": f"rank {r}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                       "args": {"sort_index": pid}})
    update = UPDATE.get(algorithm, "UPDATE")
    for k in range(len(aligned[0])):
        its = [[t - origin for t in rank[k]] for rank in aligned]
        called = [it[2] for it in its]
        first, last = min(called), max(called)
        done = max(it[3] for it in its)
        for pid in range(1, len(tensors) + 1):
            events.append({"name": "NEGOTIATE_ALLREDUCE", "ph": "B", "ts": _us(first),
                           "pid": pid, "tid": 1})
            events += [{"name": str(r), "ph": "X", "ts": _us(called[r]), "dur": 0, "pid": pid,
                        "tid": 1} for r in sorted(range(ranks), key=lambda r: called[r])]
            events.append({"ph": "E", "ts": _us(last), "pid": pid, "tid": 1})
            events.append({"name": "ALLREDUCE", "ph": "B", "ts": _us(last), "pid": pid,
                           "tid": 1})
            events.append({"name": "MPI_ALLREDUCE", "ph": "B", "ts": _us(last), "pid": pid,
                           "tid": 1})
            events.append({"ph": "E", "ts": _us(done), "pid": pid, "tid": 1})
            events.append({"ph": "E", "ts": _us(done), "pid": pid, "tid": 1})
        for r, it in enumerate(its):
            t0, t1, t2, t3, t4 = it
            phases = [("COMPUTE", t0, t1)]
            if t2 > t1 and algorithm == "sync-easgd":
                phases.append(("EASGD_WORKER_UPDATE", t1, t2))
            phases += [("MPI_ALLREDUCE", t2, t3), (update, t3, t4)]
            events += [{"name": n, "ph": "X", "ts": _us(a), "dur": _us(b - a),
                        "pid": rank_pid[r], "tid": 1} for n, a, b in phases]
    other = {"producer": "dlscale validate local --timeline", "algorithm": algorithm,
             "ranks": ranks, "iterations": len(aligned[0]), "hosts": list(spans["hosts"]),
             "clock": clock, "tensor_bytes": {str(n): int(b) for n, b in spans["tensors"]}}
    if source:
        other["source"] = source
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def write_timeline(doc: dict[str, Any], path: str | Path) -> None:
    """Write ``doc`` as JSON, atomically (a temporary file renamed over ``path``)."""
    from dlscale.perfmodel.output.atomicio import atomic_write_text

    atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")
