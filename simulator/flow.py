"""Flow-level network model: max-min fair sharing of link bandwidth, in SimPy.

The model SimGrid uses for its LV08/CM02 network models (Velho and Legrand 2009;
Casanova et al. 2014), without SimGrid's empirical bandwidth/latency factors: a
message first waits the latency of its path, then becomes a flow whose rate is its
max-min fair share of every directed link on its path (progressive filling,
Bertsekas and Gallager, "Data Networks", 6.5.2). Rates are recomputed whenever a flow
starts or ends; flows starting at the same simulated instant are batched into one
recomputation.

Examples
--------
Two flows share link 0; the second also crosses link 1, which is slower:

>>> links = np.array([[0, -1], [0, 1]])
>>> maxmin_rates(links, np.array([10.0, 3.0])).tolist()
[7.0, 3.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

__all__ = ["FlowNetwork", "maxmin_rates"]


def maxmin_rates(links: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Max-min fair rates of flows over links (progressive filling).

    Parameters
    ----------
    links : ndarray of int, shape (F, H)
        Link ids of each flow, ``-1`` padding.
    capacity : ndarray of float, shape (L,)
        Capacity of each link.

    Returns
    -------
    ndarray of float, shape (F,)
        Rate of each flow; ``inf`` for a flow that crosses no link.

    Examples
    --------
    >>> maxmin_rates(np.array([[0], [0], [-1]]), np.array([4.0])).tolist()
    [2.0, 2.0, inf]
    """
    F = links.shape[0]
    rate = np.full(F, np.inf)
    valid = links >= 0
    flow_of = np.nonzero(valid)[0]
    link_of = links[valid]
    if len(link_of) == 0:
        return rate
    L = len(capacity)
    cap = capacity.astype(float).copy()
    frozen = np.zeros(F, dtype=bool)
    frozen[~valid.any(axis=1)] = True
    active_entry = np.ones(len(link_of), dtype=bool)
    while not frozen.all():
        count = np.bincount(link_of[active_entry], minlength=L)
        used = count > 0
        share = np.full(L, np.inf)
        share[used] = cap[used] / count[used]
        m = share.min()
        bottleneck = share <= m * (1 + 1e-12)
        hit = np.zeros(F, dtype=bool)
        hit[flow_of[active_entry & bottleneck[link_of]]] = True
        rate[hit] = m
        frozen |= hit
        sel = hit[flow_of]
        cap -= np.bincount(link_of[sel], minlength=L) * m
        cap = np.maximum(cap, 0.0)
        active_entry &= ~sel
    return rate


class FlowNetwork:
    """Messages as flows sharing link capacity max-min fairly, driven by a SimPy env.

    Parameters
    ----------
    env : simpy.Environment
        The simulation clock.
    capacity_Bps : ndarray
        Capacity of each directed link.
    on_rates : callable, optional
        ``on_rates(time_s, link_rate_Bps)`` called after each recomputation with the
        total rate on every link (for traces).

    Examples
    --------
    >>> env = simpy.Environment()
    >>> net = FlowNetwork(env, np.array([1e9]))
    >>> a = net.transfer(np.array([0]), 1e9, 1e-6)
    >>> b = net.transfer(np.array([0]), 1e9, 1e-6)
    >>> env.run()
    >>> round(env.now, 6)
    2.000001
    """

    def __init__(self, env: simpy.Environment, capacity_Bps: np.ndarray,
                 on_rates: Callable[[float, np.ndarray], None] | None = None) -> None:
        self.env = env
        self.capacity = np.asarray(capacity_Bps, dtype=float)
        self.on_rates = on_rates
        self._links = np.empty((0, 1), dtype=np.int64)
        self._rem = np.empty(0)
        self._size = np.empty(0)
        self._rate = np.empty(0)
        self._events: list[simpy.Event] = []
        self._pending: list[tuple[np.ndarray, float, simpy.Event]] = []
        self._last = 0.0
        self._gen = 0
        self._recompute_pending = False

    def transfer(self, links: np.ndarray, nbytes: float, latency_s: float) -> simpy.Event:
        """Send ``nbytes`` over ``links`` (ids, ``-1`` ignored); the event fires on arrival."""
        done = self.env.event()
        links = np.asarray(links, dtype=np.int64)
        links = links[links >= 0]
        start = self.env.timeout(latency_s)
        if nbytes <= 0 or len(links) == 0:
            start.callbacks.append(lambda _ev: done.succeed())
        else:
            start.callbacks.append(lambda _ev: self._add(links, float(nbytes), done))
        return done

    def _advance(self) -> None:
        dt = self.env.now - self._last
        if dt > 0 and len(self._rem):
            self._rem -= self._rate * dt
        self._last = self.env.now

    def _add(self, links: np.ndarray, nbytes: float, done: simpy.Event) -> None:
        self._pending.append((links, nbytes, done))
        if not self._recompute_pending:
            self._recompute_pending = True
            self.env.timeout(0).callbacks.append(lambda _ev: self._recompute())

    def _recompute(self) -> None:
        self._recompute_pending = False
        self._advance()
        if self._pending:
            H = max(self._links.shape[1], max(len(p[0]) for p in self._pending))
            new = np.full((len(self._pending), H), -1, dtype=np.int64)
            for i, (lk, _, _) in enumerate(self._pending):
                new[i, : len(lk)] = lk
            old = np.full((len(self._rem), H), -1, dtype=np.int64)
            old[:, : self._links.shape[1]] = self._links
            self._links = np.concatenate([old, new])
            sizes = np.array([p[1] for p in self._pending])
            self._rem = np.concatenate([self._rem, sizes])
            self._size = np.concatenate([self._size, sizes])
            self._events.extend(p[2] for p in self._pending)
            self._pending = []
        self._rate = maxmin_rates(self._links, self.capacity)
        if self.on_rates is not None:
            valid = self._links >= 0
            load = np.bincount(self._links[valid], weights=np.broadcast_to(
                self._rate[:, None], self._links.shape)[valid], minlength=len(self.capacity))
            self.on_rates(self.env.now, load)
        self._schedule()

    def _schedule(self) -> None:
        self._gen += 1
        if not len(self._rem):
            return
        dt = float(np.min(self._rem / self._rate))
        gen = self._gen
        self.env.timeout(max(dt, 0.0)).callbacks.append(lambda _ev: self._complete(gen))

    def _complete(self, gen: int) -> None:
        if gen != self._gen:
            return
        self._advance()
        done = self._rem <= np.maximum(1e-9 * self._size, 1e-6)
        if not done.any():  # rounding: finish the nearest one
            done = self._rem / self._rate <= np.min(self._rem / self._rate) * (1 + 1e-9)
        keep = ~done
        finished = [ev for ev, d in zip(self._events, done, strict=True) if d]
        self._links = self._links[keep]
        self._rem = self._rem[keep]
        self._size = self._size[keep]
        self._events = [ev for ev, k in zip(self._events, keep, strict=True) if k]
        for ev in finished:
            ev.succeed()
        if self._recompute_pending:  # a batch is starting now; it recomputes for us
            self._rate = self._rate[keep]
            return
        self._rate = maxmin_rates(self._links, self.capacity) if len(self._rem) else self._rate[keep]
        if self.on_rates is not None:
            self._recompute_pending = True
            self._recompute()
            return
        self._schedule()
