"""Answers of a transformer's pricing parts kept while a layout search runs.

A search over parallel layouts (:mod:`dlscale.perfmodel.training.layout_search`)
prices thousands of layouts of one model on one machine by the same
:func:`~dlscale.perfmodel.training.parallel_time.llm_iteration` that ``predict``
calls. Most of the work of one layout depends on a few of its fields only (a
stage's compute on ``tp``, ``micro``, ``sp``, ``recompute`` and ``pp``, not on
``dp`` or ``zero``), so the parts of that call are decorated with
:func:`layout_memo`, which names the fields each part reads; inside a
:func:`pricing_memo` block a part asked again with the same objects, the same
values of those fields and the same other arguments returns its first answer. Outside
one, the decorated function runs as written (one check of a module variable).

The answers are those of the function itself, bit for bit: a test prices every
layout of small searches with and without the memo and compares the results
(``tests/test_layout_memo.py``), so a part that starts reading a field its
decorator does not name fails there.

Objects (the cluster, the model) are keyed by identity and kept alive by the block,
so an identity is not reused while it lasts.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Lay:
...     a: int
...     b: int
>>> calls = []
>>> @layout_memo(1, "a")
... def part(obj: object, lay: Lay, x: float) -> float:
...     calls.append(lay)
...     return lay.a * x
>>> o = object()
>>> with pricing_memo():
...     part(o, Lay(1, 2), 3.0), part(o, Lay(1, 5), 3.0), part(o, Lay(2, 5), 3.0)
(3.0, 3.0, 6.0)
>>> len(calls)                       # Lay(1, 5) shares Lay(1, 2)'s answer: b is not read
2
>>> _ = part(o, Lay(1, 2), 3.0); len(calls)   # no block: computed again
3
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

__all__ = ["MemoStats", "args_memo", "layout_memo", "memo_stats", "pricing_memo"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclasses.dataclass
class MemoStats:
    """Hits and misses of each decorated part in one :func:`pricing_memo` block."""

    hits: dict[str, int] = dataclasses.field(default_factory=dict)
    misses: dict[str, int] = dataclasses.field(default_factory=dict)


class _Memo:
    def __init__(self) -> None:
        self.answers: dict[tuple[Any, ...], Any] = {}
        self.keep: dict[int, object] = {}
        self.stats = MemoStats()


_ACTIVE: list[_Memo] = []


@contextmanager
def pricing_memo() -> Iterator[MemoStats]:
    """Keep the decorated parts' answers inside the block (nested blocks share one).

    Yields
    ------
    MemoStats
        Hits and misses per part, filled as the block runs.
    """
    if _ACTIVE:
        yield _ACTIVE[-1].stats
        return
    memo = _Memo()
    _ACTIVE.append(memo)
    try:
        yield memo.stats
    finally:
        _ACTIVE.remove(memo)


def memo_stats() -> MemoStats | None:
    """The statistics of the block running now (None outside one)."""
    return _ACTIVE[-1].stats if _ACTIVE else None


def layout_memo(position: int, *fields: str,
                exclude: tuple[str, ...] = ()) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a pricing part whose argument ``position`` is a layout (a frozen dataclass).

    Parameters
    ----------
    position : int
        Index of the layout among the positional arguments; those before it are
        objects keyed by identity, those after it values keyed by equality.
    *fields : str
        The layout's fields the part reads (directly or through its methods).
    exclude : tuple of str
        Instead of ``fields``: every field but these (``fields`` empty), the safer
        form: a field added to the layout later is in the key until it is listed
        here.

    Returns
    -------
    callable
        The decorator.
    """

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        name = fn.__qualname__
        getters: list[Callable[[Any], Any]] = []

        def project(layout: Any) -> Any:
            if not getters:
                have = [f.name for f in dataclasses.fields(layout)]
                unknown = [f for f in (*fields, *exclude) if f not in have]
                if unknown:
                    raise TypeError(f"{name}: layout_memo names {unknown}, not fields of "
                                    f"{type(layout).__name__}")
                names = fields or tuple(f for f in have if f not in exclude)
                getters.append(operator.attrgetter(*names))
            return getters[0](layout)

        def key(args: tuple[Any, ...]) -> tuple[Any, ...]:
            return (name, *map(id, args[:position]), project(args[position]),
                    *args[position + 1:])

        return _memoized(fn, name, position, key)

    return wrap


def args_memo(identity: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a pricing part of plain arguments: the first ``identity`` keyed by
    identity (objects), the others by equality (numbers, strings).

    Parameters
    ----------
    identity : int
        How many leading arguments are objects.

    Returns
    -------
    callable
        The decorator.
    """

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        name = fn.__qualname__

        def key(args: tuple[Any, ...]) -> tuple[Any, ...]:
            return (name, *(id(a) for a in args[:identity]), *args[identity:])

        return _memoized(fn, name, identity, key)

    return wrap


def _memoized(fn: Callable[P, R], name: str, objects: int,
              key: Callable[[tuple[Any, ...]], tuple[Any, ...]]) -> Callable[P, R]:
    """``fn`` answering from the running block's store under ``key(args)``."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if not _ACTIVE or kwargs:
            return fn(*args, **kwargs)
        memo = _ACTIVE[-1]
        k = key(args)
        try:
            out: R = memo.answers[k]
        except KeyError:
            out = fn(*args, **kwargs)
            memo.answers[k] = out
            for a in args[:objects]:
                memo.keep[id(a)] = a
            memo.stats.misses[name] = memo.stats.misses.get(name, 0) + 1
            return out
        memo.stats.hits[name] = memo.stats.hits.get(name, 0) + 1
        return out

    return run
