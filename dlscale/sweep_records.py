"""The records of a sweep's results log: one JSON line and one CSV line per point.

``results.jsonl`` is appended as chunks finish; :func:`read_log` reads it back for a
resume, skipping a line cut by an interruption (or damaged: not JSON, not UTF-8).

Examples
--------
>>> row, line, csv_text = record({"point": 0, "key": "ab", "x": float("nan")}, ["point", "x"])
>>> line, csv_text
('{"point": 0, "key": "ab", "x": NaN}\\n', '0,nan\\n')
>>> clean(float("inf")) is None
True
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["Record", "chunks", "clean", "csv_line", "read_log", "record"]


def clean(v: Any) -> Any:
    """A JSON-ready scalar: numpy scalars unwrapped, non-finite floats as None."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def csv_line(row: Mapping[str, Any], header: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(
        ["" if (v := row.get(h, "")) is None else v for h in header])
    return buf.getvalue()


Record = tuple[dict[str, Any], str, str]


def record(row: dict[str, Any], header: Sequence[str]) -> Record:
    """A result row with its JSON line and its CSV line."""
    return row, json.dumps(row) + "\n", csv_line(row, header)


def read_log(path: Path, header: Sequence[str]) -> dict[str, Record]:
    done: dict[str, Record] = {}
    if path.exists():
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
        for raw in data.splitlines():
            try:
                line = raw.decode("utf-8")
                row = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError):  # a cut or damaged line
                continue
            if isinstance(row, dict) and "key" in row:
                done[row["key"]] = (row, line + "\n", csv_line(row, header))
    return done


def chunks(items: Sequence[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


