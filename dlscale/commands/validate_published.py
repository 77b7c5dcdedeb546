"""``dlscale validate published``: the seed papers' published results, reproduced.

The cases, the comparison and the figures live in
:mod:`dlscale.validation.published`; this module holds the command's parser
(:func:`add_published_parser`) and what it runs (:func:`run_published`): the rows as
a table or JSON on stdout, ``-o`` JSON and ``--plots`` figures written atomically.

Examples
--------
>>> import argparse
>>> p = argparse.ArgumentParser()
>>> sub = add_published_parser(p.add_subparsers(dest="what"))
>>> sorted(a.dest for a in sub._actions if a.dest != "help")
['case', 'format', 'output', 'plots']
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dlscale.output import atomic_write_text, to_jsonable
from dlscale.validation.published import (
    CASE_MODULES,
    format_results,
    get_case,
    plot_case,
    run_cases,
)

__all__ = ["add_published_parser", "run_published"]


def add_published_parser(validate_subparsers: Any) -> argparse.ArgumentParser:
    """Register ``published`` under ``dlscale validate``; returns the sub-parser."""
    p = validate_subparsers.add_parser(
        "published",
        help="reproduce the seed papers' published results, with the errors shown",
        description="Run every published case (analytical, and simulated where a case "
                    "offers it), print case, quantity, published and predicted value, "
                    "error and tolerance, and optionally write JSON and one figure per paper.",
    )
    p.add_argument("--case", action="append", choices=sorted(CASE_MODULES), metavar="NAME",
                   help=f"run only this case (repeatable; one of {', '.join(CASE_MODULES)})")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="what to print on stdout (default: table)")
    p.add_argument("--plots", metavar="DIR", help="write one figure per paper (PNG) into DIR")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the rows as JSON to FILE")
    p.set_defaults(run=run_published)
    return p


def run_published(args: argparse.Namespace) -> int:
    """Run ``dlscale validate published``; returns 0 (misses are results, not errors)."""
    names = list(getattr(args, "case", None) or CASE_MODULES)
    for n in names:
        get_case(n)
    rows, outputs = run_cases(names)
    doc = {"meta": {"cases": names, "within": sum(r["within"] is True for r in rows),
                    "compared": sum(r["within"] is not None for r in rows),
                    "rows": len(rows)},
           "rows": to_jsonable(rows)}
    text = json.dumps(doc, indent=1)
    if getattr(args, "output", None):
        atomic_write_text(args.output, text + "\n")
    if getattr(args, "plots", None):
        for n in names:
            path = plot_case(n, outputs.get(n, []), Path(args.plots) / f"{n}.png")
            print(f"wrote {path}", file=sys.stderr)
    sys.stdout.write(text + "\n" if args.format == "json" else format_results(rows) + "\n")
    return 0
