"""The distinct rows of a table of floats and each row's class: a step's cost classes.

A plan that keeps each message's own loads (:class:`dlscale.perfmodel.network.plan.StepFlows`)
gives every message of a step a row (its loads per level, hops, whether it leaves
the node and whether it moves) and numbers the distinct rows in lexicographic order.
:func:`unique_rows` is ``np.unique(rows, axis=0, return_inverse=True)`` for finite
rows: by one ``lexsort`` for a small table, and for a large one (a step of tens of
thousands of messages with a few dozen distinct rows) by one compiled pass that hashes
each row's bits and a ``lexsort`` of the distinct rows only. Both give the same
arrays: the first row of each class (in the rows' order) and the same numbering.

Examples
--------
>>> rows = np.array([[2.0, 1.0], [1.0, 0.0], [2.0, 1.0]])
>>> uniq, cls = unique_rows(rows)
>>> uniq.tolist(), cls.tolist()
([[1.0, 0.0], [2.0, 1.0]], [1, 0, 1])
>>> [a.tolist() for a in unique_rows(rows, compiled=True)]
[[[1.0, 0.0], [2.0, 1.0]], [1, 0, 1]]
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

__all__ = ["HUGE_ROWS", "LARGE_ROWS", "unique_rows"]

#: Rows from which :func:`unique_rows` hashes them in the compiled pass once numba is
#: loaded (by the walk of a long curve's first chunk,
#: :func:`dlscale.perfmodel.network.chainwalk.longest_chains`); from :data:`HUGE_ROWS` on in
#: any case (below, numba's half-second load costs more than the sorts it saves).
LARGE_ROWS = 4096
HUGE_ROWS = 1 << 20

#: The bits of -0.0 as an int64.
NEGATIVE_ZERO = np.int64(-(1 << 63))

_COMPILED: list[Callable[..., tuple[np.ndarray, np.ndarray]]] = []


def unique_rows(rows: np.ndarray, compiled: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)`` of finite float rows.

    Parameters
    ----------
    rows : ndarray, shape (F, C)
        Finite floats.
    compiled : bool, optional
        Hash in the compiled pass (default: from :data:`LARGE_ROWS` rows on where numba
        is loaded, from :data:`HUGE_ROWS` on in any case).

    Returns
    -------
    uniq : ndarray, shape (U, C)
        The distinct rows in lexicographic order (column 0 first).
    cls : ndarray of intp, shape (F,)
        Each row's index in ``uniq``.
    """
    if not len(rows):
        return rows[:0], np.zeros(0, dtype=np.intp)
    if compiled is None:
        compiled = len(rows) >= (LARGE_ROWS if "numba" in sys.modules else HUGE_ROWS)
    if not compiled:
        return _by_lexsort(rows)
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    first, cls = _kernel()(rows, rows.view(np.int64))
    uniq = rows[first]
    order = np.lexsort(uniq.T[::-1])
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[cls]


def _by_lexsort(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """By one ``lexsort`` instead of a sort of structured records (20 of 33 s of a
    24-count Summit curve)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    new = np.empty(len(rows), dtype=bool)
    new[0] = True
    np.any(ordered[1:] != ordered[:-1], axis=1, out=new[1:])
    cls = np.empty(len(rows), dtype=np.intp)
    cls[order] = np.cumsum(new) - 1
    return ordered[new], cls


def _kernel() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """:func:`_hash_classes` compiled by numba (from its cache on disk), once per process."""
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        _COMPILED.append(njit()(_hash_classes))
    return _COMPILED[0]


def _hash_classes(rows: np.ndarray, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each class, in order of first appearance, and each row's
    class in that order: an open-addressing table of the rows' bits (each word mixed
    by SplitMix64's finalizer: floats such as 1.0 and 2.0 differ in their high bits
    only), equal rows by ``==`` on the floats."""
    F, C = rows.shape
    size = 16
    while size < 2 * F:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, np.int64)
    first = np.empty(F, np.int64)
    cls = np.empty(F, np.int64)
    U = 0
    for i in range(F):
        h = np.uint64(0)
        for c in range(C):
            b = bits[i, c]
            if b == NEGATIVE_ZERO:            # -0.0 == 0.0: the same bits to the hash
                b = 0
            x = h ^ np.uint64(b)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            h = x ^ (x >> np.uint64(31))
        slot = np.int64(h & mask)
        while True:
            k = table[slot]
            if k < 0:
                table[slot] = U
                first[U] = i
                cls[i] = U
                U += 1
                break
            r = first[k]
            same = True
            for c in range(C):
                if rows[r, c] != rows[i, c]:
                    same = False
                    break
            if same:
                cls[i] = k
                break
            slot = (slot + 1) & (size - 1)
    return first[:U], cls
