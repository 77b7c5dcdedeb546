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

__all__ = ["MAX_NODE_COUNTS", "add_output_args", "emit", "parse_nodes"]

def add_output_args(parser: argparse.ArgumentParser) -> None:
    """``--format table|json|csv`` and ``-o FILE``."""
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table",
                        help="what to print on stdout (default: table)")
    parser.add_argument("-o", "--output", metavar="FILE", action="append", default=[],
                        help="also write the rows to FILE (.csv for CSV, else JSON); repeatable")


def emit(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]],
         meta: Mapping[str, Any] | None = None, columns: Sequence[str] | None = None,
         header: str = "") -> None:
    """Print rows in ``args.format`` and write ``args.output`` if given."""
    if args.format == "json":
        doc = {"meta": to_jsonable(dict(meta or {})), "rows": to_jsonable(list(rows))}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(rows_to_csv(rows))
    else:
        if header:
            print(header)
        print(format_table(rows, columns))
    for path in getattr(args, "output", None) or []:
        write_rows(path, rows, meta)


def baseline_rule(baseline: str, each: str) -> str:
    """The ``baseline:`` header line of a table whose rows have baselines of their own
    (a sweep's points, a plan's clusters): the rule they all follow.

    Examples
    --------
    >>> baseline_rule("node", "point")
    "baseline: efficiency of each point against 1 node of its cluster running the stack's own allreduce (auto)"
    """
    what = "1 node" if baseline == "node" else "1 device alone"
    return (f"baseline: efficiency of each {each} against {what} of its cluster running "
            f"the stack's own allreduce (auto)")


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
