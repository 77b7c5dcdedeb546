"""Which points of a study a sweep runs: resume keys, the points still to do, the best N.

A point's resume key (:func:`dlscale.study.point_key`) covers the whole study (its
``base``: cluster, workload, seed, profile, target, baseline), the point's values,
its node count and the fidelity. :func:`todo` gives the groups (points differing only
in node count) of a phase minus the points already ``ok``; for a hybrid study,
:func:`ranked` orders the analytical points that fit by the study's ``rank_by``, and
:func:`best` gives the best ``simulate_best`` of them still to simulate. What a
finished sweep shows as best, in its table and its plots, is :func:`best_row`
(rows ordered by :func:`rank_rows`).

Examples
--------
>>> k = key({"@seed": 0}, {"tau": 4}, 16, "analytical")
>>> k == keyer({"@seed": 0}, {"tau": 4})(16, "analytical")
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from dlscale.study import METRICS, Study, group_key_prefix, point_key
from dlscale.sweep_records import Record

__all__ = ["Groups", "all_keys", "best", "best_row", "key", "keyer", "metric_of", "phases",
           "rank_rows", "ranked", "todo"]

#: Groups of points to evaluate: ``(params, [(index, nodes, key or None), ...])``.
Groups = list[tuple[dict[str, Any], list[tuple[int, int, str | None]]]]


def phases(study: Study) -> list[str]:
    """The fidelities a study runs, in order (hybrid: analytical, then simulated)."""
    return {"analytical": ["analytical"], "simulated": ["simulated"],
            "hybrid": ["analytical", "simulated"], "cosim": ["cosim"]}[study.fidelity]


def key(base: Mapping[str, Any], params: Mapping[str, Any], nodes: int, fidelity: str) -> str:
    """The resume key of one point."""
    return point_key({**base, **params}, nodes, fidelity)


def keyer(base: Mapping[str, Any], params: Mapping[str, Any]) -> Callable[[int, str], str]:
    """``(nodes, fidelity) -> key`` for the points of one group (the shared prefix hashed once)."""
    return group_key_prefix({**base, **params})


def all_keys(study: Study, base: Mapping[str, Any]) -> Iterable[str]:
    """Every key the study can write (all groups, phases and node counts)."""
    for _first, params in study.groups():
        make = keyer(base, params)
        for fidelity in phases(study):
            for n in study.nodes:
                yield make(n, fidelity)


def todo(study: Study, fidelity: str, base: Mapping[str, Any], done: Mapping[str, Record],
         bar: Any) -> Groups:
    """The groups of ``fidelity`` less the points ``ok`` in ``done`` (``bar`` counts those)."""
    groups: Groups = []
    for first, params in study.groups():
        if not done:  # nothing to skip: the workers compute the keys
            groups.append((params, [(first + i, n, None) for i, n in enumerate(study.nodes)]))
            continue
        pts: list[tuple[int, int, str | None]] = []
        make = keyer(base, params)
        for i, n in enumerate(study.nodes):
            k = make(n, fidelity)
            if k in done and done[k][0]["status"] == "ok":
                bar.update(1)
            else:
                pts.append((first + i, n, k))
        if pts:
            groups.append((params, pts))
    return groups


def ranked(study: Study, base: Mapping[str, Any],
           done: Mapping[str, Record]) -> list[tuple[dict[str, Any], int, int]]:
    """Analytical points that fit in memory, best first by ``study.rank_by``."""
    by_point = {rec[0]["point"]: rec[0] for rec in done.values()
                if rec[0]["fidelity"] == "analytical"}
    cands = []
    for first, params in study.groups():
        for i, n in enumerate(study.nodes):
            row = by_point.get(first + i)
            v = metric_of(row, study.rank_by) if row else math.inf
            if math.isfinite(v):
                cands.append(((v, first + i), params, first + i, n))
    cands.sort(key=lambda c: c[0])
    return [(p, i, n) for _, p, i, n in cands[:study.simulate_best]]


def best(study: Study, base: Mapping[str, Any], done: Mapping[str, Record], bar: Any) -> Groups:
    """The best ``simulate_best`` analytical points not yet simulated, one group each."""
    groups: Groups = []
    for params, i, n in ranked(study, base, done):
        k = key(base, params, n, "simulated")
        if k in done and done[k][0]["status"] == "ok":
            bar.update(1)
        else:
            groups.append((params, [(i, n, k)]))
    return groups


def metric_of(row: Mapping[str, Any], metric: str) -> float:
    """``row[metric]`` as a float ordered best first for :func:`rank_rows`; inf where the
    row cannot be best (failed, does not fit, no finite value)."""
    v = row.get(metric)
    if (row.get("status", "ok") != "ok" or row.get("fits", True) is False
            or not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
        return math.inf
    return float(v) if METRICS.get(metric, True) else -float(v)


def rank_rows(rows: Iterable[Mapping[str, Any]], metric: str) -> list[Mapping[str, Any]]:
    """Rows best first by ``metric`` (:data:`~dlscale.study.METRICS` says which way);
    rows that cannot be best (:func:`metric_of`) last; ties in point order.

    Examples
    --------
    >>> rows = [{"point": 0, "iteration_s": 2.0}, {"point": 1, "iteration_s": 1.0},
    ...         {"point": 2, "iteration_s": 0.5, "fits": False}]
    >>> [r["point"] for r in rank_rows(rows, "iteration_s")]
    [1, 0, 2]
    """
    return sorted(rows, key=lambda r: (metric_of(r, metric), r.get("point", 0)))


def best_row(rows: Iterable[Mapping[str, Any]], metric: str,
             fidelity: str | None = None) -> Mapping[str, Any] | None:
    """The best row by ``metric`` (of ``fidelity`` if given), None when no row can be.

    The summary table's ``best:`` line, the heatmap's marked cell and the Pareto
    plot's marked point are this row, so the three agree.
    """
    cands = [r for r in rows if fidelity is None or r.get("fidelity") == fidelity]
    top = rank_rows(cands, metric)
    return top[0] if top and math.isfinite(metric_of(top[0], metric)) else None
