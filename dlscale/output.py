"""Writing results: aligned text tables, and JSON/CSV files written atomically.

The functions live in the base layer (:mod:`dlscale.perfmodel.output.tables` and
:mod:`dlscale.perfmodel.output.atomicio`), where the simulator and the validation reach them
too; this module re-exports them for the CLI and the Python API.

Examples
--------
>>> print(format_table([{"nodes": 1, "iteration_s": 0.25}, {"nodes": 16, "iteration_s": 0.5}]))
nodes  iteration_s
    1         0.25
   16          0.5
"""

from __future__ import annotations

from dlscale.perfmodel.output.atomicio import (
    atomic_write_bytes,
    atomic_write_text,
    atomic_write_with,
)
from dlscale.perfmodel.output.tables import (
    format_table,
    format_value,
    rows_to_csv,
    to_jsonable,
    write_rows,
)

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_with",
    "format_table",
    "format_value",
    "rows_to_csv",
    "to_jsonable",
    "write_rows",
]
