import argparse
import json

import numpy as np
import pytest

from dlscale.commands import validate as validate_cmd
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation.compute_snapshot import compute_drift, refreshed_profile
from dlscale.validation.local_model import predict_training
from dlscale.validation.mpi_training import TrainingResult
from dlscale.validation.validate_local import (
    HELD_OUT_FACTOR,
    merge_rounds,
    relative_spread,
    split_runs,
    split_sizes,
    summarize,
    training_rows,
    verdict,
)
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
    assert fit_sizes[0] == 1024 and fit_sizes[-1] == 64 << 20 and held_sizes[0] == 3072
    # the held-out grid (fixed for issue 16): 3 x each fit size, between it and the next
    assert held_sizes == [HELD_OUT_FACTOR * n for n in fit_sizes[:-1]]
    assert all(a < h < b for a, h, b in zip(fit_sizes, held_sizes, fit_sizes[1:], strict=False))
    assert all(h % 8 == 0 for h in held_sizes)  # whole float64 elements
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
    rows = [{"kind": "allreduce", "case": "allreduce 3 KiB p=2", "measured_s": 1e-5,
             "predicted_s": 1.05e-5, "error": 0.05, "spread": 0.02},
            {"kind": "allreduce", "case": "allreduce 12 KiB p=2", "measured_s": 2e-5,
             "predicted_s": 1.6e-5, "error": -0.2, "spread": 0.03},
            {"kind": "allreduce", "case": "allreduce 48 KiB p=2", "measured_s": 2e-5,
             "predicted_s": 4e-5, "error": 1.0, "spread": 0.4},
            {"kind": "training", "case": "sgd-ring p=2", "measured_s": 1e-4,
             "predicted_s": 1.1e-4, "error": 0.1, "predicted_profile_s": 1.12e-4,
             "error_profile": 0.12, "spread": 0.01, "accuracy": 0.9}]
    for r in rows:
        r["verdict"] = verdict(r.get("error_profile", r["error"]), r["spread"],
                               0.10 if r["kind"] == "allreduce" else 0.15)
    assert [r["verdict"] for r in rows] == ["pass", "miss", "unsettled", "pass"]
    summary = summarize(rows)
    # the unsettled case (its own spread 40% > 10%) is left out of the median
    assert summary["allreduce"]["median_abs_error"] == pytest.approx(0.125)
    assert summary["allreduce"]["unsettled"] == 1 and summary["allreduce"]["cases"] == 2
    assert summary["allreduce"]["worst_case"] == "allreduce 12 KiB p=2"
    assert summary["allreduce"]["meets_target"] is False
    # training is judged on the profile-only prediction (12%), not the refreshed one
    assert summary["training"]["median_abs_error"] == pytest.approx(0.12)
    assert summary["training"]["meets_target"] is True
    refreshed = summarize(rows, "error")
    assert refreshed["training"]["median_abs_error"] == pytest.approx(0.10)
    lines = validate_cmd.report_lines({"rows": rows, "summary": summary, "notes": ["one host"]})
    assert "error_%" in lines[0] and "spread_%" in lines[0] and "unsettled" in lines[0]
    assert lines[1].startswith("allreduce (profile-only prediction): 2 settled cases, median "
                               "|error| 12.5%, worst 20.0% (allreduce 12 KiB p=2); MISSES")
    assert lines[1].endswith("1 unsettled (spread above the target) left out")
    assert lines[2].startswith("training (profile-only prediction): 1 settled cases")
    assert "meets the 15% target" in lines[2]
    assert lines[-1] == "note: one host"


def test_spread_is_the_rounds_own_repeatability():
    assert relative_spread([1.0, 1.0, 1.0]) == 0.0
    assert relative_spread([1.0, 1.2, 0.8, 1.0]) == pytest.approx(0.1)
    a = {"ranks": 2, "sizes_bytes": [8, 16], "times_s": [1.0, 2.0]}
    m = merge_rounds([a, {**a, "times_s": [1.5, 2.0]}, {**a, "times_s": [0.5, 2.2]}])
    assert m["round_spread"] == [pytest.approx(0.5), pytest.approx(0.0)]
    fit, held = split_runs([m], [8], [2])
    assert held[0]["round_spread"] == [0.0] and "round_spread" in fit[0]


def _bare_profile(compute_s=1e-4):
    fit = {"algorithm": "ring", "alpha_s": 1e-6, "beta_s_per_B": 1e-10, "gamma_s_per_B": 0.0,
           "segments": [{"min_bytes": 4.0, "max_bytes": 1e8, "latency_factor": 2.0,
                         "bandwidth_factor": 1.0, "reduction_factor": 1.0}]}
    return MachineProfile(
        p2p={"intra-node": {"latency_s": 1e-6, "bandwidth_Bps": 1e10}},
        kernels={"model_fwd_bwd_s": compute_s, "sgd_Bps": 1e10, "easgd_Bps": 5e9,
                 "noise": {"model_fwd_bwd_s": 0.0}},
        collectives={"allreduce": {"fit": fit}})


def _run(median_s):
    return TrainingResult(algorithm="sgd-allreduce", ranks=2, iterations=10,
                          iteration_s=median_s, iteration_median_s=median_s, iteration_cv=0.0,
                          compute_s=0.0, comm_s=0.0, n_params=10, message_bytes=40,
                          accuracy=0.5, loss=1.0)


def test_snapshots_refresh_only_the_compute_figures():
    prof = _bare_profile()
    slow = {"times": [np.full(50, 1.5e-4), np.full(50, 1.5e-4)], "sync": None}
    new = refreshed_profile(prof, [slow])
    assert new.kernels["model_fwd_bwd_s"] == pytest.approx(1.5e-4)
    assert compute_drift(prof, new) == pytest.approx(0.5)
    assert len(new.kernels["quantiles"]["model_fwd_bwd_s"]) == 1001
    assert new.kernels["sgd_Bps"] == prof.kernels["sgd_Bps"] and new.collectives == prof.collectives
    # a measured synchronous step is averaged over the snapshots
    sync = {"ranks": 4, "step_s": 3e-4, "barrier_s": 1e-5, "compute_s": 2.9e-4, "sleep_s": 6e-5,
            "reps": 10}
    two = refreshed_profile(prof, [{**slow, "sync": sync},
                                   {**slow, "sync": {**sync, "compute_s": 3.1e-4}}])
    assert two.p2p["intra-node"]["sync_step"]["compute_s"] == pytest.approx(3.0e-4)
    assert two.p2p["intra-node"]["sync_step"]["reps"] == 20


def test_training_rows_take_the_median_over_rounds_and_keep_the_profile_only_prediction():
    prof = _bare_profile()
    snap = {"times": [np.full(50, 1e-4), np.full(50, 1e-4)], "sync": None}
    slow = {"times": [np.full(50, 2e-4), np.full(50, 2e-4)], "sync": None}
    # three rounds; the second run sat between two slow snapshots
    runs, snaps = [_run(1.2e-4), _run(2.5e-4), _run(1.3e-4)], [snap, slow, slow, snap]
    (row,) = training_rows(prof, runs, snaps)
    preds = [predict_training(refreshed_profile(prof, snaps[i:i + 2]), "sgd-allreduce", 2,
                              40)["iteration_s"] for i in range(3)]
    assert row["runs_s"] == [[r.iteration_median_s, q] for r, q in zip(runs, preds, strict=True)]
    assert row["measured_s"] == pytest.approx(1.3e-4)
    assert row["predicted_s"] == pytest.approx(sorted(preds)[1])
    assert row["error"] == pytest.approx(row["predicted_s"] / 1.3e-4 - 1)
    alone = predict_training(prof, "sgd-allreduce", 2, 40)["iteration_s"]
    assert row["predicted_profile_s"] == alone
    assert row["error_profile"] == pytest.approx(alone / 1.3e-4 - 1)
    assert row["compute_drift"] == pytest.approx(0.5)  # median of 0.5, 1.0, 0.5
    assert row["spread"] == pytest.approx(relative_spread([1.2e-4, 2.5e-4, 1.3e-4]))
    summary = summarize([row])["training"]  # judged on the profile-only prediction
    assert summary["median_abs_error"] == pytest.approx(abs(row["error_profile"]), abs=1e-6)
    lines = validate_cmd.report_lines({"rows": [row], "summary": summarize([row]),
                                       "summary_refreshed": summarize([row], "error")})
    assert "refreshed_%" in lines[0] and "drift_%" in lines[0]
    assert lines[2].startswith("diagnostic: training with compute figures re-measured next "
                               "to each run (they drifted +50.0% .. +50.0% since")


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
    assert sorted(r["size_bytes"] for r in held) == [3072, 12288]  # exactly the held-out sizes
    assert all(r["verdict"] in ("pass", "miss", "unsettled") and "spread" in r for r in held)
    fitted = report["profile"]["collectives"]["allreduce"]["measurements"]
    assert sorted(fitted[0]["sizes_bytes"]) == [1024, 4096, 16384]
    ring = report["profile"]["collectives"]["ring_allreduce"]  # the project's ring, fitted
    assert ring["fit"]["algorithm"] == "ring"
    assert sorted(ring["measurements"][0]["sizes_bytes"]) == [1024, 4096, 16384]
    training = [r for r in report["rows"] if r["kind"] == "training"]
    assert len(training) == 4 and report["rounds"] == 2
    assert all(len(r["runs_s"]) == 2 and "error_profile" in r and "compute_drift" in r
               for r in training)
    assert len(report["training"]) == 8
    # issue 16: the simulator's figure next to every training row, the async
    # prediction from the exchange timed in this launch's calibration
    assert all(("simulated_s" in r and "error_simulated" in r) or "simulated_note" in r
               for r in training)
    assert set(report["summary_simulated"]) <= {"training"}
    assert "easgd_exchange" in report["profile"]["p2p"]["intra-node"]
    assert next(r for r in training if r["case"].startswith("async-easgd"))["exchange"] == "measured"
    assert "sim_error_%" in proc.stdout
    assert set(report["summary_refreshed"]) == {"allreduce", "training"}
    assert report["judged_on"].startswith("the calibration-time profile alone")
    assert set(report["summary"]) == {"allreduce", "training"}
    assert png.stat().st_size > 1000
    assert "median |error|" in proc.stdout and "inter-node does not exist" in proc.stdout


def test_more_ranks_than_cores_is_refused_before_any_work(monkeypatch):
    import dlscale.validation.validate_local as vl
    from dlscale.perfmodel.errors import ConfigError

    class Comm:
        def Get_size(self):
            return 3

        def __getattr__(self, name):
            raise AssertionError(f"no MPI work expected, called {name}")

    monkeypatch.setattr(vl, "_cores", lambda: 2)
    with pytest.raises(ConfigError, match=r"3 ranks on 2 cores would oversubscribe them; run "
                                          r"`mpiexec -n 2` .* --oversubscribe"):
        vl.validate_local(Comm())
    args = _parser().parse_args(["validate", "local", "--oversubscribe"])
    assert args.oversubscribe is True
