"""Every output names what produced it: version, profile, baseline (issue 26 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dlscale
from dlscale.cli import main
from dlscale.provenance import NO_BASELINE, Provenance, load_cluster, replaced_figures

ROOT = Path(__file__).resolve().parents[1]
PROFILE = str(ROOT / "examples" / "profiles" / "this-host.json")
VERSION = f"dlscale {dlscale.__version__}"


def _run(capsys, argv: list[str]) -> tuple[str, str]:
    assert main(argv) == 0
    got = capsys.readouterr()
    return got.out, got.err


def test_a_profile_that_changes_the_answer_is_named_with_what_it_replaced(capsys):
    argv = ["predict", "stampede2-skx", "resnet50", "--nodes", "1,64"]
    plain, _ = _run(capsys, argv)
    prof, _ = _run(capsys, [*argv, "--profile", PROFILE])
    assert plain.splitlines()[1] == f"{VERSION}, no profile (catalog figures)"
    line = prof.splitlines()[1]
    assert line.startswith(f"{VERSION}, profile {PROFILE} (1 host: vm, 2 ranks; measured "
                           "2026-11-30; held-out error not recorded)")
    replaced = prof.splitlines()[2]
    # the one-thread GEMM of a shared VM: the figure behind the tenfold slower rows
    assert replaced.startswith("profile replaced: ") and "sustained_fraction 0.4147 -> " in replaced  # 0.4108 before round eight
    assert "node.intra_link.latency_s 0.3 us -> 1043 us" in replaced
    doc = json.loads(_run(capsys, [*argv, "--profile", PROFILE, "--format", "json"])[0])
    meta = doc["meta"]["provenance"]
    assert meta["dlscale_version"] == dlscale.__version__
    assert meta["profile"]["path"] == PROFILE and meta["profile"]["hosts"] == ["vm"]
    assert meta["profile"]["date"] == "2026-11-30T02:41:56+00:00"
    assert any("sustained_fraction" in r for r in meta["profile"]["replaced"])
    assert meta["baseline"].startswith("efficiency against 1 node running auto")


def test_a_one_host_profile_on_a_multi_node_fabric_warns_once(capsys, tmp_path):
    out, err = _run(capsys, ["predict", "stampede2-skx", "resnet50", "--nodes", "1,64",
                             "--profile", PROFILE, "--format", "json"])
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 1 and "measured on one host (vm)" in warnings[0]
    assert "1736-node fabric keeps its described inter-node figures" in warnings[0]
    assert json.loads(out)["meta"]["provenance"]["warnings"] == [warnings[0][len("warning: "):]]
    one = tmp_path / "one-node.toml"
    one.write_text('base = "stampede2-skx"\nname = "one-skx"\n[network.topology]\n'
                   'family = "crossbar"\nmax_nodes = 1\n')
    _, err = _run(capsys, ["predict", str(one), "resnet50", "--nodes", "1", "--profile", PROFILE])
    assert "warning:" not in err


def test_same_inputs_give_the_same_bytes(capsys, tmp_path):
    argv = ["predict", "stampede2-skx", "resnet50", "--nodes", "1,2", "--profile", PROFILE]
    for i in (1, 2):
        assert main([*argv, "-o", str(tmp_path / f"{i}.json"), "-o",
                     str(tmp_path / f"{i}.csv")]) == 0
    capsys.readouterr()
    for ext in ("json", "csv"):
        assert (tmp_path / f"1.{ext}").read_bytes() == (tmp_path / f"2.{ext}").read_bytes()
    header = (tmp_path / "1.csv").read_text().splitlines()[0].split(",")
    assert header[-3:] == ["dlscale_version", "profile", "baseline"]


@pytest.mark.parametrize("argv", [
    ["predict", "summit", "resnet50", "--nodes", "1,2"],
    ["simulate", "summit", "resnet50", "--nodes", "1,2", "--iterations", "2"],
    ["simulate", "summit", "--nodes", "2", "--size-bytes", "1e6", "--top", "0"],
    ["plan", "resnet50", "--cluster", "summit", "--nodes", "1,2", "--samples", "1e6"],
    ["validate", "published", "--case", "you-sc17", "--fidelity", "analytical"],
])
def test_every_command_names_version_profile_and_baseline(capsys, argv):
    out, _ = _run(capsys, argv)
    head = out.splitlines()[:4]
    assert f"{VERSION}, no profile (catalog figures)" in " ".join(head)
    assert any(ln.lstrip("# ").startswith("baseline: ") for ln in head)


def test_json_of_simulate_and_plan_carries_the_provenance(capsys, tmp_path):
    doc = json.loads(_run(capsys, ["simulate", "summit", "resnet50", "--nodes", "2",
                                   "--iterations", "2", "--format", "json",
                                   "--profile", PROFILE])[0])
    assert doc["meta"]["provenance"]["profile"]["path"] == PROFILE
    doc = json.loads(_run(capsys, ["simulate", "summit", "--nodes", "2", "--size-bytes", "1e6",
                                   "--format", "json"])[0])
    assert doc["provenance"]["baseline"] == NO_BASELINE
    out = tmp_path / "p.json"
    _run(capsys, ["plan", "resnet50", "--cluster", "summit", "--nodes", "1,2", "--samples",
                  "1e6", "-o", str(out)])
    assert json.loads(out.read_text())["meta"]["provenance"]["dlscale_version"] == \
        dlscale.__version__


def test_a_graphml_topology_refuses_a_profile(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "x.graphml"), "--profile", PROFILE]) == 2
    assert "--profile: a .graphml topology carries its own link figures" in capsys.readouterr().err


def test_sweep_records_the_provenance_in_json_csv_and_summary(capsys, tmp_path):
    study = tmp_path / "s.toml"
    study.write_text('name = "p"\ncluster = "summit"\nworkload = "resnet50"\nnodes = [1, 2]\n'
                     '[vary]\ncollective = ["ring", "hierarchical"]\n')
    out, _ = _run(capsys, ["sweep", str(study), "-o", str(tmp_path / "o"), "--executor",
                           "serial", "--quiet", "--no-plots", "--profile", PROFILE])
    assert f"{VERSION}, profile {PROFILE} (1 host: vm" in out
    meta = json.loads((tmp_path / "o" / "results.json").read_text())["meta"]
    assert meta["provenance"]["profile"]["path"] == PROFILE
    csv = (tmp_path / "o" / "results.csv").read_text().splitlines()
    assert csv[0].endswith(",dlscale_version,profile,baseline")
    assert all(PROFILE in line for line in csv[1:])


def test_validate_local_names_the_profile_it_fitted_and_its_held_out_error():
    from dlscale.commands.validate import local_provenance
    from dlscale.validation.validate_local import summarize

    rec = json.loads((ROOT / "tests" / "data" / "validate_local_2ranks.json").read_text())
    report = {**rec, "summary": summarize(rec["rows"])}
    prov = local_provenance(report)
    err = report["summary"]["allreduce"]["median_abs_error"]
    assert prov.source_line() == (f"{VERSION}, profile fitted in this run (1 host: vm, 2 ranks; "
                                  f"measured {rec['profile']['provenance']['date'][:10]}; "
                                  f"held-out error {100 * err:.3g}%)")


def test_replaced_figures_and_the_meta_round_trip():
    cluster, prov = load_cluster("summit")
    assert prov.profile is None and replaced_figures(cluster, cluster) == []
    _, prov = load_cluster("stampede2-skx", PROFILE)
    again = Provenance.from_meta(prov.with_baseline("b").meta())
    assert again == prov.with_baseline("b")


def test_a_profile_that_replaces_no_figure_says_so_in_words():
    """The header of a profile that changed no figure of the cluster (a fit that held
    every mechanism, or one that fitted only the workload's compute rate) says "no
    figure of this cluster", not a phrase that reads as if the cluster had none."""
    from dlscale.provenance import ProfileSource

    src = ProfileSource(path="fit.json", hosts=(), ranks=None, date="", held_out_error=None)
    lines = Provenance(version="1", profile=src).header_lines()
    assert lines[1] == "profile replaced: no figure of this cluster"
