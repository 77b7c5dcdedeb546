"""The project's own ring allreduce over MPI: numba reduction plus ``Sendrecv``.

Reduce-scatter then allgather around the ring ``r -> r+1``, ``p - 1`` steps each,
the vector cut into ``p`` chunks as :func:`dlscale.kernels.allreduce.chunk_bounds`
cuts it (the first ``n % p`` chunks one element longer), each received chunk added
in place by the numba kernel :func:`sum_into`. This is the algorithm
:func:`dlscale.perfmodel.network.collectives.ring_allreduce_s` models: ``2 (p-1)``
messages of about ``n/p`` bytes per rank and ``(p-1)/p n`` bytes reduced.

Examples
--------
>>> import numpy as np
>>> a = np.ones(5); sum_into(a, np.arange(5.0)).tolist()
[1.0, 2.0, 3.0, 4.0, 5.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from dlscale.kernels.reduction_steps import chunk_bounds

__all__ = ["ring_allreduce", "sum_into"]


@njit  # no cache=True: a file imported under two module names breaks numba's cache
def _sum_into(dst, src):  # pragma: no cover - compiled
    for i in range(dst.size):
        dst[i] += src[i]


def sum_into(dst: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``dst += src`` element by element (numba), in place; returns ``dst``."""
    if dst.shape != src.shape or dst.dtype != src.dtype:
        raise ValueError(
            f"src: must match dst ({dst.shape}, {dst.dtype}), got ({src.shape}, {src.dtype})"
        )
    _sum_into(dst, src)
    return dst


def ring_allreduce(comm: Any, buf: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """Sum ``buf`` over all ranks of ``comm`` in place with a ring; returns ``buf``.

    ``scratch`` (at least ``ceil(n/p)`` elements of ``buf``'s dtype) is reused
    where given. Every rank ends with bit-identical values.
    """
    p, r = comm.Get_size(), comm.Get_rank()
    if p == 1:
        return buf
    if buf.ndim != 1 or not buf.flags.c_contiguous:
        raise ValueError(f"buf: must be a contiguous 1-D array, got shape {buf.shape}")
    bounds = chunk_bounds(buf.size, p)
    width = int(np.max(np.diff(bounds)))
    if scratch is None or scratch.size < width or scratch.dtype != buf.dtype:
        scratch = np.empty(width, dtype=buf.dtype)
    right, left = (r + 1) % p, (r - 1) % p
    for step in range(p - 1):  # reduce-scatter
        s, t = (r - step) % p, (r - step - 1) % p
        lo, hi = bounds[t], bounds[t + 1]
        comm.Sendrecv(buf[bounds[s]:bounds[s + 1]], dest=right, sendtag=step,
                      recvbuf=scratch[: hi - lo], source=left, recvtag=step)
        _sum_into(buf[lo:hi], scratch[: hi - lo])
    for step in range(p - 1):  # allgather: rank r owns the full chunk (r + 1) % p
        s, t = (r + 1 - step) % p, (r - step) % p
        comm.Sendrecv(buf[bounds[s]:bounds[s + 1]], dest=right, sendtag=p + step,
                      recvbuf=buf[bounds[t]:bounds[t + 1]], source=left, recvtag=p + step)
    return buf
