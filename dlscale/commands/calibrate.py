"""``mpiexec -n N dlscale calibrate -o profile.json``: measure and fit this machine.

Point-to-point latency and bandwidth (intra-node, and inter-node where ranks sit on
several hosts), MPI collectives, the project's kernels; fits (piecewise Hockney,
LogGP, collective efficiency); a machine profile written atomically with a schema
version. The question is :func:`dlscale.api.calibrate`; see
:mod:`dlscale.validation.calibrate_run` for what runs in what order.

Choosing the MPI library's allreduce algorithm: MPICH reads
``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM`` once in ``MPI_Init`` and mpi4py cannot write
MPI_T control variables, so ``--allreduce-algorithm`` sets the variable (and Open
MPI's ``coll_tuned`` equivalent) before MPI starts: one algorithm per launch. To
measure several, launch once per algorithm with ``-o`` to separate files.

The output path is checked (on rank 0) before anything is measured. A SIGINT or
SIGTERM on any rank aborts the whole job (``MPI_Abort``, see
:mod:`dlscale.validation.mpi_abort`) and no profile is written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dlscale.commands import SUMMARIES
from dlscale.commands.common import outputs_ok_on_all_ranks
from dlscale.perfmodel.errors import ConfigError

__all__ = ["add_parser", "add_yield_arg", "parse_sizes", "run"]


def parse_sizes(min_bytes: int, max_bytes: int, step: int) -> list[int]:
    """Powers of two from ``min_bytes`` to ``max_bytes``, every ``step``-th one.

    Examples
    --------
    >>> parse_sizes(1, 64, 2)
    [1, 4, 16, 64]
    """
    from dlscale.validation.microbench import message_sizes

    if not (isinstance(step, int) and step >= 1):
        raise ConfigError(f"--size-step: must be an integer >= 1, got {step!r}")
    sizes = message_sizes(min_bytes, max_bytes)
    picked = sizes[::step]
    if picked[-1] != sizes[-1]:
        picked.append(sizes[-1])
    return picked


def quick_caps(*given: tuple[str, int | None, int, str]) -> None:
    """Refuse a value ``--quick`` would clip: ``(flag, given or None, cap, "at most" or
    "at least")``, a value past its cap (it would run at the cap, the flag read by
    nothing); one within it acts.

    Examples
    --------
    >>> quick_caps(("--rounds", 1, 2, "at most"), ("--rounds", None, 2, "at most"))
    >>> quick_caps(("--rounds", 5, 2, "at most"))
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --rounds 5: --quick runs at most 2; give --rounds 5 without --quick (or at most 2 with it)
    """
    for flag, value, cap, side in given:
        if value is not None and (value > cap if side == "at most" else value < cap):
            raise ConfigError(f"{flag} {value}: --quick runs {side} {cap}; give {flag} {value} "
                              f"without --quick (or {side} {cap} with it)")


def add_yield_arg(p: Any) -> None:
    """``--yield auto|on|off``: MPICH progress throttling for oversubscribed hosts."""
    p.add_argument("--yield", dest="yield_mode", choices=("auto", "on", "off"), default="auto",
                   help="let waiting ranks yield their core (MPICH progress throttling); auto: "
                        "where ranks on the host outnumber its cores (default)")


def add_parser(sub: Any) -> None:
    from dlscale.validation.microbench import COLLECTIVES
    from dlscale.validation.mpi_env import MPICH_ALLREDUCE

    p = sub.add_parser(
        "calibrate",
        help=SUMMARIES["calibrate"],
        description="Run under `mpiexec -n N`: ping-pong and streaming bandwidth, MPI "
                    "collectives and the project's kernels; fit piecewise Hockney, LogGP "
                    "and collective efficiency; write the profile JSON.",
    )
    p.add_argument("-o", "--output", default="profile.json", metavar="FILE",
                   help="profile to write (default: profile.json)")
    p.add_argument("--budget-s", type=float, default=None, metavar="S",
                   help="time budget in seconds of the whole command; repetitions adapt to it "
                        "and sizes that do not fit are left out, with a note (default: 60, 10 "
                        "with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="small run: sizes 4 B .. 64 KiB every 4x, allreduce only, 10 s budget "
                        "unless --budget-s is given")
    p.add_argument("--min-size", type=int, default=None, metavar="BYTES",
                   help="default: 1 (4 with --quick, which takes 4 or more)")
    p.add_argument("--max-size", type=int, default=None, metavar="BYTES",
                   help="default: 67108864 (64 MiB; 65536 with --quick, which takes at most that)")
    p.add_argument("--size-step", type=int, default=None, metavar="K",
                   help="take every K-th power of two (default: 1)")
    p.add_argument("--collectives", default=None,
                   help=f"comma list of {', '.join(COLLECTIVES)} or 'none' (default: all)")
    p.add_argument("--rank-counts", default=None, metavar="LIST",
                   help="rank counts for the collectives, e.g. '2,4' (default: all ranks)")
    p.add_argument("--allreduce-algorithm", default="default",
                   choices=["default", *MPICH_ALLREDUCE],
                   help="MPI library allreduce algorithm for this launch (MPICH CVAR / "
                        "Open MPI coll_tuned; read at MPI_Init)")
    p.add_argument("--no-kernels", action="store_true", help="skip the kernel benchmarks")
    add_yield_arg(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(run=run, file_outputs=())  # -o checked on rank 0 once MPI runs


def _options(args: argparse.Namespace) -> dict[str, Any]:
    from dlscale.validation.microbench import COLLECTIVES

    budget = args.budget_s if args.budget_s is not None else 10.0 if args.quick else 60.0
    if not (budget > 0):
        raise ConfigError(f"--budget-s: must be > 0, got {budget!r}")
    lo = args.min_size if args.min_size is not None else 1
    hi = args.max_size if args.max_size is not None else 64 << 20
    if args.quick:
        for flag, value in (("--size-step", args.size_step), ("--collectives", args.collectives)):
            if value is not None:
                raise ConfigError(f"{flag}: --quick measures every 4x in size, allreduce only; "
                                  f"give {flag} without --quick")
        quick_caps(("--min-size", args.min_size, 4, "at least"),
                   ("--max-size", args.max_size, 64 << 10, "at most"))
        sizes = parse_sizes(max(4, lo), min(hi, 64 << 10), 2)
        names = ["allreduce"]
    else:
        sizes = parse_sizes(lo, hi, args.size_step or 1)
        collectives = args.collectives or ",".join(COLLECTIVES)
        names = [] if collectives == "none" else [c.strip() for c in collectives.split(",")]
    bad = [c for c in names if c not in COLLECTIVES]
    if bad:
        raise ConfigError(f"--collectives: unknown {bad}; valid: {', '.join(COLLECTIVES)}, none")
    counts = None
    if args.rank_counts and not names:
        raise ConfigError(f"--rank-counts {args.rank_counts}: the rank counts of the "
                          f"collectives; --collectives none measures none, so nothing would "
                          f"read it")
    if args.rank_counts:
        try:
            counts = [int(x) for x in args.rank_counts.split(",")]
        except ValueError:
            raise ConfigError(f"--rank-counts: must be integers like '2,4', got {args.rank_counts!r}") from None
    return {"sizes": sizes, "budget_s": budget, "collectives": tuple(names), "rank_counts": counts}


def summary_lines(profile: Any) -> list[str]:
    """Human summary of a profile (what rank 0 prints)."""
    lines = [f"hosts {', '.join(profile.provenance.get('hosts', []))}, "
             f"{profile.provenance.get('ranks', 1)} ranks, "
             f"{profile.provenance.get('mpi_library', '')}"]
    for regime, e in profile.p2p.items():
        breaks = ", ".join(f"{int(b)} B" for b in e.get("breaks_bytes", [])) or "none"
        lines.append(f"p2p {regime}: latency {e['latency_s'] * 1e6:.2f} us, bandwidth "
                     f"{e['bandwidth_Bps'] / 1e9:.2f} GB/s, piecewise breaks: {breaks}")
        ex = e.get("easgd_exchange")
        if ex:
            lines.append(f"Async EASGD exchange ({regime}, {ex['message_bytes']} B each way): "
                         f"{ex['exchange_s'] * 1e6:.1f} us, of which the master "
                         f"{ex['service_s'] * 1e6:.1f} us")
    k = profile.kernels
    if k:
        lines.append("kernels: " + ", ".join(
            f"{name} {k[name]:.3g}" for name in ("stream_triad_Bps", "gemm_flops", "easgd_Bps",
                                                 "sgd_Bps", "reduce_Bps", "model_fwd_bwd_s")
            if name in k))
    fit = profile.collectives.get("allreduce", {}).get("fit")
    if fit:
        lines.append(f"allreduce fit: {fit['algorithm']} form, {len(fit['segments'])} size "
                     f"segment(s), RMS relative error {fit['rms_rel_error']:.1%}")
    lines += [f"note: {n}" for n in profile.notes]
    return lines


def _check_output(path: str) -> str | None:
    """The error message of an output path that cannot be written, else None."""
    from dlscale.perfmodel.output.atomicio import check_output_path

    try:
        check_output_path(path, "-o")
    except ConfigError as exc:
        return str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    """Run ``dlscale calibrate``: the flags checked before MPI starts, ``-o`` on every
    rank once it has, then :func:`dlscale.api.calibrate` on this launch's ranks within
    the budget counted from the command's start; rank 0 writes the profile."""
    from dlscale.api import calibrate
    from dlscale.cli import START
    from dlscale.measure import start_mpi
    from dlscale.perfmodel.machine.profile import save_profile

    opts = _options(args)
    comm = start_mpi(yield_mode=args.yield_mode, allreduce_algorithm=args.allreduce_algorithm)
    if not outputs_ok_on_all_ranks(comm, lambda: _check_output(args.output)):
        return 2                # every rank stops, rank 0 says why
    result = calibrate(opts.pop("sizes"), comm=comm, argv=sys.argv, progress=not args.quiet,
                       kernels=not args.no_kernels, started=START, **opts)
    if result.profile is not None:
        path = save_profile(result.profile, args.output)
        for line in summary_lines(result.profile):
            print(line)
        print(f"wrote {path}")
    return 0
