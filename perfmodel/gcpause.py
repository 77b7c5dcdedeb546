"""Python's cyclic garbage collector held off while a large structure is built.

CPython's collector runs a full pass over every tracked object once the objects that
survived earlier passes have grown by a quarter since the last full pass. Building
the graph of 27,648 GPUs (60,000 nodes and 56,000 edges, each a dict or two) grows
them past that mark several times, and each of those passes walks the whole heap
(the imported modules of numpy, networkx and numba included, 150,000 objects) to
free nothing: what is being built is still in use, and a builder leaves no garbage
cycle behind it. In ``dlscale simulate summit resnet50 --nodes 4608`` these passes
took 0.15 s of CPU time (issue 27 item 5). :func:`paused_gc` turns the collector off
for the duration of the build and back on after it (only if it was on): nothing is
kept that would be freed otherwise, the next pass after it finds the same garbage,
and nothing computed depends on it.

Examples
--------
>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold off the cyclic collector inside the ``with`` block (module docstring).

    Re-entrant: an inner block leaves the collector as the outer one set it, and the
    outermost turns it on again only if it was on before (an exception included).

    Yields
    ------
    None
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
