"""The longest chain of messages through the ranks of many collective plans at once.

A plan is a sequence of steps, each a list of messages ``(src, dst, class)``; a
message starts when both its ranks have finished the previous step (a rendezvous),
costs its class's seconds, and a rank is done with the step when its messages are
delivered; then it adds its reduction time (``scale * recv[rank]``). The plan's time
is its last rank's clock. This is :func:`dlscale.perfmodel.network.rendezvous.advance_clocks`
step after step, compiled: the same floating-point operations in the same order
(a max, then one addition per message; the reduction added after), so the clocks
are bit-equal to the numpy walk's.

Plans are packed in compressed rows: plan ``j``'s steps are
``plan_steps[j]:plan_steps[j + 1]``, step ``s``'s messages
``step_msgs[s]:step_msgs[s + 1]`` with costs ``cost[:, step_cost[s] + cls]``, its
reductions ``recv[step_recv[s]:step_recv[s] + plan_ranks[j]]`` (``step_recv[s] < 0``:
none). Rows of ``cost`` and ``scale`` are independent cases (e.g. message sizes).

Examples
--------
Two pairs exchange in step 1 (the pair (2, 3) is slow); in step 2 ranks 1 and 2:

>>> import numpy as np
>>> i = lambda *v: np.array(v, dtype=np.int64)
>>> m = lambda *v: np.array(v, dtype=np.int32)
>>> steps = ChainSteps(i(4), i(0, 2), i(0, 4, 6), i(0, 2), i(-1, -1), m(0, 1, 2, 3, 1, 2),
...                    m(1, 0, 3, 2, 2, 1), m(0, 0, 1, 1, 0, 0), np.zeros(0), 3)
>>> longest_chains(steps, np.array([[1.0, 5.0, 1.0]]), np.zeros((1, 1))).tolist()
[[6.0]]
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ChainSteps", "longest_chains"]

_INT = np.dtype(np.int64)
_INDEX = np.dtype(np.int32)      # per message: 12 bytes, not 24, read once per walk
_FLOAT = np.dtype(np.float64)


def _check(name: str, a: object, dtype: np.dtype, ndim: int) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name}: must be a numpy ndarray, got {type(a).__name__}")
    if a.dtype != dtype or a.ndim != ndim:
        raise TypeError(f"{name}: must be a {ndim}-D {dtype} array, got {a.ndim}-D {a.dtype}")
    return np.ascontiguousarray(a)


def _bounds(name: str, a: np.ndarray, low: int, high: int) -> None:
    if a.size and (int(a.min()) < low or int(a.max()) > high):
        raise ValueError(f"{name}: values must be in {low}..{high}, got "
                         f"{int(a.min())}..{int(a.max())}")


def _span(name: str, mins: np.ndarray, maxs: np.ndarray, low: int, high: int) -> None:
    """:func:`_bounds` of values given by their least and greatest per group."""
    if mins.size and (int(mins.min()) < low or int(maxs.max()) > high):
        raise ValueError(f"{name}: values must be in {low}..{high}, got "
                         f"{int(mins.min())}..{int(maxs.max())}")


def _step_min(at: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Least value of each step that starts at ``at`` (steps with messages only)."""
    return lambda a: np.minimum.reduceat(a, at) if len(at) else a[:0]


def _step_max(at: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Greatest value of each step that starts at ``at`` (steps with messages only)."""
    return lambda a: np.maximum.reduceat(a, at) if len(at) else a[:0]


@dataclass(frozen=True)
class ChainSteps:
    """The steps of ``J`` plans packed in compressed rows (see the module docstring),
    checked once when built.

    Attributes
    ----------
    plan_ranks : ndarray of int64, shape (J,)
        Ranks of each plan (its clocks ``0..plan_ranks[j] - 1``).
    plan_steps : ndarray of int64, shape (J + 1,)
        Boundaries of each plan's steps.
    step_msgs : ndarray of int64, shape (S + 1,)
        Boundaries of each step's messages.
    step_cost : ndarray of int64, shape (S,)
        Column of ``cost`` of each step's class 0.
    step_recv : ndarray of int64, shape (S,)
        Offset in ``recv`` of each step's per-rank reductions; negative: none.
    src, dst, cls : ndarray of int32, shape (M,)
        Each message's ranks (within its plan) and class (within its step).
    recv : ndarray of float64, shape (R,)
        Reduction units of each rank in the steps that reduce.
    classes : int
        Columns of ``cost`` (classes of all steps).
    back : ndarray of int32, shape (M,), optional
        The class of a message ``dst -> src`` in the same step folded into this one
        (an exchange: both leave at the same time, each end takes the later arrival;
        half the records to walk), or -1; default all -1.
    """

    plan_ranks: np.ndarray
    plan_steps: np.ndarray
    step_msgs: np.ndarray
    step_cost: np.ndarray
    step_recv: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    cls: np.ndarray
    recv: np.ndarray
    classes: int
    back: np.ndarray = field(default_factory=lambda: np.zeros(0, _INDEX))

    def __post_init__(self) -> None:
        if not len(self.back) and len(self.src):
            object.__setattr__(self, "back", np.full(len(self.src), -1, _INDEX))
        for nm in ("plan_ranks", "plan_steps", "step_msgs", "step_cost", "step_recv", "src",
                   "dst", "cls", "recv", "back"):
            dtype = (_FLOAT if nm == "recv" else _INDEX if nm in ("src", "dst", "cls", "back")
                     else _INT)
            object.__setattr__(self, nm, _check(nm, getattr(self, nm), dtype, 1))
        J, S, M = len(self.plan_ranks), len(self.step_cost), len(self.src)
        if (len(self.plan_steps), len(self.step_msgs), len(self.step_recv), len(self.dst),
                len(self.cls), len(self.back)) != (J + 1, S + 1, S, M, M, M):
            raise ValueError(f"plan_steps, step_msgs, step_recv, dst, cls, back: need {J + 1}, "
                             f"{S + 1}, {S}, {M}, {M}, {M} entries (J={J}, S={S}, M={M})")
        _bounds("plan_ranks", self.plan_ranks, 1, 2**62)
        for nm, a, end in (("plan_steps", self.plan_steps, S), ("step_msgs", self.step_msgs, M)):
            if a[0] != 0 or a[-1] != end or (np.diff(a) < 0).any():
                raise ValueError(f"{nm}: must rise from 0 to {end}, got {a[0]}..{a[-1]}")
        step_plan = np.repeat(np.arange(J), np.diff(self.plan_steps))
        # each step's least and greatest rank, class and fold (the same bounds as per
        # message, in a few passes over the messages: a long curve packs millions)
        full = np.flatnonzero(np.diff(self.step_msgs) > 0)
        at, cost = self.step_msgs[full], self.step_cost[full]
        top = self.plan_ranks[step_plan[full]]
        lo, hi = _step_min(at), _step_max(at)
        if ((np.minimum(lo(self.src), lo(self.dst)) < 0).any()
                or (np.maximum(hi(self.src), hi(self.dst)) >= top).any()):
            raise ValueError("src, dst: each rank must be in 0..plan_ranks - 1 of its plan")
        _span("step_cost + cls", cost + lo(self.cls), cost + hi(self.cls), 0, self.classes - 1)
        folded = hi(self.back) >= 0                # steps with a fold
        least = lo(np.where(self.back >= 0, self.back, np.iinfo(_INDEX).max))
        _span("step_cost + back", cost[folded] + least[folded],
              cost[folded] + hi(self.back)[folded], 0, self.classes - 1)
        _bounds("back", self.back, -1, self.classes - 1)
        has = self.step_recv >= 0
        _bounds("step_recv + plan_ranks", self.step_recv[has] + self.plan_ranks[step_plan[has]],
                0, len(self.recv))


def longest_chains(steps: ChainSteps, cost: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Each plan's last rank clock (the longest chain of messages; see module docstring).

    Parameters
    ----------
    steps : ChainSteps
        The plans.
    cost : ndarray of float64, shape (B, steps.classes)
        Seconds of each class's message, per case.
    scale : ndarray of float64, shape (B, J)
        Seconds per unit of ``steps.recv``, per case and plan.

    Returns
    -------
    ndarray of float64, shape (B, J)
        Seconds until each plan's last rank is done, per case.
    """
    cost, scale = _check("cost", cost, _FLOAT, 2), _check("scale", scale, _FLOAT, 2)
    B, J = len(cost), len(steps.plan_ranks)
    if cost.shape != (B, steps.classes) or scale.shape != (B, J):
        raise ValueError(f"cost, scale: need shapes {(B, steps.classes)} and {(B, J)}, got "
                         f"{cost.shape} and {scale.shape}")
    work = B * len(steps.src)
    small = B * len(steps.step_cost) <= SMALL_STEPS and (
        work <= SMALL_MESSAGES if "numba" not in sys.modules else work < LOADED_MESSAGES)
    walk = _chains_numpy if small else _compiled()
    return np.asarray(walk(steps.plan_ranks, steps.plan_steps, steps.step_msgs,
                           steps.step_cost, steps.step_recv, steps.src, steps.dst,
                           steps.cls, steps.back, cost, scale, steps.recv))


#: Steps times cases up to which :func:`longest_chains` walks with numpy, step by step
#: (the same operations, bit for bit): a few hundred steps cost milliseconds so, and
#: loading numba and its compiled kernel costs about half a second of a command that
#: prices a handful of node counts (``dlscale predict summit resnet50 --nodes 8``).
SMALL_STEPS = 2048
#: Messages times cases up to which numpy walks: beyond, its scatter of every message
#: (about 20 ns each, the compiled walk 3) costs more than loading the compiled kernel
#: (a chunk of a long curve holds millions); once numba is loaded, numpy walks below
#: :data:`LOADED_MESSAGES` only.
SMALL_MESSAGES = 1 << 21
LOADED_MESSAGES = 1 << 14

_COMPILED: list[Callable[..., np.ndarray]] = []


def _compiled() -> Callable[..., np.ndarray]:
    """:func:`_chains` compiled by numba (from its cache on disk), once per process."""
    if not _COMPILED:
        from dlscale.kernels.jit import njit

        _COMPILED.append(njit()(_chains))
    return _COMPILED[0]


def _chains_numpy(plan_ranks: np.ndarray, plan_steps: np.ndarray, step_msgs: np.ndarray,
                  step_cost: np.ndarray, step_recv: np.ndarray, src: np.ndarray,
                  dst: np.ndarray, cls: np.ndarray, back: np.ndarray, cost: np.ndarray,
                  scale: np.ndarray, recv: np.ndarray) -> np.ndarray:
    """:func:`_chains` step by step with numpy, every case of a step at once: the same
    maxima and the same additions (a max is exact, so their order does not matter)."""
    B, J = scale.shape
    out = np.zeros((B, J))
    for j in range(J):
        p = int(plan_ranks[j])
        clock = np.zeros((B, p))
        for s in range(int(plan_steps[j]), int(plan_steps[j + 1])):
            m0, m1, c0 = int(step_msgs[s]), int(step_msgs[s + 1]), int(step_cost[s])
            a, d, bk = src[m0:m1], dst[m0:m1], back[m0:m1]
            t = np.maximum(clock[:, a], clock[:, d])
            arrive = t + cost[:, c0 + cls[m0:m1]]
            two = bk >= 0
            if two.any():
                arrive[:, two] = np.maximum(arrive[:, two], t[:, two] + cost[:, c0 + bk[two]])
            new = clock.copy()
            np.maximum.at(new.T, a, arrive.T)
            np.maximum.at(new.T, d, arrive.T)
            r0 = int(step_recv[s])
            if r0 >= 0:
                new = new + scale[:, j:j + 1] * recv[r0:r0 + p]
            clock = new
        out[:, j] = clock.max(axis=1)
    return out


def _chains(plan_ranks: np.ndarray, plan_steps: np.ndarray, step_msgs: np.ndarray,
            step_cost: np.ndarray, step_recv: np.ndarray, src: np.ndarray, dst: np.ndarray,
            cls: np.ndarray, back: np.ndarray, cost: np.ndarray, scale: np.ndarray,
            recv: np.ndarray) -> np.ndarray:
    B, J = scale.shape
    out = np.zeros((B, J))
    width = plan_ranks.max() if J else 0
    clock = np.zeros(width)
    new = np.zeros(width)
    for j in range(J):
        p = plan_ranks[j]
        for b in range(B):
            clock[:p] = 0.0
            for s in range(plan_steps[j], plan_steps[j + 1]):
                new[:p] = clock[:p]
                c0 = step_cost[s]
                for m in range(step_msgs[s], step_msgs[s + 1]):
                    a, d = src[m], dst[m]
                    t = max(clock[a], clock[d])
                    arrive = t + cost[b, c0 + cls[m]]
                    if back[m] >= 0:
                        arrive = max(arrive, t + cost[b, c0 + back[m]])
                    new[a] = max(new[a], arrive)
                    new[d] = max(new[d], arrive)
                r0 = step_recv[s]
                if r0 >= 0:
                    k = scale[b, j]
                    for r in range(p):
                        new[r] = new[r] + k * recv[r0 + r]
                clock, new = new, clock
            top = clock[0]
            for r in range(1, p):
                top = max(top, clock[r])
            out[b, j] = top
    return out
