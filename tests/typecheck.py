"""Run mypy on the tree as the installed package: ``python tests/typecheck.py``.

The source folders install under other names (``perfmodel/`` is ``dlscale.perfmodel``,
pyproject's ``package-dir``) and the editable install finds them through an import
hook that mypy cannot follow, so ``mypy perfmodel`` would see every
``from dlscale.perfmodel ...`` as a missing module (type ``Any``) and check little
across packages. This script builds a link tree with the installed layout
(``dlscale/`` holding links to ``dlscale/*``, ``perfmodel``, ``simulator``,
``kernels``, ``validation``) in a temporary folder and runs ``mypy -p dlscale``
there with the project's ``[tool.mypy]`` configuration (default checks everywhere,
strict on ``dlscale.perfmodel`` and ``dlscale.kernels``). Paths in the report are
package paths (``dlscale/perfmodel/network/model.py`` is ``perfmodel/network/model.py``).
Exit status: mypy's (0 clean).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Source folder -> folder under ``dlscale/`` in the installed layout.
SUBPACKAGES = ("perfmodel", "simulator", "kernels", "validation")


def link_tree(dest: Path) -> Path:
    """Build ``dest/dlscale`` with the installed package's layout; returns it."""
    pkg = dest / "dlscale"
    pkg.mkdir()
    for entry in sorted((ROOT / "dlscale").iterdir()):
        if entry.name != "__pycache__":
            os.symlink(entry, pkg / entry.name)
    for name in SUBPACKAGES:
        os.symlink(ROOT / name, pkg / name, target_is_directory=True)
    return pkg


def run_mypy(extra: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """mypy over the whole package; the cache stays in the repository's ``.mypy_cache``."""
    with tempfile.TemporaryDirectory(prefix="dlscale-mypy-") as tmp:
        link_tree(Path(tmp))
        cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "dlscale", *(extra or [])]
        return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=600)


def main() -> int:
    proc = run_mypy(sys.argv[1:])
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
