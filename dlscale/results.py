"""The base of the API's result objects: a list of row dicts with CSV and JSON writers.

Examples
--------
>>> t = ResultTable([{"nodes": 1, "iteration_s": 0.5}], meta={"cluster": "x"})
>>> t.to_rows()
[{'nodes': 1, 'iteration_s': 0.5}]
>>> len(t), t.columns
(1, ['nodes', 'iteration_s'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlscale.output import atomic_write_text, format_table, rows_to_csv, write_rows

__all__ = ["ResultTable"]


@dataclass
class ResultTable:
    """Rows of results (plain dicts) plus metadata describing how they were made.

    Attributes
    ----------
    rows : list of dict
        One dict per result row; the same keys in every row.
    meta : dict
        What produced the rows (cluster, workload, fidelity, ...).
    """

    rows: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def columns(self) -> list[str]:
        """Column names, in order (union over rows, first-seen order)."""
        out: dict[str, None] = {}
        for row in self.rows:
            out.update(dict.fromkeys(row))
        return list(out)

    def to_rows(self) -> list[dict[str, Any]]:
        """A pandas-free copy of the rows: a list of dicts."""
        return [dict(r) for r in self.rows]

    def to_csv(self, path: str | Path) -> Path:
        """Write the rows as CSV (atomically); return the path."""
        cols = self.columns
        atomic_write_text(path, rows_to_csv([{c: r.get(c, "") for c in cols} for r in self.rows]))
        return Path(path)

    def to_json(self, path: str | Path) -> Path:
        """Write ``{"meta": ..., "rows": [...]}`` as JSON (atomically); return the path
        written (a ``.csv`` name becomes ``.json``: this is JSON)."""
        out = Path(path).with_suffix(".json") if Path(path).suffix.lower() == ".csv" else Path(path)
        write_rows(out, self.rows, self.meta)
        return out

    def table(self, columns: Sequence[str] | None = None) -> str:
        """The rows as an aligned text table."""
        return format_table(self.rows, columns)
