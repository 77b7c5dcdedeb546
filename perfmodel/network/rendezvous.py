"""Rank clocks through a collective's steps when each message waits only for its pair.

MPI ranks do not meet at a barrier between the steps of a collective: a message of
step ``s`` moves once its sender and its receiver have both finished step ``s - 1``
(a rendezvous), and a rank is done with the step when its own messages are
delivered. The time of the collective is then the longest chain of messages through
the ranks' dependencies, which is below the sum of each step's slowest message
whenever the slow messages of different steps lie on different chains (a binomial
tree whose subtrees straddle nodes unevenly, recursive doubling's fold of a
non-power-of-two count). Both fidelities advance their clocks by this one rule: the
analytical model (:mod:`dlscale.perfmodel.network.model`) with each message's cost from its path's level
loads, the simulator's fast mode with each message's cost from its routed links.

Examples
--------
Two pairs exchange in step 1; in step 2 ranks 1 and 2 exchange. The slow pair (2, 3)
of step 1 delays step 2 only through rank 2:

>>> clock = np.zeros(4)
>>> clock = advance_clocks(clock, np.array([0, 1, 2, 3]), np.array([1, 0, 3, 2]),
...                        np.array([1.0, 1.0, 5.0, 5.0]))
>>> advance_clocks(clock, np.array([1, 2]), np.array([2, 1]), np.array([1.0, 1.0])).tolist()
[1.0, 6.0, 6.0, 5.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["advance_clocks"]


def advance_clocks(clock: np.ndarray, src: np.ndarray, dst: np.ndarray, msg_s: np.ndarray,
                   reduce_s: np.ndarray | None = None, distinct: bool = False) -> np.ndarray:
    """Rank clocks after one step: each message starts when both its ranks are ready.

    Parameters
    ----------
    clock : ndarray, shape (..., P)
        Each rank's time before the step (leading axes: independent cases, e.g. sizes).
    src, dst : ndarray of int, shape (F,)
        Sender and receiver of each message.
    msg_s : ndarray, shape (..., F)
        Each message's time on the network.
    reduce_s : ndarray, shape (..., P), optional
        Each rank's reduction time after the step (added to every rank's clock).
    distinct : bool, optional
        The caller knows that no rank sends twice and none receives twice in the step
        (pairwise exchanges, tree edges): a faster update, same result.

    Returns
    -------
    ndarray, shape (..., P)
        Clocks after the step: a rank is done when its messages are delivered and its
        incoming ones have arrived (then it reduces).
    """
    arrive = np.maximum(clock[..., src], clock[..., dst]) + msg_s
    new = clock.copy()
    if distinct:
        new[..., src] = np.maximum(new[..., src], arrive)
        new[..., dst] = np.maximum(new[..., dst], arrive)
    else:
        view = np.moveaxis(new, -1, 0)
        np.maximum.at(view, src, np.moveaxis(arrive, -1, 0))
        np.maximum.at(view, dst, np.moveaxis(arrive, -1, 0))
    if reduce_s is not None:
        new += reduce_s
    return np.asarray(new)
