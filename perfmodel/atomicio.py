"""Atomic file writes: a temporary file in the destination folder, then a rename.

Every file dlscale writes (results, profiles, traces, plots) goes through here, so an
interrupted run never leaves half a file behind.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_text(d / "a.txt", "hello")
>>> (d / "a.txt").read_text(), [p.name for p in d.iterdir()]
('hello', ['a.txt'])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_with"]


def _umask_mode(path: str) -> None:
    """Give a temporary file the mode a plain ``open`` would (mkstemp makes it 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename."""
    atomic_write_with(path, lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_with(path: str | Path, writer: Callable[[str], Any]) -> None:
    """Call ``writer(tmp_path)`` (e.g. ``fig.savefig``), then rename to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        writer(tmp)
        _umask_mode(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
