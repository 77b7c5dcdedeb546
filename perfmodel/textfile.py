"""Reading a text file that must be UTF-8, with one clear line for every way it can fail."""

from __future__ import annotations

from pathlib import Path

from dlscale.perfmodel.errors import ConfigError

__all__ = ["read_utf8"]


def read_utf8(path: str | Path, kind: str = "text") -> str:
    """The text of a file that must be UTF-8; a missing, unreadable, binary or non-UTF-8
    file is a one-line :class:`ConfigError` naming it.

    Parameters
    ----------
    path : str or Path
        The file.
    kind : str, optional
        What the file is, for the message (``"TOML"``, ``"JSON"``).

    Returns
    -------
    str
        Its text.

    Raises
    ------
    ConfigError
        A missing, unreadable, binary or non-UTF-8 file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.toml"
    >>> _ = p.write_bytes(b"a = 1\\n\\xff")
    >>> read_utf8(p, "TOML")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: ...x.toml: not UTF-8 text (byte 0xff at offset 6); a TOML file must be UTF-8
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, not a {kind} file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                          f"{exc.start}); a {kind} file must be UTF-8") from None
