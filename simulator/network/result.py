"""The result of simulating one collective on a topology.

Examples
--------
>>> import numpy as np
>>> r = CollectiveResult("allreduce", "ring", "fast", 2, 1e6, 1e-3, np.array([5e-4, 5e-4]),
...     ["a", "b"], np.array([1e6, 0.0]), np.array([1e9, 1e9]), np.array(["host", "host"]),
...     ["a->b", "b->a"])
>>> r.top_links(1)[0]["utilisation"]
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CollectiveResult"]


@dataclass
class CollectiveResult:
    """Time and link traffic of one simulated collective.

    Attributes
    ----------
    collective, algorithm : str
        What ran (e.g. ``"allreduce"``, ``"ring"``).
    mode : {"flow", "fast"}
        Flow-level (max-min fair sharing, per-rank progress) or lock-step phases.
    ranks : int
        Ranks taking part.
    n_bytes : float
        Vector size per rank.
    time_s : float
        Time from the start until the last rank finishes.
    step_times_s : ndarray
        Duration of each step (a repeated phase counts once per repetition); in flow
        mode the time between the last rank finishing one step and the next.
    step_labels : list of str
        Label of each phase (one per phase, not per repetition).
    link_bytes : ndarray
        Bytes carried by each directed link.
    link_capacity_Bps : ndarray
        Capacity of each directed link.
    link_level : ndarray
        ``level`` label of each link.
    link_names : list of str
        ``"u->v"`` per link (built lazily by the network for large topologies).
    phase_times_s : ndarray
        Duration of each phase with its repetitions (``len(step_labels)`` entries).
    """

    collective: str
    algorithm: str
    mode: str
    ranks: int
    n_bytes: float
    time_s: float
    step_times_s: np.ndarray
    step_labels: list
    link_bytes: np.ndarray
    link_capacity_Bps: np.ndarray
    link_level: np.ndarray
    link_names: object
    phase_times_s: np.ndarray = field(default_factory=lambda: np.empty(0))
    placement: str = "linear"
    topology: str = ""

    def utilisation(self) -> np.ndarray:
        """Busy fraction of each link over the whole collective: bytes / (capacity * time)."""
        if self.time_s <= 0:
            return np.zeros_like(self.link_bytes)
        return self.link_bytes / (self.link_capacity_Bps * self.time_s)

    def _name(self, i: int) -> str:
        names = self.link_names
        return names(i) if callable(names) else names[i]  # type: ignore[index]

    def top_links(self, k: int = 10) -> list[dict]:
        """The ``k`` links with the highest utilisation, most loaded first."""
        util = self.utilisation()
        idx = np.argsort(-util, kind="stable")[:k]
        return [{"link": self._name(int(i)), "level": str(self.link_level[i]),
                 "bytes": float(self.link_bytes[i]), "utilisation": float(util[i])}
                for i in idx if self.link_bytes[i] > 0]

    def bytes_per_level(self) -> dict[str, float]:
        """Total bytes carried by links of each level."""
        out: dict[str, float] = {}
        for lvl in np.unique(self.link_level):
            out[str(lvl)] = float(self.link_bytes[self.link_level == lvl].sum())
        return out

    def to_dict(self, top: int = 10, max_steps: int = 10000) -> dict:
        """A JSON-ready summary (per-step times listed up to ``max_steps`` steps)."""
        steps = self.step_times_s
        d = {
            "collective": self.collective, "algorithm": self.algorithm, "mode": self.mode,
            "topology": self.topology, "placement": self.placement, "ranks": self.ranks,
            "n_bytes": self.n_bytes, "time_s": self.time_s, "steps": len(steps),
            "phases": [{"label": lbl, "time_s": float(t)}
                       for lbl, t in zip(self.step_labels, self.phase_times_s, strict=False)],
            "bytes_per_level": self.bytes_per_level(),
            "top_links": self.top_links(top),
        }
        if len(steps) <= max_steps:
            d["step_times_s"] = [float(x) for x in steps]
        else:
            d["step_time_stats_s"] = {"min": float(steps.min()), "mean": float(steps.mean()),
                                      "max": float(steps.max())}
        return d
