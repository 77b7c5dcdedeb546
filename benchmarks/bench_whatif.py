"""Network what-ifs (issue 12): agreement of the closed form with the routed fast mode
on every topology family, user GraphML topologies at scale, flow mode on a big ring.

Targets:

- ``predict``'s network model vs ``simulate --network fast`` (no noise): within 10% for
  every allreduce algorithm on the fat tree (Summit), tapered fat tree (Stampede2,
  28:20; Summit 2:1), dragonfly (Cori) and torus presets, 2 to 4,096 nodes;
- a 4,096-host GraphML fat tree: ring allreduce of 8 MiB in < 60 s and < 4 GB, and a
  20,000-host one in bounded memory;
- flow mode: a 1,024-rank ring allreduce in < 5 s.

Run: ``.venv/bin/python benchmarks/run.py whatif [--quick]`` (``--quick``: up to 256
nodes in the agreement grid, no 20,000-host case).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import sys
import tempfile
import time

import networkx as nx

from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import FatTree, Torus
from dlscale.perfmodel.network.model import collective_time_s
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.topology.fattree import multilevel_fat_tree_graph
from dlscale.simulator.topology.graphml import read_graphml_topology

ALGS = ("ring", "recursive-doubling", "rabenseifner", "binomial-tree", "double-binary-tree",
        "hierarchical")


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def families() -> dict:
    summit = get_cluster("summit")

    def topo(c, t, name):
        return dataclasses.replace(c, name=name, network=dataclasses.replace(c.network,
                                                                             topology=t))
    return {"summit fat tree": summit,
            "summit 2:1": topo(summit, FatTree(3, 18, ((18, 9), (18, 18)), 4608, rails=2), "2to1"),
            "stampede2 28:20": get_cluster("stampede2-knl"),
            "cori dragonfly": get_cluster("cori-knl"),
            "summit torus": topo(summit, Torus((16, 16, 18)), "torus")}


def agreement(max_nodes: int) -> None:
    print(f"{'family':<17} {'nodes':>5} {'algorithm':<19} {'size_B':>8} {'closed_ms':>10} "
          f"{'routed_ms':>10} {'error_%':>8}  within 10%")
    worst: dict[str, float] = {}
    for name, c in families().items():
        r = c.node.devices_per_node
        # powers of two and counts that are not (a fold, uneven subtrees)
        for nodes in (2, 3, 4, 16, 36, 64, 100, 256, 1000, 1024, 4096):
            if nodes > max_nodes or nodes > c.max_nodes:
                continue
            net = SimulatedNetwork.from_cluster(c, nodes, mode="fast")
            for a in ALGS:
                for size in (1e3, 1e6, 64e6):
                    closed = collective_time_s(c, "allreduce", a, size, nodes, r)
                    routed = net.allreduce_s(size, nodes * r, a)
                    err = closed / routed - 1
                    worst[name] = max(worst.get(name, 0.0), abs(err))
                    print(f"{name:<17} {nodes:>5} {a:<19} {size:>8.0e} {closed * 1e3:>10.3f} "
                          f"{routed * 1e3:>10.3f} {err * 100:>+8.2f}  "
                          f"{'yes' if abs(err) <= 0.10 else 'NO'}", flush=True)
    for name, w in worst.items():
        print(f"worst |error| {name}: {w * 100:.2f}%")


def graphml_tree(hosts: int, path: str) -> None:
    # a three-level tree of 36-port switches (18 down, 18 up), as Summit's, one rail
    G = multilevel_fat_tree_graph(FatTree(3, 18, ((18, 18), (18, 18)), 10**6), hosts,
                                  host_bandwidth_Bps=12.5e9, link_bandwidth_Bps=12.5e9)
    H = nx.Graph()
    H.add_nodes_from((n, {"kind": d["kind"]}) for n, d in G.nodes(data=True))
    H.add_edges_from((u, v, {"bandwidth_Bps": d["bandwidth_Bps"], "latency_s": d["latency_s"],
                             "level": d["level"]}) for u, v, d in G.edges(data=True))
    nx.write_graphml(H, path)


def graphml(hosts_list: list[int]) -> None:
    print(f"{'hosts':>6} {'read_s':>7} {'ring_8MiB_s':>12} {'sim_ms':>8} {'metrics_s':>9} "
          f"{'peak_GB':>8}  target")
    for hosts in hosts_list:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tree.graphml")
            graphml_tree(hosts, path)
            t0 = time.perf_counter()
            G = read_graphml_topology(path)
            t_read = time.perf_counter() - t0
            t0 = time.perf_counter()
            net = SimulatedNetwork(G)
            sim = net.allreduce_s(8 * 2**20, hosts, "ring")
            t_ring = time.perf_counter() - t0
            t0 = time.perf_counter()
            m = net.metrics()
            t_met = time.perf_counter() - t0
        target = "< 60 s, < 4 GB" if hosts <= 4096 else "bounded memory"
        print(f"{hosts:>6} {t_read:>7.1f} {t_ring:>12.1f} {sim * 1e3:>8.3f} {t_met:>9.1f} "
              f"{rss_gb():>8.2f}  {target} (diameter {m.diameter_hops})", flush=True)


def flow_ring(ranks: int) -> None:
    from dlscale.simulator.topology.fattree import fat_tree_graph

    G = fat_tree_graph(16, host_bandwidth_Bps=12.5e9, link_bandwidth_Bps=12.5e9)
    net = SimulatedNetwork(G, mode="flow")
    t0 = time.perf_counter()
    t = net.allreduce_s(64e6, ranks, "ring")
    wall = time.perf_counter() - t0
    fast = SimulatedNetwork(G, mode="fast").allreduce_s(64e6, ranks, "ring")
    print(f"flow mode ring allreduce, {ranks} ranks, 64 MB: {wall:.2f} s wall (target < 5 s); "
          f"{t * 1e3:.3f} ms simulated, fast mode {fast * 1e3:.3f} ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    agreement(256 if args.quick else 4096)
    graphml([1024] if args.quick else [4096, 20000])
    flow_ring(1024)
    return 0


if __name__ == "__main__":
    sys.exit(main())
