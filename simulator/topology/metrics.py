"""Graph metrics of a topology: diameter, bisection bandwidth, links per level.

Bisection bandwidth is per direction: the least total capacity of the links that
cross a cut splitting the hosts into two halves. For the built-in families it is the
capacity of the natural cut (halves of the top-level subtrees of a fat tree, halves
of the groups of a dragonfly, a plane through the longest torus dimension), limited
by half the hosts' injection; it is exact for full networks with an even split
(``bisection_exact``). For other graphs it is estimated: the least s-t min cut
(scipy's ``csgraph.maximum_flow``) over a few candidate balanced splits of the hosts (the split
in node order and seeded random splits), an upper bound on the true bisection.

Examples
--------
>>> from dlscale.simulator.topology.fattree import fat_tree_graph
>>> m = topology_metrics(fat_tree_graph(4, host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9))
>>> m.diameter_hops, m.bisection_Bps, m.bisection_exact
(6, 8000000000.0, True)
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass

import networkx as nx
import numpy as np

from dlscale.simulator.topology.graphml import endpoints

__all__ = ["TopologyMetrics", "estimate_bisection_Bps", "topology_metrics"]


@dataclass(frozen=True)
class TopologyMetrics:
    """Summary of a topology.

    Attributes
    ----------
    endpoints : int
        Nodes ranks can run on (devices, else hosts).
    switches : int
        Nodes of kind switch or router.
    links : int
        Undirected links, counting parallel links (``multiplicity``).
    links_per_level : dict
        Link count per ``level`` label.
    diameter_hops : int
        Most hops between two endpoints on shortest paths.
    bisection_Bps : float
        Bisection bandwidth per direction.
    bisection_exact : bool
        Whether ``bisection_Bps`` is exact (built-in family, full, even split) or an
        estimate.
    """

    endpoints: int
    switches: int
    links: int
    links_per_level: dict
    diameter_hops: int
    bisection_Bps: float
    bisection_exact: bool

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


def _cut_Bps(G: nx.Graph, side: dict) -> float:
    return float(sum(d["bandwidth_Bps"] for u, v, d in G.edges(data=True)
                     if u in side and v in side and side[u] != side[v]))


def estimate_bisection_Bps(G: nx.Graph, trials: int = 4, seed: int = 0) -> float:
    """Least min cut over the node-order split and ``trials`` random balanced host splits.

    Examples
    --------
    >>> import networkx as nx
    >>> G = nx.Graph()
    >>> for h in range(4):
    ...     G.add_node(h, kind="host"); G.add_edge(h, "s", bandwidth_Bps=1.0, latency_s=0.0)
    >>> estimate_bisection_Bps(G)
    2.0
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    hosts = endpoints(G)
    rng = np.random.default_rng(seed)
    index = {x: i for i, x in enumerate(G.nodes)}
    n = len(index)
    src, dst = n, n + 1
    bw = np.array([d["bandwidth_Bps"] for *_, d in G.edges(data=True)], dtype=float)
    # scipy's max flow takes int32 capacities: bytes/s in units that keep the sum in range
    unit = max(1.0, float(bw.sum()) * 2 / 2**30)
    cap = np.maximum(1, np.round(bw / unit)).astype(np.int64)
    u = np.array([index[a] for a, _ in G.edges], dtype=np.int64)
    v = np.array([index[b] for _, b in G.edges], dtype=np.int64)
    big = int(min(2**31 - 1, cap.sum() * 2 + 1))
    ends = np.array([index[h] for h in hosts], dtype=np.int64)
    splits = [np.arange(len(hosts))] + [rng.permutation(len(hosts)) for _ in range(trials)]
    best = math.inf
    for order in splits:
        half = len(hosts) // 2
        a, b = ends[order[:half]], ends[order[half:]]
        rows = np.concatenate([u, v, np.full(len(a), src), b])
        cols = np.concatenate([v, u, a, np.full(len(b), dst)])
        caps = np.concatenate([cap, cap, np.full(len(a) + len(b), big)])
        M = csr_matrix((caps.astype(np.int32), (rows, cols)), shape=(n + 2, n + 2))
        M.sum_duplicates()
        best = min(best, maximum_flow(M, src, dst).flow_value * unit)
    return float(best)


def _family_bisection(G: nx.Graph, params: dict) -> tuple[float, bool] | None:
    fam = params["family"]
    hosts = [n for n, k in G.nodes(data="kind") if k in ("host", "nic")]
    inj = sum(d["bandwidth_Bps"] for h in hosts for _, _, d in G.edges(h, data=True)
              if d.get("level") == "host")
    if fam == "fat-tree":
        m, w, n = params["m"], params["w"], params["hosts"]
        full = n == math.prod(m)
        if len(m) == 1:
            return inj / 2, full and n % 2 == 0
        top = len(m)
        below = math.prod(m[:-1])
        side = {x: (x // below) < m[-1] / 2 for x in range(n)}
        # switches below the top level belong to the side of the hosts under them
        offset = params["offset"]
        for i in range(1, top):
            M_i, W_i = math.prod(m[:i]), math.prod(w[:i])
            count = -(-n // M_i) * W_i
            for idx in range(count):
                side[offset[i] + idx] = ((idx // W_i) * M_i // below) < m[-1] / 2
        # the cut through level i: capacity of the links from the left half's level-i
        # elements to level i+1; the bisection is the least of these
        lvl = {u: (0 if k in ("host", "nic") else G.nodes[u].get("level"))
               for u, k in G.nodes(data="kind")}
        up = [0.0] * top
        for u, v, d in G.edges(data=True):
            if lvl[u] is None or lvl[v] is None:
                continue
            lo = u if lvl[u] < lvl[v] else v
            if side.get(lo) and lvl[lo] < top:
                up[lvl[lo]] += d["bandwidth_Bps"]
        return min(up), full and m[-1] % 2 == 0
    if fam == "dragonfly":
        g, a, p = params["groups"], params["routers_per_group"], params["terminals_per_router"]
        n = params["hosts"]
        side = {n + r: (r // a) < g / 2 for r in range(g * a)}
        return min(inj / 2, _cut_Bps(G, side)), n == g * a * p and g % 2 == 0
    if fam == "torus":
        dims, n = params["dims"], params["hosts"]
        coords = params.get("coords") or [list(range(d)) for d in dims]
        k = int(np.argmax(dims))
        stride = math.prod(len(c) for c in coords[:k])   # in the box of built routers
        kept = np.asarray(coords[k])
        built = math.prod(len(c) for c in coords)
        side = {n + r: kept[(r // stride) % len(kept)] < dims[k] / 2 for r in range(built)}
        return min(inj / 2, _cut_Bps(G, side)), n == math.prod(dims) and dims[k] % 2 == 0
    return None


def _family_diameter(G: nx.Graph, params: dict) -> int | None:
    fam = params["family"]
    if fam == "fat-tree":
        return 2 * len(params["m"]) if params["hosts"] > 1 else 0
    if fam == "dragonfly":
        g, a = params["groups"], params["routers_per_group"]
        return 2 + (a > 1) * (2 if g > 1 else 1) + (g > 1)
    if fam == "torus":
        return 2 + sum(d // 2 for d in params["dims"])
    if fam == "cluster":
        inner = _family_diameter(G, params["network"])
        paths = params["template_paths"]
        kinds = params["template_kinds"]
        devs = [i for i, k in enumerate(kinds) if k == "device"]
        down = max(len(set(paths[0, d].tolist())) - 1 for d in devs)
        local = max(len(set(paths[a, b].tolist())) - 1 for a in devs for b in devs)
        return None if inner is None else max(local, inner + 2 * down) if params["nodes"] > 1 else local
    return None


def _endpoint_diameter(G: nx.Graph, ends: list, chunk: int = 256) -> int:
    """Most hops between two endpoints: breadth-first searches in scipy's csgraph, in
    chunks of sources (memory ``chunk x nodes``), instead of one Python BFS per pair."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    index = {x: i for i, x in enumerate(G.nodes)}
    n = len(index)
    u = [index[a] for a, _ in G.edges]
    v = [index[b] for _, b in G.edges]
    adj = csr_matrix((np.ones(2 * len(u), dtype=np.int8), (u + v, v + u)), shape=(n, n))
    cols = np.array([index[e] for e in ends], dtype=np.int64)
    best = 0
    for k in range(0, len(cols), chunk):
        d = shortest_path(adj, unweighted=True, directed=False, indices=cols[k:k + chunk])
        best = max(best, int(d[:, cols].max()))
    return best


def topology_metrics(G: nx.Graph) -> TopologyMetrics:
    """Metrics of a topology graph (exact for built-in families where stated).

    Parameters
    ----------
    G : networkx.Graph
        A topology graph (a built-in family or a user's).

    Returns
    -------
    TopologyMetrics
        Endpoints, switches, diameter in hops, bisection bandwidth and links per
        level.

    Examples
    --------
    >>> from dlscale.simulator.topology.torus import torus_graph
    >>> m = topology_metrics(torus_graph((4, 4), host_bandwidth_Bps=1e9, link_bandwidth_Bps=1e9))
    >>> m.diameter_hops, m.bisection_Bps, m.links_per_level
    (6, 8000000000.0, {'host': 16, 'torus': 32})
    """
    ends = endpoints(G)
    kinds = Counter(k for _, k in G.nodes(data="kind"))
    levels: Counter = Counter()
    for *_, d in G.edges(data=True):
        levels[str(d.get("level", "link"))] += int(d.get("multiplicity", 1))
    params = G.graph.get("routing")
    diameter = _family_diameter(G, params) if params else None
    if diameter is None:
        diameter = _endpoint_diameter(G, ends)
    bis = None
    if params:
        net = params["network"] if params["family"] == "cluster" else params
        bis = _family_bisection(G, net)
    if bis is None:
        bis = (estimate_bisection_Bps(G), False)
    return TopologyMetrics(
        endpoints=len(ends), switches=kinds.get("switch", 0) + kinds.get("router", 0),
        links=sum(levels.values()), links_per_level=dict(sorted(levels.items())),
        diameter_hops=int(diameter), bisection_Bps=float(bis[0]), bisection_exact=bool(bis[1]))
