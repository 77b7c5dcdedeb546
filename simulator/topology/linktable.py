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
        keys = u * len(self.nodes) + v
        pos = np.searchsorted(self._keys, keys)
        pos = np.minimum(pos, len(self._keys) - 1)
        found = self._keys[pos] == keys
        same = u == v
        if not np.all(found | same):
            bad = np.flatnonzero(~(found | same))[0]
            raise ConfigError(f"routing: nodes {self.nodes[int(u.flat[bad])]!r} and "
                              f"{self.nodes[int(v.flat[bad])]!r} are not adjacent")
        return np.where(same, -1, self._ids[pos])

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
