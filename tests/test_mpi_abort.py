"""calibrate and validate local under MPI (issue 14, item 3): a bad -o fails before
measuring; a signal on any one rank aborts the whole job within seconds and leaves no
output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpi_helpers import MPIEXEC, RUNNER, mpi_or_skip, run_command

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


@pytest.mark.slow
@pytest.mark.parametrize("command, sig", [("calibrate", signal.SIGINT),
                                          ("calibrate", signal.SIGTERM),
                                          ("validate", signal.SIGINT)])
def test_signal_on_one_rank_aborts_the_job_and_writes_nothing(tmp_path, command, sig):
    mpi_or_skip()
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    job = subprocess.Popen(
        [str(MPIEXEC), "-n", "2", sys.executable, "-c", RUNNER, *COMMANDS[command],
         "--budget-s", "120", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        ranks: list[int] = []
        for _ in range(300):  # both ranks started and measuring
            ranks = _ranks(str(out))
            if len(ranks) == 2:
                break
            time.sleep(0.1)
        assert len(ranks) == 2, ranks
        time.sleep(3)  # into the measurements (kernels, then point-to-point)
        os.kill(ranks[-1], sig)  # one rank only
        _, err = job.communicate(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode != 0
    assert f"{signal.Signals(sig).name} on rank" in err and "aborting all 2 ranks" in err, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file
