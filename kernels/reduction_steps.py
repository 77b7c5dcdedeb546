"""Reduction steps of the allreduce algorithms, on ``P`` in-process buffers.

The ``P`` ranks' buffers are the rows of one C-contiguous ``(P, n)`` float array.
Each step performs one communication round of an algorithm for every rank at once,
on the real data: a "send" of elements ``[lo, hi)`` from rank ``a`` to rank ``b`` is
``bufs[b, lo:hi] += bufs[a, lo:hi]`` (reduce) or ``=`` (gather/broadcast), and the
sender's count in ``sent`` grows by ``hi - lo``.  Within a step no rank reads a range
that another rank writes in the same step, so doing the transfers in place one after
another equals doing them simultaneously.  ``ranks`` maps logical ranks to rows, so
the same steps serve a sub-group (the ranks of one node in the hierarchical scheme,
the node leaders between nodes).  :mod:`dlscale.kernels.allreduce` drives whole
algorithms with these steps.

Examples
--------
>>> import numpy as np
>>> b = np.arange(6.0).reshape(3, 2)
>>> tree_reduce_step(b, 1).tolist(), b[0].tolist()
([0, 2, 0], [2.0, 4.0])
"""

from __future__ import annotations

import numpy as np

from dlscale.kernels._checks import check_float_array, check_int, check_writeable
from dlscale.kernels.jit import njit

__all__ = [
    "chunk_bounds",
    "doubling_step",
    "halving_step",
    "ring_allgather_step",
    "ring_reduce_scatter_step",
    "tree_broadcast_step",
    "tree_reduce_step",
]


def chunk_bounds(n: int, p: int) -> np.ndarray:
    """Boundaries of ``p`` near-equal chunks of ``n`` elements (first ``n % p`` chunks longer).

    Examples
    --------
    >>> chunk_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    """
    n = check_int("n", n, low=0)
    p = check_int("p", p, low=1)
    sizes = np.full(p, n // p, dtype=np.int64)
    sizes[: n % p] += 1
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


# ----------------------------------------------------------------- step kernels
# Loops run over 1-D views with ``range(view.size)`` (non-negative indices), which
# LLVM vectorizes; ``range(lo, hi)`` on the full row does not vectorize.
@njit()
def _add(dst: np.ndarray, src: np.ndarray) -> None:
    for i in range(dst.size):
        dst[i] += src[i]


@njit()
def _copy(dst: np.ndarray, src: np.ndarray) -> None:
    for i in range(dst.size):
        dst[i] = src[i]


@njit()
def _ring_rs(bufs: np.ndarray, ranks: np.ndarray, bounds: np.ndarray, step: int, sent: np.ndarray) -> None:
    p = ranks.size
    for r in range(p):
        c = (r - step + p) % p
        src = ranks[r]
        dst = ranks[(r + 1) % p]
        lo = bounds[c]
        hi = bounds[c + 1]
        _add(bufs[dst, lo:hi], bufs[src, lo:hi])
        sent[src] += hi - lo


@njit()
def _ring_ag(bufs: np.ndarray, ranks: np.ndarray, bounds: np.ndarray, step: int, sent: np.ndarray) -> None:
    p = ranks.size
    for r in range(p):
        c = (r + 1 - step + p) % p
        src = ranks[r]
        dst = ranks[(r + 1) % p]
        lo = bounds[c]
        hi = bounds[c + 1]
        _copy(bufs[dst, lo:hi], bufs[src, lo:hi])
        sent[src] += hi - lo


@njit()
def _tree_reduce(bufs: np.ndarray, ranks: np.ndarray, mask: int, sent: np.ndarray) -> None:
    p = ranks.size
    n = bufs.shape[1]
    for r in range(mask, p, 2 * mask):
        src = ranks[r]
        dst = ranks[r - mask]
        _add(bufs[dst], bufs[src])
        sent[src] += n


@njit()
def _tree_bcast(bufs: np.ndarray, ranks: np.ndarray, mask: int, sent: np.ndarray) -> None:
    p = ranks.size
    n = bufs.shape[1]
    for r in range(0, p - mask, 2 * mask):
        src = ranks[r]
        dst = ranks[r + mask]
        _copy(bufs[dst], bufs[src])
        sent[src] += n


@njit()
def _pair_full(bufs: np.ndarray, src: int, dst: int, add: bool, sent: np.ndarray) -> None:
    n = bufs.shape[1]
    if add:
        _add(bufs[dst], bufs[src])
    else:
        _copy(bufs[dst], bufs[src])
    sent[src] += n


@njit()
def _halving(bufs: np.ndarray, act: np.ndarray, lo: np.ndarray, hi: np.ndarray, mask: int, sent: np.ndarray) -> None:
    for v in range(act.size):
        u = v ^ mask
        if v < u:
            a = act[v]
            b = act[u]
            l0 = lo[v]
            h0 = hi[v]
            mid = l0 + (h0 - l0) // 2
            _add(bufs[a, l0:mid], bufs[b, l0:mid])  # v keeps the lower half
            _add(bufs[b, mid:h0], bufs[a, mid:h0])  # u keeps the upper half
            sent[b] += mid - l0
            sent[a] += h0 - mid
            hi[v] = mid
            lo[u] = mid


@njit()
def _doubling(bufs: np.ndarray, act: np.ndarray, lo: np.ndarray, hi: np.ndarray, mask: int, sent: np.ndarray) -> None:
    for v in range(act.size):
        u = v ^ mask
        if v < u:
            a = act[v]
            b = act[u]
            _copy(bufs[b, lo[v]:hi[v]], bufs[a, lo[v]:hi[v]])
            _copy(bufs[a, lo[u]:hi[u]], bufs[b, lo[u]:hi[u]])
            sent[a] += hi[v] - lo[v]
            sent[b] += hi[u] - lo[u]
            lo[u] = lo[v]
            hi[v] = hi[u]


# --------------------------------------------------------------- public steps
def _bufs(bufs: np.ndarray) -> np.ndarray:
    b = check_float_array("bufs", bufs, ndim=2)
    check_writeable("bufs", bufs)
    if b.shape[0] < 1:
        raise ValueError(f"bufs: needs at least one rank (row), got shape {b.shape}")
    return b


def _ranks(ranks: np.ndarray | None, p: int) -> np.ndarray:
    if ranks is None:
        return np.arange(p, dtype=np.int64)
    r = np.ascontiguousarray(ranks, dtype=np.int64)
    if r.ndim != 1 or r.size < 1 or r.min() < 0 or r.max() >= p or np.unique(r).size != r.size:
        raise ValueError(f"ranks: must be distinct row indices in [0, {p}), got {np.asarray(ranks).tolist()}")
    return r


def _sent(sent: np.ndarray | None, p: int) -> np.ndarray:
    if sent is None:
        return np.zeros(p, dtype=np.int64)
    if not isinstance(sent, np.ndarray) or sent.dtype != np.int64 or sent.shape != (p,):
        raise ValueError(f"sent: must be an int64 array of shape ({p},)")
    return sent


def _step_args(bufs: np.ndarray, ranks: np.ndarray | None,
               sent: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked buffers, rank map and byte counter every public step takes."""
    b = _bufs(bufs)
    return b, _ranks(ranks, b.shape[0]), _sent(sent, b.shape[0])


def ring_reduce_scatter_step(bufs: np.ndarray, step: int, ranks: np.ndarray | None = None,
                             sent: np.ndarray | None = None) -> np.ndarray:
    """One ring reduce-scatter step: logical rank ``r`` adds its chunk ``(r - step) mod P`` into rank ``r+1``.

    ``ranks`` maps logical ring positions to rows (default all rows in order);
    ``sent`` (int64 per row) is incremented by the elements each row sends and returned.

    Examples
    --------
    >>> import numpy as np
    >>> b = np.ones((2, 4))
    >>> ring_reduce_scatter_step(b, 0).tolist()
    [2, 2]
    >>> b.tolist()
    [[1.0, 1.0, 2.0, 2.0], [2.0, 2.0, 1.0, 1.0]]
    """
    b, r, s = _step_args(bufs, ranks, sent)
    step = check_int("step", step, low=0)
    if step > r.size - 2 and r.size > 1:
        raise ValueError(f"step: must be in [0, {r.size - 2}] for {r.size} ranks, got {step}")
    if r.size > 1:
        _ring_rs(b, r, chunk_bounds(b.shape[1], r.size), step, s)
    return s


def ring_allgather_step(bufs: np.ndarray, step: int, ranks: np.ndarray | None = None,
                        sent: np.ndarray | None = None) -> np.ndarray:
    """One ring allgather step: rank ``r`` copies its chunk ``(r + 1 - step) mod P`` to rank ``r+1``.

    Run after the ``P - 1`` reduce-scatter steps, when rank ``r`` owns the reduced
    chunk ``(r + 1) mod P``.
    """
    b, r, s = _step_args(bufs, ranks, sent)
    step = check_int("step", step, low=0)
    if step > r.size - 2 and r.size > 1:
        raise ValueError(f"step: must be in [0, {r.size - 2}] for {r.size} ranks, got {step}")
    if r.size > 1:
        _ring_ag(b, r, chunk_bounds(b.shape[1], r.size), step, s)
    return s


def tree_reduce_step(bufs: np.ndarray, mask: int, ranks: np.ndarray | None = None,
                     sent: np.ndarray | None = None) -> np.ndarray:
    """One binomial-tree reduce step: every rank ``r`` with ``r mod 2 mask == mask`` adds into ``r - mask``.

    Run with ``mask = 1, 2, 4, ...`` while ``mask < P``; rank 0 then holds the sum.
    """
    b, r, s = _step_args(bufs, ranks, sent)
    mask = check_int("mask", mask, low=1)
    _tree_reduce(b, r, mask, s)
    return s


def tree_broadcast_step(bufs: np.ndarray, mask: int, ranks: np.ndarray | None = None,
                        sent: np.ndarray | None = None) -> np.ndarray:
    """One binomial broadcast step: every rank ``r`` with ``r mod 2 mask == 0`` copies to ``r + mask``.

    Run with ``mask`` from the highest power of two below ``P`` down to 1.
    """
    b, r, s = _step_args(bufs, ranks, sent)
    mask = check_int("mask", mask, low=1)
    _tree_bcast(b, r, mask, s)
    return s


def _segments(lo: np.ndarray, hi: np.ndarray, p: int, n: int) -> None:
    for name, a in (("lo", lo), ("hi", hi)):
        if not isinstance(a, np.ndarray) or a.dtype != np.int64 or a.shape != (p,):
            raise ValueError(f"{name}: must be an int64 array of shape ({p},), one entry per rank")
    if np.any(lo < 0) or np.any(hi > n) or np.any(lo > hi):
        raise ValueError(f"lo, hi: segments must satisfy 0 <= lo <= hi <= {n}")


def _power_of_two_mask(mask: int, p: int) -> int:
    mask = check_int("mask", mask, low=1)
    if p & (p - 1) or mask & (mask - 1) or mask >= p:
        raise ValueError(f"mask: must be a power of two below the rank count {p} (itself a power of two), got {mask}")
    return mask


def halving_step(bufs: np.ndarray, mask: int, lo: np.ndarray, hi: np.ndarray,
                 ranks: np.ndarray | None = None, sent: np.ndarray | None = None) -> np.ndarray:
    """One recursive-halving reduce-scatter step among a power-of-two number of ranks.

    Ranks ``v`` and ``v ^ mask`` hold the same segment ``[lo, hi)``; the lower rank
    keeps and reduces the lower half, the upper rank the upper half; ``lo``/``hi``
    (int64, one entry per logical rank) are updated.  Run with ``mask = P/2, ..., 1``
    starting from ``lo = 0``, ``hi = n``; then every rank owns one reduced segment.

    Examples
    --------
    >>> import numpy as np
    >>> b = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> lo, hi = np.zeros(2, np.int64), np.full(2, 2, np.int64)
    >>> halving_step(b, 1, lo, hi).tolist(), b.tolist(), lo.tolist(), hi.tolist()
    ([1, 1], [[4.0, 2.0], [3.0, 6.0]], [0, 1], [1, 2])
    """
    b, r, s = _step_args(bufs, ranks, sent)
    mask = _power_of_two_mask(mask, r.size)
    _segments(lo, hi, r.size, b.shape[1])
    _halving(b, r, lo, hi, mask, s)
    return s


def doubling_step(bufs: np.ndarray, mask: int, lo: np.ndarray, hi: np.ndarray,
                  ranks: np.ndarray | None = None, sent: np.ndarray | None = None) -> np.ndarray:
    """One recursive-doubling allgather step: ranks ``v`` and ``v ^ mask`` swap their segments.

    Run with ``mask = 1, 2, ..., P/2`` after :func:`halving_step`; ``lo``/``hi`` grow
    to the union of the two segments.
    """
    b, r, s = _step_args(bufs, ranks, sent)
    mask = _power_of_two_mask(mask, r.size)
    _segments(lo, hi, r.size, b.shape[1])
    _doubling(b, r, lo, hi, mask, s)
    return s
