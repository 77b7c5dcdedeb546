"""Issue 27 items 9, 12, 13 and 14: sizes beyond the machine, missing scikit-learn, extreme
values and poor messages are each one line and exit status 2, before any work."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from dlscale.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _refused(capsys, argv: list[str], *needles: str) -> str:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _cluster(tmp_path: Path, topology: str, extra: str = "") -> str:
    path = tmp_path / "big.toml"
    path.write_text(f'base = "summit"\nname = "big"\n{extra}\n[network]\ntopology = {topology}\n')
    return str(path)


FAT_TREE = '{family = "fat-tree", levels = 3, nodes_per_leaf = 18, max_nodes = 1000000000}'
CROSSBAR = '{family = "crossbar", max_nodes = 1000000000}'
DRAGONFLY = ('{family = "dragonfly", groups = 100000, routers_per_group = 100, '
             'terminals_per_router = 100, global_links_per_router = 1000, max_nodes = 1000000000}')


# --- 27.9: sizes beyond what the machine holds ------------------------------------

@pytest.mark.parametrize("topology", [FAT_TREE, CROSSBAR, DRAGONFLY])
@pytest.mark.parametrize("algorithm", ["sync-sgd", "async-sgd"])
def test_predict_beyond_the_ranks_limit_is_refused(tmp_path, capsys, topology, algorithm):
    _refused(capsys, ["predict", _cluster(tmp_path, topology), "resnet50", "--nodes", "10000000",
                      "--algorithm", algorithm],
             "10,000,000 nodes x 6 = 60,000,000 ranks", "at most 1,048,576 ranks")


@pytest.mark.parametrize("topology", [FAT_TREE, CROSSBAR])
@pytest.mark.parametrize("workload", [[], ["resnet50"]])
def test_simulate_fat_tree_and_crossbar_count_their_graph(tmp_path, capsys, topology, workload):
    _refused(capsys, ["simulate", _cluster(tmp_path, topology), *workload, "--nodes", "100000"],
             "100,000 hosts", "elements", "at most 131,072")


def test_summit_at_full_size_is_inside_every_limit():
    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.perfmodel.limits import check_analytical_ranks, check_rank_steps
    from dlscale.simulator.topology.cluster import check_size

    summit = get_cluster("summit")
    check_analytical_ranks(4608 * 6)
    check_size(summit, 4608, 6)
    check_rank_steps(4608 * 6, 20)


def test_rails_and_devices_per_node_have_a_physical_limit(tmp_path, capsys):
    rails = '{family = "fat-tree", levels = 3, nodes_per_leaf = 18, rails = 1000000000, max_nodes = 4608}'
    _refused(capsys, ["predict", _cluster(tmp_path, rails), "resnet50", "--nodes", "2"],
             "rails: 1,000,000,000 is more than 64")
    path = tmp_path / "dpn.toml"
    path.write_text('base = "summit"\n[node]\ndevices_per_node = 100000000\n')
    _refused(capsys, ["predict", str(path), "resnet50", "--nodes", "2"],
             "devices_per_node: 100,000,000 is more than 1,024")


@pytest.mark.parametrize("argv, needles", [
    (["--iterations", "1000000000"], ("12,000,000,000 simulated rank-iterations",)),
    (["--cosim", "--hidden", "1000000000"], ("--hidden", "more than 65,536")),
    (["--cosim", "--target-accuracy", "0.9", "--repeats", "1000000000"],
     ("--repeats", "rank-iterations")),
])
def test_simulated_work_is_bounded(capsys, argv, needles):
    _refused(capsys, ["simulate", "summit", "resnet50", *argv], *needles)


def test_max_points_has_a_ceiling(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text('cluster = "summit"\nworkload = "resnet50"\nnodes = "2"\n'
                     'max_points = 1000000000000\n[vary]\n'
                     '"network.link.bandwidth_GBps" = {start = 1, stop = 1e12, step = 1}\n')
    _refused(capsys, ["sweep", str(study), "-o", str(tmp_path / "out")],
             "max_points: 1,000,000,000,000 is more than 10,000,000")


def test_a_huge_graphml_is_refused_before_parsing(tmp_path, capsys):
    path = tmp_path / "big.graphml"
    with path.open("w") as f:
        f.write('<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
                '<graph edgedefault="undirected">\n')
        f.write('<node id="s"/>\n' * 140_000)
        f.write("</graph></graphml>\n")
    _refused(capsys, ["simulate", str(path)], "140,000 nodes", "at most 131,072")


def test_graphml_count_spans_read_blocks(tmp_path):
    from dlscale.simulator.topology.graphml import _check_node_count

    path = tmp_path / "g.graphml"
    text = ('<node id="a"/>' + " " * 70) * 140_000     # tags straddle the 1 MiB blocks
    path.write_text(text)
    with pytest.raises(Exception, match="140,000 nodes"):
        _check_node_count(path)


# --- 27.12: scikit-learn --------------------------------------------------------------

def test_scikit_learn_is_a_core_dependency():
    from dlscale.perfmodel.machine.config import read_toml

    deps = read_toml(ROOT / "pyproject.toml")["project"]["dependencies"]
    assert any(d.startswith("scikit-learn") for d in deps)


@pytest.mark.parametrize("argv", [
    ["simulate", "summit", "resnet50", "--cosim", "--iterations", "2"],
    ["simulate", "cori-knl", "googlenet", "--nodes", "2", "--cosim", "--target-accuracy", "0.5"],
    ["calibrate", "-o", "PROFILE"],
])
def test_missing_scikit_learn_is_one_line_before_work(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    argv = [str(tmp_path / "p.json") if a == "PROFILE" else a for a in argv]
    _refused(capsys, argv, "scikit-learn")


def test_missing_scikit_learn_refuses_a_cosim_study(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    study = ROOT / "examples" / "studies" / "easgd-time-to-target.toml"
    _refused(capsys, ["sweep", str(study), "-o", str(tmp_path / "out")], "fidelity", "scikit-learn")


# --- 27.13: extreme values -------------------------------------------------------------

def test_a_401_digit_integer_is_refused(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('base = "summit"\n[node]\nmemory_GiB = ' + "9" * 401 + "\n")
    _refused(capsys, ["predict", str(path), "resnet50", "--nodes", "2"],
             "memory_GiB", "401-digit integer", "64-bit")


@pytest.mark.parametrize("gamma", ["inf", "nan", "2"])
def test_gamma_outside_its_range_is_refused(capsys, gamma):
    _refused(capsys, ["simulate", "summit", "--gamma", gamma], "--gamma", "physical range")


def test_a_link_slower_than_any_wire_is_refused(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('base = "summit"\n[network.link]\nname = "x"\nbandwidth_Bps = 1e-299\n'
                    'latency_us = 1\n')
    _refused(capsys, ["predict", str(path), "resnet50", "--nodes", "2"],
             "bandwidth_Bps: 1e-299 B/s is outside the physical range")


def test_a_message_factor_outside_its_range_is_refused():
    from dlscale.perfmodel.errors import ConfigError
    from dlscale.perfmodel.network.msgfactors import MessageFactors

    with pytest.raises(ConfigError, match=r"bandwidth\[0\]: 1e-300 x is outside"):
        MessageFactors(name="f", min_bytes=(0.0,), latency=(1.0,), bandwidth=(1e-300,))


# --- 27.14: messages -------------------------------------------------------------------

def test_negative_node_count_names_the_sign(capsys):
    _refused(capsys, ["predict", "summit", "resnet50", "--nodes", "-4"],
             "node counts must be >= 1, got -4")


def test_plan_names_the_global_batch_when_no_node_count_is_left(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    main(["plan", "resnet50", "--cluster", "summit", "--global-batch", "3"])
    out = capsys.readouterr().out
    assert "global_batch: 3 samples cannot be split over the 6 ranks of one node" in out
    assert "no cluster has a node count within the limits" not in out


def test_batch_next_to_global_batch_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for cmd in (["predict", "summit", "resnet50", "--nodes", "2"], ["plan", "resnet50"]):
        _refused(capsys, [*cmd, "--batch", "4", "--global-batch", "64"],
                 "--batch: not with --global-batch")


def test_an_empty_empirical_noise_file_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    _refused(capsys, ["predict", "summit", "resnet50", "--nodes", "2", "--noise",
                      f"empirical:{empty}"], "holds no step times")


def test_base_naming_a_folder_a_fifo_or_a_long_chain(tmp_path, capsys):
    import os

    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo.toml")
    for target, needle in (("./folder", "is a folder"), ("fifo.toml", "not a regular file")):
        path = tmp_path / "c.toml"
        path.write_text(f'base = "{target}"\n')
        _refused(capsys, ["predict", str(path), "resnet50", "--nodes", "2"], needle)
    for i in range(150):
        nxt = f'"ch{i + 1}.toml"' if i < 149 else '"summit"'
        (tmp_path / f"ch{i}.toml").write_text(f"base = {nxt}\n")
    _refused(capsys, ["predict", str(tmp_path / "ch0.toml"), "resnet50", "--nodes", "2"],
             "a chain of more than 100 base files", "ch0.toml -> ...")


def test_graphml_to_a_training_command_does_not_suggest_that_command(tmp_path, capsys):
    path = tmp_path / "t.graphml"
    path.write_text('<?xml version="1.0"?><graphml><graph></graph></graphml>\n')
    line = _refused(capsys, ["predict", str(path), "resnet50", "--nodes", "2"], "GraphML")
    assert "with no WORKLOAD" in line


def test_flow_network_warns_of_its_cost(capsys, monkeypatch):
    import dlscale.commands.simulate_training as st

    monkeypatch.setattr(st, "FLOW_NOTE_RANKS", 4)     # the note, not the minutes
    main(["simulate", "summit", "resnet50", "--nodes", "1", "--network", "flow",
          "--iterations", "1"])
    assert "note: --network flow" in capsys.readouterr().err


def test_a_live_lock_says_it_may_be_removed(tmp_path):
    import json
    import socket

    from dlscale.perfmodel.errors import ConfigError
    from dlscale.sweep_guard import LOCK_NAME, FolderLock

    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": socket.gethostname() + "-x",
                                                  "since": "then"}))
    with pytest.raises(ConfigError, match=r"remove .*" + LOCK_NAME):
        FolderLock(tmp_path).acquire()


def test_a_write_protected_output_is_refused(tmp_path, capsys):
    out = tmp_path / "ro.json"
    out.write_text("keep")
    out.chmod(0o444)
    _refused(capsys, ["predict", "summit", "resnet50", "--nodes", "2", "-o", str(out)],
             "write-protected")
    assert out.read_text() == "keep"


def test_a_cap_below_the_evaluation_interval_is_refused(capsys):
    _refused(capsys, ["simulate", "cori-knl", "googlenet", "--nodes", "2", "--cosim",
                      "--target-accuracy", "0.5", "--tune", "--iterations", "3",
                      "--eval-every", "5"], "below the evaluation interval")


def test_simulate_explains_an_efficiency_above_one(capsys):
    main(["simulate", "stampede2-knl", "lenet", "--algorithm", "async-sgd", "--nodes", "1,2",
          "--iterations", "3"])
    out = capsys.readouterr().out
    assert "# note: 2 nodes: efficiency above 1: the 1-node baseline reaches its master" in out


def test_a_curve_of_too_many_node_counts_is_refused_before_work():
    """Issue 27 item 4: a curve no longer keeps every node count's plan (306 B per rank
    summed over the counts, so ``--nodes 1-4608:1`` was refused), only about 13 KB per
    count: every node count of Summit is within the budget; a truly absurd curve, here
    200,000 counts of a 10^6-node crossbar, is one line naming the counts, the limit
    and what to give instead, before any work."""
    from dlscale.perfmodel.catalog import get_cluster, get_workload
    from dlscale.perfmodel.errors import ConfigError
    from dlscale.perfmodel.machine.hardware import Cluster, Crossbar, Link, NetworkSpec
    from dlscale.perfmodel.training.predict import predict
    from dlscale.perfmodel.training.rank_layout import layout

    summit, w = get_cluster("summit"), get_workload("resnet50")
    assert len(layout(summit, w, np.arange(1, 4609)).nodes) == 4608
    node = dataclasses.replace(summit.node, devices_per_node=1)
    big = Cluster("big", node, NetworkSpec("x", Crossbar(10**6), Link("ib", 10e9, 1e-6)))
    with pytest.raises(ConfigError) as err:
        predict(big, w, np.arange(1, 200_001))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("nodes: 200,000 node counts") and "at most" in msg
