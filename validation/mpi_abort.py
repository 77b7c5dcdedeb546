"""A signal on any rank aborts the whole MPI job, even while ranks block in MPI calls.

Under ``mpiexec`` a SIGINT or SIGTERM may reach one rank only (``kill`` of one
process, a batch system's per-process signal). The default Python handler raises
``KeyboardInterrupt`` there, but only when the rank's current MPI call returns; and a
rank that leaves waits in ``MPI_Finalize`` while its peers block for ever in their
matching ``Sendrecv``: the job hangs. :func:`abort_on_signal` instead routes the two
signals through Python's wakeup file descriptor (``signal.set_wakeup_fd``: the C-level
handler writes the signal number to a pipe in whatever thread the signal lands, the
MPI library's and BLAS's threads included) to a helper thread, which prints one line
and calls ``MPI_Abort(comm, 128 + signal)``: the MPI runtime then ends every rank of
the job. The main thread's handler does nothing, so no partial output is written.

MPI_Abort from a second thread needs the library's thread support; mpi4py asks for
``MPI_THREAD_MULTIPLE`` by default (``mpi4py.rc.thread_level``), and MPICH and Open
MPI grant it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["SIGNALS", "abort_on_signal", "hold_signals", "release_signals"]

#: The signals that abort the job.
SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Pause between the rank's line on stderr and MPI_Abort: the abort kills the job at
#: once, and on a loaded host mpiexec had not yet forwarded the line (seen once in
#: a test run with load average 4.7 on 2 cores).
_FORWARD_S = 0.5


#: Signals that came while :func:`hold_signals` held them, oldest first.
_HELD: list[int] = []


def _hold(sig: int, _frame: Any) -> None:
    _HELD.append(sig)


def hold_signals() -> dict[int, Any]:
    """From now until :func:`abort_on_signal`, SIGINT and SIGTERM are held, not raised.

    The command line calls it first thing for its MPI commands: a signal that comes
    while the command imports or MPI starts (no communicator to abort yet) is acted
    on as soon as :func:`abort_on_signal` enters, so it aborts every rank with one
    line instead of leaving a traceback on one rank and its peers waiting. Call it
    in the main thread. Returns the handlers it replaced, for
    :func:`release_signals` (a command called in process gives them back at its end).
    """
    return {sig: signal.signal(sig, _hold) for sig in SIGNALS}


def release_signals(previous: Mapping[int, Any]) -> None:
    """Put back the handlers :func:`hold_signals` replaced (``previous``, what it
    returned), and forget a signal it held that no :func:`abort_on_signal` acted on
    (the command ended before MPI was up): a later command in the same process does
    not abort on it.

    A handler Python did not install (``None`` from :func:`signal.signal`) cannot be
    put back from Python; that signal keeps the handler it has.
    """
    _HELD.clear()
    for sig, handler in previous.items():
        if handler is not None:
            signal.signal(sig, handler)


def _restored(sig: int, handler: Any) -> Any:
    """``handler``, or Python's default where it was :func:`hold_signals`' holder."""
    if handler is not _hold:
        return handler
    return signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL


@contextlib.contextmanager
def abort_on_signal(comm: Any, what: str = "dlscale") -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM on this rank abort every rank of ``comm``.

    Call it in the main thread. On leaving the block the previous handlers and
    wakeup descriptor come back.
    """
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    done = threading.Event()

    def watch() -> None:
        while True:
            data = os.read(r, 64)
            if not data or done.is_set():
                return
            for sig in data:
                if sig in SIGNALS:
                    name = signal.Signals(sig).name
                    print(f"{what}: {name} on rank {comm.Get_rank()}: aborting all "
                          f"{comm.Get_size()} ranks; nothing written", file=sys.stderr,
                          flush=True)
                    time.sleep(_FORWARD_S)  # let mpiexec forward the line before the kill
                    comm.Abort(128 + sig)

    old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    old = {sig: signal.signal(sig, lambda *_: None) for sig in SIGNALS}
    watcher = threading.Thread(target=watch, name="abort-on-signal", daemon=True)
    watcher.start()
    if _HELD:  # a signal came before MPI was up (hold_signals): act on it now
        os.write(w, bytes(_HELD[:1]))
        _HELD.clear()
    try:
        yield
    finally:
        done.set()
        for sig, handler in old.items():
            signal.signal(sig, _restored(sig, handler))
        signal.set_wakeup_fd(old_fd)
        os.close(w)  # the watcher reads end-of-file and returns
        watcher.join(timeout=5)
        os.close(r)
