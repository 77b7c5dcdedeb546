"""Shared helpers of the MPI tests: find mpiexec, run a dlscale command under it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MPIEXEC = Path(sys.executable).parent / "mpiexec"

# Runs one dlscale subcommand module without depending on its registration in
# dlscale.cli.COMMANDS: builds a parser with just that module.
RUNNER = """
import importlib, sys
from dlscale.cli import OneLineParser
from dlscale.perfmodel.errors import DlscaleError
mod = importlib.import_module('dlscale.commands.' + sys.argv[1])
parser = OneLineParser(prog='dlscale')
mod.add_parser(parser.add_subparsers(dest='command', required=True))
args = parser.parse_args(sys.argv[1:])
try:
    sys.exit(int(args.run(args) or 0))
except DlscaleError as exc:
    print(f'dlscale {args.command}: error: {exc}', file=sys.stderr)
    sys.exit(2)
"""


def mpi_or_skip() -> None:
    """Skip (with the reason) only where MPI cannot start at all."""
    if not MPIEXEC.exists():
        pytest.skip(f"no mpiexec next to the interpreter ({MPIEXEC}); pip install dlscale[mpi]")
    try:
        probe = subprocess.run(
            [str(MPIEXEC), "-n", "1", sys.executable, "-c", "from mpi4py import MPI"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"mpiexec cannot start: {exc}")
    if probe.returncode != 0:
        pytest.skip(f"MPI cannot start: {probe.stderr.strip().splitlines()[-1:]}")


def run_command(n: int, command: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``mpiexec -n N python -c RUNNER command args...``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    return subprocess.run(
        [str(MPIEXEC), "-n", str(n), sys.executable, "-c", RUNNER, command, *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def run_script(n: int, script: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``mpiexec -n N python -c SCRIPT args...``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPIR_CVAR")}
    return subprocess.run(
        [str(MPIEXEC), "-n", str(n), sys.executable, "-c", script, *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
