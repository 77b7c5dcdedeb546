"""``dlscale sweep STUDY.toml``: run a what-if study's grid (see :mod:`dlscale.study`).

Ctrl-C (or SIGTERM) stops the sweep and its workers within a second, keeps every
finished point and exits with status 130 (143); a second signal kills workers that
are slow to stop. A worker that dies or a result file that cannot be written (a full
disk) stops it the same way with status 2. ``--resume`` then runs the rest. The output folder is
locked while a sweep writes it, and one holding another study's results (other name,
base, seed, fidelity or profile) is refused unless ``--force``.

Results go to ``-o DIR`` (default ``STUDY.toml.out/`` next to the study):
``results.jsonl`` and ``results.csv`` grow as points finish, and at the end
``results.csv`` and ``results.json`` hold the table sorted by point index, with the
plots beside them. On an MPI cluster::

    mpiexec -n N python -m mpi4py.futures -m dlscale sweep STUDY.toml --executor mpi

(``-m dlscale.commands.sweep`` runs this command alone the same way). Rank 0 runs
the sweep, the other N-1 ranks evaluate the points; with ``-n 1`` the points run
in rank 0 (one line on stderr says so). A plain ``mpiexec -n N dlscale sweep
--executor mpi`` (N > 1, without ``-m mpi4py.futures``) is refused with one line:
every rank would run the whole sweep.
"""

from __future__ import annotations

import argparse
import gc
import sys
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.output import rows_to_csv

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    from dlscale.sweep import EXECUTORS

    p = sub.add_parser(
        "sweep",
        help=SUMMARIES["sweep"],
        description="Run every point of a study file on a process pool (default) or MPI, "
                    "appending results as they finish; --resume continues an interrupted sweep.",
    )
    p.add_argument("study", help="study TOML file (format: python -m pydoc dlscale.study)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="output folder (default: STUDY.toml.out next to the study)")
    p.add_argument("--executor", choices=sorted(EXECUTORS), default="process",
                   help="process pool (default), MPI (under mpiexec -m mpi4py.futures), serial")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="process-pool workers (default: all cores)")
    p.add_argument("--resume", action="store_true",
                   help="keep finished points in the output folder and run only the rest")
    p.add_argument("--force", action="store_true",
                   help="use the output folder even if it holds another study's results")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", action="store_true", help="do not draw plots")
    p.add_argument("--evaluator", metavar="MODULE:FUNC",
                   help="replace the analytical model with FUNC(cluster, workload, nodes, seeds)")
    p.add_argument("--baseline", choices=("node", "device"), default="node",
                   help="analytical fidelity: efficiency against one node (default) or one "
                        "device alone")
    p.add_argument("--format", choices=("table", "csv", "none"), default="table",
                   help="what to print on stdout at the end (default: a summary table)")
    p.add_argument("--profile", metavar="FILE",
                   help="machine profile from `dlscale calibrate` applied to the base cluster")
    p.set_defaults(run=run, file_outputs=())  # -o is a folder, checked by run_sweep


def run(args: argparse.Namespace) -> int:
    from dlscale.api import sweep
    from dlscale.study import load_study

    study = load_study(args.study)
    evaluators = {"analytical": args.evaluator} if args.evaluator else None
    try:
        result = sweep(study, args.output, executor=args.executor, jobs=args.jobs,
                       resume=args.resume, quiet=args.quiet, evaluators=evaluators,
                       plots=not args.no_plots, profile=args.profile, force=args.force,
                       baseline=args.baseline)
    except KeyboardInterrupt:
        # The program ends now: spare it the garbage collection of its exit, which goes
        # over every object (numpy, numba, scipy...) and takes 0.5-1.5 s of a loaded
        # machine (0.05 s frozen), while a batch system's SIGKILL may follow a SIGTERM.
        gc.freeze()
        raise
    from dlscale.provenance import Provenance

    rows = result.rows
    prov = Provenance.from_meta(result.meta)
    if args.format == "csv":
        sys.stdout.write(rows_to_csv([{**r, **prov.csv_columns()} for r in rows]))
    elif args.format == "table":
        from dlscale.sweep_table import summary_lines

        print("\n".join(summary_lines(study, rows, result.meta, prov.header_lines())))
        for r in result.failures[:5]:
            print(f"point {r['point']} failed: {r['error']}", file=sys.stderr)
    return 1 if result.failures and not result.ok else 0


def main(argv: list[str] | None = None) -> int:
    """Run ``sweep`` as a program of its own (``python -m dlscale.commands.sweep``)."""
    from dlscale.cli import OneLineParser
    from dlscale.perfmodel.errors import DlscaleError

    parser = OneLineParser(prog="dlscale")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["sweep", *(sys.argv[1:] if argv is None else argv)])
    from dlscale.cli import end_mpi_sweep

    try:
        status = run(args)
    except DlscaleError as exc:
        print(f"dlscale sweep: error: {exc}", file=sys.stderr)
        status = 2
    except KeyboardInterrupt as exc:
        print(f"dlscale sweep: {str(exc) or 'interrupted'}", file=sys.stderr)
        status = int(getattr(exc, "exit_status", 130))
    end_mpi_sweep(status)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
