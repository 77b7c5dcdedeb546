"""What keeps a sweep's output folder safe: a lock, the study's stamp, worker hygiene.

- :class:`FolderLock`: one sweep writes into a folder at a time. The lock file
  (:data:`LOCK_NAME`) holds the holder's pid, host and start time; a second sweep into
  the folder is a one-line :class:`~dlscale.perfmodel.errors.ConfigError` naming the
  holder. A lock left by a process that no longer runs (same host, pid gone) is taken
  over with a word on stderr.
- :func:`check_stamp` / :func:`write_stamp`: the folder remembers which study wrote it
  (:data:`STAMP_NAME`: name, base cluster and workload, seed, fidelity, profile). Results of another study are refused unless ``force``.
- :func:`stop_pool`: shut a pool down; on Ctrl-C cancel what is pending and
  terminate the workers at once instead of waiting for the running chunks.
- :func:`sigterm_as_interrupt`: SIGTERM stops a sweep the way Ctrl-C does.
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
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["LOCK_NAME", "STAMP_NAME", "FolderLock", "Terminated", "check_stamp", "pool_workers",
           "sigterm_as_interrupt", "stop_pool", "worker_init", "write_stamp"]

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
        fd, tmp = tempfile.mkstemp(prefix=".lock.", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(info) + "\n")
            os.link(tmp, self.path)  # atomic; fails if the lock exists
        except FileExistsError:
            return False
        finally:
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


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated("terminated")

    old = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


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


def stop_pool(pool: cf.Executor, interrupted: bool) -> None:
    """Shut the pool down: wait for it normally; on Ctrl-C cancel and kill the workers."""
    if not interrupted:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except TypeError:  # an executor without cancel_futures
            pool.shutdown(wait=True)
        return
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except TypeError:
        pool.shutdown(wait=False)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for proc in procs:  # a process pool's workers: stop them now
        proc.terminate()
    deadline = time.monotonic() + 2.0
    for proc in procs:
        proc.join(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:  # one that did not stop on SIGTERM
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=2.0)


def pool_workers(pool: cf.Executor, jobs: int | None) -> int:
    """How many workers ``pool`` runs (``jobs`` or 1 where it does not say)."""
    for attr in ("num_workers", "_max_workers"):
        n = getattr(pool, attr, None)
        if isinstance(n, int) and n > 0:
            return n
    return jobs or 1
