"""Exception types shared by every layer above the kernels.

All errors that dlscale raises on purpose derive from :class:`DlscaleError`, so a
caller (and the command line) can tell a user mistake from a bug.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["ConfigError", "DlscaleError", "OutOfMemoryError", "closest"]


class DlscaleError(Exception):
    """Root of the errors dlscale raises for bad input or infeasible requests."""


class ConfigError(DlscaleError, ValueError):
    """A cluster, workload, study or profile description is invalid.

    The message names the field, the value and what is allowed.
    """


class OutOfMemoryError(DlscaleError):
    """A configuration does not fit in the memory of the device it runs on."""


def closest(name: str, valid: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest valid name, or ``""``.

    Parameters
    ----------
    name : str
        What was given.
    valid : iterable of str
        The valid names.

    Returns
    -------
    str
        The hint, or ``""`` when no name is close.

    Examples
    --------
    >>> closest("sumit", ["summit", "cori-knl"])
    " (did you mean 'summit'?)"
    >>> closest("zzz", ["summit"])
    ''
    """
    match = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def unknown_name(field: str, value: str, valid: Iterable[str]) -> ConfigError:
    """Build the error for a name that is not in a registry.

    Parameters
    ----------
    field : str
        The field or option, as the user wrote it.
    value : str
        The unknown name.
    valid : iterable of str
        The valid names (listed sorted in the message).

    Returns
    -------
    ConfigError
        To raise.

    Examples
    --------
    >>> str(unknown_name("cluster", "sumit", ["summit", "cori-knl"]))
    "cluster: unknown name 'sumit'; valid: cori-knl, summit (did you mean 'summit'?)"
    """
    names = sorted(valid)
    return ConfigError(
        f"{field}: unknown name {value!r}; valid: {', '.join(names)}{closest(value, names)}"
    )
