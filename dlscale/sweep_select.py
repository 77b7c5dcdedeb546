"""Which points of a study a sweep runs: resume keys, the points still to do, the best N.

A point's resume key (:func:`dlscale.study.point_key`) covers the whole study (its
``base``: cluster, workload, seed, profile, target, baseline), the point's values,
its node count and the fidelity. :func:`todo` gives the groups (points differing only
in node count) of a phase minus the points already ``ok``; for a hybrid study,
:func:`ranked` orders the analytical points that fit by the study's ``rank_by``, and
:func:`best` gives the best ``simulate_best`` of them still to simulate.

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

__all__ = ["Groups", "all_keys", "best", "key", "keyer", "phases", "ranked", "todo"]

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
    smaller = METRICS[study.rank_by]
    by_point = {rec[0]["point"]: rec[0] for rec in done.values()
                if rec[0]["fidelity"] == "analytical"}
    cands = []
    for first, params in study.groups():
        for i, n in enumerate(study.nodes):
            row = by_point.get(first + i)
            if row and row["status"] == "ok" and row.get("fits", True) is not False:
                v = row.get(study.rank_by)
                if v is not None and math.isfinite(v):
                    cands.append(((v if smaller else -v, first + i), params, first + i, n))
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
