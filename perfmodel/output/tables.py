"""Result rows as text: aligned tables, CSV, JSON-ready values, and files written atomically.

The lowest layer that writes rows (the simulator's and the validation's command
outputs, the API's results) reads these, so they live in the base layer;
:mod:`dlscale.output` re-exports them for the CLI and the API.

Examples
--------
>>> print(format_table([{"nodes": 1, "iteration_s": 0.25}, {"nodes": 16, "iteration_s": 0.5}]))
nodes  iteration_s
    1         0.25
   16          0.5
>>> print(rows_to_csv([{"nodes": 1, "ok": True}]), end="")
nodes,ok
1,True
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dlscale.perfmodel.output.atomicio import atomic_write_text

__all__ = ["format_cell", "format_table", "format_value", "rows_to_csv", "to_jsonable", "write_rows"]


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and non-finite floats for JSON.

    Parameters
    ----------
    value : object
        A number, array, mapping or sequence (nested).

    Returns
    -------
    object
        Plain lists, dicts, ints, floats, strings; ``None`` for NaN and infinities.
    """
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def format_value(value: Any) -> str:
    """Short human form of a table cell.

    Parameters
    ----------
    value : object
        A cell.

    Returns
    -------
    str
        3 or 4 significant figures, ``1,234,567`` from 1e3 to 1e12, ``yes``/``no``
        for bools.

    Examples
    --------
    >>> format_value(0.000123456), format_value(1234567.0), format_value(0.93), format_value(True)
    ('0.000123', '1,234,567', '0.93', 'yes')
    >>> format_value(4.2e13), format_value(12.345)
    ('4.2e+13', '12.35')
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if 1e3 <= abs(value) < 1e12:
            return f"{value:,.0f}"
        if value != 0 and (abs(value) >= 1e12 or abs(value) < 1e-4):
            return f"{value:.3g}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.4g}"
    return str(value)


def _banded(column: str, columns: Sequence[str]) -> bool:
    """Whether ``column`` is the ``_low``/``_high`` companion of another column."""
    for end in ("_low", "_high"):
        if column.endswith(end) and column[: -len(end)] in columns:
            return True
    return False


def format_cell(row: Mapping[str, Any], column: str) -> str:
    """A table cell: the value, and where the row has ``COLUMN_low`` and
    ``COLUMN_high`` the band after it, ``0.93 [0.71-0.95]`` (the value alone where
    the three print the same).

    Parameters
    ----------
    row : mapping
        A result row.
    column : str
        The column.

    Examples
    --------
    >>> format_cell({"eff": 0.93, "eff_low": 0.712, "eff_high": 0.95}, "eff")
    '0.93 [0.712-0.95]'
    >>> format_cell({"eff": 1.0, "eff_low": 1.0, "eff_high": 1.0}, "eff")
    '1'
    """
    text = format_value(row.get(column, ""))
    low, high = row.get(f"{column}_low"), row.get(f"{column}_high")
    if low is None or high is None:
        return text
    lo, hi = format_value(low), format_value(high)
    return text if lo == hi == text else f"{text} [{lo}-{hi}]"


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows of dicts as an aligned text table (numbers right-aligned).

    Parameters
    ----------
    rows : sequence of mapping
        Result rows (dicts).
    columns : sequence of str, optional
        Columns to show, in order (default: the first row's keys).

    Returns
    -------
    str
        The table, a header line first; ``"(no rows)"`` for none. A column whose
        row has ``COLUMN_low`` and ``COLUMN_high`` shows its band
        (:func:`format_cell`); those two are not shown as columns of their own.
    """
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    if any(c.endswith(("_low", "_high")) for c in columns):
        columns = [c for c in columns if not _banded(c, columns)]
    cells = [[format_cell(row, c) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    numeric = [all(isinstance(row.get(c), (int, float)) or hasattr(row.get(c), "item")
                   for row in rows) for c in columns]

    def line(values: Iterable[str]) -> str:
        out = []
        for v, w, num in zip(values, widths, numeric, strict=True):
            out.append(v.rjust(w) if num else v.ljust(w))
        return "  ".join(out).rstrip()

    header = "  ".join(c.rjust(w) if num else c.ljust(w)
                       for c, w, num in zip(columns, widths, numeric, strict=True)).rstrip()
    return "\n".join([header, *(line(r) for r in cells)])


def rows_to_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows of dicts as CSV text with a header line.

    Parameters
    ----------
    rows : sequence of mapping
        Result rows (dicts); the header is every key, in order of first appearance
        (rows of different algorithms carry different fields; a row without a field
        leaves its cell empty).

    Returns
    -------
    str
        CSV text (empty for no rows).

    Examples
    --------
    >>> print(rows_to_csv([{"a": 1}, {"a": 2, "b": 3}]), end="")
    a,b
    1,
    2,3
    """
    buf = io.StringIO()
    if rows:
        fields = list(dict.fromkeys(k for row in rows for k in row))
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: to_jsonable(v) for k, v in row.items()})
    return buf.getvalue()


def write_rows(path: str | Path, rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None) -> None:
    """Write rows to ``path`` as CSV (``.csv``) or JSON (anything else), atomically.

    JSON holds ``{"meta": ..., "rows": [...]}``.

    Parameters
    ----------
    path : str or Path
        Output file; ``.csv`` for CSV, anything else for JSON.
    rows : sequence of mapping
        Result rows (dicts); for CSV the first row's keys are the header.
    meta : mapping, optional
        What the rows describe (JSON only).

    Raises
    ------
    ConfigError
        A path that cannot be written.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        atomic_write_text(path, rows_to_csv(rows))
    else:
        doc = {"meta": to_jsonable(dict(meta or {})), "rows": to_jsonable(list(rows))}
        atomic_write_text(path, json.dumps(doc, indent=2) + "\n")
