"""``dlscale validate published``: the seed papers' published results, reproduced.

The cases, the comparison and the figures live in
:mod:`dlscale.validation.published`; the question is :func:`dlscale.api.validate`
(``"published"``). This module holds the command's parser
(:func:`add_published_parser`) and what it runs (:func:`run_published`): the API's
rows as a table or JSON on stdout, ``-o`` JSON and ``--plots`` figures written
atomically.

Examples
--------
>>> import argparse
>>> p = argparse.ArgumentParser()
>>> sub = add_published_parser(p.add_subparsers(dest="what"))
>>> sorted(a.dest for a in sub._actions if a.dest != "help")
['case', 'fidelity', 'format', 'output', 'plots', 'write_readme']
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dlscale.measure import PUBLISHED_BASELINE
from dlscale.output import atomic_write_text, to_jsonable
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.textfile import read_utf8
from dlscale.provenance import Provenance
from dlscale.validation.published import (
    CASE_MODULES,
    FIDELITIES,
    get_case,
    plot_case,
)
from dlscale.validation.readme import README, replace_block, write_readme
from dlscale.validation.report import format_results

__all__ = ["PUBLISHED_BASELINE", "add_published_parser", "run_published"]



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
    p.add_argument("--fidelity", action="append", choices=FIDELITIES, metavar="NAME",
                   help="run only this fidelity (repeatable; analytical or simulated; "
                        "default both: the simulated rows take minutes, the co-simulated "
                        "orderings of you-sc17 most of them; not with --write-readme)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="what to print on stdout (default: table)")
    p.add_argument("--plots", metavar="DIR", help="write one figure per paper (PNG) into DIR")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the rows as JSON to FILE")
    p.add_argument("--write-readme", nargs="?", const="", default=None,
                   metavar="README.md",
                   help="regenerate the results block of the validation README (default: the "
                        "README.md next to the validation package, i.e. validation/README.md "
                        "in a source checkout; needs every case, so not with --case)")
    p.set_defaults(run=run_published)
    return p


def run_published(args: argparse.Namespace) -> int:
    """Run ``dlscale validate published``; returns 0 (misses are results, not errors)."""
    names = list(getattr(args, "case", None) or CASE_MODULES)
    for n in names:
        get_case(n)
    readme = getattr(args, "write_readme", None)
    if readme is not None:
        if getattr(args, "case", None):
            raise ConfigError(f"--write-readme: the README shows every case; drop --case "
                              f"(got {', '.join(names)})")
        if getattr(args, "fidelity", None):
            raise ConfigError(f"--write-readme: the README shows every fidelity; drop "
                              f"--fidelity (got {', '.join(args.fidelity)})")
        readme = README if readme == "" else Path(readme)
        replace_block(read_utf8(readme, "README"), "")  # no block: refused before any work
    from dlscale.api import validate

    result = validate("published", cases=names,
                      fidelities=list(getattr(args, "fidelity", None) or FIDELITIES))
    rows, outputs = result.rows, result.raw
    prov = Provenance(baseline=PUBLISHED_BASELINE)
    # standard JSON: a width with nothing to measure (NaN) is null, as in the rows
    doc = {"meta": to_jsonable(result.meta), "rows": to_jsonable(rows)}
    text = json.dumps(doc, indent=1, allow_nan=False)
    if getattr(args, "output", None):
        atomic_write_text(args.output, text + "\n")
    if getattr(args, "plots", None):
        for n in names:
            path = plot_case(n, outputs.get(n, []), Path(args.plots) / f"{n}.png",
                             prov.subtitle())
            print(f"wrote {path}", file=sys.stderr)
    if readme is not None:
        print(f"wrote {write_readme(rows, readme)}", file=sys.stderr)
    sys.stdout.write(text + "\n" if args.format == "json" else
                     "\n".join([*prov.header_lines(), format_results(rows)]) + "\n")
    return 0
