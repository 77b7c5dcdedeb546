"""Study files: what a ``dlscale sweep`` varies, parsed and expanded into grid points.

A study is a TOML file naming a base cluster and workload (preset names or TOML
paths, relative to the study file), the node counts, the parameters to vary and the
fidelity. Every parameter is a config field by its dotted path, with the same
unit-suffixed keys as the cluster and workload files, prefixed by ``cluster.`` or
``workload.`` (the prefix may be left out where the first component names a field of
only one of them: ``network.link.bandwidth_GBps``, ``batch_per_device``). The names
``cluster`` and ``workload`` alone vary the base itself (presets or files).

A complete example::

    name = "resnet50-network-whatif"
    cluster = "summit"                  # preset name or path to a cluster TOML
    workload = "resnet50"               # preset name or path to a workload TOML
    nodes = "1-4608"                    # like --nodes: "1,2,4", "1-4608", "2-64:2"; or a list
    fidelity = "hybrid"                 # analytical | simulated | hybrid | cosim
    simulate_best = 4                   # hybrid: simulate the best 4 analytical points
    rank_by = "time_to_train_s"         # the metric "best" is judged by (see METRICS)
    seed = 0                            # seeds the simulated points
    max_points = 1000000                # optional: refuse larger grids (default 1e6)
    plots = ["scaling", "heatmap", "pareto"]   # optional; chosen from the axes if absent
    heatmap = ["network.link.bandwidth_GBps", "collective"]   # optional: heatmap axes

    [vary]                              # each key one axis; the grid is their product
    "network.link.bandwidth_GBps" = [12.5, 25.0, 50.0]          # a list of values
    collective = ["ring", "hierarchical"]
    fusion_threshold_MiB = {start = 16, stop = 128, factor = 2} # 16, 32, 64, 128
    batch_per_device = {start = 32, stop = 128, step = 32}      # 32, 64, 96, 128
    tau = {start = 1, stop = 100, num = 3, scale = "log"}       # 1, 10, 100

    [[zip]]                             # zipped tuples: one axis that moves together
    "node.nic.bandwidth_Gbps" = [100, 200]
    price_per_node_hour = [3.0, 4.5]

A range is an inline table: ``{start, stop, step}`` (arithmetic, ``stop``
included when on the grid), ``{start, stop, factor}`` (geometric), or ``{start,
stop, num, scale = "linear" | "log"}``. Integer ranges of integer bounds stay
integers. The grid is the product of the ``[vary]`` axes in file order, then the
``[[zip]]`` groups, then the node counts (innermost). Points are numbered in that
order, so results sort back into it whatever order they finish in.

With ``fidelity = "cosim"`` every point is a co-simulation (real kernels on the
small real model, :mod:`dlscale.simulator.training.target`) run until its model
reaches ``target_accuracy`` (default 0.9) on the test split or ``max_iterations``
steps per worker (default 300), with the algorithm's literature settings and the
workload's ``tau``; the rows gain ``time_to_target_s`` (simulated seconds, None when
the cap came first), ``samples_to_target`` and ``reached``, and ``rank_by =
"time_to_target_s"`` ranks by it. "Which algorithm and tau reach 90% soonest on 64
KNL nodes" is then ``nodes = [64]``, ``fidelity = "cosim"`` and ``[vary] algorithm =
[...]``, ``tau = [...]``.

A value may appear only once per axis (``tau = [2, 2]`` is an error naming the field
and the value), and the grid may hold at most ``max_points`` points (default
:data:`MAX_POINTS`): its size is the product of the axes' lengths, checked before
any point is made, and a study above the limit is refused with its size.

Examples
--------
>>> s = parse_study({"cluster": "summit", "workload": "resnet50", "nodes": [1, 2],
...                  "vary": {"collective": ["ring", "hierarchical"]}}, "s.toml")
>>> len(s), s.axis_names
(4, ['workload.collective', 'nodes'])
>>> [(p.index, p.params["workload.collective"], p.nodes) for p in s.points()][:3]
[(0, 'ring', 1), (1, 'ring', 2), (2, 'hierarchical', 1)]
>>> parse_study({"cluster": "summit", "workload": "resnet50", "nodes": [1],
...              "vary": {"tau": []}}, "s.toml")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: s.toml: vary.tau: empty list; give at least one value
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError, closest
from dlscale.perfmodel.limits import MAX_GRID_POINTS, check_count
from dlscale.perfmodel.machine.config import read_toml
from dlscale.perfmodel.machine.hardware import Cluster
from dlscale.perfmodel.machine.tomlmap import resolve_key
from dlscale.perfmodel.training.workload import Workload
from dlscale.study_values import MAX_POINTS, check_grid_size, label
from dlscale.study_values import values as _values

__all__ = ["FIDELITIES", "MAX_POINTS", "METRICS", "PLOTS", "Point", "Study", "group_key_prefix",
           "label", "load_study", "parse_study", "point_key"]

#: How points are evaluated: the closed-form model, the discrete-event simulator, the
#: closed-form model for every point and the simulator for the best N of them, or the
#: co-simulation's time to a target accuracy.
FIDELITIES = ("analytical", "simulated", "hybrid", "cosim")

#: Metrics a study can rank points by, and whether smaller is better.
METRICS: dict[str, bool] = {
    "time_to_train_s": True,
    "iteration_s": True,
    "cost": True,
    "node_hours": True,
    "samples_per_s": False,
    "efficiency": False,
    "time_to_target_s": True,
}

#: Plots a sweep can draw (see :mod:`dlscale.sweep_plots`).
PLOTS = ("scaling", "heatmap", "pareto")

_TOP_KEYS = ("name", "cluster", "workload", "nodes", "fidelity", "simulate_best", "rank_by",
             "seed", "plots", "heatmap", "vary", "zip", "target_accuracy", "max_iterations",
             "max_points")

_CLUSTER_FIELDS = {f.name for f in dataclasses.fields(Cluster)}
_WORKLOAD_FIELDS = {f.name for f in dataclasses.fields(Workload)}


@dataclass(frozen=True)
class Point:
    """One grid point: the index in grid order, parameter values and node count.

    ``params`` maps each axis's full dotted path (``"cluster.network.link.bandwidth_GBps"``,
    ``"workload.collective"``, ``"cluster"``) to its value here.
    """

    index: int
    params: Mapping[str, Any]
    nodes: int

    @property
    def key(self) -> str:
        """Stable identity of the point (see :func:`point_key`)."""
        return point_key(self.params, self.nodes)


def point_key(params: Mapping[str, Any], nodes: int, fidelity: str = "") -> str:
    """A stable 16-hex-digit key of a point: same values, same key, in any process.

    Examples
    --------
    >>> point_key({"workload.tau": 4}, 8) == point_key({"workload.tau": 4}, 8)
    True
    >>> point_key({"workload.tau": 4}, 8) == point_key({"workload.tau": 4}, 16)
    False
    """
    return group_key_prefix(params)(nodes, fidelity)


def group_key_prefix(params: Mapping[str, Any]) -> Callable[[int, str], str]:
    """``f(nodes, fidelity) -> key`` for points sharing ``params`` (one JSON encoding).

    Examples
    --------
    >>> group_key_prefix({"workload.tau": 4})(8, "") == point_key({"workload.tau": 4}, 8)
    True
    """
    text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), default=str)

    def key(nodes: int, fidelity: str = "") -> str:
        data = f"{text}|{int(nodes)}|{fidelity}".encode()
        return hashlib.sha1(data).hexdigest()[:16]

    return key


@dataclass(frozen=True)
class Study:
    """A parsed, validated study. See the module docstring for the file format.

    Attributes
    ----------
    name : str
        Study name (defaults to the file's stem).
    path : Path
        The study file; relative cluster/workload paths resolve against its folder.
    cluster, workload : str
        Base cluster and workload specs (preset name or resolved file path).
    nodes : list of int
        Node counts, sorted and unique.
    axes : list of (names, values)
        Each axis: the dotted paths it sets (one, or several for a zip group) and
        the list of value tuples it takes.
    fidelity : str
        One of :data:`FIDELITIES`.
    simulate_best : int
        Points the ``hybrid`` fidelity simulates.
    rank_by : str
        One of :data:`METRICS`.
    seed : int
        Seed of the simulated points.
    plots : list of str
        Plots to draw (from :data:`PLOTS`); empty means chosen from the axes.
    heatmap : list of str
        The two axes of the heatmap (full dotted paths); empty means the first two.
    target_accuracy, max_iterations : float, int
        ``cosim`` fidelity: the accuracy to reach and the cap in steps per worker.
    max_points : int
        The largest grid the study may have (checked when parsed).
    """

    name: str
    path: Path
    cluster: str
    workload: str
    nodes: list[int]
    axes: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]] = field(default_factory=list)
    fidelity: str = "analytical"
    simulate_best: int = 0
    rank_by: str = "time_to_train_s"
    seed: int = 0
    plots: list[str] = field(default_factory=list)
    heatmap: list[str] = field(default_factory=list)
    target_accuracy: float = 0.9
    max_iterations: int = 300
    max_points: int = MAX_POINTS

    @property
    def axis_names(self) -> list[str]:
        """Names of the axes in grid order, ``"nodes"`` last; zip groups joined by ``+``."""
        return ["+".join(names) for names, _ in self.axes] + ["nodes"]

    @property
    def param_names(self) -> list[str]:
        """Every dotted path the study sets, in axis order."""
        return [n for names, _ in self.axes for n in names]

    def __len__(self) -> int:
        return math.prod(len(v) for _, v in self.axes) * len(self.nodes)

    def groups(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(first point index, params)`` per parameter combination, in grid order.

        The points of one group differ only in node count: index ``first + i``
        has ``nodes[i]``.
        """
        n = len(self.nodes)
        combos = itertools.product(*(values for _, values in self.axes))
        for g, combo in enumerate(combos):
            params: dict[str, Any] = {}
            for (names, _), values in zip(self.axes, combo, strict=True):
                params.update(zip(names, values, strict=True))
            yield g * n, params

    def points(self) -> Iterator[Point]:
        """Every grid point in grid order."""
        for first, params in self.groups():
            for i, nodes in enumerate(self.nodes):
                yield Point(first + i, params, nodes)


def _err(where: str, msg: str) -> ConfigError:
    return ConfigError(f"{where}: {msg}")


def _has_key(cls: type, key: str) -> bool:
    try:
        resolve_key(cls, key, "")
    except ConfigError:
        return False
    return True


def _full_path(name: str, where: str) -> str:
    """Qualify a dotted path with ``cluster.`` or ``workload.``."""
    if name in ("cluster", "workload") or name.startswith(("cluster.", "workload.")):
        return name
    head = name.split(".", 1)[0]
    in_c, in_w = _has_key(Cluster, head), _has_key(Workload, head)
    if in_c and in_w:
        raise _err(where, f"{name!r} is a field of both cluster and workload; "
                          f"write cluster.{name} or workload.{name}")
    if in_c:
        return f"cluster.{name}"
    if in_w:
        return f"workload.{name}"
    valid = sorted(_CLUSTER_FIELDS | _WORKLOAD_FIELDS)
    raise _err(where, f"unknown parameter {name!r}; a dotted path starting with cluster., "
                      f"workload., or one of {', '.join(valid)}{closest(head, valid)}")


def _spec(raw: Any, kind: str, base_dir: Path, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise _err(where, f"expected a {kind} preset name or TOML path, got {raw!r}")
    if raw.endswith(".toml") or "/" in raw:
        path = Path(raw)
        return str(path if path.is_absolute() else base_dir / path)
    return raw


def _nodes(raw: Any, where: str) -> list[int]:
    from dlscale.node_counts import parse_nodes

    if isinstance(raw, str):
        try:
            return parse_nodes(raw)
        except ConfigError as exc:
            raise _err(where, str(exc).replace("--nodes: ", "")) from None
    values = _values(raw, where)
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise _err(where, f"node counts must be integers >= 1, got {v!r}")
    return sorted(set(values))


def _settings(table: Mapping[str, Any], f: str) -> tuple[str, int, str, int]:
    """``fidelity``, ``simulate_best``, ``rank_by`` and ``seed``, checked."""
    fidelity = table.get("fidelity", "analytical")
    if fidelity not in FIDELITIES:
        raise _err(f"{f}: fidelity", f"unknown value {fidelity!r}; valid: "
                                     f"{', '.join(FIDELITIES)}{closest(str(fidelity), FIDELITIES)}")
    best = table.get("simulate_best", 0)
    if isinstance(best, bool) or not isinstance(best, int) or best < 0:
        raise _err(f"{f}: simulate_best", f"must be an integer >= 0, got {best!r}")
    if fidelity == "hybrid" and best < 1:
        raise _err(f"{f}: simulate_best", f"hybrid fidelity needs simulate_best >= 1, got {best!r}")
    rank_by = table.get("rank_by", "time_to_train_s")
    if rank_by not in METRICS:
        raise _err(f"{f}: rank_by", f"unknown metric {rank_by!r}; valid: {', '.join(METRICS)}"
                                    f"{closest(str(rank_by), METRICS)}")
    seed = table.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise _err(f"{f}: seed", f"must be an integer >= 0, got {seed!r}")
    return fidelity, best, rank_by, seed


_Axes = list[tuple[tuple[str, ...], list[tuple[Any, ...]]]]


def _axes(table: Mapping[str, Any], f: str, base_dir: Path,
          limit: int) -> tuple[_Axes, set[str]]:
    """The grid's axes from ``[vary]`` and the ``[[zip]]`` groups; the varied paths."""
    axes: _Axes = []
    seen: set[str] = set()

    def claim(name: str, where: str) -> str:
        full = _full_path(name, where)
        if full in seen:
            raise _err(where, f"{full!r} is varied twice")
        seen.add(full)
        return full

    vary = table.get("vary", {})
    if not isinstance(vary, Mapping):
        raise _err(f"{f}: vary", f"expected a table of parameter = values, got {vary!r}")
    for name, raw in vary.items():
        where = f"{f}: vary.{name}"
        if name == "nodes":
            raise _err(where, "give node counts with the top-level 'nodes' key")
        full = claim(name, where)
        values = _values(raw, where, limit)
        if full in ("cluster", "workload"):
            kind = full
            values = _values([_spec(v, kind, base_dir, where) for v in values], where, limit)
        axes.append(((full,), [(v,) for v in values]))
    zips = table.get("zip", [])
    if not isinstance(zips, list):
        raise _err(f"{f}: zip", f"expected [[zip]] tables, got {zips!r}")
    for i, group in enumerate(zips):
        where = f"{f}: zip[{i}]"
        if not isinstance(group, Mapping) or not group:
            raise _err(where, f"expected a non-empty table of parameter = list, got {group!r}")
        names, columns = [], []
        for name, raw in group.items():
            names.append(claim(name, f"{where}.{name}"))
            columns.append(list(raw) if isinstance(raw, list) and raw else
                           _values(raw, f"{where}.{name}", limit))
        lengths = {len(c) for c in columns}
        if len(lengths) != 1:
            raise _err(where, "zipped lists must have equal lengths, got "
                              + ", ".join(f"{n}: {len(c)}" for n, c in zip(names, columns, strict=True)))
        for k, name in enumerate(names):
            if name in ("cluster", "workload"):
                columns[k] = [_spec(v, name, base_dir, where) for v in columns[k]]
        rows = _values(list(zip(*columns, strict=True)), where, limit)
        axes.append((tuple(names), [tuple(r) for r in rows]))
    return axes, seen


def _plots(table: Mapping[str, Any], f: str, seen: set[str]) -> tuple[list[str], list[str]]:
    """``plots`` and ``heatmap`` (two varied parameters, or ``nodes``), checked."""
    plots = table.get("plots", [])
    if not isinstance(plots, list) or any(p not in PLOTS for p in plots):
        raise _err(f"{f}: plots", f"expected a list from {', '.join(PLOTS)}, got {plots!r}")
    heatmap = table.get("heatmap", [])
    if not isinstance(heatmap, list) or (heatmap and len(heatmap) != 2):
        raise _err(f"{f}: heatmap", f"expected two varied parameters, got {heatmap!r}")
    heatmap = [_full_path(h, f"{f}: heatmap") if h != "nodes" else h for h in heatmap]
    for h in heatmap:
        if h != "nodes" and h not in seen:
            raise _err(f"{f}: heatmap", f"{h!r} is not varied; varied: "
                                        f"{', '.join(sorted(seen)) or 'nothing'}")
    return list(plots), heatmap


def parse_study(table: Mapping[str, Any], path: str | Path = "study.toml") -> Study:
    """Validate a study table (as read from TOML) into a :class:`Study`.

    Every error is a :class:`ConfigError` naming the file, the field, the value and
    what is allowed. Unknown parameter paths are caught here where the prefix is
    missing, and by :func:`~dlscale.perfmodel.machine.config.apply_overrides` (before any
    point runs, see :func:`dlscale.sweep.check_study`) otherwise.
    """
    path = Path(path)
    f = str(path)
    unknown = sorted(set(table) - set(_TOP_KEYS))
    if unknown:
        raise _err(f"{f}: {unknown[0]}", f"unknown key; valid: {', '.join(_TOP_KEYS)}"
                                         f"{closest(unknown[0], _TOP_KEYS)}")
    for req in ("cluster", "workload", "nodes"):
        if req not in table:
            raise _err(f, f"missing required key {req!r}")
    base_dir = path.parent
    cluster = _spec(table["cluster"], "cluster", base_dir, f"{f}: cluster")
    workload = _spec(table["workload"], "workload", base_dir, f"{f}: workload")
    nodes = _nodes(table["nodes"], f"{f}: nodes")
    fidelity, best, rank_by, seed = _settings(table, f)
    target, cap = _cosim_keys(table, f, fidelity, rank_by)
    limit = table.get("max_points", MAX_POINTS)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise _err(f"{f}: max_points", f"must be an integer >= 1, got {limit!r}")
    check_count(limit, MAX_GRID_POINTS, f"{f}: max_points", "a sweep keeps every point's key "
                "to resume: about 200 B and 17 us each before the first point runs")

    axes, seen = _axes(table, f, base_dir, limit)
    check_grid_size(axes, nodes, limit, f"{f}: vary")

    plots, heatmap = _plots(table, f, seen)
    name = table.get("name", path.stem)
    if not isinstance(name, str):
        raise _err(f"{f}: name", f"expected a string, got {name!r}")
    return Study(name=name, path=path, cluster=cluster, workload=workload, nodes=nodes,
                 axes=axes, fidelity=fidelity, simulate_best=best, rank_by=rank_by, seed=seed,
                 plots=plots, heatmap=heatmap, target_accuracy=target, max_iterations=cap,
                 max_points=limit)


def _cosim_keys(table: Mapping[str, Any], f: str, fidelity: str, rank_by: str) -> tuple[float, int]:
    """``target_accuracy`` and ``max_iterations`` of the cosim fidelity, checked."""
    target = table.get("target_accuracy", 0.9)
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise _err(f"{f}: target_accuracy", f"must be a number in (0, 1], got {target!r}")
    cap = table.get("max_iterations", 300)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise _err(f"{f}: max_iterations", f"must be an integer >= 1, got {cap!r}")
    if rank_by == "time_to_target_s" and fidelity != "cosim":
        raise _err(f"{f}: rank_by", f"time_to_target_s needs fidelity = 'cosim', got {fidelity!r}")
    if fidelity == "cosim":
        from dlscale.kernels.data import digits_missing

        if (why := digits_missing()) is not None:
            raise _err(f"{f}: fidelity", f"'cosim': {why}")
    return float(target), cap


def load_study(path: str | Path) -> Study:
    """Read and validate a study TOML file."""
    return parse_study(read_toml(path), path)


def split_params(params: Mapping[str, Any]) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """Split point params into (cluster spec or None, workload spec or None,
    cluster overrides, workload overrides), prefixes stripped.

    Examples
    --------
    >>> split_params({"cluster.network.link.bandwidth_GBps": 25, "workload.tau": 2})
    (None, None, {'network.link.bandwidth_GBps': 25}, {'tau': 2})
    """
    c_over: dict[str, Any] = {}
    w_over: dict[str, Any] = {}
    c_spec = params.get("cluster")
    w_spec = params.get("workload")
    for name, value in params.items():
        if name.startswith("cluster."):
            c_over[name[len("cluster."):]] = value
        elif name.startswith("workload."):
            w_over[name[len("workload."):]] = value
    return c_spec, w_spec, c_over, w_over


def short_names(names: Sequence[str]) -> dict[str, str]:
    """Column names for parameters: the dotted path without ``cluster.``/``workload.``.

    Examples
    --------
    >>> short_names(["cluster.network.link.bandwidth_GBps", "workload.tau", "cluster"])
    {'cluster.network.link.bandwidth_GBps': 'network.link.bandwidth_GBps', 'workload.tau': 'tau', 'cluster': 'cluster'}
    """
    out: dict[str, str] = {}
    for n in names:
        short = n.split(".", 1)[1] if "." in n else n
        out[n] = n if short in ("nodes", "cluster", "workload") or short in out.values() else short
    return out
