"""Flow mode against SimGrid's CM02 max-min model and against SMPI's own
``MPI_Allreduce`` with its default network model, on recorded SimGrid figures.

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

SMPI (``tests/data/smpi_default_allreduce.json``, recorded by
``benchmarks/smpi_record.py`` with Debian's libsimgrid-dev 3.32: ``smpicc`` and
``smpirun`` on a platform of the same links and routes) is held against flow mode with
``message_factors = "smpi-default"``.
"""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from dlscale.perfmodel.network.msgfactors import MESSAGE_FACTORS
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


# --- SMPI with its default network model (issue 27 item 7) ---------------------------

SMPI_RECORD = json.loads((Path(__file__).parent / "data"
                          / "smpi_default_allreduce.json").read_text())


def test_the_smpi_record_covers_every_topology_placement_algorithm_and_size():
    """SMPI 3.32's ``MPI_Allreduce`` with ``lr``, ``rdb`` and ``rab_rdb`` (the allreduce
    algorithms SMPI and dlscale both have: benchmarks/smpi_record.py), on the same
    routes, at about 1 MiB and 64 KiB."""
    seen = {(r["topology"], r["placement"], r["algorithm"], r["n_bytes"])
            for r in SMPI_RECORD["rows"]}
    assert {t for t, *_ in seen} == set(TOPOLOGIES)
    assert {a for _, _, a, _ in seen} == set(SMPI_RECORD["smpi_algorithms"]) == {
        "ring", "recursive-doubling", "rabenseifner"}
    assert len(seen) == len(SMPI_RECORD["rows"]) == 4 * 2 * 3 * 2


def _smpi_flow_s(row: dict, factors) -> float:
    net = SimulatedNetwork(TOPOLOGIES[row["topology"]](), mode="flow",
                           placement=row["placement"], seed=SMPI_RECORD["seed"],
                           message_factors=factors)
    return net.allreduce_s(row["n_bytes"], net.max_ranks, row["algorithm"])


def test_flow_mode_with_smpi_default_matches_smpi():
    """Flow mode with ``message_factors = "smpi-default"``: SMPI's factors with its
    16-byte envelope and exclusive thresholds, 5% cross-traffic and weight-S.

    Measured when recorded: 47 of 48 cases within 0.6%, 42 within 0.03% (recursive
    doubling and Rabenseifner all of them); the largest, the ring on the dragonfly with
    random placement at 1 MiB, -2.9%. With the factors alone (SimGrid's bounds taken as
    inclusive, no envelope, no cross-traffic, equal shares) -8.2% to +7.9%, 7 cases
    beyond 5%."""
    ratios = []
    for row in SMPI_RECORD["rows"]:
        ours = _smpi_flow_s(row, MESSAGE_FACTORS["smpi-default"])
        ratios.append(ours / row["smpi_s"])
        assert ours == pytest.approx(row["smpi_s"], rel=0.05), row
    assert float(np.median(np.abs(np.log(ratios)))) < 1e-3
    # README.md quotes these cases: "within 2.9% on the 48 recorded cases ..., 47 of them
    # within 0.6%" (each bound the largest error of its cases, at the decimal printed)
    import re

    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    found = re.search(r"`MPI_Allreduce` times \(`lr`, `rdb`, `rab_rdb`\) within (\d+\.\d)% on "
                      r"the (\d+) recorded cases of `tests/test_simgrid_recorded.py`, (\d+) of "
                      r"them within (\d+\.\d)%", readme)
    assert found is not None
    worst, cases, close, bound = found.groups()
    errors = sorted(abs(r - 1) for r in ratios)
    assert int(cases) == len(errors) and f"{100 * errors[-1]:.1f}" == worst, errors[-1]
    assert round(100 * errors[int(close) - 1], 1) <= float(bound) < round(100 * errors[int(close)], 1)


def test_smpi_semantics_are_what_brings_flow_mode_to_smpi():
    """Without SMPI's semantics around its factors, recursive doubling (every link
    loaded both ways: the 5% cross-traffic) and the ring on the tapered tree
    (weight-S) are off by more than 5%: the test above can tell."""
    bare = dataclasses.replace(MESSAGE_FACTORS["smpi-default"], envelope_bytes=0.0,
                               exclusive=False, cross_traffic=0.0, weight_S_bytes=0.0)
    worst = {}
    for row in SMPI_RECORD["rows"]:
        if row["n_bytes"] > 1e6 and row["topology"] != "dragonfly 5x4x2":
            err = abs(_smpi_flow_s(row, bare) / row["smpi_s"] - 1)
            worst[row["algorithm"]] = max(worst.get(row["algorithm"], 0.0), err)
    assert worst["recursive-doubling"] > 0.05 and worst["ring"] > 0.05
