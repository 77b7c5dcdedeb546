"""Record SMPI's own allreduce times on dlscale's topologies, for
``tests/test_simgrid_recorded.py`` (not part of the tests; SimGrid is not needed to
run them, only to re-record).

SMPI (SimGrid 3.32, Debian ``libsimgrid-dev``: ``smpicc``, ``smpirun``) runs a real
``MPI_Allreduce`` of ``n`` bytes (``MPI_CHAR``, ``MPI_SUM``) with one rank per host on
a platform written from a dlscale topology graph: one SimGrid link per graph edge
(split-duplex, the edge's bandwidth and latency) and, for every ordered pair of
hosts, the route dlscale's router gives (``symmetrical="NO"``), so that both tools
move the same bytes over the same links. Everything else is SMPI's default: the SMPI
network model (``network/model:SMPI``: the ``smpi/bw-factor`` and ``smpi/lat-factor``
tables, weight-S 8775, cross-traffic on, TCP-gamma 4 MiB), the 16-byte envelope of
every message (``src/smpi/mpi/smpi_request.cpp``), eager sends below 64 KiB. The
sizes (about 1 MiB and 64 KiB) are multiples of every rank count (:data:`SIZES`).
Computation is not simulated (``smpi/simulate-computation:no``): the reduction's
arithmetic costs nothing, as with dlscale's ``gamma = 0``. Every rank enters the
allreduce at the same simulated instant (``smpi_execute`` up to 1 s after the
barrier, whose own exits are skewed by microseconds); the time recorded is the last
rank's exit after that instant. Each algorithm is chosen
with ``smpi/allreduce``:

=====================  ===========================================================
dlscale                SMPI (``src/smpi/colls/allreduce/``)
=====================  ===========================================================
ring                   ``lr`` (logical ring: reduce-scatter then allgather)
recursive-doubling     ``rdb``
rabenseifner           ``rab_rdb`` (MPICH's reduce-scatter + allgather)
=====================  ===========================================================

Run: ``python3 benchmarks/smpi_record.py --record tests/data/smpi_default_allreduce.json``
(with this checkout's ``.venv/bin/python``; ``smpicc`` and ``smpirun`` on PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import numpy as np

from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, xgft_graph
from dlscale.simulator.topology.routing import route
from dlscale.simulator.topology.torus import torus_graph

#: dlscale's name -> SMPI's ``smpi/allreduce`` algorithm.
ALGORITHMS = {"ring": "lr", "recursive-doubling": "rdb", "rabenseifner": "rab_rdb"}
TOPOLOGIES = {"fat tree k=4": lambda: fat_tree_graph(4),
              "fat tree 4:1 taper": lambda: xgft_graph((4, 4), (1, 1)),
              "dragonfly 5x4x2": lambda: dragonfly_graph(5, 4, 2, 1),
              "torus 4x4": lambda: torus_graph((4, 4))}
PLACEMENTS = ("linear", "random")
#: Multiples of every rank count here (16 and 40): SMPI's ``lr`` ends with an allreduce of
#: its own for the remainder of ``n / p`` elements, which dlscale's ring does not have.
SIZES = (1_048_560, 65_520)
SEED = 3

PROGRAM = r"""
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
/* Every rank enters MPI_Allreduce at the same simulated instant (START s, long after
   the barrier), as dlscale's ranks do; the time is the last rank's exit after it. */
#define START 1.0
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long n = atol(argv[1]);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char* a = calloc(n, 1);
  char* b = calloc(n, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  smpi_execute(START - MPI_Wtime());
  MPI_Allreduce(a, b, (int)n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
  double t = MPI_Wtime() - START, tmax;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("%.17g\n", tmax);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
"""


def platform(net: SimulatedNetwork) -> str:
    """SimGrid platform XML of ``net``: its links and dlscale's route for every
    ordered pair of the ranks' hosts."""
    t = net.table
    hosts = net.rank_nodes.tolist()
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             '<platform version="4.1">', '<zone id="z" routing="Full">']
    lines += [f'<host id="n{i}" speed="1Gf"/>' for i in hosts]
    for e in range(t.n_links // 2):
        lines.append(f'<link id="e{e}" bandwidth="{float(t.bandwidth_Bps[2 * e])!r}Bps" '
                     f'latency="{float(t.latency_s[2 * e])!r}s" sharing_policy="SPLITDUPLEX"/>')
    src = np.array([a for a in hosts for b in hosts if a != b], dtype=np.int64)
    dst = np.array([b for a in hosts for b in hosts if a != b], dtype=np.int64)
    routes = route(t, net.router, src, dst)
    if net.router.rails != 1:
        raise SystemExit("one rail only: SimGrid has one route per pair")
    for a, b, links in zip(src.tolist(), dst.tolist(), routes.links, strict=True):
        ctn = "".join(f'<link_ctn id="e{lk // 2}" direction="{"UP" if lk % 2 == 0 else "DOWN"}"/>'
                      for lk in links[links >= 0].tolist())
        lines.append(f'<route src="n{a}" dst="n{b}" symmetrical="NO">{ctn}</route>')
    lines += ["</zone>", "</platform>"]
    return "\n".join(lines) + "\n"


def smpi_time(net: SimulatedNetwork, algorithm: str, n_bytes: int, workdir: str,
              exe: str) -> float:
    """SMPI's time of ``MPI_Allreduce`` (the slowest rank's) with ``algorithm``."""
    xml, hostfile = os.path.join(workdir, "p.xml"), os.path.join(workdir, "hosts")
    with open(xml, "w") as f:
        f.write(platform(net))
    with open(hostfile, "w") as f:
        f.write("".join(f"n{i}\n" for i in net.rank_nodes.tolist()))
    cmd = ["smpirun", "-np", str(net.max_ranks), "-platform", xml, "-hostfile", hostfile,
           "--cfg=smpi/allreduce:" + ALGORITHMS[algorithm],
           "--cfg=smpi/simulate-computation:no", "--cfg=smpi/host-speed:1Gf",
           "--log=root.thres:critical", exe, str(n_bytes)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600,
                         cwd=workdir)
    return float(out.stdout.strip().splitlines()[-1])


def rows() -> list[dict]:
    """SMPI's time of every topology, placement, algorithm and size."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "ar.c"), os.path.join(tmp, "ar")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["smpicc", "-O1", src, "-o", exe], check=True, capture_output=True)
        for name, build in TOPOLOGIES.items():
            for placement in PLACEMENTS:
                net = SimulatedNetwork(build(), mode="flow", placement=placement, seed=SEED)
                for alg in ALGORITHMS:
                    for n in SIZES:
                        t = smpi_time(net, alg, n, tmp, exe)
                        out.append({"topology": name, "placement": placement,
                                    "algorithm": alg, "n_bytes": n, "smpi_s": t})
                        print(f"{name:20s} {placement:7s} {alg:19s} {n:8d} {t:.6e}",
                              file=sys.stderr)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", metavar="PATH", required=True,
                        help="write SMPI's times to PATH (JSON)")
    args = parser.parse_args(argv)
    from dlscale.perfmodel.output.atomicio import atomic_write_text

    version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libsimgrid-dev"],
                             capture_output=True, text=True, check=True).stdout.strip()
    doc = {"about": "SMPI's MPI_Allreduce with its default network model on dlscale's "
                    "routes: benchmarks/smpi_record.py --record PATH",
           "simgrid": version, "seed": SEED, "smpi_algorithms": ALGORITHMS, "rows": rows()}
    atomic_write_text(args.record, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
