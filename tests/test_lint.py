"""The tree stays ruff-clean (ruff is in the [test] extra)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    pytest.importorskip("ruff", reason="ruff is not installed (pip install -e '.[test]')")
    exe = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([exe, "check", "--quiet", str(ROOT)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_clean():
    """mypy over the installed layout: default checks, strict on perfmodel and kernels.

    The same check as ``python tests/typecheck.py`` (and ``.ci/run``), so the README's
    test command shows a type error too.
    """
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from typecheck import run_mypy
    finally:
        sys.path.pop(0)
    proc = run_mypy()
    assert proc.returncode == 0, proc.stdout + proc.stderr
