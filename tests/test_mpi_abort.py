"""calibrate and validate local under MPI (issue 14, item 3): a bad -o fails before
measuring; a signal on any one rank aborts the whole job within seconds and leaves no
output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from mpi_helpers import MPIEXEC, mpi_or_skip, run_command

pytestmark = pytest.mark.mpi


COMMANDS = {"calibrate": ["calibrate", "--max-size", "65536"],
            "validate": ["validate", "local", "--max-size", "65536", "--plot", "none"]}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_output_folder_refused_before_measuring(tmp_path, command):
    mpi_or_skip()
    start = time.monotonic()
    proc = run_command(2, *COMMANDS[command], "--budget-s", "600", "--quiet", "-o", str(tmp_path))
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == [f"dlscale {command}: error: -o: '{tmp_path}' is a folder; give a file name"]
    assert time.monotonic() - start < 300  # a 600 s budget was not spent (loose, not a timing)


def _ranks(marker: str) -> list[int]:
    """Pids of the Python ranks whose command line holds ``marker``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in cmd and b"python" in Path(cmd[0].decode()).name.encode():
            pids.append(int(d.name))
    return sorted(pids)


def _poll(ok, what: str, job: subprocess.Popen, timeout_s: float = 180) -> None:
    """Wait until ``ok()`` (polling with a generous timeout; no sleep decides a result)."""
    deadline = time.monotonic() + timeout_s
    while not ok():
        assert job.poll() is None, f"the job ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("command, sig, point", [
    ("calibrate", signal.SIGINT, "measuring"), ("calibrate", signal.SIGTERM, "measuring"),
    ("validate", signal.SIGINT, "measuring"), ("validate", signal.SIGINT, "main"),
    ("calibrate", signal.SIGINT, "run")])
def test_signal_on_one_rank_aborts_the_job_and_writes_nothing(tmp_path, command, sig, point):
    """At each point (``main``: while the command imports, before MPI is up; ``run``:
    arguments checked; ``measuring``: after the first progress line) a signal on one
    rank aborts both with one line (issue 26 item 4: during the imports it left a
    traceback). The test waits on what the command shows, not on a sleep."""
    mpi_or_skip()
    out, ready = tmp_path / "out.json", tmp_path / "ready"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    env["DLSCALE_READY_FILE"] = str(ready)
    job = subprocess.Popen(
        [str(MPIEXEC), "-n", "2", sys.executable, "-m", "dlscale", *COMMANDS[command],
         "--budget-s", "120", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(job.stderr.readline, "")),
                              daemon=True)
    reader.start()
    try:
        if point == "measuring":
            _poll(lambda: any(ln.startswith("[calibrate ") for ln in lines), "progress", job)
        else:
            _poll(lambda: ready.exists() and ready.read_text().split().count(point) == 2,
                  f"both ranks at {point!r}", job)
        ranks = _ranks(str(out))
        assert len(ranks) == 2, ranks
        os.kill(ranks[-1], sig)  # one rank only
        job.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    err = "".join(lines)
    assert job.returncode != 0
    assert f"{signal.Signals(sig).name} on rank" in err and "aborting all 2 ranks" in err, err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready"]  # no output, no temporary


@pytest.mark.parametrize("argv, line", [
    (["calibrate", "--budget-s", "0"], "dlscale calibrate: error: --budget-s: must be > 0, got 0.0"),
    (["validate", "local", "--algorithms", "nope"], "dlscale validate: error: --algorithms: "
     "unknown ['nope']"),
    (["calibrate", "--budgett", "1"], "dlscale: error: unrecognized arguments: --budgett 1")])
def test_a_refusal_before_mpi_starts_is_printed_once(argv, line):
    """Issue 26 item 15: every rank printed the same refusal."""
    mpi_or_skip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    proc = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, "-m", "dlscale", *argv],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), proc.stderr
