"""Directed links of a topology graph as numpy arrays.

Every undirected edge is two directed links (full duplex: each direction has its own
capacity). Link ``2e`` runs ``u -> v`` and ``2e + 1`` runs ``v -> u`` for the ``e``-th
edge of ``G.edges``. Node indices are positions in ``G.nodes``.

Examples
--------
>>> import networkx as nx
>>> G = nx.Graph()
>>> G.add_edge(0, 1, bandwidth_Bps=1e9, latency_s=1e-6, level="x")
>>> t = LinkTable.from_graph(G)
>>> t.lookup([0, 1, 0], [1, 0, 0]).tolist()
[0, 1, -1]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dlscale.kernels.jit import njit
from dlscale.perfmodel.errors import ConfigError

__all__ = ["LinkTable"]


@dataclass(frozen=True)
class LinkTable:
    """Arrays over directed links.

    Attributes
    ----------
    nodes : list
        Node labels; a node's index is its position.
    src, dst : ndarray of int64
        Node index at each end of each link.
    bandwidth_Bps, latency_s : ndarray of float64
        Capacity per direction and latency of each link.
    level : ndarray of str
        The edge's ``level`` label.
    """

    nodes: list
    src: np.ndarray
    dst: np.ndarray
    bandwidth_Bps: np.ndarray
    latency_s: np.ndarray
    level: np.ndarray
    _keys: np.ndarray
    _ids: np.ndarray
    _index: dict | None
    kinds: list | None = None
    _rows: np.ndarray | None = None

    @classmethod
    def from_graph(cls, G: nx.Graph) -> LinkTable:
        """Build the table of ``G`` (node labels ``0..n-1`` in order are used as indices)."""
        nodes = list(G.nodes)
        n = len(nodes)
        identity = all(type(x) is int and x == i for i, x in enumerate(nodes))
        index = None if identity else {x: i for i, x in enumerate(nodes)}
        m = G.number_of_edges()
        src = np.empty(2 * m, dtype=np.int64)
        dst = np.empty(2 * m, dtype=np.int64)
        bw = np.empty(2 * m)
        lat = np.empty(2 * m)
        level = np.empty(2 * m, dtype=object)
        for e, (u, v, d) in enumerate(G.edges(data=True)):
            iu, iv = (u, v) if index is None else (index[u], index[v])
            src[2 * e], dst[2 * e], src[2 * e + 1], dst[2 * e + 1] = iu, iv, iv, iu
            bw[2 * e] = bw[2 * e + 1] = d["bandwidth_Bps"]
            lat[2 * e] = lat[2 * e + 1] = d.get("latency_s", 0.0)
            level[2 * e] = level[2 * e + 1] = str(d.get("level", "link"))
        keys = src * n + dst
        order = np.argsort(keys, kind="stable")
        kinds = [str(k or "") for _, k in G.nodes(data="kind")]
        return cls(nodes, src, dst, bw, lat, level, keys[order], order, index, kinds)

    @property
    def n_links(self) -> int:
        """Number of directed links."""
        return len(self.src)

    def node_index(self, labels: Iterable) -> np.ndarray:
        """Indices of node labels (an iterable of labels)."""
        if self._index is None:
            return np.asarray(labels, dtype=np.int64)
        try:
            return np.asarray([self._index[x] for x in labels], dtype=np.int64)
        except KeyError as exc:
            raise ConfigError(f"node {exc.args[0]!r} is not in the topology") from None

    def lookup(self, u: object, v: object) -> np.ndarray:
        """Link ids ``u -> v`` (node indices, arrays); ``-1`` where ``u == v``.

        Raises :class:`ConfigError` if some ``u != v`` are not adjacent.
        """
        u = np.asarray(u, dtype=np.int64)
        v = np.asarray(v, dtype=np.int64)
        n = len(self.nodes)
        if u.size and (min(int(u.min()), int(v.min())) < 0 or max(int(u.max()),
                                                                  int(v.max())) >= n):
            raise ConfigError(f"routing: node indices must be in 0..{n - 1}")
        if self._rows is None:        # where each node's links start among the sorted keys
            object.__setattr__(self, "_rows", np.searchsorted(
                self._keys, np.arange(n + 1, dtype=np.int64) * n))
        assert self._rows is not None
        uf, vf = np.ascontiguousarray(u).reshape(-1), np.ascontiguousarray(v).reshape(-1)
        out = _find_links(self._keys, self._ids, self._rows, uf, vf, n)
        bad = np.flatnonzero(out == -2)
        if len(bad):
            raise ConfigError(f"routing: nodes {self.nodes[int(uf[bad[0]])]!r} and "
                              f"{self.nodes[int(vf[bad[0]])]!r} are not adjacent")
        return out.reshape(u.shape)

    def path_links(self, paths: np.ndarray, none: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Link ids of every hop of each path, and each path's latency, in one pass.

        ``paths`` is an ``(F, K)`` array of node indices (a router's
        ``node_paths``); a hop from a node to itself is ``-1`` and so is every hop of a
        row where ``none`` is true (a message to oneself moves nothing). The same
        answer, bit for bit, as :meth:`lookup` of the hops followed by the sum of
        their links' latencies along each row (numpy's pairwise order), without the
        copies of the hops and of the latencies.

        Raises :class:`ConfigError` as :meth:`lookup` does.
        """
        paths = np.ascontiguousarray(paths, dtype=np.int64)
        n = len(self.nodes)
        hops = paths.shape[1] - 1
        if hops > 0 and paths.size and (int(paths.min()) < 0 or int(paths.max()) >= n):
            raise ConfigError(f"routing: node indices must be in 0..{n - 1}")
        if self._rows is None:
            object.__setattr__(self, "_rows", np.searchsorted(
                self._keys, np.arange(n + 1, dtype=np.int64) * n))
        assert self._rows is not None
        links, lat, bad = _path_links(self._keys, self._ids, self._rows, paths,
                                      np.ascontiguousarray(none, dtype=np.bool_),
                                      self.latency_s, n, hops <= _PAIRWISE_BLOCK)
        if bad >= 0:
            f, h = divmod(int(bad), hops)
            raise ConfigError(f"routing: nodes {self.nodes[int(paths[f, h])]!r} and "
                              f"{self.nodes[int(paths[f, h + 1])]!r} are not adjacent")
        if hops > _PAIRWISE_BLOCK:   # numpy's own sum for a path of more hops
            lat = np.where(links >= 0, self.latency_s[np.maximum(links, 0)], 0.0).sum(axis=1)
        return links, lat

    def name(self, link: int) -> str:
        """``"u->v"`` for a link id; integer labels get their node kind as prefix.

        Examples
        --------
        >>> import networkx as nx
        >>> G = nx.Graph(); G.add_edge("a", "b", bandwidth_Bps=1.0)
        >>> LinkTable.from_graph(G).name(1)
        'b->a'
        >>> G = nx.Graph(); G.add_node(0, kind="host"); G.add_edge(0, 1, bandwidth_Bps=1.0)
        >>> LinkTable.from_graph(G).name(0)
        'host0->1'
        """
        return f"{self._label(int(self.src[link]))}->{self._label(int(self.dst[link]))}"

    def _label(self, i: int) -> str:
        x = self.nodes[i]
        if isinstance(x, int) and self.kinds is not None:
            return f"{self.kinds[i]}{x}"
        return str(x)


@njit()
def _find_links(keys: np.ndarray, ids: np.ndarray, rows: np.ndarray, u: np.ndarray,
                v: np.ndarray, n: int) -> np.ndarray:
    """Link id of each ``u[i] -> v[i]``: a binary search among ``u``'s own links (the
    sorted ``keys[rows[u]:rows[u + 1]]``); -1 where ``u == v``, -2 where not adjacent."""
    out = np.empty(len(u), dtype=np.int64)
    for i in range(len(u)):
        a, b = u[i], v[i]
        if a == b:
            out[i] = -1
            continue
        key = a * n + b
        lo, hi = rows[a], rows[a + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if keys[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        out[i] = ids[lo] if lo < rows[a + 1] and keys[lo] == key else -2
    return out


#: Terms numpy's pairwise summation adds with eight accumulators in one block
#: (``PW_BLOCKSIZE``); longer rows are split in halves, which :meth:`LinkTable.path_links`
#: leaves to numpy.
_PAIRWISE_BLOCK = 128


@njit()
def _pairwise_sum(a: np.ndarray, n: int) -> float:
    """``a[:n].sum()`` in numpy's order for ``n <= 128``: one by one below eight terms,
    else eight accumulators, combined in pairs, then the rest one by one."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - n % 8:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return res


@njit()
def _path_links(keys: np.ndarray, ids: np.ndarray, rows: np.ndarray, paths: np.ndarray,
                none: np.ndarray, latency: np.ndarray, n: int,
                sums: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Link id of every hop of ``paths`` (:func:`_find_links`' search; -1 for a hop to
    the same node and for every hop of a row where ``none``), each row's latency (where
    ``sums``), and the first hop (row-major) whose nodes are not adjacent, or -1."""
    F, K = paths.shape
    H = K - 1
    links = np.empty((F, max(H, 0)), dtype=np.int64)
    lat = np.zeros(F)
    hop = np.zeros(max(H, 1))
    bad = -1
    for f in range(F):
        for h in range(H):
            a, b = paths[f, h], paths[f, h + 1]
            link = -1
            if a != b:
                key = a * n + b
                lo, hi = rows[a], rows[a + 1]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if keys[mid] < key:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo < rows[a + 1] and keys[lo] == key:
                    link = ids[lo]
                elif bad < 0:
                    bad = f * H + h
            if none[f]:
                link = -1
            links[f, h] = link
            hop[h] = latency[link] if link >= 0 else 0.0
        if sums:
            lat[f] = _pairwise_sum(hop, H)
    return links, lat, bad
