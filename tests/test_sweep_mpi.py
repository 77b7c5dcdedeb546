"""The documented MPI sweep: ``mpiexec -n N python -m mpi4py.futures -m dlscale sweep``.

Runs the real entry point (``-m dlscale``, which the workers import again) with the
real evaluators, and holds its files against the local process pool's, byte for byte
after sorting (issue 17).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_helpers import MPIEXEC, mpi_or_skip

pytestmark = pytest.mark.mpi

ANALYTICAL = """\
name = "mpi-analytical"
cluster = "summit"
workload = "resnet50"
nodes = [1, 2, 4, 8]
fidelity = "analytical"

[vary]
collective = ["ring", "hierarchical"]
"network.link.bandwidth_GBps" = [12.5, 25.0]
"""

SIMULATED = """\
name = "mpi-simulated"
cluster = "summit"
workload = "resnet50"
nodes = [1, 2, 4]
fidelity = "simulated"
seed = 7

[vary]
collective = ["ring", "rabenseifner"]
"""

ONE_POINT = """\
name = "one-point"
cluster = "cori-knl"
workload = "googlenet"
nodes = [4]

[vary]
collective = ["ring"]
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    env["MPLBACKEND"] = "Agg"
    return env


def _sweep(study: Path, out: Path, ranks: int | None, *extra: str,
           futures: bool = True) -> subprocess.CompletedProcess:
    """The README's MPI command with ``ranks``; the local process pool with None."""
    args = ["sweep", str(study), "-o", str(out), "--quiet", "--format", "none", *extra]
    if ranks is None:
        cmd = [sys.executable, "-m", "dlscale", *args, "--executor", "process", "-j", "2"]
    else:
        launcher = ["-m", "mpi4py.futures", "-m", "dlscale"] if futures else ["-m", "dlscale"]
        cmd = [str(MPIEXEC), "-n", str(ranks), sys.executable, *launcher, *args,
               "--executor", "mpi"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=_env())


def _files(out: Path) -> dict[str, bytes]:
    """results.csv, the rows of results.json and results.jsonl's lines, sorted."""
    rows = (out / "results.json").read_text().split('\n "rows": [\n', 1)[1]
    jsonl = sorted((out / "results.jsonl").read_text().splitlines())
    return {"csv": (out / "results.csv").read_bytes(), "json rows": rows.encode(),
            "jsonl": "\n".join(jsonl).encode()}


def _study(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module", autouse=True)
def _mpi():
    mpi_or_skip()


@pytest.mark.parametrize("text", [ANALYTICAL, SIMULATED], ids=["analytical", "simulated"])
def test_mpi_sweep_gives_the_process_pool_rows_byte_for_byte(tmp_path, text):
    study = _study(tmp_path, text)
    local = _sweep(study, tmp_path / "local", None)
    assert local.returncode == 0, local.stderr
    mpi = _sweep(study, tmp_path / "mpi", 2)
    assert mpi.returncode == 0, mpi.stderr
    got, want = _files(tmp_path / "mpi"), _files(tmp_path / "local")
    assert got == want
    body = got["csv"].split(b"\n", 1)[1]  # the header names an error column
    assert b",error," not in body and body.count(b",ok,") == len(body.splitlines())
    assert (tmp_path / "mpi" / "scaling.png").stat().st_size > 0


def test_one_rank_runs_the_points_in_rank_0_and_says_so_in_one_line(tmp_path):
    study = _study(tmp_path, ANALYTICAL)
    mpi = _sweep(study, tmp_path / "mpi1", 1)
    assert mpi.returncode == 0, mpi.stderr
    assert mpi.stderr.splitlines() == [
        "dlscale sweep: --executor mpi: 1 MPI process, no worker ranks: the points run one "
        "at a time in rank 0 (mpiexec -n N gives N-1 workers)"]
    local = _sweep(study, tmp_path / "local", None)
    assert local.returncode == 0, local.stderr
    assert _files(tmp_path / "mpi1") == _files(tmp_path / "local")


def test_more_workers_than_points(tmp_path):
    study = _study(tmp_path, ONE_POINT)
    mpi = _sweep(study, tmp_path / "mpi", 4)  # 3 workers, 1 point
    assert mpi.returncode == 0, mpi.stderr
    local = _sweep(study, tmp_path / "local", None)
    assert local.returncode == 0, local.stderr
    assert _files(tmp_path / "mpi") == _files(tmp_path / "local")
    assert len((tmp_path / "mpi" / "results.csv").read_text().splitlines()) == 2


def test_plain_mpiexec_is_a_one_line_error_before_any_work(tmp_path):
    study = _study(tmp_path, ONE_POINT)
    proc = _sweep(study, tmp_path / "out", 2, futures=False)
    assert proc.returncode == 2
    line = ("dlscale sweep: error: --executor mpi: 2 MPI processes each running the whole "
            "sweep; start it as `mpiexec -n N python -m mpi4py.futures -m dlscale sweep "
            "STUDY.toml --executor mpi`")
    # the same line from each rank; two processes' writes may interleave on the pipe
    assert line in proc.stderr and proc.stderr.replace(line, "").strip() == ""
    assert not (tmp_path / "out").exists()
