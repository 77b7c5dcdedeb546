"""MPI microbenchmarks the OSU way: ping-pong latency, streaming bandwidth, collectives.

Every function takes an mpi4py communicator and is called by *every* rank of it
(ranks that take no part wait in a sleeping ``Ibarrier`` loop, not in a busy-polling
``MPI_Barrier``, so on an oversubscribed host they leave the cores to the ranks
being measured). Repetitions adapt to a time budget: a warm-up run is timed, and
the repetitions per batch are chosen so that ``batches`` batches fit in the budget
(at least ``min_reps``). Each figure is the median over batches; ``spread`` is the
batches' ``(max - min) / median``.

- :func:`pingpong` -- one-way time ``round trip / 2`` between two ranks (OSU
  ``osu_latency``).
- :func:`streaming` -- a window of back-to-back ``Isend`` then one acknowledgement
  (OSU ``osu_bw``); time per message, bandwidth, and the sender's posting time per
  message (LogGP ``o``).
- :func:`exchange` -- both ranks ``Sendrecv`` at once (the step of a ring
  allreduce; OSU ``osu_bibw`` measures the same traffic as bandwidth).
- :func:`ring_exchange` -- every rank ``Sendrecv`` to its right neighbour and from
  its left one at once: one step of a ring allreduce, with all its traffic.
- :func:`collective` -- ``MPI_Allreduce``, ``Reduce_scatter_block``,
  ``Allgather``, ``Bcast``: time of the slowest rank per call, each call after a
  barrier (OSU ``osu_allreduce`` reports the average over ranks of back-to-back
  calls; the slowest is what a synchronous training step waits for).

Sizes are bytes; collectives move float32 elements, so their sizes are rounded to
whole elements (at least 4 bytes; reduce-scatter and allgather at least one
element per rank) and the bytes actually moved are what is recorded.

Examples
--------
>>> message_sizes(1, 16)
[1, 2, 4, 8, 16]
>>> collective_elements("reduce_scatter", 10, 4)
4
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError, unknown_name

__all__ = [
    "COLLECTIVES",
    "PROJECT_COLLECTIVES",
    "collective",
    "collective_elements",
    "exchange",
    "idle_wait",
    "message_sizes",
    "pingpong",
    "ring_exchange",
    "streaming",
]

#: Collectives measured, name -> how its size maps to the float32 buffers.
COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "bcast")

#: The project's own collective: :func:`dlscale.validation.mpi_ring.ring_allreduce`
#: (Python over ``Sendrecv``, what the ``sgd-ring`` training runs call), measured
#: like the MPI ones where asked for by name; not in the default set.
PROJECT_COLLECTIVES = ("ring_allreduce",)

_ACK_TAG = 77
_DATA_TAG = 78


def message_sizes(min_bytes: int = 1, max_bytes: int = 64 << 20) -> list[int]:
    """Powers of two from ``min_bytes`` to ``max_bytes`` inclusive (OSU's sizes)."""
    if not (isinstance(min_bytes, int) and isinstance(max_bytes, int) and 1 <= min_bytes <= max_bytes):
        raise ConfigError(
            f"sizes: need integers 1 <= min_bytes <= max_bytes, got {min_bytes!r}, {max_bytes!r}"
        )
    out, n = [], 1
    while n <= max_bytes:
        if n >= min_bytes:
            out.append(n)
        n *= 2
    return out


def collective_elements(name: str, n_bytes: int, p: int) -> int:
    """float32 elements of the whole vector a collective of ``n_bytes`` moves.

    A multiple of ``p`` for reduce-scatter and allgather (one block per rank).
    """
    if name not in COLLECTIVES + PROJECT_COLLECTIVES:
        raise unknown_name("collective", name, COLLECTIVES + PROJECT_COLLECTIVES)
    elems = max(1, int(n_bytes) // 4)
    if name in ("reduce_scatter", "allgather"):
        elems = max(p, elems - elems % p)
    return elems


def idle_wait(comm: Any, sleep_s: float = 2e-4) -> None:
    """Join a barrier without spinning: ``Ibarrier`` polled between short sleeps."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(sleep_s)


def _reps(one_s: float, budget_s: float, batches: int, min_reps: int, max_reps: int) -> int:
    per_batch = budget_s / max(batches, 1)
    return int(min(max_reps, max(min_reps, per_batch / max(one_s, 1e-9))))


#: Sizes a sweep measures whatever its deadline (a piecewise fit needs two).
MIN_SIZES = 2


def _order(sizes: list[int]) -> list[int]:
    """The order a sweep measures ``sizes`` in: smallest, largest, every fourth, then the
    rest, so that a sweep cut short by its deadline still spans the whole range.

    >>> _order([1, 2, 4, 8, 16, 32, 64])
    [1, 64, 16, 2, 4, 8, 32]
    """
    first = [sizes[0], sizes[-1], *sizes[4:-1:4]]
    return list(dict.fromkeys(first + sizes))


def _more(deadline: float | None, i: int, costs: dict[int, float], n: int) -> bool:
    """Whether a sweep with ``deadline`` (``time.monotonic()``) takes size ``n``, its
    ``i``-th: always the first :data:`MIN_SIZES`; after that only if ``n`` ends before
    the deadline, costed as the next larger measured size (``costs``: size -> seconds)
    or, above them all, as 2.5 times the largest (sizes double)."""
    if deadline is None or i < MIN_SIZES:
        return True
    above = [c for m, c in costs.items() if m >= n]
    est = min(above) if above else 2.5 * costs[max(costs)] if costs else 0.0
    return time.monotonic() + est <= deadline


def _sorted(out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with its per-size lists in increasing size order."""
    idx = np.argsort(out["sizes_bytes"], kind="stable")
    for key, value in out.items():
        if isinstance(value, list) and len(value) == len(idx):
            out[key] = [value[i] for i in idx]
    return out


def _from_a(comm: Any, is_a: bool, peer: int, value: Any) -> Any:
    """Both ranks of a pair get rank ``a``'s ``value``."""
    got = comm.sendrecv(value, dest=peer, source=peer)
    return value if is_a else got


def _summary(samples: list[float]) -> tuple[float, float]:
    arr = np.asarray(samples, dtype=np.float64)
    med = float(np.median(arr))
    return med, float((arr.max() - arr.min()) / med) if med > 0 else 0.0


def pingpong(comm: Any, a: int, b: int, sizes: list[int], budget_s: float,
             batches: int = 5, min_reps: int = 2, max_reps: int = 10000,
             deadline: float | None = None) -> dict[str, Any]:
    """One-way latency between ranks ``a`` and ``b`` per size (call on every rank).

    Returns ``{"sizes_bytes", "one_way_s", "spread", "reps"}`` on ``a`` and ``b``;
    on every other rank the same keys with empty lists. ``budget_s`` is for the
    whole size sweep; with ``deadline`` (``time.monotonic()``, rank ``a``'s) the sweep
    stops at the first size that would end after it (:func:`_more`), so fewer sizes
    may come back.
    """
    me = comm.Get_rank()
    out: dict[str, Any] = {"sizes_bytes": [], "one_way_s": [], "spread": [], "reps": []}
    if me not in (a, b):
        idle_wait(comm)
        return out
    peer = b if me == a else a
    buf = np.zeros(max(sizes), dtype=np.uint8)
    per_size = budget_s / len(sizes)
    costs: dict[int, float] = {}
    for i, n in enumerate(_order(sizes)):
        if not _from_a(comm, me == a, peer, _more(deadline, i, costs, n)):
            break
        began = time.perf_counter()
        view = buf[:n]

        def trip(reps: int, view: np.ndarray = view) -> float:
            t0 = time.perf_counter()
            for _ in range(reps):
                if me == a:
                    comm.Send(view, dest=peer, tag=_DATA_TAG)
                    comm.Recv(view, source=peer, tag=_DATA_TAG)
                else:
                    comm.Recv(view, source=peer, tag=_DATA_TAG)
                    comm.Send(view, dest=peer, tag=_DATA_TAG)
            return (time.perf_counter() - t0) / (2 * reps)

        trip(1)  # warm-up (connection setup, page faults)
        one = trip(1)
        reps = _reps(2 * one, per_size, batches, min_reps, max_reps)
        reps = _from_a(comm, me == a, peer, reps)
        samples = [trip(reps) for _ in range(batches)]
        med, spread = _summary(samples)
        out["sizes_bytes"].append(n)
        out["one_way_s"].append(med)
        out["spread"].append(spread)
        out["reps"].append(reps)
        costs[n] = time.perf_counter() - began
    idle_wait(comm)
    return _sorted(out)


def streaming(comm: Any, a: int, b: int, sizes: list[int], budget_s: float,
              window: int = 64, batches: int = 3, min_reps: int = 1,
              max_reps: int = 2000, window_bytes: int = 8 << 20,
              deadline: float | None = None) -> dict[str, Any]:
    """Streaming bandwidth from rank ``a`` to rank ``b`` (OSU ``osu_bw``).

    ``a`` posts a window of ``Isend`` (at most ``window`` messages and
    ``window_bytes`` bytes, at least one), ``b`` the matching ``Irecv``; after
    ``Waitall`` ``b`` sends a 1-byte acknowledgement. Returns
    ``{"sizes_bytes", "per_msg_s", "bandwidth_Bps", "spread", "send_overhead_s"}``
    (the last: ``a``'s time to post one ``Isend`` of the smallest size) on ``a``
    and ``b``, empty lists elsewhere. ``deadline``: as :func:`pingpong`'s.
    """
    me = comm.Get_rank()
    out: dict[str, Any] = {"sizes_bytes": [], "per_msg_s": [], "bandwidth_Bps": [],
                           "spread": [], "send_overhead_s": 0.0}
    if me not in (a, b):
        idle_wait(comm)
        return out
    peer = b if me == a else a
    buf = np.zeros(max(sizes), dtype=np.uint8)
    ack = np.zeros(1, dtype=np.uint8)
    per_size = budget_s / len(sizes)
    post_s: list[float] = []
    costs: dict[int, float] = {}
    for i, n in enumerate(_order(sizes)):
        if not _from_a(comm, me == a, peer, _more(deadline, i, costs, n)):
            break
        began = time.perf_counter()
        w = int(max(1, min(window, window_bytes // max(n, 1))))
        view = buf[:n]

        def burst(reps: int, view: np.ndarray = view, w: int = w) -> float:
            t0 = time.perf_counter()
            for _ in range(reps):
                if me == a:
                    tp = time.perf_counter()
                    reqs = [comm.Isend(view, dest=peer, tag=_DATA_TAG) for _ in range(w)]
                    post_s.append((time.perf_counter() - tp) / w)
                    _waitall(reqs)
                    comm.Recv(ack, source=peer, tag=_ACK_TAG)
                else:
                    reqs = [comm.Irecv(view, source=peer, tag=_DATA_TAG) for _ in range(w)]
                    _waitall(reqs)
                    comm.Send(ack, dest=peer, tag=_ACK_TAG)
            return (time.perf_counter() - t0) / (reps * w)

        burst(1)
        one = burst(1) * w
        reps = _reps(one, per_size, batches, min_reps, max_reps)
        reps = _from_a(comm, me == a, peer, reps)
        if n == sizes[0]:
            post_s.clear()
        samples = [burst(reps) for _ in range(batches)]
        med, spread = _summary(samples)
        out["sizes_bytes"].append(n)
        out["per_msg_s"].append(med)
        out["bandwidth_Bps"].append(n / med)
        out["spread"].append(spread)
        if n == sizes[0] and me == a:
            out["send_overhead_s"] = float(np.median(post_s))
        costs[n] = time.perf_counter() - began
    out["send_overhead_s"] = _from_a(comm, me == a, peer, out["send_overhead_s"])
    idle_wait(comm)
    return _sorted(out)


def exchange(comm: Any, a: int, b: int, sizes: list[int], budget_s: float,
             batches: int = 5, min_reps: int = 2, max_reps: int = 10000,
             deadline: float | None = None) -> dict[str, Any]:
    """Time of one simultaneous ``Sendrecv`` exchange between ranks ``a`` and ``b``.

    Returns ``{"sizes_bytes", "time_s", "spread"}`` on ``a`` and ``b`` (``a``'s
    timing), empty lists on every other rank. ``deadline``: as :func:`pingpong`'s.
    """
    me = comm.Get_rank()
    out: dict[str, Any] = {"sizes_bytes": [], "time_s": [], "spread": []}
    if me not in (a, b):
        idle_wait(comm)
        return out
    peer = b if me == a else a
    send = np.zeros(max(sizes), dtype=np.uint8)
    recv = np.zeros(max(sizes), dtype=np.uint8)
    per_size = budget_s / len(sizes)
    costs: dict[int, float] = {}
    for i, n in enumerate(_order(sizes)):
        if not _from_a(comm, me == a, peer, _more(deadline, i, costs, n)):
            break
        began = time.perf_counter()
        sv, rv = send[:n], recv[:n]

        def swap(reps: int, sv: np.ndarray = sv, rv: np.ndarray = rv) -> float:
            t0 = time.perf_counter()
            for _ in range(reps):
                comm.Sendrecv(sv, dest=peer, sendtag=_DATA_TAG, recvbuf=rv, source=peer,
                              recvtag=_DATA_TAG)
            return (time.perf_counter() - t0) / reps

        swap(1)
        reps = _from_a(comm, me == a, peer, _reps(swap(1), per_size, batches, min_reps, max_reps))
        med, spread = _summary([swap(reps) for _ in range(batches)])
        out["sizes_bytes"].append(n)
        out["time_s"].append(_from_a(comm, me == a, peer, med))
        out["spread"].append(spread)
        costs[n] = time.perf_counter() - began
    idle_wait(comm)
    return _sorted(out)


def ring_exchange(comm: Any, sizes: list[int], budget_s: float, batches: int = 5,
                  min_reps: int = 2, max_reps: int = 10000,
                  deadline: float | None = None) -> dict[str, Any]:
    """Time of one ring step (all ranks ``Sendrecv`` right/left at once) per size.

    Returns ``{"ranks", "sizes_bytes", "time_s", "spread"}`` (the same on every
    rank): per size the median over batches of the slowest rank's mean time.
    ``deadline``: as :func:`pingpong`'s, rank 0's.
    """
    from mpi4py import MPI

    p, r = comm.Get_size(), comm.Get_rank()
    right, left = (r + 1) % p, (r - 1) % p
    send = np.zeros(max(sizes), dtype=np.uint8)
    recv = np.zeros(max(sizes), dtype=np.uint8)
    per_size = budget_s / len(sizes)
    out: dict[str, Any] = {"ranks": p, "sizes_bytes": [], "time_s": [], "spread": []}
    costs: dict[int, float] = {}
    for i, n in enumerate(_order(sizes)):
        if not comm.bcast(_more(deadline, i, costs, n), root=0):
            break
        began = time.perf_counter()
        sv, rv = send[:n], recv[:n]

        def step(reps: int, sv: np.ndarray = sv, rv: np.ndarray = rv) -> float:
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                comm.Sendrecv(sv, dest=right, sendtag=_DATA_TAG, recvbuf=rv, source=left,
                              recvtag=_DATA_TAG)
            return comm.allreduce((time.perf_counter() - t0) / reps, op=MPI.MAX)

        step(1)
        reps = comm.bcast(_reps(step(1), per_size, batches, min_reps, max_reps), root=0)
        med, spread = _summary([step(reps) for _ in range(batches)])
        out["sizes_bytes"].append(n)
        out["time_s"].append(med)
        out["spread"].append(spread)
        costs[n] = time.perf_counter() - began
    return _sorted(out)


def _waitall(reqs: list[Any]) -> None:
    from mpi4py import MPI  # already initialised by the caller's communicator

    MPI.Request.Waitall(reqs)


def _collective_call(comm: Any, name: str, elems: int, send: np.ndarray,
                     recv: np.ndarray) -> Callable[[], object]:
    """The call of collective ``name`` on ``elems`` float32 elements of the buffers."""
    from mpi4py import MPI

    p = comm.Get_size()
    if name == "allreduce":
        return lambda: comm.Allreduce(send[:elems], recv[:elems], op=MPI.SUM)
    if name == "ring_allreduce":
        from dlscale.validation.mpi_ring import ring_allreduce

        recv[:elems] = 0.0  # summed in place on every call: zeros stay zeros
        scratch = np.empty(elems // p + 1, np.float32)
        return lambda: ring_allreduce(comm, recv[:elems], scratch)
    if name == "reduce_scatter":
        return lambda: comm.Reduce_scatter_block(send[:elems], recv[: elems // p], op=MPI.SUM)
    if name == "allgather":
        return lambda: comm.Allgather(send[: elems // p], recv[:elems])
    return lambda: comm.Bcast(send[:elems], root=0)


def collective(comm: Any, name: str, sizes: list[int], budget_s: float,
               batches: int = 5, min_reps: int = 1, max_reps: int = 5000,
               deadline: float | None = None) -> dict[str, Any]:
    """Time of collective ``name`` per size on all ranks of ``comm``.

    Returns ``{"ranks", "sizes_bytes", "times_s", "spread", "reps"}`` (the same
    on every rank). Every call starts after a barrier and is timed on each rank;
    a batch's figure is the median over its calls of the slowest rank's time (the
    median keeps out the calls the operating system interrupted on a shared host).
    The batches go round the sizes (batch 1 of every size, then batch 2, ...), so
    a burst of load from other processes spoils one batch of several sizes rather
    than every batch of one size; the result is the median over batches. With
    ``deadline`` (rank 0's ``time.monotonic()``) a size is taken only where its
    timing run and its planned batches, with those of the sizes before it, end before
    the deadline (at least :data:`MIN_SIZES` sizes).
    """
    from mpi4py import MPI

    if name not in COLLECTIVES + PROJECT_COLLECTIVES:
        raise unknown_name("collective", name, COLLECTIVES + PROJECT_COLLECTIVES)
    p = comm.Get_size()
    elems = [collective_elements(name, n, p) for n in sizes]
    send = np.ones(max(elems), np.float32)
    recv = np.empty(max(elems), np.float32)
    calls = [_collective_call(comm, name, e, send, recv) for e in elems]

    def batch(reps: int, call: Callable[[], object]) -> float:
        local = np.empty(reps)
        for i in range(reps):
            comm.Barrier()
            t0 = time.perf_counter()
            call()
            local[i] = time.perf_counter() - t0
        slowest = np.empty(reps)
        comm.Allreduce(local, slowest, op=MPI.MAX)
        return float(np.median(slowest))

    per_size = budget_s / len(sizes)
    reps: list[int] = []
    planned = 0.0   # seconds of the batches still to run
    costs: dict[int, float] = {}
    taken: list[int] = []
    for i, k in enumerate(_order(list(range(len(sizes))))):
        if not comm.bcast(_more(None if deadline is None else deadline - planned, i, costs, k),
                          root=0):
            break
        call = calls[k]
        began = time.perf_counter()
        batch(1, call)
        t0 = time.perf_counter()
        batch(3, call)  # wall time per call, barrier and reduction of the timings included
        one = (time.perf_counter() - t0) / 3
        reps.append(comm.bcast(_reps(one, per_size, batches, min_reps, max_reps), root=0))
        planned += batches * reps[-1] * one
        costs[k] = time.perf_counter() - began + batches * reps[-1] * one  # this size in all
        taken.append(k)
    keep = sorted(range(len(taken)), key=lambda j: taken[j])
    reps = [reps[j] for j in keep]
    order = [taken[j] for j in keep]
    sizes, elems, calls = [sizes[k] for k in order], [elems[k] for k in order], \
        [calls[k] for k in order]
    samples: list[list[float]] = [[] for _ in sizes]
    for _ in range(batches):
        for i, call in enumerate(calls):
            samples[i].append(batch(reps[i], call))
    out: dict[str, Any] = {"ranks": p, "sizes_bytes": [4 * e for e in elems], "times_s": [],
                           "spread": [], "reps": reps}
    for smp in samples:
        med, spread = _summary(smp)
        out["times_s"].append(med)
        out["spread"].append(spread)
    return out
