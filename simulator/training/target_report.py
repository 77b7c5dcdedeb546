"""The report of a time-to-target comparison: medians, ranges, verdicts, orderings.

:class:`TargetReport` holds what :func:`~dlscale.simulator.training.target.time_to_target` ran (the
settings, every search grid, each seed's outcome and curve) and summarises it: per
algorithm the runs that reached the target, the median and the range (min-max) of the
time to target, and a verdict when the cap came first. :func:`ordering` states that
one algorithm is faster than another only where their ranges do not overlap.

Examples
--------
>>> ordering("x", [1.0, 2.0], "y", [3.0, float("inf")])
'x faster than y beyond the spread (x at most 2.00 s, y at least 3.00 s)'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SEED_PAIRS", "TargetReport", "ordering"]

#: The seed paper's comparisons: each EASGD variant against its SGD counterpart
#: (You et al. SC'17 abstract: the EASGD variants are faster in all of them).
SEED_PAIRS = (("async-easgd", "async-sgd"), ("async-measgd", "async-msgd"),
              ("hogwild-easgd", "hogwild-sgd"))


def _spread(values: list[float]) -> tuple[float, float, float]:
    v = np.asarray(values, dtype=float)
    return float(np.median(v)), float(v.min()), float(v.max())


def ordering(a: str, times_a: list[float], b: str, times_b: list[float]) -> str:
    """Which of two algorithms is faster to target, only where the ranges do not overlap.

    >>> ordering("x", [1.0, 2.0], "y", [3.0, 4.0])
    'x faster than y beyond the spread (x at most 2.00 s, y at least 3.00 s)'
    >>> ordering("x", [1.0, 3.5], "y", [3.0, 4.0])
    'x and y: ranges overlap (x 1.00-3.50 s, y 3.00-4.00 s), no ordering'
    """
    (_, lo_a, hi_a), (_, lo_b, hi_b) = _spread(times_a), _spread(times_b)
    if math.isinf(lo_a) and math.isinf(lo_b):
        return f"{a} and {b}: neither reached the target, no ordering"
    if hi_a < lo_b:
        return f"{a} faster than {b} beyond the spread ({a} at most {_s(hi_a)}, " \
               f"{b} at least {_s(lo_b)})"
    if hi_b < lo_a:
        return f"{b} faster than {a} beyond the spread ({b} at most {_s(hi_b)}, " \
               f"{a} at least {_s(lo_a)})"
    return f"{a} and {b}: ranges overlap ({a} {_r(lo_a, hi_a)}, {b} {_r(lo_b, hi_b)}), " \
           "no ordering"


def _s(t: float) -> str:
    return f"{t:.2f} s" if math.isfinite(t) else "not reached"


def _r(lo: float, hi: float) -> str:
    return f"{lo:.2f}-{hi:.2f} s" if math.isfinite(hi) else f"{_s(lo)}-{_s(hi)}"


@dataclass
class TargetReport:
    """Settings, search grids and per-seed outcomes of a :func:`time_to_target` call."""

    spec: Any  # TargetSpec
    nodes: int
    ranks: int
    seeds: list[int]
    tuned: bool
    settings: dict = field(default_factory=dict)
    searches: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)
    surrogate: str = ""

    def summary(self) -> list[dict]:
        """One row per algorithm: settings, runs that reached, median and range, verdict."""
        out = []
        cap = f"{self.spec.max_iterations} steps/worker" + (
            f" or {self.spec.max_sim_time_s:g} s" if math.isfinite(self.spec.max_sim_time_s)
            else "")
        for alg, runs in self.runs.items():
            t = [r["time_to_target_s"] for r in runs]
            med, lo, hi = _spread(t)
            n = sum(math.isfinite(x) for x in t)
            s = self.settings[alg]
            row = {"algorithm": alg, "lr": s["lr"], "beta": s.get("beta"),
                   "alpha": (s["beta"] / self.ranks if s.get("beta") else None),
                   "tau": s.get("tau"), "momentum": s.get("momentum"),
                   "reached": f"{n}/{len(t)}", "time_to_target_s": med,
                   "time_min_s": lo, "time_max_s": hi,
                   "samples_to_target": float(np.median([r["samples_to_target"] for r in runs])),
                   "iterations_to_target": float(np.median([r["iterations_to_target"]
                                                            for r in runs]))}
            best = max(r["best_accuracy"] for r in runs)
            row["verdict"] = ("reached" if n == len(t) else
                              f"cap ({cap}) hit in {len(t) - n} of {len(t)} runs; best "
                              f"accuracy {best:.3f}")
            out.append(row)
        return out

    def orderings(self) -> list[str]:
        """The seed paper's pairs that were compared, then the fastest median against the rest."""
        t = {a: [r["time_to_target_s"] for r in runs] for a, runs in self.runs.items()}
        lines = [f"seed pair: {ordering(a, t[a], b, t[b])}" for a, b in SEED_PAIRS
                 if a in t and b in t]
        if len(t) > 1:
            first = min(t, key=lambda a: (_spread(t[a])[0], list(t).index(a)))
            lines += [f"fastest median: {ordering(first, t[first], b, t[b])}" for b in t
                      if b != first and (first, b) not in SEED_PAIRS
                      and (b, first) not in SEED_PAIRS]
        return lines

    def to_dict(self) -> dict:
        """JSON-ready: spec, settings, whole search grids, per-seed runs, summary, curves."""
        return {"target_accuracy": self.spec.target_accuracy,
                "max_iterations": self.spec.max_iterations,
                "max_sim_time_s": self.spec.max_sim_time_s,
                "eval_every": self.spec.eval_every, "nodes": self.nodes, "ranks": self.ranks,
                "seeds": self.seeds, "tuned": self.tuned, "surrogate": self.surrogate,
                "search_seed": self.seeds[-1] + 1 if self.tuned else None,
                "settings": self.settings,
                "searches": {a: s.grid for a, s in self.searches.items()},
                "runs": self.runs, "summary": self.summary(), "orderings": self.orderings(),
                "curves": self.curves}
