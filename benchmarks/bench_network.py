"""Speed and agreement of the network simulator (not part of the tests).

Targets (issue 4):

- build the 4,608-node Summit fat tree with routes: <= 20 s;
- one ring and one hierarchical allreduce of 100 MB across all 27,648 GPUs of Summit
  in fast mode: <= 10 s wall and <= 4 GB memory each, one core;
- flow-level mode: >= 512 ranks in <= 60 s for one allreduce;
- flow mode's ring (issue 27.6) at 1,024 / 4,096 / 16,384 Summit GPUs: wall time
  growing with an exponent <= 1.2 in the ranks, 16,384 ranks within 60 s
  (``--flow-ring`` runs only this; :func:`flow_ring_rows` for other benchmarks);
- side by side with the closed form: allreduce time versus message size and rank
  count for each algorithm and topology; without contention within 2%.

Optional outside reference: ``--simgrid`` runs the same routed schedules in SimGrid
3.32 (Debian ``python3-simgrid``, run with the system ``/usr/bin/python3``; CM02
max-min model, cross-traffic and TCP window off) and compares them with flow mode.
CM02 weights a flow's share by its path latency (RTT unfairness), which the flow
mode here does not, so flows of unequal path latency on one link differ slightly.

Run: ``.venv/bin/python benchmarks/bench_network.py [--quick | --simgrid]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Sequence

import numpy as np

from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Link, NetworkSpec, Torus
from dlscale.perfmodel.network import collectives as cf
from dlscale.perfmodel.network.analytical import AnalyticalNetwork
from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.network.fastmode import RouteCache
from dlscale.simulator.topology.cluster import cluster_graph
from dlscale.simulator.topology.intranode import summit_node_graph
from dlscale.simulator.topology.linktable import LinkTable
from dlscale.simulator.topology.routing import make_router, route

FLAT = ("ring", "recursive-doubling", "rabenseifner", "binomial-tree", "double-binary-tree")


def rss_gb() -> float:
    """Peak resident set size of this process so far, GB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def table(rows: list[dict], columns: Sequence[str]) -> str:
    cells = [[str(r[c]) for c in columns] for r in rows]
    width = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, width, strict=True))
    body = ["  ".join(x.ljust(w) for x, w in zip(row, width, strict=True)) for row in cells]
    return "\n".join([line, "-" * len(line), *body])


def bench_summit(rows: list[dict]) -> None:
    summit = load_cluster("summit")
    t0 = time.perf_counter()
    G = cluster_graph(summit, 4608, summit_node_graph(nvlink_Bps=summit.node.intra_link.bandwidth_Bps))
    table_ = LinkTable.from_graph(G)
    router = make_router(G)
    hosts = np.arange(4608)
    route(table_, router, hosts, (hosts + 1) % 4608)  # every node to its ring neighbour
    build = time.perf_counter() - t0
    rows.append({"case": "build Summit 4,608-node fat tree + routes", "wall_s": f"{build:.2f}",
                 "target": "<= 20 s", "result": f"{G.number_of_nodes()} nodes, "
                 f"{table_.n_links} directed links", "peak_rss_GB": f"{rss_gb():.2f}"})
    net = SimulatedNetwork(G, mode="fast")
    for alg in ("ring", "hierarchical"):
        net._cache = RouteCache()  # time the routing too
        t0 = time.perf_counter()
        res = net.simulate("allreduce", 100e6, None, alg)
        wall = time.perf_counter() - t0
        rows.append({"case": f"fast {alg} allreduce 100 MB, 27,648 GPUs", "wall_s": f"{wall:.2f}",
                     "target": "<= 10 s, <= 4 GB",
                     "result": f"{res.time_s * 1e3:.2f} ms simulated, {len(res.step_times_s)} steps",
                     "peak_rss_GB": f"{rss_gb():.2f}"})


def bench_flow(rows: list[dict], ranks: int) -> None:
    st2 = load_cluster("stampede2-knl")
    for alg, size in (("ring", 100e6), ("rabenseifner", 100e6)):
        net = SimulatedNetwork.from_cluster(st2, ranks, mode="flow")
        t0 = time.perf_counter()
        res = net.simulate("allreduce", size, None, alg)
        wall = time.perf_counter() - t0
        fast = net.simulate("allreduce", size, None, alg, mode="fast").time_s
        rows.append({"case": f"flow {alg} allreduce 100 MB, {ranks} ranks (Stampede2 KNL)",
                     "wall_s": f"{wall:.2f}", "target": "<= 60 s",
                     "result": f"{res.time_s * 1e3:.3f} ms simulated (fast mode "
                               f"{(fast / res.time_s - 1) * 100:+.2f}%)",
                     "peak_rss_GB": f"{rss_gb():.2f}"})


def flow_ring_rows(counts: Sequence[int] = (1024, 4096, 16384), n_bytes: float = 1e6
                   ) -> list[dict]:
    """Flow mode's ring allreduce on Summit (6 GPUs a node, linear placement) per rank
    count, routing included; the last row is the fitted exponent of wall time in ranks."""
    summit = load_cluster("summit")
    rows, walls = [], []
    SimulatedNetwork.from_cluster(summit, 2, mode="flow").simulate("allreduce", n_bytes, 12,
                                                                   "ring")  # numba's cache
    for p in counts:
        net = SimulatedNetwork.from_cluster(summit, -(-p // 6), mode="flow")
        t0 = time.perf_counter()
        res = net.simulate("allreduce", n_bytes, p, "ring")
        wall = time.perf_counter() - t0
        fast = net.simulate("allreduce", n_bytes, p, "ring", mode="fast").time_s
        walls.append(wall)
        msgs = 2 * p * (p - 1)
        rows.append({"case": f"flow ring allreduce {n_bytes:.0e} B, {p:,} ranks (Summit)",
                     "wall_s": f"{wall:.2f}", "target": "<= 60 s" if p >= 16384 else "",
                     "result": f"{res.time_s * 1e3:.4f} ms simulated (fast mode "
                               f"{(fast / res.time_s - 1) * 100:+.2f}%), {msgs:,} messages, "
                               f"{msgs / wall / 1e6:.1f} M/s",
                     "peak_rss_GB": f"{rss_gb():.2f}"})
    slope = float(np.polyfit(np.log(counts), np.log(walls), 1)[0]) if len(counts) > 1 else 0.0
    rows.append({"case": "flow ring: exponent of wall time in ranks", "wall_s": "",
                 "target": "<= 1.2", "result": f"{slope:.2f}", "peak_rss_GB": ""})
    return rows


def closed_form_rows(quick: bool) -> list[dict]:
    """Simulated (fast) allreduce against the closed form with the cluster's NIC alpha/beta."""
    crossbar = load_cluster("stampede2-knl")
    crossbar = Cluster("crossbar (no contention)", crossbar.node,
                       NetworkSpec("xbar", Crossbar(1024), crossbar.network.link, 0.0))
    base = load_cluster("stampede2-knl")
    torus = Cluster("torus 8x8x4", base.node,
                    NetworkSpec("t", Torus((8, 8, 4)), Link("t", 12.5e9, 0.1e-6), 0.1e-6))
    clusters = [crossbar, base, load_cluster("cori-knl"), torus]
    sizes = (1e3, 1e6, 100e6) if not quick else (1e6,)
    counts = (16, 256) if not quick else (16,)
    rows = []
    for c in clusters:
        for p in counts:
            sim = SimulatedNetwork.from_cluster(c, p)
            ana = AnalyticalNetwork(c)
            for alg in FLAT:
                for n in sizes:
                    s = sim.allreduce_s(n, p, alg)
                    a = ana.allreduce_s(n, p, alg)
                    rows.append({"topology": c.name, "ranks": p, "algorithm": alg,
                                 "bytes": f"{n:.0e}", "sim_s": f"{s:.4e}",
                                 "closed_s": f"{a:.4e}", "sim/closed": f"{s / a:.4f}"})
    return rows


def hierarchical_rows() -> list[dict]:
    summit = load_cluster("summit")
    rows = []
    for nodes in (2, 16, 128):
        net = SimulatedNetwork.from_cluster(summit, nodes)
        intra = summit.node.intra_link
        nic = summit.node.nic
        for n in (1e6, 100e6):
            s = net.allreduce_s(n, nodes * 6, "hierarchical")
            a = float(cf.hierarchical_allreduce_s(
                n, nodes, 6, (intra.latency_s, 1 / intra.bandwidth_Bps),
                (nic.latency_s + intra.latency_s, 1 / nic.bandwidth_Bps)))
            rows.append({"topology": "summit (star node)", "ranks": nodes * 6,
                         "algorithm": "hierarchical", "bytes": f"{n:.0e}", "sim_s": f"{s:.4e}",
                         "closed_s": f"{a:.4e}", "sim/closed": f"{s / a:.4f}"})
    return rows


SIMGRID_ACTORS = r"""
import json, sys
from simgrid import Actor, Engine, Host, Mailbox, this_actor
plan = json.load(open(sys.argv[1]))
e = Engine([sys.argv[0], "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
            "--cfg=network/TCP-gamma:0", "--log=root.thres:critical"])
e.load_platform(sys.argv[2])
def rank(steps):
    for outs, ins in steps:
        comms = [Mailbox.by_name(mb).get_async() for mb in ins]
        comms += [Mailbox.by_name(mb).put_async(b"x", int(size)) for mb, size in outs]
        for c in comms:
            (c[0] if isinstance(c, tuple) else c).wait()  # get_async gives (comm, data)
for r, (host, steps) in enumerate(plan):
    Actor.create(f"r{r}", Host.by_name(host), rank, steps)
e.run()
print(repr(Engine.clock))
"""


def simgrid_time(net: SimulatedNetwork, algorithm: str, n_bytes: float, workdir: str) -> float:
    """Run the same routed schedule in SimGrid (CM02 max-min, no TCP corrections)."""
    import json
    import os
    import subprocess

    from dlscale.simulator.network.schedules import build_schedule

    t = net.table
    p = net.max_ranks
    phases = build_schedule("allreduce", algorithm, p, n_bytes)
    lines = ["<?xml version='1.0'?>", '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="z" routing="Full">']
    lines += [f'<host id="n{i}" speed="1Gf"/>' for i in net.rank_nodes.tolist()]
    for e in range(t.n_links // 2):
        lines.append(f'<link id="e{e}" bandwidth="{float(t.bandwidth_Bps[2 * e])!r}Bps" '
                     f'latency="{float(t.latency_s[2 * e])!r}s" sharing_policy="SPLITDUPLEX"/>')
    routes: dict[tuple[int, int], list[int]] = {}
    plan: list = [[f"n{n}", []] for n in net.rank_nodes.tolist()]
    k = 0
    for ph in phases:
        routed = net._cache.get(ph, t, net.router, net.rank_nodes)
        for _ in range(ph.repeat):
            for r in range(p):
                plan[r][1].append([[], []])
            for m, (s_, d_) in enumerate(zip(ph.src.tolist(), ph.dst.tolist(), strict=True)):
                key = (int(net.rank_nodes[s_]), int(net.rank_nodes[d_]))
                links = routed.routes.links[m]
                routes[key] = links[links >= 0].tolist()
                mb = f"{k}:{m}"
                plan[s_][1][-1][0].append([mb, float(ph.nbytes[m])])
                plan[d_][1][-1][1].append(mb)
            k += 1
    for (a, b), links in routes.items():
        ctn = "".join(f'<link_ctn id="e{lk // 2}" direction="{"UP" if lk % 2 == 0 else "DOWN"}"/>'
                      for lk in links)
        lines.append(f'<route src="n{a}" dst="n{b}" symmetrical="NO">{ctn}</route>')
    lines += ["</zone>", "</platform>"]
    xml, plan_path, script = (os.path.join(workdir, x) for x in ("p.xml", "plan.json", "run.py"))
    with open(xml, "w") as f:
        f.write("\n".join(lines))
    with open(plan_path, "w") as f:
        json.dump(plan, f)
    with open(script, "w") as f:
        f.write(SIMGRID_ACTORS)
    out = subprocess.run(["/usr/bin/python3", script, plan_path, xml], capture_output=True,
                         text=True, check=True, timeout=600)
    return float(out.stdout.strip().splitlines()[-1])


def simgrid_rows() -> list[dict]:
    """Flow mode against SimGrid on the same routes (needs Debian's python3-simgrid)."""
    import tempfile

    from dlscale.simulator.topology.dragonfly import dragonfly_graph
    from dlscale.simulator.topology.fattree import fat_tree_graph, xgft_graph
    from dlscale.simulator.topology.torus import torus_graph

    topologies = {"fat tree k=4": fat_tree_graph(4), "fat tree 4:1 taper": xgft_graph((4, 4), (1, 1)),
                  "dragonfly 5x4x2": dragonfly_graph(5, 4, 2, 1), "torus 4x4": torus_graph((4, 4))}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, G in topologies.items():
            for placement in ("linear", "random"):
                net = SimulatedNetwork(G, mode="flow", placement=placement, seed=3)
                for alg in ("ring", "recursive-doubling", "rabenseifner", "binomial-tree"):
                    ours = net.allreduce_s(1e6, net.max_ranks, alg)
                    ref = simgrid_time(net, alg, 1e6, tmp)
                    rows.append({"topology": name, "placement": placement, "algorithm": alg,
                                 "flow_s": f"{ours:.4e}", "simgrid_s": f"{ref:.4e}",
                                 "flow/simgrid": f"{ours / ref:.4f}", "simgrid_exact_s": ref})
    return rows


def record_simgrid(rows: list[dict], path: str) -> None:
    """Write SimGrid's times to ``path`` (JSON) for tests/test_simgrid_recorded.py."""
    import json
    import subprocess

    from dlscale.perfmodel.output.atomicio import atomic_write_text

    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-simgrid"],
                             capture_output=True, text=True, check=True).stdout.strip()
    doc = {"about": "SimGrid CM02 (max-min, no TCP corrections) on the routes flow mode uses: "
                    "benchmarks/bench_network.py --simgrid --record; 1 MB allreduce, seed 3",
           "simgrid": version, "n_bytes": 1e6, "seed": 3,
           "rows": [{k: r[k] for k in ("topology", "placement", "algorithm")}
                    | {"simgrid_s": r["simgrid_exact_s"]} for r in rows]}
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sweeps")
    parser.add_argument("--flow-ranks", type=int, default=512, help="ranks of the flow-mode case")
    parser.add_argument("--flow-ring", action="store_true",
                        help="only flow mode's ring at 1,024 / 4,096 / 16,384 ranks")
    parser.add_argument("--simgrid", action="store_true",
                        help="only compare flow mode with SimGrid (apt-get install python3-simgrid)")
    parser.add_argument("--record", metavar="PATH",
                        help="with --simgrid: also write SimGrid's times to PATH (JSON)")
    args = parser.parse_args(argv)
    if args.simgrid:
        rows = simgrid_rows()
        print(table(rows, ("topology", "placement", "algorithm", "flow_s", "simgrid_s",
                           "flow/simgrid")))
        if args.record:
            record_simgrid(rows, args.record)
        return 0
    if args.flow_ring:
        print(table(flow_ring_rows(), ("case", "wall_s", "target", "result", "peak_rss_GB")))
        return 0
    speed: list[dict] = []
    bench_summit(speed)
    bench_flow(speed, args.flow_ranks)
    speed += flow_ring_rows((1024, 4096) if args.quick else (1024, 4096, 16384))
    print(table(speed, ("case", "wall_s", "target", "result", "peak_rss_GB")))
    print()
    rows = closed_form_rows(args.quick) + hierarchical_rows()
    print(table(rows, ("topology", "ranks", "algorithm", "bytes", "sim_s", "closed_s",
                       "sim/closed")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
