"""Chrome trace (Trace Event Format, opens in Perfetto) of a simulated transformer iteration.

One process per recorded data-parallel replica (the first, and the last where there
are two or more), one track per pipeline stage, with a slice for every forward and
backward pass (``F 3.1``: microbatch 3 of chunk 1; its all-gather after the hand-over
included), every blocking send of its output, the data-parallel exchange and the
optimizer step; the gaps between slices are the stage's bubble and its waits.

Examples
--------
>>> tr = PipelineTrace([0])
>>> tr.add(0, 0, "F 0.0", 0.0, 1e-3)
>>> [e["ph"] for e in tr.build()["traceEvents"]]
['M', 'M', 'X']
"""

from __future__ import annotations

from typing import Any

__all__ = ["PipelineTrace"]


class PipelineTrace:
    """Slices of the recorded replicas' stages (see the module docstring).

    Parameters
    ----------
    replicas : list of int
        The data-parallel replicas whose stages are recorded.
    """

    def __init__(self, replicas: list[int]) -> None:
        self.replicas = set(replicas)
        self._slices: list[tuple[int, int, str, float, float]] = []
        self._stages: set[tuple[int, int]] = set()

    def add(self, replica: int, stage: int, name: str, start_s: float, end_s: float) -> None:
        """One slice of ``stage`` of ``replica`` (ignored for a replica not recorded)."""
        if replica in self.replicas:
            self._slices.append((replica, stage, name, start_s, end_s))
            self._stages.add((replica, stage))

    def build(self) -> dict[str, Any]:
        """The Chrome trace dict."""
        us = 1e6
        ev: list[dict[str, Any]] = []
        for d in sorted(self.replicas):
            ev.append({"ph": "M", "pid": d + 1, "name": "process_name",
                       "args": {"name": f"data-parallel replica {d}"}})
        for d, s in sorted(self._stages):
            ev.append({"ph": "M", "pid": d + 1, "tid": s, "name": "thread_name",
                       "args": {"name": f"stage {s}"}})
        for d, s, name, t0, t1 in self._slices:
            ev.append({"ph": "X", "pid": d + 1, "tid": s, "name": name,
                       "ts": t0 * us, "dur": (t1 - t0) * us})
        return {"traceEvents": ev, "displayTimeUnit": "ms"}
