"""``dlscale catalog [KIND]``: tables of the built-in devices, machines, models, ...

``dlscale catalog show NAME [--kind KIND]`` prints one preset (a cluster, workload,
device, node, link, network, runtime, model or message factors) as the resolved TOML
that loads back to it (:mod:`dlscale.perfmodel.catalog.show`).
"""

from __future__ import annotations

import argparse
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.commands.common import add_output_args, emit
from dlscale.perfmodel.errors import ConfigError

KINDS = ("devices", "machines", "networks", "models", "topologies", "algorithms", "runtimes",
         "message-factors", "transformers")


#: The kinds of preset ``catalog show`` knows (the keys of
#: :data:`dlscale.perfmodel.catalog.show.PRESET_KINDS`, written out so that building the
#: parser imports no catalog; a test holds them equal).
PRESET_KINDS = ("cluster", "workload", "device", "network", "runtime", "model", "node", "link",
                "message-factors")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("catalog", help=SUMMARIES["catalog"],
                       description="Tables of what is built in, with the public source of "
                                   "each figure; `catalog show NAME` prints one preset as "
                                   "TOML that loads back to it.")
    p.add_argument("kind", nargs="?", choices=(*KINDS, "show"), default="machines",
                   help="what to list (default: machines), or show: one preset as TOML")
    p.add_argument("name", nargs="?", default=None,
                   help="with show: the preset (cluster, workload, device, ...)")
    p.add_argument("--kind", dest="preset_kind", choices=tuple(PRESET_KINDS), default=None,
                   help="with show: which kind of preset NAME is, where several have it "
                        "(default: the first of " + ", ".join(PRESET_KINDS) + ")")
    add_output_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.kind == "show":
        return _show(args)
    if args.name is not None:
        raise ConfigError(f"catalog {args.kind}: takes no NAME (got {args.name!r}); "
                          f"`dlscale catalog show NAME` prints one preset")
    if args.preset_kind is not None:
        raise ConfigError("--kind: only with `catalog show NAME` (which preset NAME is)")
    from dlscale.perfmodel.catalog import catalog_rows

    rows = catalog_rows(args.kind)
    emit(args, rows, {"kind": args.kind})
    return 0


def _show(args: argparse.Namespace) -> int:
    import sys

    from dlscale.perfmodel.catalog.show import show_preset

    if args.name is None:
        raise ConfigError("catalog show: give the NAME of a preset (`dlscale catalog "
                          "machines` and the other tables list them)")
    if args.format != "table":
        raise ConfigError(f"--format {args.format}: catalog show prints TOML; use -o FILE "
                          f"to write it")
    _, text = show_preset(args.name, args.preset_kind)
    sys.stdout.write(text)
    if args.output:
        from dlscale.output import atomic_write_text

        for path in args.output:
            atomic_write_text(path, text)
    return 0
