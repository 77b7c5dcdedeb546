"""The closed-form link loads equal the routed simulation's, level by level."""

import dataclasses

import numpy as np
import pytest

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, Dragonfly, FatTree, Torus
from dlscale.perfmodel.network.linkload import level_bandwidths_Bps, step_load
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.routing import make_router, route

BASE = get_cluster("summit")


def _cluster(topology, devices):
    node = dataclasses.replace(BASE.node, devices_per_node=devices)
    net = dataclasses.replace(BASE.network, topology=topology)
    return dataclasses.replace(BASE, node=node, network=net)


def _random_topology(rng):
    kind = rng.integers(0, 4)
    if kind == 0:
        levels = int(rng.integers(1, 4))
        down_up = tuple((int(rng.integers(2, 5)), int(rng.integers(1, 5)))
                        for _ in range(levels - 1))
        return FatTree(levels, int(rng.integers(1, 5)), down_up, 10_000,
                       rails=int(rng.integers(1, 3)))
    if kind == 1:
        a, h = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        g = int(rng.integers(1, a * h + 2))
        return Dragonfly(g, a, int(rng.integers(1, 4)), h, 10_000,
                         local_bandwidth_Bps=3e9, global_bandwidth_Bps=2e9)
    if kind == 2:
        return Torus(tuple(int(x) for x in rng.integers(1, 6, size=rng.integers(1, 4))))
    return Crossbar(64)


def _routed_level_busy(cluster, nodes, ranks, src, dst, weight):
    G = cluster_graph(cluster, nodes)
    table = LinkTable.from_graph(G)
    ends = np.array([x for x, k in G.nodes(data="kind") if k in ("device", "host")])
    per = cluster.node.devices_per_node
    idx = table.node_index(ends[np.arange(nodes * per)[:: per // ranks]])
    r = route(table, make_router(G), idx[src], idx[dst])
    ok = r.links >= 0
    w = np.broadcast_to((weight[r.pair] * r.fraction)[:, None], r.links.shape)[ok]
    busy = np.bincount(r.links[ok], weights=w, minlength=table.n_links) / table.bandwidth_Bps
    out = {}
    for lvl in np.unique(table.level):
        b = busy[table.level == lvl].max()
        if b > 0:
            out[str(lvl)] = b
    return out


@pytest.mark.parametrize("seed", range(60))
def test_level_loads_match_routed_links(seed):
    rng = np.random.default_rng(seed)
    topo = _random_topology(rng)
    if isinstance(topo, Dragonfly) and topo.groups > 1 and rng.random() < 0.3:
        topo = dataclasses.replace(topo, routing="minimal")
    cap = topo.max_nodes if not isinstance(topo, (FatTree, Crossbar)) else 40
    if isinstance(topo, Dragonfly):
        cap = topo.groups * topo.routers_per_group * topo.terminals_per_router
    nodes = int(rng.integers(1, min(cap, 40) + 1))
    devices = int(rng.choice([1, 2, 4]))
    cluster = _cluster(topo, devices)
    p = nodes * devices
    flows = int(rng.integers(1, 3 * p + 1))
    src, dst = rng.integers(0, p, flows), rng.integers(0, p, flows)
    weight = rng.random(flows) + 0.1
    s = step_load(topo, nodes, devices, devices > 1, src, dst, weight)
    bw = level_bandwidths_Bps(cluster)
    mine = {("intra" if k == "intra" else k): v / bw[k] for k, v in s.load.items() if v > 0}
    routed = _routed_level_busy(cluster, nodes, devices, src, dst, weight)
    assert set(mine) == set(routed)
    for k in routed:
        assert mine[k] == pytest.approx(routed[k], rel=1e-9), k
