"""Stopping an MPI-executed sweep (issue 27, the MPI executor): a SIGINT or SIGTERM to
the sweep (rank 0 of ``mpiexec -n 3 python -m mpi4py.futures -m dlscale sweep``) while
both worker ranks run endless chunks ends the job at once, keeps every finished point
and leaves no worker running.

Before, rank 0 printed its line and then waited in mpi4py's exit for the running
chunks (forever here; 15 s chunks 15 s), their rows never written. The chunks are
:func:`sweep_fakes.blocking_eval`'s; the test synchronises on the marks it leaves and
on the rows written, never on a sleep (the timeouts are safety nets).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpi_helpers import MPIEXEC, mpi_or_skip

sys.path.insert(0, str(Path(__file__).parent))
import sweep_fakes
from sweep_waits import SAFETY_S, gone, rows, until

from dlscale.study import load_study
from dlscale.sweep import run_sweep
from dlscale.sweep_guard import LOCK_NAME

pytestmark = pytest.mark.mpi



@pytest.fixture(scope="module", autouse=True)
def _mpi():
    mpi_or_skip()




@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_rank_0_ends_the_mpi_job_and_keeps_every_finished_point(tmp_path, sig):
    cluster, workload = sweep_fakes.write_configs(tmp_path)
    study = tmp_path / "st.toml"
    study.write_text(f'cluster = "{cluster.name}"\nworkload = "{workload.name}"\n'
                     'nodes = [1, 2, 4, 8]\n[vary]\ntau = [1, 2, 3, 4]\n')
    out, marks = tmp_path / "o", tmp_path / "marks"
    marks.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")},
           "PYTHONPATH": str(Path(__file__).parent), sweep_fakes.MARKS_ENV: str(marks)}
    cmd = [str(MPIEXEC), "-n", "3", sys.executable, "-m", "mpi4py.futures", "-m", "dlscale",
           "sweep", str(study), "-o", str(out), "--evaluator", "sweep_fakes:blocking_eval",
           "--quiet", "--no-plots", "--format", "none", "--executor", "mpi"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        until(lambda: (marks / "started-3").exists() and (marks / "started-4").exists()
               and rows(out) == 8, proc, "two blocked workers and 8 written rows")
        workers = [int((marks / f"started-{t}").read_text()) for t in (3, 4)]
        rank0 = json.loads((out / LOCK_NAME).read_text())["pid"]
        os.kill(rank0, sig)
        try:
            _, err = proc.communicate(timeout=SAFETY_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the MPI sweep still ran {SAFETY_S} s after the signal")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + sig, err
    lines = err.splitlines()
    assert lines[0].startswith(f"dlscale sweep: interrupted ({signal.Signals(sig).name}); "
                               "8 finished points kept in "), err
    # MPICH's own line at MPI_Abort, as at any failing exit of mpi4py.futures
    assert all(line.startswith("Abort(") for line in lines[1:]) and "Traceback" not in err, err
    # the launcher has killed them (reaped maybe a moment after mpiexec's own exit)
    deadline = time.monotonic() + SAFETY_S
    while not all(gone(pid) for pid in (*workers, rank0)):
        assert time.monotonic() < deadline, f"workers {workers} still run {SAFETY_S} s later"
        time.sleep(0.02)
    assert not (out / LOCK_NAME).exists()
    full = tmp_path / "full"
    run_sweep(load_study(study), full, executor="serial", quiet=True, plots=False,
              evaluators={"analytical": sweep_fakes.ring_eval})
    done = subprocess.run([sys.executable, "-m", "dlscale", "sweep", str(study), "-o", str(out),
                           "--evaluator", "sweep_fakes:ring_eval", "--quiet", "--no-plots",
                           "--format", "none", "--resume", "--executor", "serial"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (out / "results.csv").read_bytes() == (full / "results.csv").read_bytes()
