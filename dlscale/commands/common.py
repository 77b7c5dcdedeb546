"""Argument helpers shared by the subcommands: node lists, output options.

:func:`parse_nodes` lives in :mod:`dlscale.node_counts` (the Python API reads it too)
and is re-exported here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dlscale.node_counts import MAX_NODE_COUNTS, parse_nodes
from dlscale.output import format_table, rows_to_csv, to_jsonable, write_rows
from dlscale.perfmodel.errors import ConfigError
from dlscale.provenance import Provenance

__all__ = ["MAX_NODE_COUNTS", "add_output_args", "emit", "parse_nodes"]

def add_output_args(parser: argparse.ArgumentParser) -> None:
    """``--format table|json|csv`` and ``-o FILE``."""
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table",
                        help="what to print on stdout (default: table)")
    parser.add_argument("-o", "--output", metavar="FILE", action="append", default=[],
                        help="also write the rows to FILE (.csv for CSV, else JSON); repeatable")


def emit(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]],
         meta: Mapping[str, Any] | None = None, columns: Sequence[str] | None = None,
         header: str = "", provenance: Provenance | None = None) -> None:
    """Print rows in ``args.format`` and write ``args.output`` if given.

    With ``provenance``, its lines follow the header's first line, the JSON ``meta``
    holds its ``provenance`` entry, every CSV row its columns, and its warnings go
    to stderr once.
    """
    if provenance is not None:
        provenance.warn()
        first, *rest = header.split("\n") if header else [""]
        header = "\n".join(ln for ln in [first, *provenance.header_lines(), *rest] if ln)
        meta = {**(meta or {}), **provenance.meta()}
        extra = provenance.csv_columns()
        csv_rows: Sequence[Mapping[str, Any]] = [{**r, **extra} for r in rows]
    else:
        csv_rows = rows
    if args.format == "json":
        doc = {"meta": to_jsonable(dict(meta or {})), "rows": to_jsonable(list(rows))}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(rows_to_csv(csv_rows))
    else:
        if header:
            print(header)
        print(format_table(rows, columns))
    for path in getattr(args, "output", None) or []:
        write_rows(path, csv_rows if str(path).lower().endswith(".csv") else rows, meta)


def outputs_ok_on_all_ranks(comm: Any, check: Callable[[], str | None]) -> bool:
    """Run the output check ``check`` (``None`` or the problem) on rank 0 of ``comm``
    and tell every rank: with a problem, rank 0 raises it as a
    :class:`~dlscale.perfmodel.errors.ConfigError` (one line) and the other ranks
    get ``False`` to return exit status 2, so no rank starts measuring."""
    problem = check() if comm.Get_rank() == 0 else None
    problem = comm.bcast(problem, root=0)
    if problem is not None:
        if comm.Get_rank() == 0:
            raise ConfigError(problem)
        return False
    return True
