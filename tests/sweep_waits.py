"""Waiting on a sweep subprocess without sleeps for correctness: a condition polled
under a generous safety bound, rows written so far, whether a process is gone."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

#: Generous bound on any wait (the conditions come in milliseconds on an idle host).
SAFETY_S = 60.0


def until(cond: Callable[[], bool], proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``cond`` while ``proc`` runs; fail if it ends first or :data:`SAFETY_S` pass."""
    deadline = time.monotonic() + SAFETY_S
    while not cond():
        assert proc.poll() is None, f"the sweep ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} in {SAFETY_S} s"
        time.sleep(0.02)


def rows(out: Path) -> int:
    """Rows the sweep in ``out`` has written to its JSON-lines log."""
    log = out / "results.jsonl"
    return len(log.read_text().splitlines()) if log.exists() else 0


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
