import argparse
import json

import pytest

from dlscale.commands import validate as validate_cmd
from dlscale.validation.validate_local import split_runs, split_sizes, summarize
from tests.mpi_helpers import mpi_or_skip, run_command


def _parser():
    parser = argparse.ArgumentParser(prog="dlscale")
    validate_cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def test_validate_is_a_parser_with_sub_commands():
    args = _parser().parse_args(["validate", "local", "--quick", "--iterations", "7"])
    assert args.validate_command == "local" and args.iterations == 7
    assert args.run is validate_cmd.run_local
    assert "local" in validate_cmd.SUBCOMMANDS
    with pytest.raises(SystemExit):
        _parser().parse_args(["validate"])  # a sub-command is required


def test_split_keeps_fit_and_held_out_apart():
    fit_sizes, held_sizes = split_sizes(1024, 64 << 20)
    assert fit_sizes[0] == 1024 and fit_sizes[-1] == 64 << 20 and held_sizes[0] == 2048
    assert not set(fit_sizes) & set(held_sizes)
    runs = [{"ranks": k, "sizes_bytes": fit_sizes + held_sizes,
             "times_s": [1.0] * (len(fit_sizes) + len(held_sizes))} for k in (2, 3, 4)]
    fit, held = split_runs(runs, fit_sizes, [2, 4])
    assert [r["ranks"] for r in fit] == [2, 4]
    assert all(set(r["sizes_bytes"]) == set(fit_sizes) for r in fit)
    held_cases = {(r["ranks"], n) for r in held for n in r["sizes_bytes"]}
    fit_cases = {(r["ranks"], n) for r in fit for n in r["sizes_bytes"]}
    assert not held_cases & fit_cases
    assert len(held_cases) + len(fit_cases) == 3 * (len(fit_sizes) + len(held_sizes))


def test_summary_and_report_lines():
    rows = [{"kind": "allreduce", "case": "allreduce 2 KiB p=2", "measured_s": 1e-5,
             "predicted_s": 1.05e-5, "error": 0.05},
            {"kind": "allreduce", "case": "allreduce 8 KiB p=2", "measured_s": 2e-5,
             "predicted_s": 1.6e-5, "error": -0.2},
            {"kind": "training", "case": "sgd-ring p=2", "measured_s": 1e-4,
             "predicted_s": 1.1e-4, "error": 0.1, "accuracy": 0.9}]
    summary = summarize(rows)
    assert summary["allreduce"]["median_abs_error"] == pytest.approx(0.125)
    assert summary["allreduce"]["worst_case"] == "allreduce 8 KiB p=2"
    assert summary["allreduce"]["meets_target"] is False
    assert summary["training"]["meets_target"] is True
    lines = validate_cmd.report_lines({"rows": rows, "summary": summary, "notes": ["one host"]})
    assert "error_%" in lines[0] and "sgd-ring p=2" in lines[0]
    assert lines[1].startswith("allreduce: 2 cases, median |error| 12.5%, worst 20.0% (allreduce 8 KiB p=2); MISSES")
    assert lines[2].startswith("training: 1 cases") and "meets the 15% target" in lines[2]
    assert lines[-1] == "note: one host"


@pytest.mark.mpi
@pytest.mark.slow
def test_validate_local_quick_on_two_ranks(tmp_path):
    mpi_or_skip()
    out, png = tmp_path / "v.json", tmp_path / "v.png"
    proc = run_command(2, "validate", "local", "--quick", "--budget-s", "3", "--max-size", "16384",
                       "--iterations", "30", "--quiet", "-o", str(out), "--plot", str(png),
                       timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    kinds = {r["kind"] for r in report["rows"]}
    assert kinds == {"allreduce", "training"}
    held = [r for r in report["rows"] if r["kind"] == "allreduce"]
    assert sorted(r["size_bytes"] for r in held) == [2048, 8192]  # exactly the held-out sizes
    fitted = report["profile"]["collectives"]["allreduce"]["measurements"]
    assert sorted(fitted[0]["sizes_bytes"]) == [1024, 4096, 16384]
    ring = report["profile"]["collectives"]["ring_allreduce"]  # the project's ring, fitted
    assert ring["fit"]["algorithm"] == "ring"
    assert sorted(ring["measurements"][0]["sizes_bytes"]) == [1024, 4096, 16384]
    assert len([r for r in report["rows"] if r["kind"] == "training"]) == 4
    assert set(report["summary"]) == {"allreduce", "training"}
    assert png.stat().st_size > 1000
    assert "median |error|" in proc.stdout and "inter-node does not exist" in proc.stdout
