"""A long flow-mode run shows its progress and stops on Ctrl-C or SIGTERM (issue 26.13).

The run (a ring over 1,026 randomly placed Summit GPUs: neighbours share links, so the
event loop runs every message) takes minutes; the test waits for its progress bar on
stderr (no sleep), sends the signal and waits for the exit status with a generous
timeout. Before the fix the compiled loop never returned to Python: no progress when
stderr is not a terminal, and the signal was seen only when the run ended.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CMD = [sys.executable, "-m", "dlscale.cli", "simulate", "summit", "--nodes", "171",
       "--operation", "allreduce", "--collective", "ring", "--mode", "flow",
       "--placement", "random", "--seed", "1", "--size-bytes", "1e8"]


def _wait_for_progress(proc: subprocess.Popen, timeout_s: float = 300.0) -> str:
    """Read stderr until the progress bar shows (or the timeout, or the process ends)."""
    assert proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stderr, selectors.EVENT_READ)
    seen = b""
    end = time.monotonic() + timeout_s
    while b"msg" not in seen and time.monotonic() < end:
        if sel.select(timeout=1.0):
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            seen += chunk
    return seen.decode(errors="replace")


@pytest.mark.parametrize("signum,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_long_flow_run_shows_progress_and_stops_on_signal(signum, status):
    proc = subprocess.Popen(CMD, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        err = _wait_for_progress(proc)
        assert "flow mode" in err and "msg" in err, err
        assert proc.poll() is None, "the run ended before the signal"
        proc.send_signal(signum)
        rc = proc.wait(timeout=60)   # generous: within milliseconds on an idle machine
        rest = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == status, err + rest
    assert "Traceback" not in rest, rest
    assert "interrupted" in rest or "terminated" in rest, rest
