"""Routing: paths of many (source, destination) pairs at once, as integer arrays.

A router's ``node_paths(src, dst, rail)`` returns an ``(n, K)`` array of node indices,
each row a path padded by repeating nodes (a repeated node is no hop).
:func:`route` turns them into directed link ids and splits inter-node traffic evenly
over the rails (each pair becomes ``rails`` subflows of ``1/rails`` of its bytes).

Each topology family's router lives in its module of
:mod:`dlscale.perfmodel.machine.topologies` (its ``FAMILY.route``, looked up in
:data:`ROUTERS` by the graph's ``G.graph["routing"]["family"]``):

- fat tree: up to the nearest common ancestor, up-ports by destination (D-mod-k,
  Zahavi 2010), then down; deterministic.
- dragonfly: minimal (local, global, local) or Valiant (through a random
  intermediate group, seeded).
- torus: dimension-order routing, shortest way round each ring (ties: + direction).
- anything else (a user's GraphML): equal-cost multipath over the shortest paths in
  hops, the path chosen by the destination's index digit by digit (D-mod-k's rule:
  :class:`EcmpRouter`), distances from scipy's csgraph breadth-first search.

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> G = fat_tree_graph(4)
>>> r = make_router(G)
>>> r.node_paths(np.array([0]), np.array([15]), 0).tolist()
[[0, 16, 25, 35, 31, 23, 15]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import networkx as nx
import numpy as np

from dlscale.kernels.jit import njit
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.topologies import FAMILIES
from dlscale.perfmodel.machine.topologies.family import FamilyView
from dlscale.simulator.topology.linktable import LinkTable

__all__ = ["ROUTERS", "PairRoutes", "Router", "Routes", "make_router", "route"]


@runtime_checkable
class Router(Protocol):
    """How a router answers: the extension point for a routing algorithm.

    Every router implements it (the families' in their modules of
    :mod:`dlscale.perfmodel.machine.topologies`, the others here); :func:`make_router`
    picks one by the graph's ``G.graph["routing"]["family"]`` from :data:`ROUTERS` (a
    new family names its class as its ``Family(route=...)``, whose
    ``__init__(params, seed)`` reads the builder's ``routing`` description), and
    :func:`route` turns its paths into link ids.

    Attributes
    ----------
    rails : int
        Independent planes; :func:`route` asks :meth:`node_paths` once per rail and
        splits each pair's bytes evenly over them.

    A router whose paths depend on its ``seed`` sets ``draws = True`` (the dragonfly's
    Valiant routing); one without the attribute routes the same for every seed, and
    ``simulate CLUSTER --seed`` is refused on it unless the placement is random.
    """

    rails: int

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        """Paths of the pairs ``s[i] -> t[i]`` (node indices of the link table) on ``rail``.

        Parameters
        ----------
        s, t : ndarray of int64, shape (n,)
            Source and destination node indices.
        rail : int
            The plane, ``0 <= rail < rails``.

        Returns
        -------
        ndarray of int64, shape (n, K)
            Node indices along each path, ``s[i]`` first and ``t[i]`` last, padded to a
            common length ``K`` by repeating a node (a repeated node is no hop).
            Deterministic for a given router and seed.
        """
        ...


class EcmpRouter:
    """Equal-cost multipath on any graph, spread by destination (D-mod-k's rule).

    Every hop goes to a neighbour one hop nearer the destination; where there are
    ``k`` such neighbours (in node order), the next digit of the destination's index
    (its position among the endpoints) picks one: ``index mod k``, then ``index // k``
    for the next choice. On a fat tree this is D-mod-k (Zahavi 2010): traffic to
    different destinations spreads over the equal-cost up-links and all traffic to one
    destination shares a path, so a graph copy of a built-in tree routes as the
    built-in does. Hop distances to each destination come from breadth-first searches
    in scipy's ``csgraph``, batched; at most ``cache_bytes`` of them are kept.
    """

    def __init__(self, G: nx.Graph, seed: int = 0, cache_bytes: int = 256 << 20) -> None:
        from scipy.sparse import csr_matrix

        self.rails = 1
        nodes = list(G.nodes)
        index = {x: i for i, x in enumerate(nodes)}
        n = len(nodes)
        u = np.fromiter((index[a] for a, _ in G.edges), dtype=np.int64, count=G.number_of_edges())
        v = np.fromiter((index[b] for _, b in G.edges), dtype=np.int64, count=G.number_of_edges())
        rows, cols = np.concatenate([u, v]), np.concatenate([v, u])
        self.adj = csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
        self.adj.sort_indices()
        self.ordinal = np.arange(n, dtype=np.int64)
        from dlscale.simulator.topology.graphml import endpoints

        ends = [index[x] for x in endpoints(G)]
        self.ordinal[ends] = np.arange(len(ends))
        self.max_rows = max(1, cache_bytes // (4 * max(n, 1)))
        self._dist: dict[int, np.ndarray] = {}

    def _distances(self, targets: np.ndarray) -> None:
        from scipy.sparse.csgraph import shortest_path

        missing = [int(t) for t in np.unique(targets) if int(t) not in self._dist]
        if len(self._dist) + len(missing) > self.max_rows:
            self._dist.clear()                     # bounded memory: start over
        for k in range(0, len(missing), 256):
            chunk = missing[k:k + 256]
            d = shortest_path(self.adj, unweighted=True, directed=False, indices=chunk)
            if not np.isfinite(d).all():
                raise ConfigError("topology: the graph is not connected")
            rows = d.astype(np.int32)
            self._dist.update(zip(chunk, rows, strict=True))

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        s = np.asarray(s, dtype=np.int64)
        t = np.asarray(t, dtype=np.int64)
        rows = []
        ptr, nbr = self.adj.indptr, self.adj.indices
        for start in range(0, len(t), self.max_rows):
            ss, tt = s[start:start + self.max_rows], t[start:start + self.max_rows]
            self._distances(tt)
            for a, b in zip(ss.tolist(), tt.tolist(), strict=True):
                dist = self._dist[b]
                digits = int(self.ordinal[b])
                path, x = [a], a
                while x != b:
                    cand = nbr[ptr[x]:ptr[x + 1]]
                    cand = cand[dist[cand] == dist[x] - 1]
                    k = len(cand)
                    x = int(cand[digits % k]) if k > 1 else int(cand[0])
                    digits //= max(k, 1)
                    path.append(x)
                rows.append(path)
        K = max((len(r) for r in rows), default=1)
        return np.array([r + [r[-1]] * (K - len(r)) for r in rows],
                        dtype=np.int64).reshape(-1, K)


class ClusterRouter:
    """Intra-node template paths joined to the network router's host paths."""

    def __init__(self, params: dict, seed: int = 0) -> None:
        inner = params["network"]
        self.net = ROUTERS[inner["family"]](inner, seed)
        self.rails = self.net.rails
        self.pairwise = bool(getattr(self.net, "pairwise", False))
        #: The network router's: whether its host paths are drawn by ``seed``.
        self.draws = bool(getattr(self.net, "draws", False))
        self.base = params["base"]
        self.per = params["per_node"]
        self.tp = np.ascontiguousarray(params["template_paths"], dtype=np.int64)

    def _host(self, x: np.ndarray) -> np.ndarray:
        """The host (node) of each endpoint: a device's node, a host itself."""
        return np.where(x >= self.base, (x - self.base) // self.per, x)

    def node_paths(self, s: np.ndarray, t: np.ndarray, rail: int) -> np.ndarray:
        s = np.ascontiguousarray(s, dtype=np.int64)
        t = np.ascontiguousarray(t, dtype=np.int64)
        mid = self.net.node_paths(self._host(s), self._host(t), rail)
        return _join(s, t, np.ascontiguousarray(mid, dtype=np.int64), self.tp,
                     int(self.base), int(self.per))


@njit()
def _join(s: np.ndarray, t: np.ndarray, mid: np.ndarray, tp: np.ndarray, base: int,
          per: int) -> np.ndarray:
    """Each pair's path: the source's template path up to its node's NIC, the
    network's host path ``mid``, the target's template path down from its NIC; a pair
    inside one node takes its node's template path alone, padded by its last element.
    Endpoint ``x >= base`` is device ``(x - base) % per`` of node ``(x - base) // per``
    (template position one more), a host ``x`` is its node's NIC (position 0)."""
    F, K = mid.shape
    L = tp.shape[2]
    out = np.empty((F, 2 * L + K), dtype=np.int64)
    for f in range(F):
        a, b = s[f], t[f]
        ha, pa = (a, 0) if a < base else ((a - base) // per, (a - base) % per + 1)
        hb, pb = (b, 0) if b < base else ((b - base) // per, (b - base) % per + 1)
        if ha == hb:
            for c in range(L):
                q = tp[pa, pb, c]
                out[f, c] = ha if q == 0 else base + ha * per + q - 1
            for c in range(L, 2 * L + K):
                out[f, c] = out[f, L - 1]
            continue
        for c in range(L):
            q = tp[pa, 0, c]
            out[f, c] = ha if q == 0 else base + ha * per + q - 1
        for c in range(K):
            out[f, L + c] = mid[f, c]
        for c in range(L):
            q = tp[0, pb, c]
            out[f, L + K + c] = hb if q == 0 else base + hb * per + q - 1
    return out


#: Routing family (``G.graph["routing"]["family"]``) -> router class: each topology
#: family's ``route`` in :data:`dlscale.perfmodel.machine.topologies.FAMILIES` (read when
#: asked), and the cluster's (a node's insides joined to the network's router).
ROUTERS: Mapping[str, Callable[[dict[str, Any], int], Router]] = FamilyView(
    FAMILIES, lambda f: f.route, {"cluster": ClusterRouter})


def make_router(G: nx.Graph, seed: int = 0) -> Router:
    """The router for ``G``: by its ``routing`` description, else shortest paths.

    ``seed`` drives Valiant's random intermediate groups.
    """
    params = G.graph.get("routing")
    if params is None:
        return EcmpRouter(G, seed)
    family = params["family"]
    if family not in ROUTERS:
        raise ConfigError(f"routing family: unknown name {family!r}; valid: {', '.join(ROUTERS)}")
    return ROUTERS[family](params, seed)


@dataclass(frozen=True)
class Routes:
    """Routed subflows of a set of pairs.

    Attributes
    ----------
    links : ndarray of int64, shape (F, H)
        Directed link ids of each subflow, ``-1`` where no hop.
    pair : ndarray of int64, shape (F,)
        Index of the (src, dst) pair each subflow belongs to.
    fraction : ndarray of float64, shape (F,)
        Share of the pair's bytes on this subflow (``1/rails``).
    latency_s : ndarray of float64, shape (F,)
        Sum of link latencies along the subflow.
    """

    links: np.ndarray
    pair: np.ndarray
    fraction: np.ndarray
    latency_s: np.ndarray


def route(table: LinkTable, router: Router, src: np.ndarray, dst: np.ndarray) -> Routes:
    """Route pairs of node indices ``src[i] -> dst[i]`` over all rails.

    Examples
    --------
    >>> from dlscale.simulator.topology.torus import torus_graph
    >>> G = torus_graph((4,))
    >>> r = route(LinkTable.from_graph(G), make_router(G), np.array([0]), np.array([2]))
    >>> int((r.links >= 0).sum())
    4
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    none = src == dst                          # a message to oneself moves nothing
    parts = [table.path_links(router.node_paths(src, dst, rail), none)
             for rail in range(router.rails)]
    links = np.concatenate([p[0] for p in parts], axis=0)
    lat = np.concatenate([p[1] for p in parts])
    n = len(src)
    pair = np.tile(np.arange(n), router.rails)
    fraction = np.full(len(pair), 1.0 / router.rails)
    return Routes(links, pair, fraction, lat)


class PairRoutes:
    """Routes of pairs kept pair by pair, for a router whose path of a pair does not
    depend on the other pairs routed with it (``router.pairwise``, padded to a width
    that does not depend on them either): a pattern most of whose pairs were routed
    before (a pipeline's filling and draining steps, subsets of its full step) is
    gathered from them, bit for bit what :func:`route` gives.

    Patterns are kept as sorted blocks, at most ``blocks`` of them (the oldest goes
    first); a pattern with fewer than half its pairs in them is routed whole and kept
    as a new block, else only its missing pairs are routed (and not kept).
    """

    def __init__(self, table: LinkTable, router: Router, blocks: int = 8) -> None:
        self.table, self.router, self.blocks = table, router, blocks
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def route(self, src: np.ndarray, dst: np.ndarray) -> Routes:
        """:func:`route` of the pairs ``src[i] -> dst[i]`` (node indices)."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        n, rails = len(src), self.router.rails
        if not n:
            return route(self.table, self.router, src, dst)
        key = src * len(self.table.nodes) + dst
        if n > 4 * self.PROBE and not self._held(key[::n // self.PROBE]):
            r = route(self.table, self.router, src, dst)    # a new pattern (the same routes)
            self._keep(key, r, n)
            return r
        block = np.full(n, -1, dtype=np.int64)
        row = np.zeros(n, dtype=np.int64)
        for b in range(len(self._blocks) - 1, -1, -1):          # the newest first
            keys, order = self._blocks[b][:2]
            todo = np.flatnonzero(block < 0)
            if not len(todo):
                break
            pos = np.minimum(np.searchsorted(keys, key[todo]), len(keys) - 1)
            hit = keys[pos] == key[todo]
            block[todo[hit]] = b
            row[todo[hit]] = order[pos[hit]]
        miss = np.flatnonzero(block < 0)
        if 2 * len(miss) > n:
            r = route(self.table, self.router, src, dst)
            self._keep(key, r, n)
            return r
        H = max([self._blocks[0][2].shape[-1]] if self._blocks else [1])
        links = np.full((rails, n, H), -1, dtype=np.int64)
        lat = np.zeros((rails, n))
        for b, (_, _, blinks, blat) in enumerate(self._blocks):
            at = np.flatnonzero(block == b)
            if len(at):
                links[:, at] = blinks[:, row[at]]
                lat[:, at] = blat[:, row[at]]
        if len(miss):
            r = route(self.table, self.router, src[miss], dst[miss])
            links[:, miss] = r.links.reshape(rails, len(miss), -1)
            lat[:, miss] = r.latency_s.reshape(rails, len(miss))
            self._extend(int(np.bincount(block[block >= 0]).argmax()), key[miss], r)
        return Routes(links.reshape(rails * n, H), np.tile(np.arange(n), rails),
                      np.full(rails * n, 1.0 / rails), lat.reshape(-1))

    #: Pairs of a large pattern looked up first: where fewer than half of them were
    #: routed before, the pattern is routed whole without looking up the others.
    PROBE = 64

    def _held(self, probe: np.ndarray) -> bool:
        """Whether at least half the pair keys ``probe`` are in the kept blocks."""
        found = np.zeros(len(probe), dtype=bool)
        for keys, *_ in self._blocks:
            pos = np.minimum(np.searchsorted(keys, probe), len(keys) - 1)
            found |= keys[pos] == probe
        return 2 * int(found.sum()) >= len(probe)

    def _extend(self, b: int, key: np.ndarray, r: Routes) -> None:
        """Add the pairs ``key`` routed as ``r`` to block ``b`` (a pipeline's next step
        adds a few pairs to the ones before it)."""
        keys, order, links, lat = self._blocks[b]
        m, rails = len(key), self.router.rails
        new_links = r.links.reshape(rails, m, -1)
        if new_links.shape[-1] != links.shape[-1]:
            return
        all_keys = np.concatenate([keys, key])
        all_rows = np.concatenate([order, np.arange(links.shape[1], links.shape[1] + m)])
        at = np.argsort(all_keys, kind="stable")
        self._blocks[b] = (all_keys[at], all_rows[at], np.concatenate([links, new_links], axis=1),
                           np.concatenate([lat, r.latency_s.reshape(rails, m)], axis=1))

    def _keep(self, key: np.ndarray, r: Routes, n: int) -> None:
        rails = self.router.rails
        links = r.links.reshape(rails, n, -1)
        if self._blocks and links.shape[-1] != self._blocks[0][2].shape[-1]:
            return                                   # another width: not pairwise after all
        order = np.argsort(key, kind="stable")
        self._blocks.append((key[order], order, links, r.latency_s.reshape(rails, n)))
        if len(self._blocks) > self.blocks:
            self._blocks.pop(0)
