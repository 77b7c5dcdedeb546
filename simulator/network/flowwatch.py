"""Progress and interrupts of the compiled flow-mode loops (flowengine, flowsteps).

A compiled loop cannot see a signal: Python runs its handlers only between bytecodes.
So the loops return to Python for a moment every :data:`POLL_WORK` units of work (a few
milliseconds: link and flow visits, events, messages) and call :func:`poll` in numba's
object mode. Within :func:`watched`, SIGINT and SIGTERM only note themselves; the next
poll tells the loop to stop, and once it has returned the signal goes to the handler
that was in place before (Ctrl-C: ``KeyboardInterrupt``; the CLI turns SIGTERM into an
interrupt too). A run that has taken more than :data:`PROGRESS_DELAY_S` shows a
progress bar of messages delivered (tqdm, on stderr, on a terminal or not: a long run
in a batch job's log says how far it is).

Examples
--------
>>> with watched(10) as w:
...     poll(5)
0
>>> w.signum
0
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["POLL_WORK", "PROGRESS_DELAY_S", "poll", "watched"]

#: A run shows its progress bar once it has taken this long (seconds).
PROGRESS_DELAY_S = 2.0
#: Work (link and flow visits, events, messages) between two polls (a few ms).
POLL_WORK = 1 << 20


class _Watch:
    """Progress and stop requests of the run in progress (polled by the loop)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.t0 = time.perf_counter()
        self.bar: Any = None
        self.signum = 0

    def poll(self, done: int) -> int:
        if self.bar is None and time.perf_counter() - self.t0 >= PROGRESS_DELAY_S:
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, unit="msg", desc="flow mode", file=sys.stderr,
                            dynamic_ncols=True, leave=False,
                            mininterval=0.5 if sys.stderr.isatty() else 5.0)
        if self.bar is not None:
            self.bar.update(done - self.bar.n)
        return 1 if self.signum else 0


_WATCH: list[_Watch] = []


def poll(done: int) -> int:
    """Called from a compiled loop every :data:`POLL_WORK` (``done``: messages
    delivered so far); returns 1 when the run should stop."""
    return _WATCH[-1].poll(done) if _WATCH else 0


def _catch_signals(watch: _Watch) -> dict[int, Any]:
    """SIGINT and SIGTERM only note themselves in ``watch`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def note(signum: int, frame: Any) -> None:
        watch.signum = signum

    return {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)
            if signal.getsignal(s) is not signal.SIG_IGN}


def _deliver(signum: int, handler: Any) -> None:
    """Hand a signal noted during the run to the handler in place before it."""
    if callable(handler):
        handler(signum, None)   # Ctrl-C: KeyboardInterrupt; the CLI's SIGTERM: Terminated
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)  # the default action (SIGTERM: the process ends)
    raise KeyboardInterrupt(signal.Signals(signum).name)  # a handler that returned


@contextlib.contextmanager
def watched(total: int) -> Iterator[_Watch]:
    """A compiled run of ``total`` messages: progress after :data:`PROGRESS_DELAY_S`,
    and SIGINT or SIGTERM noted for :func:`poll` (which stops the run within
    milliseconds); the signal is then handed to the handler that was in place
    (Ctrl-C: ``KeyboardInterrupt``)."""
    watch = _Watch(total)
    _WATCH.append(watch)
    old = _catch_signals(watch)
    try:
        yield watch
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _WATCH.remove(watch)
        if watch.bar is not None:
            watch.bar.close()
    if watch.signum:
        _deliver(watch.signum, old.get(watch.signum))
