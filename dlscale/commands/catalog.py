"""``dlscale catalog [KIND]``: tables of the built-in devices, machines, models, ..."""

from __future__ import annotations

import argparse
from typing import Any

from dlscale.commands.common import add_output_args, emit

KINDS = ("devices", "machines", "networks", "models", "topologies", "algorithms", "runtimes",
         "message-factors")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("catalog", help="list built-in devices, machines, models, ...",
                       description="Tables of what is built in, with the public source of each figure.")
    p.add_argument("kind", nargs="?", choices=KINDS, default="machines",
                   help="what to list (default: machines)")
    add_output_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dlscale.perfmodel.catalog import catalog_rows

    rows = catalog_rows(args.kind)
    emit(args, rows, {"kind": args.kind})
    return 0
