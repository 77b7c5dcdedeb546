"""Flags in combinations where they cannot act are refused in one line; where they can,
they still act.

``tests/test_flags.py`` holds each flag to acting for one input, or to being refused in
a mode. These are the combinations a probe of every flag at several values found
accepted and read by nothing (the output the same as without the flag, and nothing in
it saying so): a reduction cost for an operation that reduces nothing, a seed of a run
that draws nothing, a baseline for a table without efficiencies, a pipeline schedule
with no pipeline, and the data-parallel plan's defaults given on the transformer path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    from tests.cli_run import run_cli
except ImportError:  # pragma: no cover - run from inside tests/
    from cli_run import run_cli  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
SIMC = ["simulate", "stampede2-skx", "--nodes", "4", "--size-bytes", "1e6"]
LLM_PLAN = ["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "16",
            "--nodes", "1"]

#: id -> (argv, the flag the one line names, a phrase of the reason)
REFUSED = {
    **{f"gamma-{op}": ([*SIMC, "--operation", op, "--gamma", "1e-9"], "--gamma",
                       f"{op} reduces nothing") for op in ("broadcast", "allgather", "alltoall")},
    "seed-linear": ([*SIMC, "--seed", "5"], "--seed", "draws nothing"),
    "seed-topology": ([*SIMC, "--placement", "topology", "--seed", "5"], "--seed",
                      "draws nothing"),
    # a training or transformer run draws at random only by its noise, co-simulation,
    # a random placement or Valiant routing: --seed was accepted and read by nothing
    # (the header's "seed 4" the only difference)
    "seed-training-no-noise": (["simulate", "dgx1-v100", "resnet50", "--noise", "none",
                                "--seed", "4"], "--seed", "draws nothing"),
    "seed-training-sigma-0": (["simulate", "dgx1-v100", "resnet50", "--noise", "lognormal:0",
                               "--seed", "4"], "--seed", "draws nothing"),
    "seed-training-analytical": (["simulate", "summit", "resnet50", "--noise", "none",
                                  "--network", "analytical", "--seed", "4"], "--seed",
                                 "draws nothing"),
    "seed-transformer-no-noise": (["simulate", "dgx1-v100", "gpt-1.7b", "--noise", "none",
                                   "--seed", "4"], "--seed", "noise none draws nothing"),
    "fit-baseline-rates": (["fit", "summit", "vgg16", "--rates", "RATES", "-o", "f.json",
                            "--baseline", "device"], "--baseline", "hold none"),
    "plan-llm-rank-by-default": ([*LLM_PLAN, "--rank-by", "cost"], "--rank-by",
                                 "data-parallel plan"),
    "plan-llm-baseline-default": ([*LLM_PLAN, "--baseline", "node"], "--baseline",
                                  "data-parallel plan"),
    "plan-llm-schedule-no-pipeline": ([*LLM_PLAN, "--pp", "1", "--schedule", "interleaved"],
                                      "--schedule", "every --pp tried is 1"),
    "plan-llm-zero3-pipelines": ([*LLM_PLAN, "--pp", "2", "--zero", "3"], "--zero",
                                 "only without one"),
    "plan-llm-sp-no-tp": ([*LLM_PLAN, "--tp", "1", "--sp", "on"], "--sp",
                          "every --tp tried is 1"),
    "graphml-nodes": (["simulate", "GRAPHML", "--nodes", "2"], "--nodes", "simulated whole"),
    "graphml-intranode": (["simulate", "GRAPHML", "--intranode", "summit"], "--intranode",
                          "its own graph"),
    **{f"quick-{' '.join(extra)}": (argv, extra[-2], "--quick runs")
       for argv, extra in ((["validate", "local", "--quick", *e], e) for e in (
           ["--iterations", "300"], ["--rounds", "5"], ["--max-size", "1048576"]))},
    **{f"calibrate-quick-{' '.join(e)}": (["calibrate", "--quick", *e], e[0], "--quick runs")
       for e in (["--max-size", "1048576"], ["--min-size", "1"])},
    "calibrate-rank-counts-no-collectives": (["calibrate", "--collectives", "none",
                                              "--rank-counts", "2"], "--rank-counts",
                                             "measures none"),
    "predict-llm-baseline-default": (["predict", "dgx1-v100", "gpt-1.7b", "--baseline", "node"],
                                     "--baseline", "not an efficiency"),
}


def _rates(folder: Path) -> str:
    path = folder / "r.csv"
    path.write_text("nodes,samples_per_s\n1,130\n2,250\n4,480\n")
    return str(path)


def _graphml(folder: Path) -> str:
    """Four hosts on one switch."""
    import networkx as nx

    G = nx.Graph()
    G.add_node("s", kind="switch")
    for i in range(4):
        G.add_node(f"h{i}", kind="host")
        G.add_edge(f"h{i}", "s", bandwidth_Bps=1e10, latency_s=1e-6)
    path = folder / "t.graphml"
    nx.write_graphml(G, path)
    return str(path)


_INPUTS = {"RATES": _rates, "GRAPHML": _graphml}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_in_one_line(case, tmp_path, capsys, monkeypatch):
    argv, flag, why = REFUSED[case]
    monkeypatch.chdir(tmp_path)
    argv = [_INPUTS[a](tmp_path) if a in _INPUTS else a for a in argv]
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2, (argv, out, err)
    assert err.count("\n") == 1 and flag in err and why in err, err
    assert {p.name for p in tmp_path.iterdir()} <= {"r.csv", "t.graphml"}, \
        "a refused command wrote files"


def test_graphml_still_takes_ranks(tmp_path, capsys):
    g = _graphml(tmp_path)
    assert " on 2 ranks of " in _out(["simulate", g, "--ranks", "2"], capsys)


def _out(argv: list[str], capsys) -> str:
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, (argv, err)
    return "\n".join(ln for ln in out.splitlines() if "simulated in" not in ln)


@pytest.mark.parametrize("op", ["allreduce", "reduce-scatter", "reduce", "parameter-server"])
def test_gamma_still_acts_where_receivers_reduce(op, capsys):
    base = [*SIMC, "--operation", op]
    assert _out([*base, "--gamma", "1e-9"], capsys) != _out(base, capsys)


def test_seed_still_acts_with_random_placement(capsys):
    base = ["simulate", "stampede2-skx", "--nodes", "64", "--size-bytes", "1e7",
            "--placement", "random"]
    assert _out([*base, "--seed", "5"], capsys) != _out(base, capsys)


def _top_links(argv, capsys):
    """The most loaded links a collective simulation reports (its JSON's top_links)."""
    import json

    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    return json.loads(out)["top_links"]


def test_seed_still_acts_with_valiant_routing(tmp_path, capsys):
    """Valiant routing on a dragonfly draws each message's intermediate group by the
    seed: the same linear placement, other links loaded."""
    c = tmp_path / "valiant.toml"
    c.write_text('base = "cori-knl"\n[network.topology]\nrouting = "valiant"\n')
    base = ["simulate", str(c), "--nodes", "1200", "--size-bytes", "1e6", "--format", "json"]

    assert _top_links([*base, "--seed", "1"], capsys) != _top_links([*base, "--seed", "2"],
                                                                    capsys)


def test_seed_still_acts_with_valiant_routing_inside_a_cluster_graph(tmp_path, capsys):
    """A cluster of several devices per node routes through the cluster graph's router
    (intra-node paths joined to the dragonfly's): it draws as the dragonfly's does.
    --seed was refused there ("draws nothing") while the links it loads changed."""
    c = tmp_path / "valiant.toml"
    c.write_text('base = "perlmutter"\n[network.topology]\nrouting = "valiant"\n')
    base = ["simulate", str(c), "--nodes", "600", "--size-bytes", "1e6", "--format", "json"]

    assert _top_links([*base, "--seed", "1"], capsys) != _top_links([*base, "--seed", "2"],
                                                                    capsys)


@pytest.mark.parametrize("argv", [
    ["simulate", "dgx1-v100", "resnet50", "--noise", "lognormal:0.1"],
    ["simulate", "dgx1-v100", "resnet50"],            # the cluster's noise: a GPU's spread
    ["simulate", "dgx1-v100", "gpt-1.7b", "--noise", "lognormal:0.1"],
    ["simulate", "dgx1-v100", "gpt-1.7b"],
])
def test_seed_still_acts_on_noise_draws(argv, capsys):
    def body(out):   # the table, without the header line that names the seed
        return [ln for ln in out.splitlines() if "seed" not in ln]

    assert body(_out([*argv, "--seed", "4"], capsys)) != body(_out([*argv, "--seed", "5"],
                                                                   capsys))


@pytest.mark.parametrize("argv", [
    ["simulate", "summit", "resnet50", "--noise", "none", "--nodes", "8", "--iterations", "3",
     "--placement", "random"],
    ["simulate", "k80-8gpu", "alexnet-cifar10", "--noise", "none", "--nodes", "1",
     "--iterations", "2", "--cosim"],
])
def test_seed_is_accepted_where_a_training_run_draws(argv, capsys):
    """A random placement, a co-simulation's data and weights: the seed is read."""
    assert "seed 4" in _out([*argv, "--seed", "4"], capsys)


def test_seed_without_a_flag_is_zero_in_every_mode(capsys):
    """The parser's default is None (so that a given seed is told apart); training runs
    still report seed 0."""
    out = _out(["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2"], capsys)
    assert "seed 0)" in out


def test_fit_baseline_still_acts_on_efficiencies(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e.csv").write_text("nodes,efficiency\n2,0.9\n4,0.8\n")
    base = ["fit", "summit", "vgg16", "--rates", "e.csv", "-o", "f.json"]
    assert _out([*base, "--baseline", "device"], capsys) != _out(base, capsys)


def test_plan_defaults_still_apply_on_the_data_parallel_path(capsys):
    base = ["plan", "resnet50", "--cluster", "summit", "--nodes", "1-4"]
    plain = _out(base, capsys)
    assert _out([*base, "--rank-by", "cost", "--baseline", "node"], capsys) == plain
    assert "ranked by node_hours" in plain   # cost without prices: node-hours, said so


_STUDY = 'name = "t"\ncluster = "summit"\nworkload = "resnet50"\nnodes = [1, 4]\n[vary]\n'


@pytest.mark.parametrize("vary,field", [
    ("tau = [1, 4]\n", "workload.tau"),
    ('"runtime.ps_servers" = [1, 2]\n', "cluster.runtime.ps_servers"),
    ('"runtime.ps_strategy" = ["round-robin", "greedy"]\n', "cluster.runtime.ps_strategy"),
    ('collective = ["ring", "binomial-tree"]\nalgorithm = ["async-easgd", "hogwild-sgd"]\n',
     "workload.collective"),
])
def test_a_study_varying_what_no_point_reads_is_refused(vary, field, tmp_path, capsys):
    """A sweep of sync-sgd over tau (or of Horovod over ps_servers) ran, every point tied:
    the field predict refuses as a flag was read by nothing."""
    (tmp_path / "s.toml").write_text(_STUDY + vary)
    rc, _, err = run_cli(["sweep", str(tmp_path / "s.toml"), "--executor", "serial",
                            "--quiet", "--no-plots", "-o", str(tmp_path / "o")], capsys)
    assert rc == 2 and err.count("\n") == 1 and f"vary {field}: read only with" in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("vary", [
    'tau = [1, 4]\nalgorithm = ["sync-sgd", "sync-easgd"]\n',
    '"runtime.ps_servers" = [1, 2]\nruntime = ["horovod-nccl", "parameter-server"]\n',
    'collective = ["ring", "binomial-tree"]\n',
])
def test_a_study_varying_what_some_point_reads_runs(vary, tmp_path):
    from dlscale.study import load_study
    from dlscale.sweep import check_study
    from dlscale.sweep_points import materialize
    from dlscale.sweep_reads import check_axes_read

    (tmp_path / "s.toml").write_text(_STUDY + vary)
    study = load_study(tmp_path / "s.toml")
    check_axes_read(study, *check_study(study), materialize)


def test_another_evaluator_may_read_any_field(tmp_path, capsys, monkeypatch):
    """``--evaluator`` replaces the model, which may read tau for sync-sgd: no refusal."""
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    (tmp_path / "s.toml").write_text(_STUDY + "tau = [1, 4]\n")
    rc, _, err = run_cli(["sweep", str(tmp_path / "s.toml"), "--executor", "serial",
                            "--quiet", "--no-plots", "--evaluator", "sweep_fakes:ring_eval",
                            "-o", str(tmp_path / "o")], capsys)
    assert rc == 0, err
