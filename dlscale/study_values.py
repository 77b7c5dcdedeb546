"""Axis values of a study: lists, ranges, duplicates and the grid-size limit.

Used by :func:`dlscale.study.parse_study`; see :mod:`dlscale.study` for the file format.

Examples
--------
>>> _range({"start": 16, "stop": 128, "factor": 2}, "vary.x")
[16, 32, 64, 128]
>>> _values([2, 2], "vary.tau")
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: vary.tau: value 2 is given twice; each value once
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.limits import MAX_GRID_POINTS

__all__ = ["MAX_POINTS", "check_grid_size", "label", "values"]

#: Default limit on a study's grid size (``max_points``). Measured with
#: ``benchmarks/bench_sweep.py`` on the 2-core development VM: 100,800 analytical points
#: in 15 s on 2 workers with a 525 MB peak (10,080 points: 87 MB), about 4.8 kB per
#: point, so a million points take about 2.5 minutes and 5 GB. Larger grids are more
#: likely a mistake (a range with a tiny step) than a plan, so they need ``max_points``
#: raised on purpose.
MAX_POINTS = 1_000_000


def _err(where: str, msg: str) -> ConfigError:
    return ConfigError(f"{where}: {msg}")


def _range(spec: Mapping[str, Any], where: str, limit: int = MAX_POINTS) -> list[Any]:
    keys = set(spec)
    allowed = ({"start", "stop", "step"}, {"start", "stop", "factor"},
               {"start", "stop", "num"}, {"start", "stop", "num", "scale"})
    if keys not in allowed:
        raise _err(where, f"range keys {sorted(keys)} not allowed; use {{start, stop, step}}, "
                          "{start, stop, factor} or {start, stop, num, scale}")
    start, stop = spec["start"], spec["stop"]
    for k in keys - {"scale"}:
        v = spec[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise _err(where, f"range {k} must be a finite number, got {v!r}")
    if stop < start:
        raise _err(where, f"range stop {stop!r} is below start {start!r}")
    as_int = all(isinstance(spec[k], int) for k in keys - {"scale", "num"})
    out: list[Any]
    if "step" in spec:
        step = spec["step"]
        if step <= 0:
            raise _err(where, f"range step must be > 0, got {step!r}")
        count = math.floor((stop - start) / step + 1e-9) + 1
        _check_count(count, limit, where)
        out = [start + i * step for i in range(count)]
    elif "factor" in spec:
        factor = spec["factor"]
        if factor <= 1 or start <= 0:
            raise _err(where, f"geometric range needs factor > 1 and start > 0, got "
                              f"factor {factor!r}, start {start!r}")
        _check_count(math.floor(math.log(stop / start) / math.log(factor) + 1e-9) + 1,
                     limit, where)
        out, v = [], start
        while v <= stop * (1 + 1e-12):
            out.append(v)
            v = v * factor
    else:
        num, scale = spec["num"], spec.get("scale", "linear")
        if not isinstance(num, int) or num < 1:
            raise _err(where, f"range num must be an integer >= 1, got {num!r}")
        if scale not in ("linear", "log"):
            raise _err(where, f"range scale must be 'linear' or 'log', got {scale!r}")
        if scale == "log" and start <= 0:
            raise _err(where, f"log range needs start > 0, got {start!r}")
        _check_count(num, limit, where)
        if num == 1:
            out = [start]
        elif scale == "linear":
            out = [start + (stop - start) * i / (num - 1) for i in range(num)]
        else:
            lo, hi = math.log10(start), math.log10(stop)
            out = [10 ** (lo + (hi - lo) * i / (num - 1)) for i in range(num)]
            out[0], out[-1] = start, stop
        as_int = as_int and all(float(v).is_integer() for v in out)
    if as_int:
        out = [round(v) for v in out]
    return out


def _check_count(count: int, limit: int, where: str) -> None:
    if count > limit:
        raise _err(where, f"the range has {count:,} values, more than the study's "
                          f"max_points = {limit:,}")


def _no_duplicates(values: Sequence[Any], where: str) -> None:
    """Refuse a value given twice on one axis (it would be one point counted twice)."""
    seen: set[Any] = set()
    for v in values:
        k = label(v)
        if k in seen:
            raise _err(where, f"value {v!r} is given twice; each value once")
        seen.add(k)


def _values(raw: Any, where: str, limit: int = MAX_POINTS) -> list[Any]:
    """An axis's values from a list or a range table, each value once."""
    if isinstance(raw, list):
        if not raw:
            raise _err(where, "empty list; give at least one value")
        out = raw
    elif isinstance(raw, Mapping):
        out = _range(raw, where, limit)
    else:
        raise _err(where, f"expected a list of values or a range table, got {raw!r}")
    _no_duplicates(out, where)
    return out


values = _values


def check_grid_size(axes: Sequence[tuple[Any, Sequence[Any]]], nodes: Sequence[int],
                    limit: int, where: str) -> None:
    """Refuse a grid above ``limit`` points; its size is the product of the lengths."""
    size = math.prod(len(v) for _, v in axes) * len(nodes)
    if size > limit:
        raise _err(where, f"the grid has {size:,} points ("
                          + " x ".join(str(len(v)) for _, v in axes)
                          + f" x {len(nodes)} node counts), more than max_points = "
                            f"{limit:,}; " + ("raise max_points to run it" if size <= MAX_GRID_POINTS
                                             else f"a sweep holds at most {MAX_GRID_POINTS:,}"))


def label(value: Any) -> Any:
    """A table-cell form of a parameter value: scalars as they are, tables as JSON.

    Examples
    --------
    >>> label({"family": "torus", "dims": [4, 4]})
    '{"dims":[4,4],"family":"torus"}'
    """
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


