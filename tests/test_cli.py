"""The command line: predict and catalog, output files, one-line errors with status 2."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dlscale.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_readme_quick_start_runs_and_writes_json_csv_png(tmp_path, capsys):
    j, c, p = tmp_path / "o.json", tmp_path / "o.csv", tmp_path / "o.png"
    code, out, err = _run(capsys, "predict", "summit", "resnet50", "--nodes", "1-4608",
                          "-o", str(j), "-o", str(c), "--plot", str(p))
    assert code == 0, err
    for column in ("iteration_s", "compute_s", "comm_s", "exposed_comm_s", "samples_per_s", "efficiency"):
        assert column in out
    doc = json.loads(j.read_text())
    rows = doc["rows"]
    assert [r["nodes"] for r in rows][:3] == [1, 2, 4] and rows[-1]["nodes"] == 4608
    assert rows[-1]["devices"] == 6 * 4608
    assert {"nodes", "devices", "iteration_s", "compute_s", "comm_s", "exposed_comm_s",
            "samples_per_s", "efficiency"} <= set(rows[0])
    assert rows[0]["efficiency"] == pytest.approx(1.0)
    assert c.read_text().splitlines()[0].startswith("nodes,devices,")
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [f for f in tmp_path.iterdir() if f.name.startswith(".")]  # no temp files left


def test_predict_json_on_stdout(capsys):
    code, out, _ = _run(capsys, "predict", "stampede2-skx", "resnet50", "--nodes", "1,64",
                        "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["meta"]["cluster"] == "stampede2-skx"
    assert [r["nodes"] for r in doc["rows"]] == [1, 64]


@pytest.mark.parametrize(("argv", "message"), [
    (["predict", "sumit", "resnet50"], "cluster: unknown name 'sumit'; valid: .* \\(did you mean 'summit'\\?\\)"),
    (["predict", "summit", "resnet5"], "workload: unknown name 'resnet5'; .*did you mean 'resnet50'"),
    (["predict", "summit", "resnet50", "--nodes", "4609"], "nodes: 4609 is more than cluster 'summit' holds"),
    (["predict", "summit", "resnet50", "--nodes", "0"], "--nodes: node counts must be >= 1, got 0"),
    (["predict", "summit", "resnet50", "--batch", "0"], "batch_per_device: must be a positive integer, got 0"),
])
def test_user_errors_are_one_line_with_status_2(capsys, argv, message):
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.search(message, err), err


def test_toml_syntax_error_from_the_command_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('base = "summit"\n[network.link\n')
    code, _, err = _run(capsys, "predict", str(bad), "resnet50", "--nodes", "1")
    assert code == 2 and "TOML syntax error" in err and "line 2" in err


def test_cluster_file_with_base_preset(tmp_path, capsys):
    f = tmp_path / "half.toml"
    f.write_text('base = "summit"\nname = "summit-half"\n[node.nic]\nbandwidth_GBps = 11.5\n')
    code, out, _ = _run(capsys, "predict", str(f), "resnet50", "--nodes", "1,1024", "--format", "json")
    assert code == 0
    half = json.loads(out)["rows"][-1]
    _, out, _ = _run(capsys, "predict", "summit", "resnet50", "--nodes", "1,1024", "--format", "json")
    full = json.loads(out)["rows"][-1]
    assert half["comm_s"] > full["comm_s"]


def test_catalog_lists_sources(capsys):
    code, out, _ = _run(capsys, "catalog", "devices", "--format", "json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert {"v100-sxm2", "xeon-phi-7250-flat", "k80"} <= {r["name"] for r in rows}
    assert all(r["source"] for r in rows)


def test_usage_error_is_one_line_and_python_m_works():
    proc = subprocess.run([sys.executable, "-m", "dlscale", "catalog", "bogus"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "invalid choice: 'bogus'" in proc.stderr


def test_simulate_training_from_the_command_line(capsys):
    code, out, err = _run(capsys, "simulate", "summit", "resnet50", "--nodes", "1,2",
                          "--iterations", "3", "--format", "json")
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert [r["nodes"] for r in runs] == [1, 2]


def test_simulate_async_on_one_device_node_uses_no_network_graph(capsys):
    code, out, err = _run(capsys, "simulate", "cori-knl", "googlenet", "--nodes", "1,2",
                          "--algorithm", "async-easgd", "--iterations", "3", "--network", "fast")
    assert code == 0, err
    assert "async-easgd" in out


def test_simulate_collective_takes_one_node_count(capsys):
    code, _, err = _run(capsys, "simulate", "summit", "--nodes", "1,2")
    assert code == 2 and "a collective is simulated on one node count" in err


def test_simulate_training_takes_the_collective(capsys):
    rows = {}
    for collective in ("ring", "binomial-tree"):
        code, out, err = _run(capsys, "simulate", "summit", "resnet50", "--nodes", "64",
                              "--iterations", "2", "--collective", collective, "--format", "json")
        assert code == 0, err
        rows[collective] = json.loads(out)["runs"][0]["comm_s"]
    assert rows["ring"] != rows["binomial-tree"]


PROFILE = str(Path(__file__).resolve().parents[1] / "examples" / "profiles" / "this-host.json")


@pytest.mark.parametrize("argv", [
    ["predict", "stampede2-skx", "resnet50", "--nodes", "2", "--format", "json"],
    ["simulate", "stampede2-skx", "resnet50", "--nodes", "2", "--iterations", "2", "--format", "json"],
    ["simulate", "stampede2-skx", "--nodes", "2", "--format", "json"],
])
def test_profile_replaces_the_catalog_figures(capsys, argv):
    code, plain, err = _run(capsys, *argv)
    assert code == 0, err
    code, profiled, err = _run(capsys, *argv, "--profile", PROFILE)
    assert code == 0, err
    assert json.loads(plain) != json.loads(profiled)


def test_sweep_takes_a_profile(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text('cluster = "stampede2-skx"\nworkload = "resnet50"\nnodes = [2]\n'
                     '[vary]\ncollective = ["ring"]\n')
    out = {}
    for name, extra in (("plain", []), ("profiled", ["--profile", PROFILE])):
        code, _, err = _run(capsys, "sweep", str(study), "-o", str(tmp_path / name), "--quiet",
                            "--no-plots", "--executor", "serial", "--format", "none", *extra)
        assert code == 0, err
        out[name] = json.loads((tmp_path / name / "results.json").read_text())["rows"][0]
    assert out["profiled"]["iteration_s"] > out["plain"]["iteration_s"]
