"""The simulator in the loop of ``validate local`` (issue 16): a recorded profile and
recorded measurements through the reporting path, no MPI."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from dlscale.commands import validate as validate_cmd
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation.local_sim import (
    SIM_ALGORITHM,
    local_cluster,
    simulate_local_run,
    simulated_fields,
    simulated_ranks,
)
from dlscale.validation.validate_local import add_simulated, summarize

RECORDED = json.loads((Path(__file__).parent / "data" / "validate_local_2ranks.json").read_text())


def _recorded():
    return MachineProfile.from_dict(RECORDED["profile"]), copy.deepcopy(RECORDED["rows"])


def test_every_training_run_is_simulated_next_to_the_closed_form():
    profile, rows = _recorded()
    add_simulated(profile, rows)
    training = [r for r in rows if r["kind"] == "training"]
    assert {r["algorithm"] for r in training} == set(SIM_ALGORITHM)
    for r in training:
        assert r["simulated_s"] > 0
        assert r["error_simulated"] == pytest.approx(r["simulated_s"] / r["measured_s"] - 1)
        sim_algo, coll = SIM_ALGORITHM[r["algorithm"]]
        assert r["simulated_as"].startswith(f"{sim_algo}, {coll} allreduce, ")
        assert f"{r['iterations']} iterations" in r["simulated_as"]
        # the judged figure is untouched
        assert r["error_profile"] == RECORDED["rows"][rows.index(r)]["error_profile"]
    async_row = next(r for r in training if r["algorithm"] == "async-easgd")
    assert "1 rank(s) + master" in async_row["simulated_as"]  # rank 0 is the master
    assert all("simulated_s" not in r for r in rows if r["kind"] == "allreduce")
    # the summary of the simulated figure, and the printed report
    sim = summarize(rows, "error_simulated")
    assert set(sim) == {"training"}
    errs = [abs(r["error_simulated"]) for r in training if r["spread"] <= 0.15]
    assert sim["training"]["median_abs_error"] == pytest.approx(np.median(errs), abs=1e-6)
    report = {"rows": rows, "summary": summarize(rows), "summary_simulated": sim}
    lines = validate_cmd.report_lines(report)
    assert "simulated_us" in lines[0] and "sim_error_%" in lines[0]
    assert any(line.startswith("simulator (simulate_training, same profile, not judged): "
                               "training median |error| ") for line in lines)


def test_simulated_figure_is_reproducible_and_follows_the_profile():
    profile, _ = _recorded()
    a = simulate_local_run(profile, "sgd-allreduce", 2, 100)
    assert simulate_local_run(profile, "sgd-allreduce", 2, 100) == a  # seed 0, bit for bit
    # twice the compute per call in the profile: the simulated iteration grows
    k = dict(profile.kernels)
    k["quantiles"] = {"model_fwd_bwd_s": [2 * v for v in k["quantiles"]["model_fwd_bwd_s"]]}
    k["model_fwd_bwd_s"] = 2 * k["model_fwd_bwd_s"]
    slower = MachineProfile.from_dict({**profile.to_dict(), "kernels": k})
    assert simulate_local_run(slower, "sgd-allreduce", 2, 100)["simulated_s"] > a["simulated_s"]
    # the intra-node link of the cluster is the profile's
    intra = profile.p2p["intra-node"]
    link = local_cluster(profile, 2).node.intra_link
    assert (link.latency_s, link.bandwidth_Bps) == (intra["latency_s"], intra["bandwidth_Bps"])


def test_a_run_that_cannot_be_simulated_says_so_in_its_row():
    profile, rows = _recorded()
    k = {key: v for key, v in profile.kernels.items() if key != "gemm_flops"}
    bare = MachineProfile.from_dict({**profile.to_dict(), "kernels": k})
    add_simulated(bare, rows)
    training = [r for r in rows if r["kind"] == "training"]
    assert all(r["simulated_note"].startswith("not simulated: profile.kernels.gemm_flops: "
                                              "missing") for r in training)
    assert all("simulated_s" not in r for r in training)
    lines = validate_cmd.report_lines({"rows": rows, "summary": summarize(rows),
                                       "summary_simulated": summarize(rows, "error_simulated")})
    assert "not simulated" in lines[0]
    assert sum(line.startswith("note: sgd-ring p=2: not simulated: ") for line in lines) == 1
    assert not any(line.startswith("simulator (") for line in lines)


def test_oversubscribed_layout_keeps_the_batch_per_rank_or_says_why_not():
    profile, _ = _recorded()  # recorded on 2 cores
    assert simulated_ranks("async-easgd", 3) == 2 and simulated_ranks("sync-easgd", 3) == 3
    four = simulate_local_run(profile, "sgd-allreduce", 4, 20)  # 4 ranks share 2 cores
    assert "4 rank(s)" in four["simulated_as"]
    assert four["simulated_s"] > simulate_local_run(profile, "sgd-allreduce", 2, 20)["simulated_s"]
    three_cores = MachineProfile.from_dict({**profile.to_dict(), "provenance": {
        **profile.provenance, "cores": 3}})
    row = {"algorithm": "sgd-allreduce", "ranks": 4, "iterations": 20, "measured_s": 1e-4}
    got = simulated_fields(three_cores, row)
    assert got == {"simulated_note": "not simulated: ranks: 4 ranks on 3 cores give 42.6667 "
                                     "samples per core; the simulator's layout needs a whole "
                                     "number"}


def test_the_diagnosis_prints_both_predictions_parts(capsys, tmp_path):
    import json as _json
    from pathlib import Path as _Path

    from dlscale.validation.diagnose_local import breakdown, main

    data = _Path(__file__).parent / "data" / "validate_local_2ranks.json"
    report = _json.loads(data.read_text())
    parts = breakdown(report["profile"], "sgd-allreduce", 2, 38440)
    assert all(v > 0 for v in parts.values())
    assert parts["closed_s"] == pytest.approx(parts["closed_compute_s"] + parts["closed_comm_s"]
                                              + parts["closed_update_s"])
    full = {"profile": report["profile"], "training": [
        {"algorithm": "sgd-ring", "ranks": 2, "message_bytes": 38440,
         "iteration_median_s": 8e-5},
        {"algorithm": "async-easgd", "ranks": 2, "message_bytes": 38440,
         "iteration_median_s": 9e-5}]}
    path = tmp_path / "r.json"
    path.write_text(_json.dumps(full))
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "sgd-ring p=2" in out and "async-easgd" not in out
