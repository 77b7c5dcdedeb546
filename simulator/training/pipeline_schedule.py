"""The order in which each pipeline stage runs its microbatches' forward and backward passes.

Three schedules, as :data:`dlscale.perfmodel.training.parallel.SCHEDULES` names them:

``gpipe``
    Every forward, then every backward (Huang et al. 2019), the backwards in the
    reverse order of the forwards (the last microbatch's activations are the newest).
``1f1b``
    PipeDream-Flush (Narayanan et al. SC'21 Sec. 2.2.1; Megatron-LM's
    ``forward_backward_pipelining_without_interleaving``): stage ``s`` of ``p`` runs
    ``min(p - s - 1, m)`` warm-up forwards, then alternates one forward and one
    backward, then drains the remaining backwards.
``interleaved``
    Megatron-LM's ``forward_backward_pipelining_with_interleaving`` (Sec. 2.2.2):
    each stage holds ``v`` model chunks; its ``m v`` forward passes visit the chunks
    in groups of ``p`` microbatches (virtual microbatch ``k`` is microbatch
    ``(k // (p v)) p + k % p`` of chunk ``(k // p) % v``), its backward passes the
    chunks in reverse; ``2 (p - s - 1) + (v - 1) p`` warm-up forwards (all ``m v`` when
    that is more), then one forward and one backward alternately, then the rest of
    the backwards.

An operation is ``(kind, microbatch, chunk)`` with ``kind`` :data:`FORWARD` or
:data:`BACKWARD`; :func:`producer` names the operation whose output it needs.

Examples
--------
>>> [op[:2] for op in stage_order("1f1b", 0, 2, 3)]
[(0, 0), (0, 1), (1, 0), (0, 2), (1, 1), (1, 2)]
>>> [op[:2] for op in stage_order("1f1b", 1, 2, 3)]
[(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
>>> stage_order("interleaved", 0, 2, 2, 2)[:4]
[(0, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1)]
"""

from __future__ import annotations

__all__ = ["BACKWARD", "FORWARD", "Op", "producer", "stage_order"]

FORWARD = 0
BACKWARD = 1

#: ``(kind, microbatch, chunk)``.
Op = tuple[int, int, int]


def _interleaved(s: int, p: int, m: int, v: int) -> list[Op]:
    total = m * v
    warm = min(total, 2 * (p - s - 1) + (v - 1) * p)

    def fwd(k: int) -> Op:
        return (FORWARD, (k // (p * v)) * p + k % p, (k // p) % v)

    def bwd(k: int) -> Op:
        return (BACKWARD, (k // (p * v)) * p + k % p, v - 1 - (k // p) % v)

    ops = [fwd(k) for k in range(warm)]
    for k in range(total - warm):
        ops.append(fwd(warm + k))
        ops.append(bwd(k))
    ops.extend(bwd(k) for k in range(total - warm, total))
    return ops


def stage_order(schedule: str, s: int, p: int, m: int, v: int = 1) -> list[Op]:
    """The operations stage ``s`` of ``p`` runs, in order, for ``m`` microbatches.

    Parameters
    ----------
    schedule : {"gpipe", "1f1b", "interleaved"}
    s, p : int
        The stage and the number of stages.
    m : int
        Microbatches per iteration (a multiple of ``p`` with ``interleaved``, as
        :class:`~dlscale.perfmodel.training.parallel.ParallelLayout` checks).
    v : int
        Model chunks per stage (``interleaved``; 1 otherwise).

    Returns
    -------
    list of Op
        ``2 m v`` operations, each microbatch's forward of a chunk before its backward.
    """
    if schedule == "gpipe":
        return ([(FORWARD, j, 0) for j in range(m)]
                + [(BACKWARD, j, 0) for j in reversed(range(m))])
    if schedule == "1f1b":
        warm = min(p - s - 1, m)
        ops: list[Op] = [(FORWARD, j, 0) for j in range(warm)]
        for j in range(m - warm):
            ops.append((FORWARD, warm + j, 0))
            ops.append((BACKWARD, j, 0))
        ops.extend((BACKWARD, j, 0) for j in range(m - warm, m))
        return ops
    if schedule == "interleaved":
        return _interleaved(s, p, m, v)
    raise ValueError(f"schedule: unknown {schedule!r}")


def producer(op: Op, s: int, p: int, v: int) -> tuple[int, Op] | None:
    """``(stage, operation)`` whose output ``op`` on stage ``s`` waits for; None: none.

    The model's layers run through virtual stages ``c p + s`` (chunk ``c`` of stage
    ``s``, Megatron's interleaved assignment; ``c = 0`` without chunks): a forward
    takes the previous virtual stage's forward output, a backward the next one's
    backward output; the last virtual stage's backward starts from its own forward
    (same stage, earlier in its order, so no wait), the first one's forward from
    the data.

    Examples
    --------
    >>> producer((FORWARD, 3, 0), 2, 4, 1), producer((BACKWARD, 3, 0), 2, 4, 1)
    ((1, (0, 3, 0)), (3, (1, 3, 0)))
    >>> producer((FORWARD, 0, 1), 0, 4, 2), producer((BACKWARD, 0, 1), 3, 4, 2)
    ((3, (0, 0, 0)), None)
    """
    kind, j, c = op
    k = c * p + s
    if kind == FORWARD:
        if k == 0:
            return None
        return (k - 1) % p, (FORWARD, j, (k - 1) // p)
    if k == p * v - 1:
        return None
    return (k + 1) % p, (BACKWARD, j, (k + 1) // p)
