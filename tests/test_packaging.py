"""What a wheel carries: every package folder of the sources is in pyproject's
``packages`` list, so an install that is not editable has every module the editable
one has (``dlscale.perfmodel.machine.topologies`` was missing: ``pip install .`` gave
a ``dlscale`` whose predict and simulate stopped at ``ModuleNotFoundError``)."""

from __future__ import annotations

from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_in_the_wheel():
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setup["packages"])
    folders = {name: ROOT / path for name, path in setup["package-dir"].items()}
    found = set()
    for name, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            found.add(".".join([name, *init.parent.relative_to(folder).parts]))
    assert sorted(found - listed) == []
