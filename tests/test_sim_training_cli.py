"""The training options on the `dlscale simulate` parser, and run_training."""

import argparse
import json

import pytest

from dlscale.commands.simulate_training import add_training_args, run_training
from dlscale.perfmodel.errors import ConfigError


def _simulate_parser():
    """The simulate command's own parser, with the training options."""
    from dlscale.commands import simulate

    top = argparse.ArgumentParser()
    sub = top.add_subparsers()
    simulate.add_parser(sub)
    p = sub.choices["simulate"]
    add_training_args(p)
    return p


def test_table_on_the_simulate_parser(capsys, tmp_path):
    p = _simulate_parser()
    out = tmp_path / "rows.csv"
    trace = tmp_path / "t.json"
    args = p.parse_args(["summit", "resnet50", "--nodes", "2", "--iterations", "3",
                         "--trace-out", str(trace), "-o", str(out), "--noise", "lognormal:0.1"])
    assert run_training(args) == 0
    text = capsys.readouterr().out
    assert "iteration_s" in text and "straggler_wait_s" in text and "network fast" in text
    assert out.read_text().startswith("cluster,")
    assert json.loads(trace.read_text())["otherData"]["ranks"] == 12


def test_json_compare_cosim_and_plot(capsys, tmp_path):
    p = argparse.ArgumentParser()
    p.add_argument("cluster")
    p.add_argument("workload", nargs="?")
    add_training_args(p)
    png = tmp_path / "acc.png"
    args = p.parse_args(["cori-knl", "googlenet", "--nodes", "4", "--iterations", "10",
                         "--compare", "async-easgd,async-sgd", "--cosim", "--lr", "0.05",
                         "--network", "analytical", "--format", "json", "--plot", str(png)])
    assert run_training(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["algorithm"] for r in doc["runs"]] == ["async-easgd", "async-sgd"]
    assert all(r["curve"] for r in doc["runs"]) and png.stat().st_size > 0


def test_scaling_plot_and_oom_line(capsys, tmp_path):
    p = argparse.ArgumentParser()
    p.add_argument("cluster")
    p.add_argument("workload", nargs="?")
    add_training_args(p)
    png = tmp_path / "s.png"
    args = p.parse_args(["cori-knl-flat", "transformer-big", "--nodes", "16,64",
                         "--iterations", "2", "--network", "analytical", "--plot", str(png)])
    assert run_training(args) == 0
    text = capsys.readouterr().out
    assert "64 nodes do not fit: MCDRAM" in text
    assert png.stat().st_size > 0


def test_missing_workload_and_bad_compare():
    p = argparse.ArgumentParser()
    p.add_argument("cluster")
    p.add_argument("workload", nargs="?")
    add_training_args(p)
    with pytest.raises(ConfigError, match="simulated training needs a WORKLOAD"):
        run_training(p.parse_args(["summit"]))
    with pytest.raises(ConfigError, match="--compare: unknown algorithm 'sgd'"):
        run_training(p.parse_args(["summit", "resnet50", "--compare", "sgd"]))


@pytest.mark.parametrize("base,flag", [
    (["--algorithm", "async-easgd"], ["--tau", "4"]),
    (["--algorithm", "sync-easgd"], ["--tau", "4"]),
    (["--runtime", "horovod-legacy-nccl"], ["--grouping", "graph-aware"]),
])
def test_tau_and_grouping_are_flags_of_both_fidelities(base, flag, capsys):
    """``--tau`` was simulate's alone and ``--grouping`` predict's alone: each moved one
    fidelity's answer while the other could not be asked (only a workload file could
    set them). Both commands take both now, and without noise they agree (simulate's
    mean over 400 steps per worker: a period of tau steps leaves a start-up residue,
    0.24% after 20 steps of async-easgd at tau 4, 1.2e-4 after 400)."""
    from dlscale.cli import main

    def answer(command, extra):
        words = [command, "summit", "resnet50", "--nodes", "2", "--noise", "none", *base,
                 *extra, "--format", "json"]
        if command == "simulate":
            words += ["--iterations", "400"]
        assert main(words) == 0
        doc = json.loads(capsys.readouterr().out)
        row = (doc.get("rows") or doc["runs"])[0]
        return row["iteration_s"], row["comm_s"]

    for command in ("predict", "simulate"):
        assert answer(command, flag) != answer(command, []), command
    assert answer("simulate", flag)[0] == pytest.approx(answer("predict", flag)[0], rel=2e-4)


@pytest.mark.parametrize("argv", [["k80-8gpu", "resnet50", "--iterations", "2"], ["k80-8gpu"]])
def test_a_one_node_machine_simulates_without_nodes(argv, capsys):
    # the default of two nodes was refused on a one-node machine ("nodes: 2 is more than
    # cluster 'k80-8gpu' holds"): its one node is the default there
    from dlscale.cli import main

    capsys.readouterr()
    assert main(["simulate", *argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ranks = doc["runs"][0]["ranks"] if "runs" in doc else doc["ranks"]
    assert ranks == 8


def test_an_input_bound_asynchronous_run_is_simulated(capsys):
    """simulate refused an asynchronous run whose step the input pipeline bounds (it
    simulated the loader for sync-sgd only): AlexNet's async-sgd on 1, 2, 4 and 8
    Summit nodes, input-bound at 1 node (predict's limit; 2 to 8 are master-bound),
    exited 2 ("on 1 node its input pipeline ... simulated for sync-sgd only"). Its
    workers wait for their batches now (simulator.training.easgd.batch_ready_s), and
    the 1-node run agrees with predict's input-bound step."""
    from dlscale.cli import main

    capsys.readouterr()
    assert main(["simulate", "summit", "alexnet", "--algorithm", "async-sgd",
                 "--nodes", "1,2,4,8", "--iterations", "4", "--noise", "none",
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "sync-sgd only" not in out.err
    runs = json.loads(out.out)["runs"]
    assert [r["nodes"] for r in runs] == [1, 2, 4, 8]
    one = runs[0]
    assert one["iteration_s"] == pytest.approx(one["analytical_iteration_s"], rel=0.02)


def test_a_refusal_at_a_later_node_count_comes_before_any_run(monkeypatch):
    """Asked 1,2 nodes of a question refused at 2 only, the 1-node run was simulated
    and then the 2-node count refused (found with GoogLeNet's original EASGD on the
    H100 SuperPOD, input-bound at 2 nodes, a refusal simulate no longer makes). The
    simulated work's bound refuses 5,000,000 steps at 2 Summit nodes (12 ranks) and
    not at 1 (6 ranks) the same way. Every count is checked first now: the one line,
    no run (a run begun here fails at once rather than simulating for hours)."""
    import dlscale.simulator.training.run as run
    from dlscale.api import simulate
    from dlscale.perfmodel.errors import ConfigError
    from dlscale.perfmodel.limits import MAX_RANK_STEPS

    runs = []

    def counted(cluster, workload, nodes, **kwargs):
        runs.append(nodes)
        raise RuntimeError(f"{nodes} nodes simulated before every count was checked")

    monkeypatch.setattr(run, "_simulate", counted)
    steps = MAX_RANK_STEPS // 10
    with pytest.raises(ConfigError, match="12 ranks x 5,000,000 iterations"):
        simulate("summit", "googlenet", [1, 2], algorithm="easgd", iterations=steps)
    assert runs == []
