"""A processor-sharing pipe in SimPy: a link or memory shared by concurrent transfers.

The Hogwild master takes no lock, so several workers' messages cross its link at
once, each at ``rate / n`` while ``n`` are in flight, and several update threads
share its memory bandwidth the same way (processor sharing, the fluid model of a
fairly shared link). A locked master is a ``simpy.Resource`` of capacity 1 instead.

Examples
--------
>>> import simpy
>>> env = simpy.Environment()
>>> pipe = SharedPipe(env, rate=1.0)
>>> done = []
>>> def job(env, amount):
...     yield pipe.transfer(amount)
...     done.append((amount, env.now))
>>> _ = env.process(job(env, 1.0)); _ = env.process(job(env, 2.0))
>>> env.run()
>>> done   # both at rate 1/2 until t=2, then the second alone
[(1.0, 2.0), (2.0, 3.0)]
"""

from __future__ import annotations

import heapq
import itertools

import simpy

__all__ = ["SharedPipe"]


class SharedPipe:
    """Processor sharing of ``rate`` units per second among the transfers in flight.

    ``max_share`` caps the rate of one transfer (a thread on one core cannot draw
    the whole chip's memory bandwidth).

    Attributes
    ----------
    busy_s : float
        Time with at least one transfer in flight.
    served : int
        Transfers completed.
    peak : int
        Most transfers in flight at once.
    """

    def __init__(self, env: simpy.Environment, rate: float,
                 max_share: float | None = None) -> None:
        if not rate > 0:
            raise ValueError(f"rate: must be > 0, got {rate!r}")
        if max_share is not None and not max_share > 0:
            raise ValueError(f"max_share: must be > 0, got {max_share!r}")
        self.env = env
        self.rate = float(rate)
        self.max_share = float(max_share) if max_share is not None else float(rate)
        # virtual work V(t): what one transfer has received since t = 0 if it had been
        # in flight all along; a transfer of ``a`` started at V0 ends when V = V0 + a.
        self._heap: list[tuple[float, int, float, simpy.Event]] = []
        self._ids = itertools.count()
        self._v = 0.0
        self._last = env.now
        self._version = 0
        self.busy_s = 0.0
        self.served = 0
        self.peak = 0

    @property
    def in_flight(self) -> int:
        """Transfers in flight now."""
        return len(self._heap)

    def _share(self, n: int) -> float:
        """Rate of each of ``n`` transfers in flight."""
        return min(self.rate / n, self.max_share)

    def _advance(self) -> None:
        now = self.env.now
        n = len(self._heap)
        if n:
            self._v += self._share(n) * (now - self._last)
            self.busy_s += now - self._last
        self._last = now

    def transfer(self, amount: float) -> simpy.Event:
        """An event that fires when ``amount`` units have gone through."""
        self._advance()
        ev = self.env.event()
        if amount <= 0:
            ev.succeed()
            return ev
        heapq.heappush(self._heap, (self._v + float(amount), next(self._ids), float(amount), ev))
        self.peak = max(self.peak, len(self._heap))
        self._schedule()
        return ev

    def _schedule(self) -> None:
        h = self._heap
        while h and h[0][0] - self._v <= 1e-9 * h[0][2]:
            heapq.heappop(h)[3].succeed()
            self.served += 1
        if not h:
            return
        dt = (h[0][0] - self._v) / self._share(len(h))
        self._version += 1
        v = self._version
        t = self.env.timeout(max(dt, 0.0), value=v)
        t.callbacks.append(self._wake)

    def _wake(self, ev: simpy.Event) -> None:
        if ev.value != self._version:
            return
        self._advance()
        self._schedule()
