"""The example scripts run, and their output matches examples/expected/.

After an intended change of the model, regenerate with
``python examples/NAME.py --small > examples/expected/NAME.txt`` and review the diff.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


def test_study_files_parse():
    from dlscale.study import load_study

    files = sorted((EXAMPLES / "studies").glob("*.toml"))
    assert files
    for f in files:
        assert len(load_study(f)) > 0
