"""A least-recently-used cache bounded by the bytes of what it holds.

:func:`functools.lru_cache` bounds the number of entries; a plan of a collective
(:func:`dlscale.perfmodel.network.plan.plan_collective`) holds a few kilobytes or, with every message of a
27,648-rank schedule, tens of megabytes, so a cache of plans over a long scaling curve
is bounded by their bytes instead: the least recently used go first once the total
passes ``max_bytes`` (the newest entry is always kept).

Examples
--------
>>> import numpy as np
>>> calls = []
>>> def ones(n: int) -> np.ndarray:
...     calls.append(n)
...     return np.ones(n)
>>> f = SizedCache(ones, max_bytes=100, size_of=lambda a: a.nbytes)
>>> _ = f(4), f(4), f(8), f(4)          # 32 B + 64 B fit; 4 is asked again: a hit
>>> calls, f.cache_info()
([4, 8], (2, 2, 2, 96))
>>> _ = f(10)                            # 80 B: 8 (least recent) and then 4 leave
>>> f.cache_info()[2:]
(1, 80)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["SizedCache"]

T = TypeVar("T")


class SizedCache(Generic[T]):
    """``fn`` with its answers kept, least recently used first out past ``max_bytes``.

    Parameters
    ----------
    fn : callable
        The function (its arguments hashable; keyword arguments are part of the key as
        given, as in :func:`functools.lru_cache`).
    max_bytes : int
        Most bytes (by ``size_of``) kept.
    size_of : callable
        Bytes an answer holds.
    max_entries : int
        Most answers kept.
    """

    def __init__(self, fn: Callable[..., T], max_bytes: int, size_of: Callable[[T], int],
                 max_entries: int = 1 << 16) -> None:
        self.fn, self.max_bytes, self.size_of, self.max_entries = (fn, max_bytes, size_of,
                                                                   max_entries)
        self.__doc__, self.__wrapped__ = fn.__doc__, fn
        self._store: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self._bytes = self.hits = self.misses = 0

    def __call__(self, *args: Hashable, **kwargs: Hashable) -> T:
        key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        hit = self._store.get(key)
        if hit is not None:
            self._store.move_to_end(key)
            self.hits += 1
            return hit[0]
        self.misses += 1
        value = self.fn(*args, **kwargs)
        self.put(key, value)
        return value

    def put(self, key: Hashable, value: T) -> None:
        """Keep ``value`` under ``key`` (then drop the least recent past the bounds)."""
        old = self._store.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        size = int(self.size_of(value))
        self._store[key] = (value, size)
        self._bytes += size
        while len(self._store) > 1 and (self._bytes > self.max_bytes
                                        or len(self._store) > self.max_entries):
            _, (_, gone) = self._store.popitem(last=False)
            self._bytes -= gone

    def get(self, key: Hashable) -> T | None:
        """The answer kept under ``key``, or None."""
        hit = self._store.get(key)
        if hit is None:
            return None
        self._store.move_to_end(key)
        return hit[0]

    def cache_info(self) -> tuple[int, int, int, int]:
        """``(hits, misses, entries, bytes)``."""
        return self.hits, self.misses, len(self._store), self._bytes

    def cache_clear(self) -> None:
        """Forget every answer."""
        self._store.clear()
        self._bytes = self.hits = self.misses = 0
