"""What keeps a sweep's output folder safe: a lock, the study's stamp, worker hygiene.

- :class:`FolderLock`: one sweep writes into a folder at a time. The lock file
  (:data:`LOCK_NAME`) holds the holder's pid, host and start time; a second sweep into
  the folder is a one-line :class:`~dlscale.perfmodel.errors.ConfigError` naming the
  holder. A lock left by a process that no longer runs (same host, pid gone) is taken
  over with a word on stderr.
- :func:`check_stamp` / :func:`write_stamp`: the folder remembers which study wrote it
  (:data:`STAMP_NAME`: name, base cluster and workload, seed, fidelity, profile). Results of another study are refused unless ``force``.
- :class:`StopSignals`: SIGINT and SIGTERM stop a sweep between two writes of rows;
  a second signal cuts the stop short.
- :func:`stop_pool`: shut a pool down; on a stop (a signal, an error) cancel what is
  pending and stop the workers at once instead of waiting for the running chunks
  (an MPI pool's workers, other processes of the MPI job, are stopped by
  :func:`end_mpi_job` once the command has said how it ended);
  :func:`dead_worker` says how a worker that died ended.
- :func:`worker_init`: the initializer of pool workers: they ignore SIGINT (the
  parent handles Ctrl-C and stops them) and, on Linux, die with the parent
  (``PR_SET_PDEATHSIG``, see prctl(2)), so ``kill -9`` of a sweep leaves no workers.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with FolderLock(d):
...     FolderLock(d).acquire()  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: ...: another sweep (pid ... on ...) is writing here; wait for it to finish or give another -o (if no such sweep runs, ...)
>>> sorted(p.name for p in d.iterdir())  # released
[]
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["LOCK_NAME", "STAMP_NAME", "TERM_GRACE_S", "FolderLock", "StopSignals", "Terminated",
           "check_stamp", "dead_worker", "end_mpi_job", "pool_workers", "stop_pool", "worker_init",
           "write_stamp"]

#: Lock file in the output folder while a sweep writes there.
LOCK_NAME = ".dlscale-sweep.lock"
#: The identity of the study whose results the folder holds.
STAMP_NAME = "study.json"

#: prctl(2) option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


class FolderLock:
    """An exclusive lock on a sweep's output folder (a context manager)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.held = False

    def _create(self) -> bool:
        """Create the lock file with its content in one step; False if one exists."""
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".lock.", dir=self.folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(info) + "\n")
            os.link(tmp, self.path)  # atomic; fails if the lock exists
        except FileExistsError:
            return False
        except OSError as exc:  # a read-only folder or file system, a full disk
            raise ConfigError(f"-o: cannot write in the folder {str(self.folder)!r}: "
                              f"{exc.strerror}; a sweep writes its results there (give "
                              "a folder it can write)") from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        return True

    def _holder(self) -> dict[str, Any] | None:
        try:
            info = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ConfigError` naming the sweep holding it."""
        for _ in range(3):
            if self._create():
                self.held = True
                return
            holder = self._holder()
            if holder == {}:  # released meanwhile
                continue
            pid, host = (holder or {}).get("pid"), (holder or {}).get("host")
            here = host == socket.gethostname()
            if holder is not None and isinstance(pid, int) and (not here or _alive(pid)):
                raise ConfigError(f"{self.folder}: another sweep (pid {pid} on {host}, since "
                                  f"{holder.get('since', '?')}) is writing here; wait for it to "
                                  f"finish or give another -o (if no such sweep runs, its pid "
                                  f"reused or its host gone, remove {self.path})")
            what = "an unreadable lock" if holder is None else f"the lock of pid {pid}"
            print(f"dlscale sweep: {self.folder}: taking over {what} "
                  "(that sweep no longer runs)", file=sys.stderr)
            self.path.unlink(missing_ok=True)
        raise ConfigError(f"{self.folder}: cannot take the lock {self.path}; other sweeps keep "
                          "taking it")

    def release(self) -> None:
        """Remove the lock file if this process holds it."""
        if self.held:
            self.held = False
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _describe(ident: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    diffs = [f"{k} {ident.get(k)!r} here, {other.get(k)!r} there"
             for k in sorted(set(ident) | set(other)) if ident.get(k) != other.get(k)]
    return "; ".join(diffs)


def check_stamp(folder: Path, ident: Mapping[str, Any], force: bool) -> None:
    """Refuse a folder holding another study's results, unless ``force``.

    A folder without a stamp (new, or from before stamps) is accepted.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> write_stamp(d, {"study": "a", "seed": 0})
    >>> check_stamp(d, {"study": "a", "seed": 0}, force=False)
    >>> check_stamp(d, {"study": "a", "seed": 1}, force=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: ...: holds the results of another study (seed 1 here, 0 there); give another -o, or --force to replace them
    """
    path = folder / STAMP_NAME
    try:
        other = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        other = {"stamp": "unreadable"}
    if not isinstance(other, dict):
        other = {"stamp": "unreadable"}
    if dict(other) != json.loads(json.dumps(dict(ident))) and not force:
        raise ConfigError(f"{folder}: holds the results of another study "
                          f"({_describe(ident, other)}); give another -o, or --force to "
                          "replace them")


def write_stamp(folder: Path, ident: Mapping[str, Any]) -> None:
    """Record the study whose results ``folder`` holds."""
    from dlscale.output import atomic_write_text

    atomic_write_text(folder / STAMP_NAME, json.dumps(dict(ident), indent=1, sort_keys=True)
                      + "\n")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs (``signum`` 15)."""

    signum = signal.SIGTERM
    exit_status = 128 + signal.SIGTERM


#: Seconds a pool worker is given to exit after SIGTERM when a sweep stops, before
#: SIGKILL (workers die at SIGTERM unless an evaluator catches it).
TERM_GRACE_S = 1.0
#: The longest wait of the main thread while it stops a pool (see :func:`_wait_exit`).
_SLICE_S = 0.1


class StopSignals:
    """SIGINT and SIGTERM while a sweep runs (a context manager; main thread only).

    The first signal raises :class:`KeyboardInterrupt` (SIGINT) or :class:`Terminated`
    (SIGTERM) in the main thread; one that comes inside :meth:`held` (while finished
    rows are written) is raised when the block ends, so that no row is cut. A later
    signal, or any once :meth:`stopping` was called, raises nothing: it sets
    :attr:`again` and calls the function given to :meth:`on_again` (:func:`stop_pool`
    kills the workers with it), so a second Ctrl-C cuts a stop short instead of
    breaking it. An ignored SIGINT (``SIG_IGN``: a background job) stays ignored;
    outside the main thread nothing changes. The main thread must not wait without a
    timeout meanwhile (see :func:`dlscale.sweep_loop.completed`).

    Examples
    --------
    >>> import os
    >>> with StopSignals() as stop:
    ...     try:
    ...         with stop.held():
    ...             os.kill(os.getpid(), signal.SIGTERM)
    ...             print("the rows are written first")
    ...     except Terminated as exc:
    ...         print(f"then: {exc}")
    the rows are written first
    then: terminated
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.again = threading.Event()
        self._holding = 0
        self._pending = False
        self._hurry: Callable[[], None] | None = None
        self._stopping = False
        self._old: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                if sig != signal.SIGINT or signal.getsignal(sig) is not signal.SIG_IGN:
                    self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is None and not self._stopping:
            self.signum = signum
            if self._holding:
                self._pending = True
                return
            self._raise()
        self.again.set()
        if self._hurry is not None:
            self._hurry()

    def _raise(self) -> None:
        if self.signum == signal.SIGTERM:
            raise Terminated("terminated")
        raise KeyboardInterrupt

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Within the block, a first signal waits for the block's end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if not self._holding and self._pending:
            self._pending = False
            self._raise()

    def stopping(self) -> None:
        """The sweep stops already (an error): from now on a signal raises nothing."""
        self._stopping = True

    def on_again(self, hurry: Callable[[], None]) -> None:
        """Call ``hurry`` at the next signal (at once if one came already)."""
        self._hurry = hurry
        if self.again.is_set():
            hurry()


def worker_init() -> None:
    """Pool-worker initializer: ignore SIGINT, die on SIGTERM (not the parent's
    handler, inherited by a fork); on Linux, die when the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl
            pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _signal_all(procs: list[Any], how: str) -> None:
    for proc in procs:  # a reaped one is not signalled (its returncode is set)
        with contextlib.suppress(OSError, ValueError):
            getattr(proc, how)()


def _wait_exit(procs: list[Any], timeout: float) -> list[Any]:
    """Wait until ``procs`` have exited (their sentinels; no reaping, which the
    pool's thread does) or ``timeout`` passed; those still running.

    Waits here and in :func:`_join` are cut in slices of :data:`_SLICE_S`: a signal
    that another thread of the process received is handled by the main thread only
    when its wait returns (see :func:`dlscale.sweep_loop.completed`).
    """
    from multiprocessing.connection import wait

    left = {proc.sentinel: proc for proc in procs}
    deadline = time.monotonic() + timeout
    while left and (remaining := deadline - time.monotonic()) > 0:
        for sentinel in wait(list(left), min(remaining, _SLICE_S)):
            left.pop(sentinel)
    return list(left.values())


def _join(thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while thread.is_alive() and (remaining := deadline - time.monotonic()) > 0:
        thread.join(min(remaining, _SLICE_S))


#: MPI pools stopped while chunks still ran on their workers (see :func:`end_mpi_job`).
_ABANDONED_MPI: list[cf.Executor] = []


def _is_mpi(pool: cf.Executor) -> bool:
    return type(pool).__module__.startswith("mpi4py.futures")


def stop_pool(pool: cf.Executor, abort: bool, signals: StopSignals | None = None,
              futures: Iterable[cf.Future[Any]] = ()) -> None:
    """Shut the pool down: normally wait for it; with ``abort`` (a signal, an error)
    stop it now.

    On abort, pending chunks are cancelled and a process pool's workers are sent
    SIGTERM, then SIGKILL after :data:`TERM_GRACE_S` or at the next signal of
    ``signals``. The pool's manager thread is then waited for (it has marked done
    every chunk whose rows came back before the workers died), so that the
    interpreter's exit has nothing left to wait for. An MPI pool's workers are
    other processes of the MPI job, maybe on other hosts: where one of ``futures``
    (the chunks sent) still runs, the pool is remembered, and :func:`end_mpi_job`
    ends the job once the command has written what finished and said how it ended
    (mpi4py's exit would otherwise wait for every running chunk).
    """
    if not abort:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except TypeError:  # an executor without cancel_futures
            pool.shutdown(wait=True)
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())  # shutdown drops them
    manager = getattr(pool, "_executor_manager_thread", None)
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except TypeError:
        pool.shutdown(wait=False)
    if _is_mpi(pool) and any(not fut.done() for fut in futures):
        _ABANDONED_MPI.append(pool)
    if not procs:  # serial, MPI: no worker process of ours to stop
        return
    if signals is not None:
        signals.on_again(lambda: _signal_all(procs, "kill"))
    _signal_all(procs, "terminate")
    _signal_all(_wait_exit(procs, TERM_GRACE_S), "kill")
    _wait_exit(procs, 5.0)
    if isinstance(manager, threading.Thread):
        _join(manager, 5.0)


def end_mpi_job(status: int) -> None:
    """End the whole MPI job now (``MPI_Abort`` with ``status``) if a stopped MPI pool
    left chunks running on its workers; else do nothing.

    Called by the command line once the sweep's lock is released and its one line
    printed: under ``python -m mpi4py.futures`` rank 0's exit would first wait for
    every running chunk (mpi4py joins its pool, then calls ``MPI_Abort`` itself for
    a non-zero status), so a Ctrl-C, or a SIGTERM to rank 0, ended a sweep of 15 s
    chunks only when they had all finished, with their rows thrown away. The launcher
    kills the workers at the abort, wherever they run; MPICH adds its own line
    (``Abort(130) on node 0 ...``), as at any failing exit of mpi4py.futures.
    """
    if not _ABANDONED_MPI:
        return
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    mpi.COMM_WORLD.Abort(status)


def dead_worker(pool: cf.Executor) -> str:
    """How the worker of a broken process pool that died first ended, e.g. ``"killed by
    SIGKILL"`` (``""`` if not known): call before :func:`stop_pool`.

    The pool's thread, seeing a worker dead, sends SIGTERM to the others and reaps them
    all; it is given a moment to, then a worker ended otherwise than by SIGTERM is named
    before one ended by it.
    """
    manager = getattr(pool, "_executor_manager_thread", None)
    if isinstance(manager, threading.Thread):
        _join(manager, 2.0)
    codes = [proc.exitcode for proc in list((getattr(pool, "_processes", None) or {}).values())]
    codes = sorted((c for c in codes if c), key=lambda c: c == -signal.SIGTERM)
    if not codes:
        return ""
    if codes[0] > 0:
        return f"exit status {codes[0]}"
    try:
        return f"killed by {signal.Signals(-codes[0]).name}"
    except ValueError:
        return f"killed by signal {-codes[0]}"


def pool_workers(pool: cf.Executor, jobs: int | None) -> int:
    """How many workers ``pool`` runs (``jobs`` or 1 where it does not say)."""
    for attr in ("num_workers", "_max_workers"):
        n = getattr(pool, attr, None)
        if isinstance(n, int) and n > 0:
            return n
    return jobs or 1
