"""Sweeps: chunked execution, append-as-you-go files, resume, failures, determinism."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.study import load_study
from dlscale.sweep import EXECUTORS, resolve_evaluator, run_sweep

sys.path.insert(0, str(Path(__file__).parent))
import sweep_fakes

FAKES = {"analytical": sweep_fakes.ring_eval, "simulated": sweep_fakes.noisy_eval}


def write_study(tmp_path, body="", nodes="[1, 2, 4, 8]"):
    cluster, workload = sweep_fakes.write_configs(tmp_path)
    f = tmp_path / "st.toml"
    f.write_text(f'cluster = "{cluster.name}"\nworkload = "{workload.name}"\nnodes = {nodes}\n'
                 + body)
    return load_study(f)


VARY = '[vary]\n"network.link.bandwidth_GBps" = [6.25, 12.5]\ntau = [1, 2, 3]\n'


def test_serial_sweep_writes_sorted_table(tmp_path):
    s = write_study(tmp_path, VARY)
    res = run_sweep(s, executor="serial", evaluators=FAKES, quiet=True, chunk_groups=2)
    assert len(res) == 2 * 3 * 4
    assert [r["point"] for r in res.rows] == list(range(24))
    assert not res.failures
    out = tmp_path / "st.toml.out"
    assert {p.name for p in out.iterdir()} >= {"results.csv", "results.jsonl", "results.json",
                                               "scaling.png", "heatmap.png", "pareto.png"}
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("point,key,fidelity,status,network.link.bandwidth_GBps,tau,nodes")
    assert len(csv_lines) == 25
    r = res.rows[5]  # bandwidth 6.25, tau 2, 2 nodes
    assert (r["network.link.bandwidth_GBps"], r["tau"], r["nodes"]) == (6.25, 2, 2)
    # slower network, same node count: slower iteration
    fast = next(x for x in res.rows if x["network.link.bandwidth_GBps"] == 12.5 and x["tau"] == 2
                and x["nodes"] == 2)
    assert fast["iteration_s"] < r["iteration_s"]
    assert r["time_to_train_s"] == pytest.approx(2 * 60000 / r["samples_per_s"])
    assert r["cost"] == pytest.approx(3.0 * r["node_hours"])


def test_process_pool_same_bits_as_serial(tmp_path):
    s = write_study(tmp_path, 'fidelity = "simulated"\nseed = 7\n' + VARY)
    a = run_sweep(s, tmp_path / "a", executor="serial", evaluators=FAKES, quiet=True, plots=False)
    b = run_sweep(s, tmp_path / "b", executor="process", jobs=2, evaluators=FAKES, quiet=True,
                  chunk_groups=1, plots=False)
    assert (tmp_path / "a" / "results.csv").read_bytes() == (tmp_path / "b" / "results.csv").read_bytes()
    assert a.rows == b.rows
    s2 = write_study(tmp_path, 'fidelity = "simulated"\nseed = 8\n' + VARY)
    c = run_sweep(s2, tmp_path / "c", executor="serial", evaluators=FAKES, quiet=True, plots=False)
    assert [r["iteration_s"] for r in c.rows] != [r["iteration_s"] for r in a.rows]


def test_failure_recorded_sweep_continues(tmp_path):
    s = write_study(tmp_path, VARY, nodes="[1, 2, 1000]")
    res = run_sweep(s, executor="serial", quiet=True, plots=False,
                    evaluators={"analytical": sweep_fakes.failing_eval})
    bad = res.failures
    # tau 3 fails for every node count; 1000 nodes is beyond the 576-node cluster
    assert len(bad) == 2 * 3 + 2 * 2
    assert all("tau 3 is cursed" in r["error"] for r in bad if r["tau"] == 3 and r["nodes"] < 1000)
    assert any("nodes: 1000 is more than cluster" in r["error"] for r in bad)
    assert len(res.ok) == 2 * 2 * 2


def test_resume_skips_finished_points(tmp_path):
    s = write_study(tmp_path, VARY)
    out = tmp_path / "o"
    full = run_sweep(s, out, executor="serial", evaluators=FAKES, quiet=True, plots=False)
    log = out / "results.jsonl"
    lines = log.read_text().splitlines()
    # an interrupted run: 10 records written, the 11th cut in the middle
    log.write_text("\n".join(lines[:10]) + "\n" + lines[10][:20])
    calls = []

    def counting(cluster, workload, nodes, seeds):
        calls.extend(nodes)
        return sweep_fakes.ring_eval(cluster, workload, nodes, seeds)

    again = run_sweep(s, out, executor="serial", evaluators={"analytical": counting}, quiet=True,
                      resume=True, plots=False)
    assert len(calls) == 24 - 10
    assert again.rows == full.rows
    # without --resume everything runs again
    calls.clear()
    run_sweep(s, out, executor="serial", evaluators={"analytical": counting}, quiet=True,
              plots=False)
    assert len(calls) == 24


def test_resume_retries_failures(tmp_path):
    s = write_study(tmp_path, VARY)
    out = tmp_path / "o"
    first = run_sweep(s, out, executor="serial", quiet=True, plots=False,
                      evaluators={"analytical": sweep_fakes.failing_eval})
    assert len(first.failures) == 8
    second = run_sweep(s, out, executor="serial", quiet=True, plots=False, resume=True,
                       evaluators=FAKES)
    assert not second.failures and len(second) == 24


def test_hybrid_simulates_best_n(tmp_path):
    s = write_study(tmp_path, 'fidelity = "hybrid"\nsimulate_best = 3\nrank_by = "iteration_s"\n'
                    + VARY)
    res = run_sweep(s, executor="serial", evaluators=FAKES, quiet=True, plots=False)
    sims = [r for r in res.rows if r["fidelity"] == "simulated"]
    assert len(sims) == 3
    ana = sorted((r for r in res.rows if r["fidelity"] == "analytical"),
                 key=lambda r: (r["iteration_s"], r["point"]))
    assert sorted(r["point"] for r in sims) == sorted(r["point"] for r in ana[:3])


def test_unknown_dotted_path_caught_before_running(tmp_path):
    s = write_study(tmp_path, '[vary]\n"network.link.bandwith_GBps" = [1.0]\n')
    with pytest.raises(ConfigError, match=r"bandwith_GBps: unknown key; valid: bandwidth_<"):
        run_sweep(s, executor="serial", evaluators=FAKES, quiet=True)
    assert not (tmp_path / "st.toml.out" / "results.jsonl").exists()


def test_executor_and_evaluator_registries():
    assert set(EXECUTORS) == {"process", "mpi", "serial"}
    assert resolve_evaluator("sweep_fakes:ring_eval") is sweep_fakes.ring_eval
    with pytest.raises(ConfigError, match="cannot import 'sweep_fakes:nope'"):
        resolve_evaluator("sweep_fakes:nope")


def _mpiexec():
    exe = Path(sys.executable).parent / "mpiexec"
    return str(exe) if exe.exists() else shutil.which("mpiexec")


@pytest.mark.mpi
@pytest.mark.skipif(_mpiexec() is None, reason="no mpiexec")
def test_mpi_executor_under_mpiexec(tmp_path):
    s = write_study(tmp_path, VARY)
    serial = run_sweep(s, tmp_path / "serial", executor="serial", evaluators=FAKES, quiet=True,
                       plots=False)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    cmd = [_mpiexec(), "-n", "2", sys.executable, "-m", "mpi4py.futures", "-m",
           "dlscale.commands.sweep", str(s.path), "--executor", "mpi", "-o",
           str(tmp_path / "mpi"), "--evaluator", "sweep_fakes:ring_eval", "--quiet",
           "--no-plots", "--format", "csv"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "mpi" / "results.json").read_text())["rows"]
    assert rows == json.loads(json.dumps(serial.rows))


def _cli(module, argv):
    import argparse

    parser = argparse.ArgumentParser(prog="dlscale")
    module.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.run(args)


def test_sweep_command_and_resume(tmp_path, capsys):
    from dlscale.commands import sweep as cmd

    s = write_study(tmp_path, VARY)
    argv = ["sweep", str(s.path), "--executor", "serial", "--evaluator", "sweep_fakes:ring_eval",
            "--quiet", "--no-plots"]
    assert _cli(cmd, argv) == 0
    out = capsys.readouterr().out
    assert "study st: 24 points, 0 failed, fidelity analytical" in out
    assert "st.toml.out/results.csv" in out
    first = (tmp_path / "st.toml.out" / "results.csv").read_bytes()
    assert _cli(cmd, [*argv, "--resume", "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("point,key,fidelity,status,")
    assert (tmp_path / "st.toml.out" / "results.csv").read_bytes() == first
