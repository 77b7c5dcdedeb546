"""Safe file writes: a temporary file beside the destination, then a rename.

Every file dlscale writes (results, profiles, traces, plots) goes through here, so an
interrupted run never leaves half a file behind, and what sits at the path is never
destroyed unless it is a regular file being replaced:

- a regular file or a new path: written to a temporary file in the same folder, then
  renamed onto the path (atomic);
- a symbolic link: written through to its target, atomically beside the target (the
  link stays a link);
- a FIFO or a device (``/dev/null``), or the file this process's stdout or stderr
  goes to (``-o /dev/stdout > file``): opened and appended to directly (after
  flushing ``sys.stdout``/``sys.stderr``), never renamed onto, never truncated;
- a folder, ``""``, or a place no file can be created: a one-line
  :class:`~dlscale.perfmodel.errors.ConfigError`. Commands call
  :func:`check_output_path` on every output before they compute anything.

New files get the mode a plain ``open`` would give them (``0o666`` less the umask).

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_text(d / "a.txt", "hello")
>>> (d / "a.txt").read_text(), [p.name for p in d.iterdir()]
('hello', ['a.txt'])
>>> check_output_path(d, "-o")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
dlscale.perfmodel.errors.ConfigError: -o: '...' is a folder; give a file name
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlscale.perfmodel.errors import ConfigError

__all__ = ["PLOT_FORMATS", "atomic_write_bytes", "atomic_write_text", "atomic_write_with",
           "check_output_path", "plot_format"]

#: File name extensions a plot can be written as (formats matplotlib's Agg, SVG, PDF
#: and PS backends write; see ``FigureCanvasBase.get_supported_filetypes()``).
PLOT_FORMATS = ("png", "svg", "pdf", "ps", "eps", "jpg", "jpeg", "webp", "tif", "tiff")


def _umask_mode(path: str) -> None:
    """Give a temporary file the mode a plain ``open`` would (mkstemp makes it 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _where(path: str | Path, what: str) -> str:
    return f"{what}: {str(path)!r}"


def _target(path: Path) -> Path:
    """The path a write lands on: a symbolic link's final target, else the path."""
    if path.is_symlink():
        return Path(os.path.realpath(path))
    return path


def _is_special(st: os.stat_result) -> bool:
    """Written directly: not a regular file, or the file our stdout/stderr writes to."""
    if not stat.S_ISREG(st.st_mode):
        return True
    for fd in (1, 2):
        try:
            other = os.fstat(fd)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def _refuse_protected(target: Path, path: Path, what: str) -> None:
    """Refuse to replace an existing write-protected file (no write bit for anyone, or
    not writable by this user): the rename would succeed and silently replace it."""
    try:
        st = os.stat(target)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and (not st.st_mode & 0o222 or not os.access(target, os.W_OK)):
        raise ConfigError(f"{_where(path, what)}: the file is write-protected; make it "
                          f"writable (chmod u+w) or give another name")


def check_output_path(path: str | Path | None, what: str = "output") -> Path | None:
    """Check, before any work, that a file can be written at ``path``; return it.

    ``None`` (no output asked for) passes through. A folder, an empty name, a path
    under a regular file, or a folder where no file can be created is a one-line
    :class:`ConfigError` naming the option ``what`` and the path. A FIFO or device
    only needs write permission. For a file, the check does what the write will: it
    creates a temporary file beside the target and removes it, so nothing is left
    behind and nothing at the path is changed.

    Parameters
    ----------
    path : str, Path or None
        The output (None: no output, nothing to check).
    what : str, optional
        The option that names it, for the message (``"-o"``).

    Returns
    -------
    Path or None
        ``path`` as a Path.

    Raises
    ------
    ConfigError
        A folder, an empty name, or a place no file can be created.

    Examples
    --------
    >>> check_output_path("", "--plot")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --plot: an empty file name; give a file name
    >>> check_output_path("/proc/x.json", "-o")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: -o: '/proc/x.json': cannot create a file in /proc (No such file or directory)
    """
    if path is None:
        return None
    if str(path) == "":
        raise ConfigError(f"{what}: an empty file name; give a file name")
    path = Path(path)
    st = _stat(path, what)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{_where(path, what)} is a folder; give a file name")
    if st is not None and _is_special(st):  # FIFO, device, socket, our stdout
        if stat.S_ISSOCK(st.st_mode) or not os.access(path, os.W_OK):
            raise ConfigError(f"{_where(path, what)}: cannot write to this "
                              f"{'socket' if stat.S_ISSOCK(st.st_mode) else 'device or FIFO'}")
        return path
    target = _target(path)
    _refuse_protected(target, path, what)
    folder = target.parent
    while not folder.exists():  # created at write time; check the first existing one
        if folder == folder.parent:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{_where(path, what)}: {str(folder)!r} is not a folder")
    try:  # what the write does: a temporary file beside the target
        if folder == target.parent:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".check", dir=folder)
            os.close(fd)
            os.unlink(tmp)
        elif not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise ConfigError(f"{_where(path, what)}: cannot create a file in {folder} "
                          f"({exc.strerror})") from None
    return path


def _stat(path: Path, what: str) -> os.stat_result | None:
    """``os.stat`` following links (``/dev/stdout`` included); None if nothing is there."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{_where(path, what)}: cannot use: {exc.strerror}") from None


def plot_format(path: str | Path, what: str = "--plot") -> str:
    """The format a plot is written in: its extension, one of :data:`PLOT_FORMATS`.

    Parameters
    ----------
    path : str or Path
        The plot's file name.
    what : str, optional
        The option that names it, for the message.

    Returns
    -------
    str
        The format (the extension, lower case).

    Raises
    ------
    ConfigError
        An extension not in :data:`PLOT_FORMATS`.

    Examples
    --------
    >>> plot_format("scaling.svg"), plot_format("a/b.PNG")
    ('svg', 'png')
    >>> plot_format("scaling.txt")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --plot: 'scaling.txt': unknown plot format '.txt'; valid extensions: .png, .svg, .pdf, .ps, .eps, .jpg, .jpeg, .webp, .tif, .tiff
    """
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        shown = f"'.{ext}'" if ext else "(none)"
        raise ConfigError(f"{_where(path, what)}: unknown plot format {shown}; valid extensions: "
                          + ", ".join(f".{f}" for f in PLOT_FORMATS))
    return ext


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` (see the module docstring for what happens where).

    Parameters
    ----------
    path : str or PathLike
        Destination.
    data : bytes
        The content.

    Raises
    ------
    ConfigError
        See :func:`atomic_write_with`.
    """
    atomic_write_with(path, lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` (see the module docstring).

    Parameters
    ----------
    path : str or PathLike
        Destination.
    text : str
        The content, written as UTF-8.

    Raises
    ------
    ConfigError
        See :func:`atomic_write_with`.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def _write_special(target: Path, writer: Callable[[str], Any]) -> None:
    """Write to a FIFO, device or our own stdout's file: the writer fills a private
    temporary file, whose bytes are then appended to the open target (no rename, no
    truncation; what this process printed so far is flushed first)."""
    import sys

    with tempfile.TemporaryDirectory(prefix="dlscale-") as d:
        tmp = os.path.join(d, "out" + target.suffix)
        writer(tmp)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "wb") as dst, open(tmp, "rb") as src:
            shutil.copyfileobj(src, dst)


def _make_folder(folder: Path, path: Path) -> None:
    """Create ``folder`` (and its missing parents) for ``path``, saying so on stderr."""
    missing = folder
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    if folder.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    print(f"note: created folder {str(missing)!r} for {str(path)!r}", file=sys.stderr)


def atomic_write_with(path: str | os.PathLike[str], writer: Callable[[str], Any]) -> None:
    """Call ``writer(tmp_path)`` (e.g. ``fig.savefig``), then put the file at ``path``.

    A regular file (or a new path) is replaced by a rename of a temporary file beside
    it; a symbolic link is written through to its target the same way; a FIFO or
    device is written directly. A folder or a place no file can be created is a
    :class:`ConfigError`, as is any other failure to write (with the reason).

    Parameters
    ----------
    path : str or PathLike
        Destination.
    writer : callable
        Called once with the temporary file's path; writes the content there.

    Raises
    ------
    ConfigError
        A folder, an empty name, or a failure to write (with the reason).
    """
    if str(path) == "":
        raise ConfigError("output: an empty file name; give a file name")
    path = Path(path)
    st = _stat(path, "output")
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{_where(path, 'output')} is a folder; give a file name")
    target = _target(path)
    _refuse_protected(target, path, "output")
    try:
        if st is not None and _is_special(st):
            _write_special(path, writer)
            return
        _make_folder(target.parent, path)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix,
                                   dir=target.parent)
    except OSError as exc:
        raise ConfigError(f"{_where(path, 'output')}: cannot write: {exc.strerror}") from None
    os.close(fd)
    try:
        writer(tmp)
        _umask_mode(tmp)
        os.replace(tmp, target)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.strerror:
            raise ConfigError(f"{_where(path, 'output')}: cannot write: {exc.strerror}") from None
        raise
