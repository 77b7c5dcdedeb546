"""Chrome trace (Trace Event Format, opens in Perfetto) of a simulated collective.

Process 1 holds one track per rank (every rank up to 16 ranks, otherwise 16
representative ranks spread evenly), with one slice per step (flow mode) or per phase
(fast mode, a repeated phase as one slice). Process 2 holds one counter track per link
for the most utilised links, with their utilisation (0..1) over time.

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> from dlscale.simulator.network import SimulatedNetwork
>>> net = SimulatedNetwork(fat_tree_graph(4))
>>> tr = net.simulate("allreduce", 1e6, 16, "ring", trace=True).trace
>>> sorted({e["ph"] for e in tr["traceEvents"]})
['C', 'M', 'X']
"""

from __future__ import annotations

import json
import os

import numpy as np

from dlscale.perfmodel.output.atomicio import atomic_write_text
from dlscale.simulator.topology.linktable import LinkTable

__all__ = ["Tracer", "write_json_atomic"]


def write_json_atomic(obj: object, path: str | os.PathLike) -> None:
    """Write ``obj`` as JSON to ``path`` through a temporary file and a rename."""
    atomic_write_text(os.fspath(path), json.dumps(obj))


class Tracer:
    """Collects what a trace needs during a simulation and builds the trace dict."""

    def __init__(self, table: LinkTable, n_ranks: int, max_ranks: int = 16,
                 max_links: int = 16) -> None:
        self.table = table
        self.max_links = max_links
        k = min(n_ranks, max_ranks)
        self.ranks = np.unique(np.linspace(0, n_ranks - 1, k).round().astype(np.int64))
        self.samples: list[tuple[float, np.ndarray, np.ndarray]] = []

    def on_rates(self, time_s: float, link_rate_Bps: np.ndarray) -> None:
        """Record link rates (flow mode), sparsely."""
        nz = np.flatnonzero(link_rate_Bps)
        self.samples.append((time_s, nz, link_rate_Bps[nz] / self.table.bandwidth_Bps[nz]))

    def build(self, res, phases, out: dict) -> dict:
        """The Chrome trace dict of a finished simulation."""
        us = 1e6
        ev: list[dict] = [
            {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "ranks"}},
            {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "links"}},
        ]
        for r in self.ranks.tolist():
            ev.append({"ph": "M", "pid": 1, "tid": r, "name": "thread_name",
                       "args": {"name": f"rank {r}"}})
        if res.mode == "fast":
            for i, start, dur, _ in out["phase_link_time"]:
                ph = phases[i]
                active = set(ph.src.tolist()) | set(ph.dst.tolist())
                for r in self.ranks.tolist():
                    if r in active:
                        ev.append({"ph": "X", "pid": 1, "tid": r, "name": ph.label,
                                   "ts": start * us, "dur": dur * us,
                                   "args": {"steps": ph.repeat}})
        else:
            for r, steps in out["rank_steps"].items():
                for k, start, end, label in steps:
                    ev.append({"ph": "X", "pid": 1, "tid": r, "name": label, "ts": start * us,
                               "dur": (end - start) * us, "args": {"step": k}})
        order = np.argsort(-res.utilisation(), kind="stable")[: self.max_links]
        top = [int(i) for i in order if res.link_bytes[i] > 0]
        for i in top:
            name = self.table.name(i)
            if res.mode == "fast":
                for _, start, _dur, busy in out["phase_link_time"]:
                    ev.append({"ph": "C", "pid": 2, "name": name, "ts": start * us,
                               "args": {"utilisation": float(min(busy[i], 1.0))}})
            else:
                for t, nz, util in self.samples:
                    j = np.searchsorted(nz, i)
                    u = float(util[j]) if j < len(nz) and nz[j] == i else 0.0
                    ev.append({"ph": "C", "pid": 2, "name": name, "ts": t * us,
                               "args": {"utilisation": min(u, 1.0)}})
            ev.append({"ph": "C", "pid": 2, "name": name, "ts": res.time_s * us,
                       "args": {"utilisation": 0.0}})
        return {"traceEvents": ev, "displayTimeUnit": "ms",
                "otherData": {"collective": res.collective, "algorithm": res.algorithm,
                              "mode": res.mode, "ranks": res.ranks, "time_s": res.time_s}}
