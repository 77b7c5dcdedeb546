"""Flow mode against SimGrid's CM02 max-min model, on recorded SimGrid figures.

SimGrid 3.32 (Debian's python3-simgrid) ran the same allreduce schedules on the same
routes (one SimGrid link per graph edge, split-duplex, CM02 without TCP corrections):
``benchmarks/bench_network.py --simgrid --record tests/data/simgrid_cm02_allreduce.json``.
SimGrid is not needed to run this test; its figures are in the file.

Measured when recorded (Rabenseifner in MPICH's step order since issue 27.7): 21 of 32
cases equal to 4 digits; the rest within 3% (the largest: dragonfly 5x4x2, random
placement, ring, +2.9%; dragonfly 5x4x2, linear, Rabenseifner, +2.5%; -1.7% to +2.9% in
all), all with random placement or on the dragonfly. The cause of those differences is
not diagnosed. (Before, in the reverse order: 24 of 32, -1.7% to +3.9%; the order
itself, run in SimGrid: 4:1 taper, linear, 0.519 ms reverse, 0.249 ms MPICH's.)
"""

import json
from pathlib import Path

import numpy as np
import pytest

from dlscale.simulator.network import SimulatedNetwork
from dlscale.simulator.topology.dragonfly import dragonfly_graph
from dlscale.simulator.topology.fattree import fat_tree_graph, xgft_graph
from dlscale.simulator.topology.torus import torus_graph

RECORD = json.loads((Path(__file__).parent / "data" / "simgrid_cm02_allreduce.json").read_text())
TOPOLOGIES = {"fat tree k=4": lambda: fat_tree_graph(4),
              "fat tree 4:1 taper": lambda: xgft_graph((4, 4), (1, 1)),
              "dragonfly 5x4x2": lambda: dragonfly_graph(5, 4, 2, 1),
              "torus 4x4": lambda: torus_graph((4, 4))}


def test_the_record_covers_every_topology_placement_and_algorithm():
    seen = {(r["topology"], r["placement"], r["algorithm"]) for r in RECORD["rows"]}
    assert {t for t, _, _ in seen} == set(TOPOLOGIES)
    assert len(seen) == len(RECORD["rows"]) == 4 * 2 * 4


def _flow_s(row: dict) -> float:
    net = SimulatedNetwork(TOPOLOGIES[row["topology"]](), mode="flow",
                           placement=row["placement"], seed=RECORD["seed"])
    return net.allreduce_s(RECORD["n_bytes"], net.max_ranks, row["algorithm"])


def test_flow_mode_matches_simgrid_cm02():
    ratios = []
    for row in RECORD["rows"]:
        ours = _flow_s(row)
        ratios.append(ours / row["simgrid_s"])
        assert ours == pytest.approx(row["simgrid_s"], rel=0.05), row
    # most cases agree to 4 digits: a shift of the whole model would show here
    assert float(np.median(np.abs(np.log(ratios)))) < 1e-3
