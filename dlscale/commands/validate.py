"""``dlscale validate``: hold the model against measurements.

Sub-commands (``dlscale validate SUBCOMMAND``), a registry that later issues extend:

- ``local`` -- run under ``mpiexec -n N``: calibrate on part of this machine's
  measurements and predict the held-out part (allreduce sizes and rank counts not
  fitted, real distributed training runs); see
  :mod:`dlscale.validation.validate_local`.
- ``published`` -- reproduce the seed papers' published results, point by point, with
  the errors shown; see :mod:`dlscale.validation.published`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.commands.common import outputs_ok_on_all_ranks
from dlscale.measure import local_provenance

__all__ = ["SUBCOMMANDS", "add_parser", "local_provenance", "run"]


def _add_local(sub: Any) -> None:
    from dlscale.commands.calibrate import add_yield_arg
    from dlscale.validation.mpi_training import TRAINING_ALGORITHMS

    p = sub.add_parser(
        "local",
        help="calibrate on part of this machine's measurements, predict the rest (under mpiexec)",
        description="Run under `mpiexec -n N`: fit allreduce on every other size (1 KiB .. "
                    "64 MiB) on 2 and N ranks, predict the other sizes and rank counts and "
                    "the real MPI training runs; print measured, predicted and error.",
    )
    p.add_argument("--budget-s", type=float, default=None, metavar="S",
                   help="time budget of the measurements (default: 60, 8 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="small run: 1 KiB .. 64 KiB, 100 iterations, 2 rounds, 8 s budget unless given")
    p.add_argument("--min-size", type=int, default=1024, metavar="BYTES", help="default: 1024")
    p.add_argument("--max-size", type=int, default=None, metavar="BYTES",
                   help="default: 67108864 (64 MiB; 65536 with --quick, which takes at most that)")
    p.add_argument("--iterations", type=int, default=None,
                   help="training iterations per run (default: 500; 100 with --quick, which "
                        "takes at most that)")
    p.add_argument("--rounds", type=int, default=None,
                   help="runs of each training algorithm, the algorithms taking turns "
                        "(default: 8, 2 with --quick, which takes at most that; the report "
                        "takes the median)")
    p.add_argument("--algorithms", default=",".join(TRAINING_ALGORITHMS),
                   help=f"training runs, comma list of {', '.join(TRAINING_ALGORITHMS)}")
    p.add_argument("-o", "--output", default="validate-local.json", metavar="FILE",
                   help="JSON report (default: validate-local.json)")
    p.add_argument("--plot", default="validate-local.png", metavar="FILE.png",
                   help="predicted-versus-measured plot (default: validate-local.png; "
                        "'none' for no plot)")
    p.add_argument("--timeline", metavar="FILE",
                   help="write the first sgd-allreduce run as a Horovod timeline (Chrome "
                        "trace JSON, what HOROVOD_TIMELINE writes, plus each rank's compute, "
                        "allreduce and update spans), for dlscale fit --horovod-timeline")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--oversubscribe", action="store_true",
                   help="allow more ranks than this host's cores (refused by default: an "
                        "oversubscribed rank measures the scheduler; the report marks it)")
    add_yield_arg(p)
    p.set_defaults(run=run_local, file_outputs=())  # checked on rank 0 once MPI runs


def _add_published(sub: Any) -> None:
    from dlscale.commands.validate_published import add_published_parser

    add_published_parser(sub)


#: Sub-command name -> function adding its parser to the ``validate`` sub-parsers.
SUBCOMMANDS: dict[str, Callable[[Any], None]] = {"local": _add_local,
                                                 "published": _add_published}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("validate", help=SUMMARIES["validate"],
                       description="Compare predictions with measurements.")
    inner = p.add_subparsers(dest="validate_command", metavar="SUBCOMMAND", required=True)
    for add in SUBCOMMANDS.values():
        add(inner)  # each sets ``run`` to its own function


def run(args: argparse.Namespace) -> int:
    """Dispatch to the sub-command's function (its parser set ``args.run``)."""
    if args.run is run:
        raise RuntimeError("validate: no sub-command function set")
    return int(args.run(args) or 0)


def report_lines(report: dict[str, Any]) -> list[str]:
    """The printed table and summary of a :func:`validate_local` report.

    The judged error is the prediction from the calibration's profile alone (what a
    user with a profile gets); ``spread_%`` is the case's own repeatability over its
    rounds, and a case whose spread exceeds the target is ``unsettled``. The
    prediction with compute figures re-measured next to each run stays as a
    diagnostic (``refreshed_%``).
    """
    from dlscale.output import format_table
    from dlscale.validation.validate_local import judged_error

    table = [{"case": r["case"], "measured_us": r["measured_s"] * 1e6,
              "predicted_us": r.get("predicted_profile_s", r["predicted_s"]) * 1e6,
              "error_%": 100 * judged_error(r),
              **({"spread_%": 100 * r["spread"]} if "spread" in r else {}),
              **({"verdict": r["verdict"]} if "verdict" in r else {}),
              **({"refreshed_%": 100 * r["error"]} if "error_profile" in r else {}),
              **({"drift_%": 100 * r["compute_drift"]} if "compute_drift" in r else {}),
              **({"simulated_us": r["simulated_s"] * 1e6,
                  "sim_error_%": 100 * r["error_simulated"]} if "simulated_s" in r else {}),
              **({"simulated_us": "not simulated"} if "simulated_note" in r else {}),
              **({"oversubscribed": "yes"} if r.get("oversubscribed") else {}),
              **({"accuracy": r["accuracy"]} if "accuracy" in r else {})} for r in report["rows"]]
    lines = [format_table(table, ["case", "measured_us", "predicted_us", "error_%", "spread_%",
                                  "verdict", "refreshed_%", "drift_%", "simulated_us",
                                  "sim_error_%", "oversubscribed", "accuracy"])]
    for kind, s in report["summary"].items():
        unsettled = (f"; {s['unsettled']} unsettled (spread above the target) left out"
                     if s.get("unsettled") else "")
        if s["median_abs_error"] is None:
            lines.append(f"{kind}: no settled case{unsettled}")
            continue
        verdict = "meets" if s["meets_target"] else "MISSES"
        lines.append(f"{kind} (profile-only prediction): {s['cases']} settled cases, median "
                     f"|error| {s['median_abs_error']:.1%}, worst {s['worst_abs_error']:.1%} "
                     f"({s['worst_case']}); {verdict} the {s['target']:.0%} target{unsettled}")
    for kind, s in report.get("summary_refreshed", {}).items():
        if kind != "training" or s["median_abs_error"] is None:
            continue
        drifts = [r["compute_drift"] for r in report["rows"] if "compute_drift" in r]
        lines.append(f"diagnostic: {kind} with compute figures re-measured next to each run "
                     f"(they drifted {min(drifts):+.1%} .. {max(drifts):+.1%} since the "
                     f"calibration): median |error| {s['median_abs_error']:.1%}, worst "
                     f"{s['worst_abs_error']:.1%} ({s['worst_case']})")
    lines += _simulated_lines(report)
    if report.get("oversubscribed"):
        lines.append("note: more ranks than cores (--oversubscribe): rows marked "
                     "'oversubscribed' measure the scheduler's time slices too")
    lines += [f"note: {n}" for n in report.get("notes", [])]
    return lines


def _simulated_lines(report: dict[str, Any]) -> list[str]:
    """The simulator's summary line and one line per training run it could not simulate."""
    lines = []
    s = report.get("summary_simulated", {}).get("training")
    if s and s["median_abs_error"] is not None:
        lines.append(f"simulator (simulate_training, same profile, not judged): training median "
                     f"|error| {s['median_abs_error']:.1%}, worst {s['worst_abs_error']:.1%} "
                     f"({s['worst_case']}) over {s['cases']} settled cases")
    lines += [f"note: {r['case']}: {r['simulated_note']}" for r in report["rows"]
              if "simulated_note" in r]
    lines += [f"note: {r['case']}: master/worker exchange {r['exchange']}" for r in report["rows"]
              if r.get("exchange", "measured") != "measured"]
    return lines


def _check_outputs(args: argparse.Namespace) -> str | None:
    """The error message of an output (-o, --plot) that cannot be written, else None."""
    from dlscale.perfmodel.errors import ConfigError
    from dlscale.perfmodel.output.atomicio import check_output_path, plot_format

    try:
        check_output_path(args.output, "-o")
        if args.timeline is not None:
            check_output_path(args.timeline, "--timeline")
        if args.plot != "none":
            check_output_path(args.plot, "--plot")
            plot_format(args.plot)
    except ConfigError as exc:
        return str(exc)
    return None


def run_local(args: argparse.Namespace) -> int:
    """Run ``dlscale validate local``: the flags checked before MPI starts, the outputs
    on every rank once it has, then :func:`dlscale.api.validate` (``"local"``) on
    this launch's ranks; rank 0 prints the report and writes the files."""
    from dlscale.api import validate
    from dlscale.measure import TIMELINE_ALGORITHM, start_mpi
    from dlscale.perfmodel.errors import ConfigError
    from dlscale.validation.mpi_training import TRAINING_ALGORITHMS
    from dlscale.validation.timeline import write_timeline
    from dlscale.validation.validate_local import plot_validation, write_report

    algos = tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
    bad = [a for a in algos if a not in TRAINING_ALGORITHMS]
    if bad:
        raise ConfigError(f"--algorithms: unknown {bad}; valid: {', '.join(TRAINING_ALGORITHMS)}")
    from dlscale.commands.calibrate import quick_caps

    budget, lo = args.budget_s, args.min_size
    hi = args.max_size if args.max_size is not None else 64 << 20
    iters = args.iterations if args.iterations is not None else 500
    rounds = args.rounds if args.rounds is not None else 8
    if budget is None:
        budget = 8.0 if args.quick else 60.0
    if args.quick:
        quick_caps(("--max-size", args.max_size, 64 << 10, "at most"),
                   ("--iterations", args.iterations, 100, "at most"),
                   ("--rounds", args.rounds, 2, "at most"))
        hi = min(hi, 64 << 10)
        iters = min(iters, 100)
        rounds = min(rounds, 2)
    if not budget > 0:
        raise ConfigError(f"--budget-s: must be > 0, got {budget!r}")
    if args.timeline is not None and TIMELINE_ALGORITHM not in algos:
        raise ConfigError(f"--timeline: records the first {TIMELINE_ALGORITHM} run; "
                          f"--algorithms {','.join(algos)} has none (add {TIMELINE_ALGORITHM})")
    comm = start_mpi(yield_mode=args.yield_mode)
    if not outputs_ok_on_all_ranks(comm, lambda: _check_outputs(args)):
        return 2                # every rank stops, rank 0 says why
    result = validate("local", comm=comm, min_size=lo, max_size=hi, budget_s=budget,
                      iterations=iters, algorithms=algos, progress=not args.quiet,
                      argv=sys.argv, rounds=rounds, oversubscribe=args.oversubscribe,
                      timeline=args.timeline is not None)
    if result.meta["rank"] != 0:
        return 0
    report, prov = result.raw, local_provenance(result.raw)
    for line in [prov.source_line(), f"baseline: {prov.baseline}", *report_lines(report)]:
        print(line)
    write_report({**report, **prov.meta()}, args.output)
    print(f"wrote {args.output}")
    if args.timeline is not None:
        write_timeline(result.timeline, args.timeline)
        print(f"wrote {args.timeline}")
    if args.plot != "none":
        plot_validation(report, args.plot, prov.subtitle())
        print(f"wrote {args.plot}")
    return 0
