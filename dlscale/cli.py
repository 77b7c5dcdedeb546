"""The ``dlscale`` command line: one entry point with subcommands.

Each subcommand lives in its own module under :mod:`dlscale.commands` and exposes
``add_parser(subparsers)`` and ``run(args) -> int``. User mistakes (a
:class:`~dlscale.perfmodel.errors.DlscaleError`) print one line on stderr and exit
with status 2, with no traceback; so does an output file that cannot be written,
checked before any work (:func:`check_file_outputs`). Ctrl-C (SIGINT) prints one line
and exits with status 130 (128 + SIGINT), as a shell does, at any point of the command:
:func:`main` takes it before it imports anything beyond the standard library (the
package's ``__init__`` imports lazily). Under MPI (``calibrate``, ``validate local``) a
signal that comes before MPI is up is held until it is, then aborts every rank
(:func:`dlscale.validation.mpi_abort.hold_signals`); called in process
(``main([...])``), they give the caller's SIGINT and SIGTERM handlers back on every
way out (:func:`~dlscale.validation.mpi_abort.release_signals`).

``DLSCALE_READY_FILE=PATH`` (for tests, which wait on it instead of sleeping): the
command appends ``main`` to PATH once its signal handling is in place, and ``run``
once its arguments are parsed and checked, just before the work.
"""

from __future__ import annotations

import time

#: When this command started (``time.monotonic()``), as near the process start as
#: Python code gets: budgets (``calibrate --budget-s``) count from here.
START = time.monotonic()

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Sequence  # noqa: E402

#: Subcommand name -> module under dlscale.commands.
COMMANDS: dict[str, str] = {
    "catalog": "catalog",
    "predict": "predict",
    "simulate": "simulate",
    "sweep": "sweep",
    "plan": "plan",
    "calibrate": "calibrate",
    "fit": "fit",
    "validate": "validate",
}


#: Environment variables in which MPI launchers give a process its rank before
#: ``MPI_Init``: MPICH's Hydra (``PMI_RANK``), Open MPI, PMIx, Slurm's ``srun``.
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")


def quiet_rank() -> bool:
    """Whether this process is a launched rank other than 0 and MPI is not up yet.

    A mistake found before MPI starts (a bad flag of ``mpiexec -n 4 dlscale
    calibrate``) is the same on every rank: rank 0 alone says it, every rank exits 2.
    Once MPI is up, the commands decide on rank 0 and tell the others
    (:func:`dlscale.commands.common.outputs_ok_on_all_ranks`).
    """
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized():
        return False
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return value != "0"
    return False


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2
    (on rank 0 only where an MPI launcher started several: :func:`quiet_rank`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, None if quiet_rank() else f"{self.prog}: error: {message}\n")


def build_parser(only: str | None = None, *, every: bool = True) -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered.

    With ``every=False`` only subcommand ``only`` (a key of :data:`COMMANDS`, or None:
    none) gets its own options, and so has its module imported; the others are
    registered by name and one-line help (:data:`dlscale.commands.SUMMARIES`), which
    is all ``dlscale --help`` and a mistyped command name print. :func:`main` parses
    so, so that a command starts without importing the other commands (and the
    layers behind them).
    """
    from dlscale import __version__
    from dlscale.commands import SUMMARIES

    parser = OneLineParser(
        prog="dlscale",
        description="Performance model and simulator of distributed deep-learning training.",
    )
    parser.add_argument("--version", action="version", version=f"dlscale {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
        if every or name == only:
            mod = importlib.import_module(f"dlscale.commands.{module}")
            mod.add_parser(sub)
        else:
            sub.add_parser(name, help=SUMMARIES[name])
    return parser



def check_file_outputs(args: argparse.Namespace) -> None:
    """Check every file the command will write (``-o``, ``--plot``, ``--trace-out``) up front.

    A subcommand whose options name folders instead sets ``file_outputs`` (the
    attributes that are files) with ``set_defaults``. A plot's extension must name a
    format matplotlib writes (:data:`~dlscale.perfmodel.output.atomicio.PLOT_FORMATS`).
    """
    from dlscale.perfmodel.output.atomicio import check_output_path, plot_format

    for attr in getattr(args, "file_outputs", ("output", "plot", "trace_out")):
        value = getattr(args, attr, None)
        option = "-o" if attr == "output" else f"--{attr.replace('_', '-')}"
        for path in value if isinstance(value, list) else [value]:
            if path is None:
                continue
            check_output_path(path, option)
            if attr == "plot":
                plot_format(path, option)


def _ready(stage: str) -> None:
    """Append ``stage`` to ``$DLSCALE_READY_FILE`` where it is set (module docstring)."""
    path = os.environ.get("DLSCALE_READY_FILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(stage + "\n")


#: Whether SIGINT came during this command (:func:`_on_sigint`).
_INTERRUPTED = False
#: Whether this command is the process's own command line (:func:`main` without argv):
#: the imports it makes are then frozen out of the collector's passes (:func:`_main`).
_OWN_PROCESS = False


def _on_sigint(signum: int, frame: object) -> None:
    """Python's own SIGINT behaviour (raise :class:`KeyboardInterrupt`), remembered: an
    interrupt that lands inside a finalizer or a weakref callback (an import lock's,
    during the imports) is printed as "Exception ignored" and lost; :func:`main` then
    still stops at its next step."""
    global _INTERRUPTED
    _INTERRUPTED = True
    raise KeyboardInterrupt


def _check_interrupted() -> None:
    """Raise the interrupt that a finalizer swallowed (:func:`_on_sigint`)."""
    if _INTERRUPTED:
        raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    global _INTERRUPTED, _OWN_PROCESS
    _INTERRUPTED = False
    _OWN_PROCESS = argv is None
    words = list(sys.argv[1:] if argv is None else argv)
    command = words[0] if words and words[0] in COMMANDS else ""
    held: dict[int, object] | None = None   # the handlers hold_signals replaced
    if command == "calibrate" or words[:2] == ["validate", "local"]:
        from dlscale.validation.mpi_abort import hold_signals

        held = hold_signals()
    else:
        import signal
        import threading

        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            signal.signal(signal.SIGINT, _on_sigint)
    try:
        _ready("main")
        status = _main(words)
        _check_interrupted()
    except KeyboardInterrupt as exc:
        print(f"dlscale{' ' + command if command else ''}: {str(exc) or 'interrupted'}",
              file=sys.stderr)
        status = int(getattr(exc, "exit_status", 130))
    except Exception:
        if not _INTERRUPTED:
            raise
        # the interrupt landed inside code that turned it into another exception: an
        # extension module's import (numpy's C core: ImportError "PyCapsule_Import could
        # not import module 'datetime'"), a dataclass being built (RuntimeError "Error
        # calling __set_name__"): the same one line
        print(f"dlscale{' ' + command if command else ''}: interrupted", file=sys.stderr)
        status = 130
    finally:
        import signal

        if signal.getsignal(signal.SIGINT) is _on_sigint:
            # the process itself (no argv given) is about to exit after an interrupt:
            # a second one must not kill it half-way out (exit -2); in process, as before
            stopping = _INTERRUPTED and argv is None
            signal.signal(signal.SIGINT, signal.SIG_IGN if stopping else
                          signal.default_int_handler)
        if held is not None and argv is not None:
            # in process: the caller's SIGINT and SIGTERM handlers back, on every way
            # out (the process itself keeps holding them until it exits)
            from dlscale.validation.mpi_abort import release_signals

            release_signals(held)
    end_mpi_sweep(status)
    if _INTERRUPTED and argv is None:
        # the command line after Ctrl-C: its outputs are written or removed and its one
        # line printed; leave now with 130, before the interpreter's finalization, where
        # a library's own SIGINT disposition could still end the process by the signal
        # (exit -2 instead of 130, seen in the test suite when the signal landed in the
        # imports that follow the "run" marker)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def end_mpi_sweep(status: int) -> None:
    """A sweep stopped with chunks running on MPI workers ends the MPI job here, its
    one line printed (:func:`dlscale.sweep_guard.end_mpi_job`; loaded only by a sweep)."""
    guard = sys.modules.get("dlscale.sweep_guard")
    if guard is not None:
        guard.end_mpi_job(status)


def _main(words: list[str]) -> int:
    from dlscale.perfmodel.errors import DlscaleError

    collecting = _OWN_PROCESS and gc.isenabled()
    if collecting:
        # the process's own command line: what the command's imports make lives as long
        # as the process, so the cyclic collector neither walks it while they run nor
        # in its later passes (gc.freeze; 150,000 objects, 0.2 s of CPU time of
        # `simulate` at 27,648 GPUs, issue 27 item 5); called in process, untouched
        gc.disable()
    try:
        parser = build_parser(words[0] if words and words[0] in COMMANDS else None,
                              every=False)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()
    args = parser.parse_args(words)
    _check_interrupted()
    try:
        check_file_outputs(args)
        _ready("run")
        return int(args.run(args) or 0)
    except DlscaleError as exc:
        if not quiet_rank():
            print(f"dlscale {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except RecursionError:  # a structure nested past Python's limit (e.g. TOML)
        if not quiet_rank():
            print(f"dlscale {args.command}: error: input nested too deeply to read",
                  file=sys.stderr)
        return 2
    except BrokenPipeError:  # `dlscale ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
