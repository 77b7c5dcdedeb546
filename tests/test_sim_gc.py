"""The cyclic collector's full passes on the simulate path (issue 27 item 5), counted.

A full pass walks every tracked object. The command's imports (150,000 objects of
numpy, networkx, numba) and the graph of 27,648 GPUs (60,000 nodes, 56,000 edges)
are long-lived and leave no garbage, yet each grew the heap past CPython's mark for a
full pass: two to three of them in ``dlscale simulate summit resnet50``, 0.3 s of CPU
time at 27,648 GPUs (``benchmarks/bench_scale.py`` times it). The process's own
command line now keeps its imports out of the passes (``gc.freeze``), and the
simulated network is built with the collector held off
(:func:`dlscale.perfmodel.gcpause.paused_gc`); called in process, the command line
freezes nothing.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

import pytest

import dlscale.simulator.network.simulated as simulated
from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.gcpause import paused_gc

#: Runs the command line as the process's own (no argv given), counting full passes.
DRIVER = """
import contextlib, gc, io, json, sys
full = []
gc.callbacks.append(lambda phase, info: full.append(info["collected"])
                    if phase == "stop" and info["generation"] == 2 else None)
sys.argv = ["dlscale", *sys.argv[2:]]
from dlscale.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main()
with open(OUT, "w") as fh:
    json.dump({"status": status, "full": full, "enabled": gc.isenabled(),
               "frozen": gc.get_freeze_count()}, fh)
"""


def test_the_command_line_makes_no_full_pass_over_its_imports(tmp_path):
    out = tmp_path / "gc.json"
    code = DRIVER.replace("OUT", repr(str(out)))
    # the second of two runs: numba compiling the kernels (an empty cache) makes
    # full passes of its own, over what it builds
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", code, "-", "simulate", "summit",
                            "resnet50", "--nodes", "64", "--format", "json"],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(out.read_text())
    assert got["status"] == 0 and got["enabled"]
    assert got["frozen"] > 50_000          # the imports, out of the passes
    assert got["full"] == []               # before: two full passes, freeing 20 objects


def test_in_process_the_command_line_freezes_nothing(capsys):
    before = gc.get_freeze_count()
    assert main(["simulate", "summit", "resnet50", "--nodes", "2", "--format", "json"]) == 0
    assert gc.get_freeze_count() == before and gc.isenabled()
    assert json.loads(capsys.readouterr().out)


def test_the_cluster_network_is_built_with_the_collector_held_off(monkeypatch):
    seen = []
    build = simulated.cluster_graph

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(simulated, "cluster_graph", spy)
    net = simulated.SimulatedNetwork.from_cluster(get_cluster("summit"), 4)
    assert seen == [False] and gc.isenabled() and net.max_ranks == 24


def test_the_pause_nests_and_survives_an_exception():
    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()          # left off as it was found
    finally:
        gc.enable()
