"""The network line of predict's header (issue 26 item 11): the closed-form bisection
equals the one the simulator finds on the routed graph, and a topology guess shows."""

import dataclasses

import pytest

from dlscale.cli import main
from dlscale.perfmodel.catalog import get_cluster
from dlscale.perfmodel.machine.hardware import Crossbar, Dragonfly, FatTree, Torus
from dlscale.perfmodel.machine.topoinfo import bisection_Bps, network_line, tapers
from dlscale.simulator.network import SimulatedNetwork


def _with(name, topo):
    c = get_cluster(name)
    return dataclasses.replace(c, network=dataclasses.replace(c.network, topology=topo))


@pytest.mark.parametrize("cluster", [
    _with("stampede2-skx", FatTree(2, 28, ((28, 20),), 28 * 4)),
    _with("summit", FatTree(3, 4, ((4, 2), (4, 3)), 64, rails=2)),
    _with("summit", FatTree(3, 4, ((2, 1), (1, 1)), 32)),
    _with("summit", Torus((4, 4, 2))),
    _with("summit", Crossbar(8)),
    _with("cori-knl", Dragonfly(4, 4, 2, 3, 32, 5.25e9, 4.7e9)),
    _with("cori-knl", Dragonfly(4, 4, 2, 1, 32, 5.25e9, 4.7e9)),
], ids=lambda c: c.network.topology.family)
def test_bisection_is_the_routed_graphs(cluster):
    topo = cluster.network.topology
    m = SimulatedNetwork.from_cluster(cluster, topo.max_nodes).metrics()
    assert m.bisection_exact
    assert bisection_Bps(cluster) == pytest.approx(m.bisection_Bps, rel=1e-9)


def test_a_taper_guess_changes_the_network_line():
    """``down_up = [[2, 1], [1, 1]]`` on Summit's tree cut the bisection while predict
    printed the same row: the network line (predict's header) shows the cut."""
    summit = get_cluster("summit")
    guess = _with("summit", dataclasses.replace(summit.network.topology,
                                                down_up=((2, 1), (1, 1))))
    assert tapers(guess) == [(18, 1), (1, 1)]
    assert bisection_Bps(guess) < bisection_Bps(summit) / 8
    assert network_line(guess) != network_line(summit)


def test_taper_guess_in_a_file_changes_the_header(tmp_path, capsys):
    f = tmp_path / "guess.toml"
    f.write_text('base = "summit"\n[network.topology]\ndown_up = [[2, 1], [1, 1]]\n')
    assert main(["predict", "summit", "resnet50", "--nodes", "2"]) == 0
    plain = capsys.readouterr().out
    assert main(["predict", str(f), "resnet50", "--nodes", "2"]) == 0
    guessed = capsys.readouterr().out
    line = [ln for ln in guessed.splitlines() if ln.startswith("network:")]
    assert line and "taper 18:1 at L1, 1:1 at L2" in line[0]
    assert line[0] not in plain


def test_a_dragonfly_whose_groups_cannot_all_be_linked_is_refused_by_its_description(
        tmp_path, capsys):
    """4 groups of 2 routers with 1 global link each have 2 global ports per group for 3
    other groups: the description refuses it, so predict says so in one line (it used to
    compute with a division by zero warning while simulate refused it)."""
    from dlscale.perfmodel.errors import ConfigError

    with pytest.raises(ConfigError, match=r"dragonfly.groups: 4 groups need at least 3 "
                                          r"global ports per group .* = 2"):
        Dragonfly(4, 2, 2, 1, 16)
    f = tmp_path / "df.toml"
    f.write_text('base = "cori-knl"\n[network.topology]\nfamily = "dragonfly"\ngroups = 4\n'
                 'routers_per_group = 2\nterminals_per_router = 2\n'
                 'global_links_per_router = 1\nmax_nodes = 16\n')
    assert main(["predict", str(f), "resnet50", "--nodes", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dragonfly.groups" in err[0], err
