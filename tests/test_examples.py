"""The example scripts run, and their output matches examples/expected/; the example
studies run with ``dlscale sweep``, locally and under the MPI executor.

After an intended change of the model, regenerate with
``python examples/NAME.py --small > examples/expected/NAME.txt`` and review the diff.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_helpers import MPIEXEC, mpi_or_skip

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NAMES = ["topology_whatif", "calibrate_then_predict", "capacity_plan"]


@pytest.mark.parametrize("name", NAMES)
def test_example_output(name):
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--small"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    expected = (EXAMPLES / "expected" / f"{name}.txt").read_text().splitlines()
    got = proc.stdout.splitlines()
    assert got == expected


def test_the_readme_shows_the_command_the_expected_output_comes_from():
    """Issue 26 item 15: the expected output is that of ``--small``, which the README
    did not mention; it now shows the exact command the test above runs."""
    readme = " ".join((EXAMPLES.parent / "README.md").read_text().split())
    for name in NAMES:
        assert f"`python examples/{name}.py --small`" in readme, name
        assert "--small" in (EXAMPLES / f"{name}.py").read_text().split('"""')[1], name


def test_study_files_parse():
    from dlscale.study import load_study

    files = sorted((EXAMPLES / "studies").glob("*.toml"))
    assert files
    for f in files:
        assert len(load_study(f)) > 0


STUDIES = sorted(p.stem for p in (EXAMPLES / "studies").glob("*.toml"))


def _sweep(name: str, out: Path, mpi_ranks: int | None = None) -> subprocess.CompletedProcess:
    args = ["sweep", str(EXAMPLES / "studies" / f"{name}.toml"), "-o", str(out),
            "--quiet", "--format", "none"]
    if mpi_ranks is None:
        cmd = [sys.executable, "-m", "dlscale", *args, "-j", "2"]
    else:
        cmd = [str(MPIEXEC), "-n", str(mpi_ranks), sys.executable, "-m", "mpi4py.futures",
               "-m", "dlscale", *args, "--executor", "mpi"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**env, "MPLBACKEND": "Agg"})


@pytest.mark.parametrize("name", STUDIES)
def test_study_sweeps_every_point(name, tmp_path):
    """Each study runs whole (the largest, resnet50-network, is 896 points in ~2 s)."""
    from dlscale.study import load_study

    study = load_study(EXAMPLES / "studies" / f"{name}.toml")
    proc = _sweep(name, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = (tmp_path / "results.csv").read_text().splitlines()
    extra = study.simulate_best if study.fidelity == "hybrid" else 0
    assert len(lines) - 1 == len(study) + extra
    assert all(",ok," in ln for ln in lines[1:])
    # the plots the study calls for (scaling curves; a one-node-count study: heatmap)
    assert [p for p in tmp_path.glob("*.png") if p.stat().st_size > 0]


@pytest.mark.mpi
def test_hybrid_study_under_the_mpi_executor_gives_the_local_rows(tmp_path):
    """Both fidelities through mpi4py.futures with 2 ranks; same results.csv bytes."""
    mpi_or_skip()
    name = "easgd-tau-hybrid"
    local, mpi = _sweep(name, tmp_path / "local"), _sweep(name, tmp_path / "mpi", 2)
    assert local.returncode == 0, local.stderr
    assert mpi.returncode == 0, mpi.stderr
    got = (tmp_path / "mpi" / "results.csv").read_bytes()
    assert got == (tmp_path / "local" / "results.csv").read_bytes()
    assert got.count(b",simulated,ok,") == 4
