"""ARCHITECTURE.md names files and modules that exist (it was redrawn for issue 28)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "ARCHITECTURE.md").read_text()


def test_every_source_path_exists():
    paths = set(re.findall(r"`((?:perfmodel|simulator|kernels|validation|dlscale)/[\w/]+\.py)",
                           TEXT))
    assert paths
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, missing


def test_every_dotted_perfmodel_name_resolves():
    names = set(re.findall(r"`(?:dlscale\.)?perfmodel\.([\w.]+)", TEXT))
    assert names
    bad = []
    for name in sorted(names):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module("dlscale.perfmodel." + ".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr, None)
            if obj is None:
                bad.append(name)
            break
        else:
            bad.append(name)
    assert not bad, bad
