"""The main loop of a sweep: chunks sent to the pool, their rows appended as they come,
and what a stop (a signal, a dead worker, a full disk) keeps and says.

:class:`Results` appends each finished chunk's records to ``results.jsonl`` and
``results.csv`` with plain ``write`` calls (no buffer that a failed write would leave
behind to be written again at close) while the first signal is held back
(:meth:`~dlscale.sweep_guard.StopSignals.held`), so an interrupt never cuts a row.
:func:`run_phases` runs the study's phases; on any stop it stops the pool at once
(:func:`~dlscale.sweep_guard.stop_pool`), writes every chunk that finished meanwhile,
and raises :class:`SweepInterrupted` (a signal) or
:class:`SweepAborted` (a worker died, a result file cannot be written), whose one
line says how many finished points were kept and that ``--resume`` goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import itertools
import math
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError, DlscaleError
from dlscale.study import Study
from dlscale.sweep_guard import StopSignals, dead_worker, pool_workers, stop_pool
from dlscale.sweep_records import Record, chunks
from dlscale.sweep_select import best, phases, todo

__all__ = ["POLL_S", "Results", "SweepAborted", "SweepInterrupted", "completed", "run_phases"]


class SweepInterrupted(KeyboardInterrupt):
    """A signal stopped a sweep; the message says what was kept and how to go on.

    ``exit_status`` is 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).
    """

    def __init__(self, message: str, signum: int = signal.SIGINT) -> None:
        super().__init__(message)
        self.exit_status = 128 + int(signum)


class SweepAborted(DlscaleError):
    """A sweep stopped on a failure that is not the points' own: a pool worker died,
    or a result file could not be written. The message says what was kept."""


class _WriteFailed(Exception):
    def __init__(self, path: Path, exc: OSError) -> None:
        super().__init__(f"{path}: cannot write: {exc.strerror or exc}")


def _append(fd: int, data: bytes) -> int:
    """Write ``data``; the bytes written, or the error with ``written`` set on it."""
    view, written = memoryview(data), 0
    while written < len(data):
        try:
            written += os.write(fd, view[written:])
        except OSError as exc:
            exc.written = written  # type: ignore[attr-defined]
            raise
    return written


class Results:
    """The open results log and CSV of a sweep (a context manager).

    ``done`` (key -> record) is updated as records are written to the log; ``bar``
    is the progress bar.
    """

    def __init__(self, log_path: Path, csv_path: Path, done: dict[str, Record], bar: Any,
                 signals: StopSignals) -> None:
        self.log_path, self.csv_path = log_path, csv_path
        self.done, self.bar, self.signals = done, bar, signals
        self._fds: list[int] = []

    def __enter__(self) -> Results:
        for path in (self.log_path, self.csv_path):
            try:
                self._fds.append(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                                         | getattr(os, "O_CLOEXEC", 0), 0o666))
            except OSError as exc:
                self.__exit__()
                raise ConfigError(f"{path}: cannot write: {exc.strerror}") from None
        return self

    def __exit__(self, *exc: Any) -> None:
        while self._fds:
            os.close(self._fds.pop())

    def keep(self, recs: list[Record]) -> None:
        """Append ``recs`` (a first signal waits until they are written)."""
        with self.signals.held():
            lines = [rec[1].encode("utf-8") for rec in recs]
            try:
                _append(self._fds[0], b"".join(lines))
            except OSError as exc:  # the records written whole are kept
                ends = itertools.accumulate(len(line) for line in lines)
                self.done.update((rec[0]["key"], rec) for rec, end in zip(recs, ends, strict=True)
                                 if end <= getattr(exc, "written", 0))
                raise _WriteFailed(self.log_path, exc) from None
            self.done.update((rec[0]["key"], rec) for rec in recs)
            try:
                _append(self._fds[1], "".join(rec[2] for rec in recs).encode("utf-8"))
            except OSError as exc:
                raise _WriteFailed(self.csv_path, exc) from None
            self.bar.update(len(recs))

    def kept(self) -> str:
        n = sum(r[0]["status"] == "ok" for r in self.done.values())
        return f"{n} finished points kept in {self.log_path}"


def run_phases(study: Study, pool: cf.Executor, jobs: int | None, chunk_groups: int | None,
               submit: Callable[[str, list[Any]], cf.Future[list[Record]]],
               base: dict[str, Any], results: Results) -> None:
    """Run each phase of ``study`` on ``pool``; ``submit(fidelity, chunk)`` sends one
    chunk. Returns when every point is written; on a stop, see the module docstring."""
    futures: list[cf.Future[list[Record]]] = []
    kept: set[int] = set()
    try:
        for fidelity in phases(study):
            if fidelity == "simulated" and study.fidelity == "hybrid":
                groups = best(study, base, results.done, results.bar)
            else:
                groups = todo(study, fidelity, base, results.done, results.bar)
            if not groups:
                continue
            size = chunk_groups or max(1, min(256, math.ceil(
                len(groups) / (8 * pool_workers(pool, jobs)))))
            futures, kept = [], set()
            futures.extend(submit(fidelity, chunk) for chunk in chunks(groups, size))
            for fut in completed(futures):
                kept.add(id(fut))
                results.keep(fut.result())
    except BaseException as exc:
        results.signals.stopping()  # a signal now cuts the stop short, never breaks it
        died = dead_worker(pool) if isinstance(exc, cf.BrokenExecutor) else ""
        stop_pool(pool, abort=True, signals=results.signals, futures=futures)
        raise _stopped(exc, died, _finished(futures, kept), results) from None
    stop_pool(pool, abort=False)


#: Seconds between two looks of the main thread at a signal (see :func:`completed`).
POLL_S = 0.1


def completed(futures: list[cf.Future[Any]], poll_s: float = POLL_S) -> Iterator[cf.Future[Any]]:
    """The futures as they finish (several at once: in the order given), like
    :func:`concurrent.futures.as_completed`, with a wait of at most ``poll_s`` at a time.

    The kernel gives a signal to a thread of the process that is free to take it: while
    the main thread has a signal pending, another one; then the main thread, blocked
    on a lock without a timeout, never runs the Python handler (which only the main
    thread runs) and a sweep would not stop. A wait with a timeout returns, and the
    handler runs, within ``poll_s``.
    """
    order = {id(fut): i for i, fut in enumerate(futures)}
    pending = set(futures)
    while pending:
        done, pending = cf.wait(pending, timeout=poll_s, return_when=cf.FIRST_COMPLETED)
        yield from sorted(done, key=lambda fut: order[id(fut)])


def _finished(futures: Iterable[cf.Future[list[Record]]],
              kept: set[int]) -> list[list[Record]]:
    """The rows of the chunks that finished but are not written yet."""
    return [fut.result() for fut in futures
            if id(fut) not in kept and fut.done() and not fut.cancelled()
            and fut.exception() is None]


def _stopped(exc: BaseException, died: str, finished: list[list[Record]],
             results: Results) -> BaseException:
    """Write ``finished`` (unless writing is what failed); the exception that says so."""
    if not isinstance(exc, _WriteFailed):
        try:
            for recs in finished:
                results.keep(recs)
        except _WriteFailed as failed:
            exc = failed
    if isinstance(exc, _WriteFailed):
        return SweepAborted(f"{exc}; {results.kept()}; run again with --resume once it "
                            "can be written")
    if isinstance(exc, cf.BrokenExecutor):
        why = f" ({died})" if died else ""
        return SweepAborted(f"a worker process died{why} while running points; "
                            f"{results.kept()}; run again with --resume to finish (a "
                            "worker killed for want of memory: fewer -j need less)")
    if isinstance(exc, KeyboardInterrupt):
        signum = results.signals.signum
        if signum is None:  # not one of ours: a KeyboardInterrupt raised otherwise
            signum = int(getattr(exc, "signum", signal.SIGINT))
        return SweepInterrupted(f"interrupted ({signal.Signals(signum).name}); "
                                f"{results.kept()}; run again with --resume to finish", signum)
    return exc
