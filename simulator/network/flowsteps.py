"""Flow mode without events where messages cannot meet: each step evaluated rank by rank.

In flow mode (:mod:`dlscale.simulator.network.flowmode`) a message starts when both
its ends have entered its step, and a rank enters its next step when every message of
its step is delivered (and it has reduced what it received). A message's duration
depends on the others only through the links it shares with messages in flight at the
same time. Two messages can never be in flight together when they are in different
steps and share a rank (that rank finishes the earlier step, which waits for the
earlier message's delivery, before it posts the later one). So when every link is
crossed by messages that pairwise share a rank and belong to different phases
(:func:`independent`; a ring on a linear placement: each link carries the same
neighbour message in every step), each message takes exactly what it takes alone, and
the run is the recurrence (:func:`run_steps`)::

    start(m)     = max(E[src m], E[dst m])            # both ends have entered the step
    F[r]         = max over r's messages m of start(m) + duration(m)
    E[r]        <- F[r] + reduce(r)                   # ranks without messages: unchanged
    step_end[k]  = max over the step's ranks of E[r]

``duration(m)`` is the message alone, from the event engine itself
(:func:`~dlscale.simulator.network.flowengine.message_durations`: one step of each
phase, every rank at time 0; its subflows share links only with each other), so the
answer is the event engine's, up to the rounding of ``start + duration`` against the
engine's ``(start + latency) + bytes / rate`` (tested against both engines). One step
costs one pass over its messages: a ring of ``p`` ranks costs ``2 p (p - 1)`` additions,
about a second at 16,384 ranks, where the event loop took minutes.

Examples
--------
>>> import numpy as np
>>> src, dst = np.array([0, 1]), np.array([1, 0])   # one exchange, 1 s and 2 s
>>> act_off, act = phase_ranks(np.array([0, 2, 4]), 1, 2)
>>> ends = run_steps(np.array([0, 0]), np.array([0, 2]), src, dst, np.array([1.0, 2.0]),
...                  np.zeros((1, 2)), act_off, act, 1 << 20)
>>> ends.tolist()                                    # both wait for the slower message
[2.0, 4.0]
"""

from __future__ import annotations

import numpy as np
from numba import objmode

from dlscale.kernels.jit import njit
from dlscale.simulator.network.flowwatch import poll

__all__ = ["independent", "phase_ranks", "run_steps"]

#: Relative tolerance of "every rank moved by the same time" (rounding of one step).
RTOL = 1e-12
#: Steps between two such checks.
CHECK = 8
#: Links crossed by more distinct messages than this are not checked pair by pair
#: (the schedule is run by the event engine).
MAX_PER_LINK = 16


def independent(msg_off: np.ndarray, msg_src: np.ndarray, msg_dst: np.ndarray,
                sub_off: np.ndarray, sub_msg: np.ndarray, sub_links: np.ndarray,
                sub_bytes: np.ndarray) -> bool:
    """Whether no two messages that can be in flight together share a link.

    Arrays as in :class:`~dlscale.simulator.network.flowengine.CompiledSchedule`; a
    subflow of no bytes occupies no link (it is delivered after its latency).
    """
    P = len(msg_off) - 1
    if P == 0 or len(sub_msg) == 0:
        return True
    sub_phase = np.repeat(np.arange(P), np.diff(sub_off))
    gm = msg_off[sub_phase] + sub_msg
    H = sub_links.shape[1]
    links = sub_links.ravel()
    owner = np.repeat(gm, H)
    sel = (links >= 0) & np.repeat(sub_bytes > 0, H)
    if not sel.any():
        return True
    pairs = np.unique(np.stack([links[sel], owner[sel]]), axis=1)   # sorted by link
    msg_phase = np.repeat(np.arange(P), np.diff(msg_off))
    return bool(_compatible(pairs[0], pairs[1], msg_phase, msg_src, msg_dst, MAX_PER_LINK))


@njit()
def _compatible(link, gm, msg_phase, msg_src, msg_dst, max_per_link):
    """Every two messages on one link: other phases and a rank in common."""
    n = len(link)
    i = 0
    while i < n:
        j = i
        while j < n and link[j] == link[i]:
            j += 1
        if j - i > max_per_link:
            return False
        for a in range(i, j):
            for b in range(a + 1, j):
                x, y = gm[a], gm[b]
                if msg_phase[x] == msg_phase[y]:
                    return False
                if not (msg_src[x] == msg_src[y] or msg_src[x] == msg_dst[y]
                        or msg_dst[x] == msg_src[y] or msg_dst[x] == msg_dst[y]):
                    return False
        i = j
    return True


def phase_ranks(rank_off: np.ndarray, n_phases: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """The ranks with messages in each phase, CSR: ``act[act_off[p]:act_off[p + 1]]``."""
    per = np.diff(rank_off.reshape(n_phases, R + 1), axis=1) > 0 if n_phases else \
        np.zeros((0, R), bool)
    act_off = np.concatenate([[0], np.cumsum(per.sum(axis=1))]).astype(np.int64)
    return act_off, np.nonzero(per)[1].astype(np.int64)


@njit()
def _step(p, E, F, msg_off, msg_src, msg_dst, duration, reduce_s, act_off, act):
    """One step of phase ``p`` (``E`` updated in place); returns its latest end."""
    for i in range(msg_off[p], msg_off[p + 1]):
        t = max(E[msg_src[i]], E[msg_dst[i]]) + duration[i]
        F[msg_src[i]] = max(F[msg_src[i]], t)
        F[msg_dst[i]] = max(F[msg_dst[i]], t)
    end = 0.0
    for j in range(act_off[p], act_off[p + 1]):
        r = act[j]
        E[r] = F[r] + reduce_s[p, r]
        F[r] = -np.inf
        end = max(end, E[r])
    return end


@njit()
def _shifted(E, prev):
    """``lam`` when ``E == prev + lam`` for every rank (to :data:`RTOL`), else -1."""
    lo, hi = np.inf, -np.inf
    for r in range(len(E)):
        d = E[r] - prev[r]
        lo, hi = min(lo, d), max(hi, d)
    return hi if hi > 0.0 and hi - lo <= RTOL * hi else -1.0


@njit()
def run_steps(step_phase, msg_off, msg_src, msg_dst, duration, reduce_s, act_off, act,
              poll_work):
    """Each step's latest end by the recurrence of the module docstring.

    Within a run of steps of one phase, the recurrence is one max-plus map ``T`` applied
    again and again, and ``T(x + c) = T(x) + c``: once a step moves every rank by the
    same ``lam`` (checked every :data:`CHECK` steps, to :data:`RTOL`), every later step
    of the run does too, and the rest of the run is added at once.

    Parameters
    ----------
    step_phase, msg_off, msg_src, msg_dst : ndarray of int64
        As in :class:`~dlscale.simulator.network.flowengine.CompiledSchedule`.
    duration : ndarray of float64
        Seconds each message takes alone (index ``msg_off[p] + m``).
    reduce_s : ndarray of float64, shape (P, R)
        Seconds rank ``r`` reduces after a step of phase ``p``.
    act_off, act : ndarray of int64
        The ranks with messages in each phase (:func:`phase_ranks`).
    poll_work : int
        Messages between two calls of :func:`~dlscale.simulator.network.flowwatch.poll`
        (progress; a stop request ends the run early).

    Returns
    -------
    ndarray of float64
        Each step's latest end (0 for a step without messages).
    """
    K, R = len(step_phase), reduce_s.shape[1]
    E, F, prev = np.zeros(R), np.full(R, -np.inf), np.zeros(R)
    step_end = np.zeros(K)
    work, done, k = 0, 0, 0
    while k < K:
        p = step_phase[k]
        check = k % CHECK == 0 and k + 1 < K and step_phase[k + 1] == p
        if check:
            prev[:] = E
        step_end[k] = _step(p, E, F, msg_off, msg_src, msg_dst, duration, reduce_s, act_off,
                            act)
        lam = _shifted(E, prev) if check else -1.0
        n = 0
        while lam > 0.0 and k + n + 1 < K and step_phase[k + n + 1] == p:
            n += 1   # the rest of the run of phase p, each step lam later
            step_end[k + n] = step_end[k] + n * lam
        E += n * lam if n else 0.0
        work += (n + 1) * (msg_off[p + 1] - msg_off[p]) + 1
        done += (n + 1) * (msg_off[p + 1] - msg_off[p])
        k += n + 1
        if work >= poll_work:
            work = 0
            with objmode(stop="int64"):
                stop = poll(done)
            if stop:
                break
    return step_end
