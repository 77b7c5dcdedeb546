"""The out-of-sample trial's figures in README.md and validation/holdout/README.md are
the live run's (``python validation/holdout/run_holdout.py``), not a copy that ages."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOLDOUT = ROOT / "validation" / "holdout"


@pytest.fixture(scope="module")
def live() -> tuple[object, list[dict]]:
    spec = importlib.util.spec_from_file_location("run_holdout", HOLDOUT / "run_holdout.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["run_holdout"] = mod   # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod, mod.run_all()


def test_the_trials_readme_holds_the_live_table(live):
    mod, rows = live
    text = (HOLDOUT / "README.md").read_text()
    table = mod.format_rows(rows, markdown=True)
    assert table in text, ("validation/holdout/README.md: regenerate the table with "
                           "`python validation/holdout/run_holdout.py --markdown`")


def test_the_readme_quotes_the_live_summary(live):
    mod, rows = live
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("`python validation/holdout/run_holdout.py` tries"):]
    block = re.search(r"```text\n(.*?)\n```", section, re.S)
    assert block is not None
    assert block.group(1) == "\n".join(mod.summary(rows))


def test_the_trials_readme_holds_the_live_overlap_table():
    """Round five's table (validation/holdout/README.md) is the live output of
    ``python validation/holdout/overlap_sensitivity.py``."""
    spec = importlib.util.spec_from_file_location("overlap_sensitivity",
                                                  HOLDOUT / "overlap_sensitivity.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.table() in (HOLDOUT / "README.md").read_text(), (
        "validation/holdout/README.md: regenerate round five's table with "
        "`python validation/holdout/overlap_sensitivity.py`")
