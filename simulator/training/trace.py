"""Chrome trace (Trace Event Format, opens in Perfetto) of a simulated training run.

One process per traced rank (``pid = rank + 1``) with two threads: ``compute``
(forward and backward per layer, update, local steps) and ``comm`` (negotiation,
each allreduce or gather, exchanges with the master); process 0 is the master, with
a counter track of its queue length and a thread of the exchanges it serves. At
scale only representative ranks are traced (``max_ranks`` spread evenly, first and
last included), and only the first ``max_iterations`` iterations.

Examples
--------
>>> rec = TraceRecorder(1000, max_ranks=4, max_iterations=2)
>>> rec.ranks.tolist()
[0, 333, 666, 999]
>>> rec.slice(0, "compute", "forward", 0.0, 1e-3)
>>> rec.counter("master queue", 0.0, 3)
>>> sorted({e["ph"] for e in rec.build({"algorithm": "sync-sgd"})["traceEvents"]})
['C', 'M', 'X']
"""

from __future__ import annotations

import json

import numpy as np

__all__ = ["TraceRecorder"]

_THREADS = {"compute": 0, "comm": 1, "master": 2}


class TraceRecorder:
    """Collects trace events of representative ranks during a run.

    Parameters
    ----------
    n_ranks : int
        Ranks in the run.
    max_ranks : int
        Ranks traced at most.
    max_iterations : int
        Iterations traced (events of later iterations are dropped).
    max_counter_events : int
        Counter samples kept at most.
    """

    def __init__(self, n_ranks: int, max_ranks: int = 16, max_iterations: int = 5,
                 max_counter_events: int = 20000) -> None:
        k = max(1, min(int(n_ranks), int(max_ranks)))
        self.ranks = np.unique(np.linspace(0, n_ranks - 1, k).round().astype(np.int64))
        self._set = set(self.ranks.tolist())
        self.max_iterations = int(max_iterations)
        self.max_counter_events = int(max_counter_events)
        self._counters = 0
        self.events: list[dict] = []

    def traced(self, rank: int) -> bool:
        """Whether ``rank`` is one of the traced ranks."""
        return rank in self._set

    def slice(self, rank: int, thread: str, name: str, start_s: float, dur_s: float,
              **args: object) -> None:
        """A complete slice on ``rank`` (``-1``: the master) in ``thread``."""
        if rank >= 0 and rank not in self._set:
            return
        ev = {"ph": "X", "pid": rank + 1, "tid": _THREADS[thread], "name": name,
              "ts": start_s * 1e6, "dur": max(dur_s, 0.0) * 1e6}
        if args:
            ev["args"] = args
        self.events.append(ev)

    def counter(self, name: str, t_s: float, value: float) -> None:
        """A counter sample on the master process (queue length and the like); samples past
        ``max_counter_events`` are dropped (long runs at scale)."""
        if self._counters >= self.max_counter_events:
            return
        self._counters += 1
        self.events.append({"ph": "C", "pid": 0, "name": name, "ts": t_s * 1e6,
                            "args": {name: value}})

    def build(self, meta: dict) -> dict:
        """The trace dict: metadata events, then the recorded events in time order."""
        ev: list[dict] = [{"ph": "M", "pid": 0, "name": "process_name",
                           "args": {"name": "master"}}]
        for r in self.ranks.tolist():
            ev.append({"ph": "M", "pid": r + 1, "name": "process_name",
                       "args": {"name": f"rank {r}"}})
            for t, tid in _THREADS.items():
                if t != "master":
                    ev.append({"ph": "M", "pid": r + 1, "tid": tid, "name": "thread_name",
                               "args": {"name": t}})
        order = sorted(range(len(self.events)),
                       key=lambda i: (self.events[i]["ts"], self.events[i]["pid"], i))
        ev.extend(self.events[i] for i in order)
        return {"traceEvents": ev, "displayTimeUnit": "ms", "otherData": meta}

    def dumps(self, meta: dict) -> str:
        """The trace as JSON text (deterministic: same run, same bytes)."""
        return json.dumps(self.build(meta), sort_keys=True)
