"""Allreduce algorithms run step by step on ``P`` in-process buffers.

The ``P`` ranks' buffers are the rows of one C-contiguous ``(P, n)`` float array;
the drivers here run whole algorithms with the step kernels of
:mod:`dlscale.kernels.reduction_steps` and count the elements each rank sends.

Algorithms (``ALGORITHMS``):

* ``ring``: reduce-scatter then allgather around a ring, ``P - 1`` steps each; the
  vector is cut into ``P`` chunks, the first ``n % P`` one element longer.  Rank
  ``r`` sends every chunk but ``r+1`` in the reduce-scatter and every chunk but
  ``r+2`` (mod P) in the allgather: ``2 (P-1)/P n`` elements when ``P`` divides ``n``.
* ``rabenseifner``: recursive-halving reduce-scatter then recursive-doubling
  allgather.  A non-power-of-two ``P = p' + rem`` is handled as MPICH does: the first
  ``2 rem`` ranks pair up, even ranks send their whole vector to the next odd rank
  first and receive the result last.
* ``binomial-tree``: binomial reduce to rank 0, then binomial broadcast.
* ``hierarchical``: binomial reduce inside each node to its first rank, an allreduce
  (``inter_algorithm``, default ring) among the node leaders, binomial broadcast
  inside each node.

Every algorithm sends ``2 (P - 1) n`` elements in total (the hierarchical one
``2 (nodes - 1) n`` between nodes plus ``2 (ranks_per_node - 1) n`` inside each node).

Summation order (what "exact" means): ring reduces chunk ``c`` in rank order
``c, c+1, ..., c+P-1 (mod P)``; the tree and halving schemes in their own pairwise
orders.  Results are therefore exact for integer-valued floats (below ``2**53`` in
float64, ``2**24`` in float32) and otherwise within the recursive-summation bound
``|s - exact| <= (P-1) u sum_i |x_i|`` per element (``u`` the unit round-off).  After
the allreduce every rank holds bit-identical values.

Examples
--------
>>> import numpy as np
>>> bufs = np.arange(12.0).reshape(3, 4)
>>> stats = allreduce_inplace(bufs, "ring")
>>> bufs[0]
array([12., 15., 18., 21.])
>>> stats.sent_elements.tolist(), stats.total_bytes
([6, 5, 5], 128)
"""


from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dlscale.kernels._checks import check_int
from dlscale.kernels.reduction_steps import (
    _bufs,
    _doubling,
    _halving,
    _pair_full,
    _ring_ag,
    _ring_rs,
    _tree_bcast,
    _tree_reduce,
    chunk_bounds,
)

__all__ = ["ALGORITHMS", "AllreduceStats", "allreduce_inplace"]


# -------------------------------------------------------------------- drivers
def _ring(b: np.ndarray, r: np.ndarray, s: np.ndarray) -> int:
    p = r.size
    if p == 1:
        return 0
    bounds = chunk_bounds(b.shape[1], p)
    for step in range(p - 1):
        _ring_rs(b, r, bounds, step, s)
    for step in range(p - 1):
        _ring_ag(b, r, bounds, step, s)
    return 2 * (p - 1)


def _tree(b: np.ndarray, r: np.ndarray, s: np.ndarray) -> int:
    return _tree_reduce_all(b, r, s) + _tree_bcast_all(b, r, s)


def _tree_reduce_all(b: np.ndarray, r: np.ndarray, s: np.ndarray) -> int:
    steps, mask = 0, 1
    while mask < r.size:
        _tree_reduce(b, r, mask, s)
        mask *= 2
        steps += 1
    return steps


def _tree_bcast_all(b: np.ndarray, r: np.ndarray, s: np.ndarray) -> int:
    steps, mask = 0, 1
    while mask * 2 < r.size:
        mask *= 2
    while mask >= 1 and r.size > 1:
        _tree_bcast(b, r, mask, s)
        mask //= 2
        steps += 1
    return steps


def _rabenseifner(b: np.ndarray, r: np.ndarray, s: np.ndarray) -> int:
    p = r.size
    pp = 1 << (p.bit_length() - 1)  # largest power of two <= p
    rem = p - pp
    steps = 0
    for i in range(rem):  # MPICH pre-step: even ranks fold into the next odd rank
        _pair_full(b, r[2 * i], r[2 * i + 1], True, s)
    steps += 1 if rem else 0
    act = np.concatenate((r[1: 2 * rem: 2], r[2 * rem:])).astype(np.int64)
    lo = np.zeros(pp, dtype=np.int64)
    hi = np.full(pp, b.shape[1], dtype=np.int64)
    mask = pp // 2
    while mask >= 1:
        _halving(b, act, lo, hi, mask, s)
        mask //= 2
        steps += 1
    mask = 1
    while mask < pp:
        _doubling(b, act, lo, hi, mask, s)
        mask *= 2
        steps += 1
    for i in range(rem):
        _pair_full(b, r[2 * i + 1], r[2 * i], False, s)
    steps += 1 if rem else 0
    return steps


ALGORITHMS: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], int]] = {
    "ring": _ring,
    "rabenseifner": _rabenseifner,
    "binomial-tree": _tree,
}
"""Flat allreduce algorithms by name: ``f(bufs, ranks, sent) -> steps``.  ``hierarchical``
is also accepted by :func:`allreduce_inplace`."""


@dataclass(frozen=True)
class AllreduceStats:
    """What an in-process allreduce did.

    Attributes
    ----------
    algorithm : str
        Name of the algorithm run.
    n_ranks, n_elements, itemsize : int
        Rows, elements per row and bytes per element.
    steps : int
        Communication steps on the critical path (rounds in which ranks send).
    sent_elements : numpy.ndarray
        Elements each rank sent (int64, one per row), all phases.
    inter_node_sent_elements : numpy.ndarray or None
        For ``hierarchical``: the part of ``sent_elements`` sent between nodes.
    """

    algorithm: str
    n_ranks: int
    n_elements: int
    itemsize: int
    steps: int
    sent_elements: np.ndarray
    inter_node_sent_elements: np.ndarray | None = None

    @property
    def sent_bytes(self) -> np.ndarray:
        """Bytes each rank sent."""
        return self.sent_elements * self.itemsize

    @property
    def total_bytes(self) -> int:
        """Bytes sent by all ranks together."""
        return int(self.sent_elements.sum()) * self.itemsize


def allreduce_inplace(bufs: np.ndarray, algorithm: str = "ring", *, ranks_per_node: int | None = None,
                      inter_algorithm: str = "ring") -> AllreduceStats:
    """Sum the rows of ``bufs`` into every row, running ``algorithm`` step by step.

    Parameters
    ----------
    bufs : ndarray, shape (P, n)
        One row per rank, float32 or float64, C-contiguous; overwritten by the sum.
    algorithm : {'ring', 'rabenseifner', 'binomial-tree', 'hierarchical'}
    ranks_per_node : int, optional
        Required for ``hierarchical``; must divide ``P``.
    inter_algorithm : str
        Flat algorithm among node leaders for ``hierarchical``.

    Returns
    -------
    AllreduceStats

    Examples
    --------
    >>> import numpy as np
    >>> b = np.ones((4, 3))
    >>> allreduce_inplace(b, "hierarchical", ranks_per_node=2).inter_node_sent_elements.tolist()
    [3, 0, 3, 0]
    >>> b[3].tolist()
    [4.0, 4.0, 4.0]
    """
    valid = [*ALGORITHMS, "hierarchical"]
    if algorithm not in valid:
        raise ValueError(f"algorithm: unknown allreduce {algorithm!r}; valid: {', '.join(valid)}")
    if inter_algorithm not in ALGORITHMS:
        raise ValueError(f"inter_algorithm: unknown allreduce {inter_algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    b = _bufs(bufs)
    p = b.shape[0]
    sent = np.zeros(p, dtype=np.int64)
    inter = None
    if algorithm == "hierarchical":
        if ranks_per_node is None:
            raise ValueError("ranks_per_node: required for the hierarchical allreduce")
        rpn = check_int("ranks_per_node", ranks_per_node, low=1)
        if p % rpn:
            raise ValueError(f"ranks_per_node: must divide the {p} ranks, got {rpn}")
        nodes = [np.arange(k * rpn, (k + 1) * rpn, dtype=np.int64) for k in range(p // rpn)]
        steps = max(_tree_reduce_all(b, nr, sent) for nr in nodes)
        inter = np.zeros(p, dtype=np.int64)
        steps += ALGORITHMS[inter_algorithm](b, np.arange(0, p, rpn, dtype=np.int64), inter)
        steps += max(_tree_bcast_all(b, nr, sent) for nr in nodes)
        sent += inter
    else:
        steps = ALGORITHMS[algorithm](b, np.arange(p, dtype=np.int64), sent)
    return AllreduceStats(algorithm=algorithm, n_ranks=p, n_elements=b.shape[1],
                          itemsize=b.dtype.itemsize, steps=steps, sent_elements=sent,
                          inter_node_sent_elements=inter)
