"""Flow-level network model: max-min fair sharing of link bandwidth, in SimPy.

The model SimGrid uses for its LV08/CM02 network models (Velho and Legrand 2009;
Casanova et al. 2014), without SimGrid's empirical bandwidth/latency factors: a
message first waits the latency of its path, then becomes a flow whose rate is its
max-min fair share of every directed link on its path (progressive filling,
Bertsekas and Gallager, "Data Networks", 6.5.2). Rates are recomputed whenever flows
start or end; everything happening at one simulated instant is one recomputation.

Examples
--------
Two flows share link 0; the second also crosses link 1, which is slower:

>>> links = np.array([[0, -1], [0, 1]])
>>> maxmin_rates(links, np.array([10.0, 3.0])).tolist()
[7.0, 3.0]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

import numpy as np
import simpy

__all__ = ["FlowNetwork", "maxmin_rates"]


def maxmin_rates(links: np.ndarray, capacity: np.ndarray,
                 weights: np.ndarray | None = None,
                 penalty: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rates of flows over links (progressive filling).

    Parameters
    ----------
    links : ndarray of int, shape (F, H)
        Link ids of each flow, ``-1`` padding.
    capacity : ndarray of float, shape (L,)
        Capacity of each link.
    weights : ndarray of float, shape (F, H), optional
        Share of a flow's rate each of its links carries (1 where None; SimGrid's
        cross-traffic puts a share on the links of a message's back route): a link
        holds ``sum(weight * rate) <= capacity``.
    penalty : ndarray of float, shape (F,), optional
        Each flow's sharing penalty (1 where None): flows filled together get rates
        ``level / penalty`` (SimGrid's lmm; weight-S).

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
    w_of = None if weights is None else np.asarray(weights, dtype=float)[valid]
    pen = np.ones(F) if penalty is None else np.asarray(penalty, dtype=float)
    if penalty is not None:
        w_of = (np.ones(links.shape) if w_of is None else np.asarray(weights, dtype=float))
        w_of = (w_of / pen[:, None])[valid]           # what a unit of level costs a link
    if len(link_of) == 0:
        return rate
    L = len(capacity)
    cap = capacity.astype(float).copy()
    frozen = np.zeros(F, dtype=bool)
    frozen[~valid.any(axis=1)] = True
    active_entry = np.ones(len(link_of), dtype=bool)
    while not frozen.all():
        if w_of is None:
            count = np.bincount(link_of[active_entry], minlength=L)
        else:
            count = np.bincount(link_of[active_entry], weights=w_of[active_entry], minlength=L)
        used = count > 1e-9
        share = np.full(L, np.inf)
        share[used] = cap[used] / count[used]
        m = share.min()
        bottleneck = share <= m * (1 + 1e-12)
        hit = np.zeros(F, dtype=bool)
        hit[flow_of[active_entry & bottleneck[link_of]]] = True
        rate[hit] = m / pen[hit] if penalty is not None else m
        frozen |= hit
        sel = hit[flow_of]
        cap -= (np.bincount(link_of[sel], minlength=L) if w_of is None
                else np.bincount(link_of[sel], weights=w_of[sel], minlength=L)) * m
        cap = np.maximum(cap, 0.0)
        active_entry &= ~sel
    return rate


class FlowNetwork:
    """Messages as flows sharing link capacity max-min fairly, driven by a SimPy env.

    Message starts (after their latency) and flow completions are kept in the
    network's own queue; the SimPy environment sees one timeout per distinct instant
    at which something starts or ends, and all flows starting at one instant are
    added with one rate recomputation.

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
        self._w = np.empty((0, 1))
        self._pen = np.empty(0)
        self._rem = np.empty(0)
        self._size = np.empty(0)
        self._rate = np.empty(0)
        self._events: list[simpy.Event] = []
        self._starts: list[tuple[float, int, np.ndarray, float, simpy.Event, np.ndarray,
                                 float]] = []
        self._seq = 0
        self._last = 0.0
        self._gen = 0
        self._wake_at = math.inf
        self._t_complete: float | None = math.inf

    def transfer(self, links: np.ndarray, nbytes: float, latency_s: float,
                 weights: np.ndarray | None = None, penalty: float = 1.0) -> simpy.Event:
        """Send ``nbytes`` over ``links`` (ids, ``-1`` ignored; ``weights`` as in
        :meth:`send`); the event fires on arrival."""
        done = self.env.event()
        links = np.asarray(links, dtype=np.int64)
        w = None if weights is None else np.asarray(weights, dtype=float)[links >= 0]
        self.send(links[links >= 0], float(nbytes), latency_s, done, w, penalty)
        return done

    def send(self, links: np.ndarray, nbytes: float, latency_s: float, done: simpy.Event,
             weights: np.ndarray | None = None, penalty: float = 1.0) -> None:
        """:meth:`transfer` for valid link ids, succeeding the caller's ``done`` event;
        ``weights``: the share of the flow's rate on each link (1 where None, see
        :func:`maxmin_rates`); ``penalty``: its sharing penalty."""
        self._seq += 1
        w = np.ones(len(links)) if weights is None else np.asarray(weights, dtype=float)
        heapq.heappush(self._starts, (self.env.now + latency_s, self._seq, links, nbytes, done,
                                      w, float(penalty)))
        self._schedule()

    def _advance(self) -> None:
        dt = self.env.now - self._last
        if dt > 0 and len(self._rem):
            self._rem -= self._rate * dt
        self._last = self.env.now

    def _next_completion(self) -> float:
        """Time the next flow ends at the current rates (cached until rates change)."""
        if self._t_complete is None:
            self._t_complete = (self._last + float(np.min(self._rem / self._rate))
                                if len(self._rem) else math.inf)
        return self._t_complete

    def _schedule(self) -> None:
        t = min(self._starts[0][0] if self._starts else math.inf, self._next_completion())
        if t == math.inf or t >= self._wake_at:
            return
        self._gen += 1
        self._wake_at = t
        gen = self._gen
        self.env.timeout(max(t - self.env.now, 0.0)).callbacks.append(lambda _ev: self._wake(gen))

    def _wake(self, gen: int) -> None:
        if gen != self._gen:
            return
        self._wake_at = math.inf
        self._advance()
        due = self._t_complete
        self._t_complete = None
        changed = False
        if len(self._rem):
            done = self._rem <= np.maximum(1e-9 * self._size, 1e-6)
            if done.any():
                changed = True
                keep = ~done
                finished = [ev for ev, d in zip(self._events, done, strict=True) if d]
                self._links = self._links[keep]
                self._w = self._w[keep]
                self._pen = self._pen[keep]
                self._rem = self._rem[keep]
                self._size = self._size[keep]
                self._events = [ev for ev, k in zip(self._events, keep, strict=True) if k]
                for ev in finished:
                    ev.succeed()
        now = self.env.now
        new = []
        while self._starts and self._starts[0][0] <= now:
            _, _, links, nbytes, ev, w, pen = heapq.heappop(self._starts)
            if nbytes <= 0 or len(links) == 0:
                ev.succeed()
            else:
                new.append((links, nbytes, ev, w, pen))
        if new:
            changed = True
            H = max(self._links.shape[1], max(len(p[0]) for p in new))
            block = np.full((len(new), H), -1, dtype=np.int64)
            wblock = np.zeros((len(new), H))
            for i, (lk, _, _, w, _) in enumerate(new):
                block[i, : len(lk)] = lk
                wblock[i, : len(lk)] = w
            old = np.full((len(self._rem), H), -1, dtype=np.int64)
            old[:, : self._links.shape[1]] = self._links
            wold = np.zeros((len(self._rem), H))
            wold[:, : self._w.shape[1]] = self._w
            self._links = np.concatenate([old, block])
            self._w = np.concatenate([wold, wblock])
            self._pen = np.concatenate([self._pen, [p[4] for p in new]])
            sizes = np.array([p[1] for p in new])
            self._rem = np.concatenate([self._rem, sizes])
            self._size = np.concatenate([self._size, sizes])
            self._events.extend(p[2] for p in new)
        if changed:
            self._rate = (maxmin_rates(self._links, self.capacity, self._w,
                                       self._pen if (self._pen != 1.0).any() else None)
                          if len(self._rem) else self._rate[:0])
            if self.on_rates is not None:
                valid = self._links >= 0
                load = np.bincount(self._links[valid], weights=(self._rate[:, None] * self._w)[valid],
                                   minlength=len(self.capacity))
                self.on_rates(now, load)
        elif len(self._rem) and due is not None and now >= due * (1 - 1e-12):
            # a completion was due but rounding left the nearest flow a hair short
            near = self._rem / self._rate <= float(np.min(self._rem / self._rate)) * (1 + 1e-9)
            self._rem = np.where(near, 0.0, self._rem)
            self._wake_at = now
            self._gen += 1
            gen2 = self._gen
            self.env.timeout(0).callbacks.append(lambda _ev: self._wake(gen2))
            return
        self._schedule()
