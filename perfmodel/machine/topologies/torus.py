"""The n-dimensional torus with one node per router (BlueGene, Tofu style): its
description, its graph and its dimension-order router -- the whole family, registered
as :data:`FAMILY`.

Router ``i`` has mixed-radix coordinates with dimension 0 varying fastest. A dimension
of size 2 has its two links (the + and the - port reach the same neighbour) as one
edge of twice the bandwidth and ``multiplicity`` 2; a dimension of size 1 has none.
Hosts carry a ``order`` attribute: their position on a boustrophedon ("snake")
walk of the torus, so consecutive positions are neighbours (topology-aware placement).

Only the routers that a dimension-order route between two of the hosts can cross are
built (:func:`torus_extent`): a job on the first hosts of a large torus gets the
routers of its own box, not the whole machine. Router labels are then
``hosts + `` the router's index in that box (mixed radix over the coordinates kept in
each dimension), the same as its index in the torus when the box is the whole torus.

Examples
--------
>>> G = torus_graph((4, 4))
>>> G.number_of_nodes(), sum(1 for *_, lvl in G.edges(data="level") if lvl == "torus")
(32, 32)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.topologies.family import Family

if TYPE_CHECKING:
    import networkx as nx

    from dlscale.perfmodel.machine.hardware import Cluster

__all__ = ["FAMILY", "Torus", "TorusRouter", "box_index", "snake_order",
           "snake_position", "torus_extent", "torus_graph", "torus_router_index"]


@dataclass(frozen=True)
class Torus:
    """An n-dimensional torus with one node per router (BlueGene, Tofu style)."""

    dims: tuple[int, ...]
    family: str = field(default="torus", init=False)

    def __post_init__(self) -> None:
        if not self.dims or any(d <= 0 for d in self.dims):
            raise ConfigError(f"torus.dims: must be positive integers, got {self.dims!r}")

    @property
    def max_nodes(self) -> int:
        return math.prod(self.dims)

    def with_link_efficiency(self, efficiency: float) -> Torus:
        """The same network with its own link bandwidths scaled by ``efficiency``: it has none."""
        return self

    def without_speeds(self) -> Torus:
        """The same shape with no link speeds of its own: it has none."""
        return self

    def level_bandwidths(self, link_Bps: float) -> dict[str, float]:
        """One level, ``torus``: the router-to-router links run the network's link."""
        return {"torus": link_Bps}

    def bisection_Bps(self, injection_Bps: float, link_Bps: float) -> float:
        """The links cut across the largest dimension (two per ring with wrap-around)."""
        k = max(self.dims)
        rings = math.prod(self.dims) // k
        return float(min(injection_Bps, (2 if k > 2 else 1) * rings * link_Bps))

    def shape(self) -> str:
        """``", 4x4x8"``."""
        return ", " + "x".join(str(d) for d in self.dims)


# -- the graph (the simulator's network) --

def snake_position(routers: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """Position of routers (by index, dimension 0 fastest) on a boustrophedon walk.

    Consecutive positions are neighbours on the mesh, so a ring in this order uses
    one hop per step. Arithmetic on the coordinates: no walk of the whole torus.

    Parameters
    ----------
    routers : ndarray of int
        Router indices.
    dims : tuple of int
        Routers per dimension.

    Examples
    --------
    >>> snake_position(np.arange(6), (3, 2)).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    r = np.asarray(routers, dtype=np.int64)
    sizes = np.cumprod((1, *dims))            # routers in the first k dimensions
    # position = A + B * (position in the sub-walk of the dimensions below), B = +-1:
    # the sub-walk runs backwards under an odd coordinate
    A = np.zeros(len(r), dtype=np.int64)
    B = np.ones(len(r), dtype=np.int64)
    for k in range(len(dims) - 1, -1, -1):
        c = (r // sizes[k]) % dims[k]
        odd = c % 2 == 1
        A += B * (c * sizes[k] + odd * (sizes[k] - 1))
        B = np.where(odd, -B, B)
    return A


def snake_order(dims: tuple[int, ...]) -> np.ndarray:
    """Position of each router on a boustrophedon walk (dimension 0 fastest).

    Parameters
    ----------
    dims : tuple of int
        Routers per dimension.

    Examples
    --------
    >>> snake_order((3, 2)).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    return snake_position(np.arange(math.prod(dims)), dims)


def _arcs(values: np.ndarray, d: int) -> np.ndarray:
    """Coordinates of a ring of ``d`` on the shorter way between any two of ``values``
    (both ways round at a tie: the two directions of a pair may take either)."""
    covered = np.zeros(d, dtype=bool)
    covered[values] = True
    for a in values.tolist():
        delta = (values - a) % d
        fwd = delta[delta <= d // 2].max(initial=0)            # forward arcs from a
        back = (d - delta[delta >= d - d // 2]).max(initial=0) if d > 1 else 0
        covered[(a + np.arange(fwd + 1)) % d] = True
        covered[(a - np.arange(back + 1)) % d] = True
    return np.flatnonzero(covered)


def torus_extent(dims: tuple[int, ...], hosts: int) -> tuple[np.ndarray, ...]:
    """Per dimension, the coordinates a dimension-order route between hosts
    ``0..hosts-1`` (host ``i`` on router ``i``) can cross.

    A route moves dimension 0 first, then 1, ...; every router on it has, in each
    dimension, a coordinate on the shorter arc between the source's and the
    destination's, so the box of these arcs holds every route.

    Parameters
    ----------
    dims : tuple of int
        Routers per dimension.
    hosts : int
        Hosts in use, on routers ``0..hosts-1``.

    Returns
    -------
    tuple of ndarray of int
        Sorted coordinates kept in each dimension.

    Examples
    --------
    >>> [c.tolist() for c in torus_extent((1000, 1000, 1000), 2)]
    [[0, 1], [0], [0]]
    >>> [c.tolist() for c in torus_extent((8, 4), 10)]
    [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1]]
    """
    out = []
    stride = 1
    for d in dims:
        # coordinates of hosts 0..hosts-1 in this dimension: all of 0..d-1 once the
        # hosts span a full ring of it, else the first ones
        span = -(-hosts // stride)
        values = np.arange(min(d, span), dtype=np.int64)
        out.append(_arcs(values, d))
        stride *= d
    return tuple(out)


def torus_graph(
    dims: tuple[int, ...],
    hosts: int | None = None,
    *,
    host_bandwidth_Bps: float = 12.5e9,
    link_bandwidth_Bps: float = 12.5e9,
    host_latency_s: float = 0.5e-6,
    hop_latency_s: float = 100e-9,
) -> nx.Graph:
    """Return the torus with dimensions ``dims`` and ``hosts`` hosts (default all).

    Host ``i`` attaches to the router of torus index ``i``; only the routers that a
    route between two hosts can cross are built (see the module docstring).

    Parameters
    ----------
    dims : tuple of int
        Routers per dimension (a ring of 2 is one link of multiplicity 2).
    hosts : int, optional
        Hosts to attach, in snake order (default: one per router).
    host_bandwidth_Bps, link_bandwidth_Bps : float, optional
        Host link and router-to-router link, per direction.
    host_latency_s, hop_latency_s : float, optional
        Latency of a host link and of a router hop.

    Returns
    -------
    networkx.Graph
        Hosts ``0..hosts-1`` and routers; edges with ``bandwidth_Bps``,
        ``latency_s``, ``level`` (``"host"``, ``"torus"``); the dimension-order
        router's description in ``G.graph["routing"]``.

    Raises
    ------
    ConfigError
        A non-positive dimension, ``hosts`` outside ``1..prod(dims)``, or a bad link
        figure.

    Examples
    --------
    >>> G = torus_graph((2, 3), hosts=4)
    >>> G.number_of_nodes(), G.edges[4, 5]["multiplicity"]   # routers with y = 2 not needed
    (8, 2)
    >>> torus_graph((1000, 1000, 1000), hosts=2).number_of_nodes()   # not 10^9 routers
    4
    """
    import networkx as nx

    dims = tuple(dims)
    if not dims or any(not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in dims):
        raise ConfigError(f"torus.dims: must be positive integers, got {dims!r}")
    total = math.prod(dims)
    n = total if hosts is None else hosts
    if not isinstance(n, int) or n < 1 or n > total:
        raise ConfigError(f"hosts: must be an integer in 1..{total}, got {n!r}")
    if not (host_bandwidth_Bps > 0 and link_bandwidth_Bps > 0):
        raise ConfigError("torus: host_bandwidth_Bps and link_bandwidth_Bps must be > 0")
    coords = torus_extent(dims, n)
    size = tuple(len(c) for c in coords)
    built = math.prod(size)
    G = nx.Graph(family="torus")
    G.graph["routing"] = {"family": "torus", "dims": dims, "hosts": n,
                          "coords": [c.tolist() for c in coords]}
    order = snake_position(np.arange(n), dims)
    for i in range(n):
        G.add_node(i, kind="host", order=int(order[i]))
    G.add_nodes_from(range(n, n + built), kind="router")
    box = np.arange(built)
    cs, pos, bstride = [], [], 1
    for d, c, k in zip(dims, coords, size, strict=True):
        cs.append(c[(box // bstride) % k])
        where = np.full(d, -1, dtype=np.int64)
        where[c] = np.arange(k)
        pos.append(where)
        bstride *= k
    strides = np.cumprod((1, *size[:-1]))
    host_router = torus_router_index(np.arange(n), dims, pos, strides)
    for i in range(n):
        G.add_edge(i, n + int(host_router[i]), bandwidth_Bps=host_bandwidth_Bps,
                   latency_s=host_latency_s, level="host", multiplicity=1)
    _add_ring_links(G, n, dims, cs, pos, strides, link_bandwidth_Bps, hop_latency_s)
    return G


def _add_ring_links(G: nx.Graph, n: int, dims: tuple[int, ...], cs: list[np.ndarray],
                    pos: list[np.ndarray], strides: np.ndarray, bandwidth_Bps: float,
                    latency_s: float) -> None:
    """The links ``c -> c + 1`` of every ring whose both ends are in the box (a ring of
    two: one edge of multiplicity 2)."""
    box = np.arange(len(cs[0]))
    for k, d in enumerate(dims):
        if d < 2:
            continue
        nxt = pos[k][(cs[k] + 1) % d]
        keep = nxt >= 0
        nb = box + (nxt - pos[k][cs[k]]) * strides[k]
        for r, q in zip(box[keep].tolist(), nb[keep].tolist(), strict=True):
            u, v = n + r, n + q
            if G.has_edge(u, v):
                G.edges[u, v]["bandwidth_Bps"] += bandwidth_Bps
                G.edges[u, v]["multiplicity"] += 1
            else:
                G.add_edge(u, v, bandwidth_Bps=bandwidth_Bps, latency_s=latency_s,
                           level="torus", multiplicity=1)


def torus_router_index(routers: np.ndarray, dims: tuple[int, ...], pos: list[np.ndarray],
                       strides: np.ndarray) -> np.ndarray:
    """Index in the built box of torus routers given by their index in the whole torus.

    Parameters
    ----------
    routers : ndarray of int
        Router indices in the whole torus (dimension 0 fastest).
    dims : tuple of int
        Routers per dimension.
    pos : list of ndarray
        Per dimension, each coordinate's position among the kept ones (-1: not kept).
    strides : ndarray of int
        Mixed-radix strides of the box.
    """
    full = np.cumprod((1, *dims[:-1]))
    return box_index([(routers // st) % d for st, d in zip(full, dims, strict=True)],
                     pos, strides)


def box_index(coords: list[np.ndarray], pos: list[np.ndarray],
              strides: np.ndarray) -> np.ndarray:
    """Index in the built box of the routers at torus coordinates ``coords``.

    Parameters
    ----------
    coords : list of ndarray of int
        Per dimension, each router's coordinate.
    pos : list of ndarray
        Per dimension, each coordinate's position among the kept ones (-1: not kept).
    strides : ndarray of int
        Mixed-radix strides of the box.
    """
    out = np.zeros(np.shape(coords[0]), dtype=np.int64)
    for c, where, st in zip(coords, pos, strides, strict=True):
        out += where[c] * st
    return out



def _switches(topo: Torus, nodes: int) -> int:
    return math.prod(len(c) for c in torus_extent(topo.dims, nodes))   # the box of routes


def _graph(cluster: Cluster, topo: Torus, nodes: int) -> nx.Graph:
    nic, link = cluster.node.nic, cluster.network.link
    return torus_graph(topo.dims, nodes, host_bandwidth_Bps=nic.bandwidth_Bps,
                       link_bandwidth_Bps=link.bandwidth_Bps, host_latency_s=nic.latency_s / 2,
                       hop_latency_s=cluster.network.hop_latency_s)



# -- the router --

class TorusRouter:
    """Dimension-order routing on a torus (the routers of the graph's box only)."""

    def __init__(self, params: dict[str, Any], seed: int = 0) -> None:
        self.dims = tuple(params["dims"])
        self.n: int = params["hosts"]
        self.rails = 1
        self.pairwise = True
        coords = params.get("coords") or [list(range(d)) for d in self.dims]
        self._pos = []
        for d, c in zip(self.dims, coords, strict=True):
            where = np.full(d, -1, dtype=np.int64)
            where[np.asarray(c, dtype=np.int64)] = np.arange(len(c))
            self._pos.append(where)
        self._box = np.cumprod((1, *[len(c) for c in coords][:-1]))

    def _label(self, cur: list[np.ndarray]) -> np.ndarray:
        return self.n + box_index(cur, self._pos, self._box)

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        strides = np.cumprod((1, *self.dims[:-1]))
        cs = [(s // st) % d for st, d in zip(strides, self.dims, strict=True)]
        cd = [(t // st) % d for st, d in zip(strides, self.dims, strict=True)]
        cur = [c.copy() for c in cs]
        cols = [s, self._label(cur)]
        for k, d in enumerate(self.dims):
            delta = (cd[k] - cs[k]) % d
            fwd = delta <= d // 2
            steps = np.where(fwd, delta, d - delta)
            sign = np.where(fwd, 1, -1)
            for step in range(1, d // 2 + 1):
                cur[k] = (cs[k] + sign * np.minimum(step, steps)) % d
                cols.append(self._label(cur))
        cols.append(t)
        return np.stack(cols, axis=1)



#: The torus's entry in :data:`~dlscale.perfmodel.machine.topologies.FAMILIES`.
FAMILY = Family(Torus, graph=_graph, switches=_switches, route=TorusRouter)
