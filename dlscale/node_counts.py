"""Node-count lists: ``"1,2,4"``, doubling ranges ``"1-4608"``, steps ``"A-B:STEP"``.

The command line's ``--nodes``, a study file's ``nodes`` and the Python API's
``nodes=`` all read node lists with :func:`parse_nodes`.

Examples
--------
>>> parse_nodes("1-8,12")
[1, 2, 4, 8, 12]
"""

from __future__ import annotations

from dlscale.perfmodel.errors import ConfigError

__all__ = ["MAX_NODE_COUNTS", "MAX_NODE_VALUE", "parse_nodes"]

#: The most node counts one ``--nodes`` range may expand to (a larger one is almost
#: surely a typo in its step, and would take memory before any work).
MAX_NODE_COUNTS = 100_000

#: The largest node count ``--nodes`` accepts (2**31 - 1, a C int; every catalog machine
#: is far smaller, and each command then checks the count against its cluster).
MAX_NODE_VALUE = 2**31 - 1


def _positive_int(text: str, where: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{where}: {text!r} is not an integer") from None
    if value < 1:
        raise ConfigError(f"{where}: node counts must be >= 1, got {value}")
    if value > MAX_NODE_VALUE:
        raise ConfigError(f"{where}: node count {value} is more than any machine holds "
                          f"(at most {MAX_NODE_VALUE:,} here)")
    return value


def parse_nodes(text: str) -> list[int]:
    """Parse a node list: ``"1,2,4"``, a doubling range ``"1-4608"``, or ``"A-B:STEP"``.

    A doubling range holds A, 2A, 4A, ... below B, and B itself. ``A-B:STEP`` is
    arithmetic. Items can be mixed: ``"1-8,12"``. The result is sorted, unique.

    Examples
    --------
    >>> parse_nodes("1-4608")[-3:]
    [2048, 4096, 4608]
    >>> parse_nodes("2-10:4,1")
    [1, 2, 6, 10]
    >>> parse_nodes("-4")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --nodes: node counts must be >= 1, got -4
    >>> parse_nodes("0")
    Traceback (most recent call last):
    ...
    dlscale.perfmodel.errors.ConfigError: --nodes: node counts must be >= 1, got 0
    """
    where = "--nodes"
    out: set[int] = set()
    if not text.strip():
        raise ConfigError(f"{where}: empty; give node counts like '1,2,4' or '1-64'")
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise ConfigError(f"{where}: empty item in {text!r}")
        if item.startswith("-"):   # a negative count, not a range
            raise ConfigError(f"{where}: node counts must be >= 1, got {item}")
        if "-" in item:
            span, _, step_text = item.partition(":")
            lo_text, _, hi_text = span.partition("-")
            lo, hi = _positive_int(lo_text, where), _positive_int(hi_text, where)
            if hi < lo:
                raise ConfigError(f"{where}: range {item!r} ends before it starts")
            if step_text:
                step = _positive_int(step_text, where)
                count = (hi - lo) // step + 1
                if count > MAX_NODE_COUNTS:
                    raise ConfigError(f"{where}: range {item!r} holds {count:,} node counts, "
                                      f"more than {MAX_NODE_COUNTS:,}; use a larger step")
                out.update(range(lo, hi + 1, step))
                out.add(hi)
            else:
                n = lo
                while n < hi:
                    out.add(n)
                    n *= 2
                out.add(hi)
        else:
            out.add(_positive_int(item, where))
    return sorted(out)
