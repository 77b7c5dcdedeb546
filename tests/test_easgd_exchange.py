"""Async EASGD on its own terms (issue 16): the exchange timed in calibration, stored
in the profile, used by the local model; no synchronous straggler term for it."""

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import MachineProfile, load_profile, save_profile
from dlscale.validation.easgd_exchange import exchange_reps
from dlscale.validation.local_model import mva_cycle_s, p2p_time_s, predict_training
from tests.mpi_helpers import mpi_or_skip, run_script
from tests.test_mpi_training import N_BYTES, _profile

EXCHANGE = {"ranks": [0, 1], "message_bytes": int(N_BYTES), "exchange_s": 4e-5,
            "service_s": 1.5e-5, "spread": 0.05, "reps": 500}


def _with_exchange(prof, **overrides):
    intra = {**prof.p2p["intra-node"], "easgd_exchange": {**EXCHANGE, **overrides}}
    return MachineProfile(p2p={"intra-node": intra}, kernels=prof.kernels,
                          collectives=prof.collectives, provenance=prof.provenance)


def test_exchange_field_round_trips_and_old_profiles_still_load(tmp_path):
    new = _with_exchange(_profile())
    path = save_profile(new, tmp_path / "new.json")
    assert load_profile(path) == new
    assert load_profile(path).p2p["intra-node"]["easgd_exchange"] == EXCHANGE
    old = _profile()  # written before issue 16: no easgd_exchange
    assert load_profile(save_profile(old, tmp_path / "old.json")) == old


def test_bad_exchange_field_is_one_line_naming_it():
    with pytest.raises(ConfigError, match=r"profile.p2p.intra-node.easgd_exchange.exchange_s: "
                                          r"must be a positive number, got -1"):
        _with_exchange(_profile(), exchange_s=-1)
    with pytest.raises(ConfigError, match=r"easgd_exchange.service_s: missing"):
        intra = {**_profile().p2p["intra-node"], "easgd_exchange": {"message_bytes": 8,
                                                                    "exchange_s": 1e-5}}
        MachineProfile(p2p={"intra-node": intra}, kernels={"model_fwd_bwd_s": 1e-4})


def test_async_prediction_uses_the_measured_exchange():
    prof = _with_exchange(_profile())
    upd = N_BYTES / 5e9
    got = predict_training(prof, "async-easgd", 2, N_BYTES)
    # one worker: compute + its elastic step + the whole measured exchange
    assert got["exchange"] == "measured"
    assert got["iteration_s"] == pytest.approx(1e-4 + upd + 4e-5)
    # more workers: the master's measured share is the queue's service time
    think = 1e-4 + upd + (4e-5 - 1.5e-5)
    assert predict_training(prof, "async-easgd", 5, N_BYTES)["iteration_s"] == pytest.approx(
        mva_cycle_s(4, think, 1.5e-5))
    # the synchronous algorithms do not read it
    for algo in ("sgd-allreduce", "sgd-ring", "sync-easgd"):
        assert predict_training(prof, algo, 2, N_BYTES) == predict_training(
            _profile(), algo, 2, N_BYTES)


def test_old_profile_falls_back_to_the_composed_exchange_and_says_so():
    prof = _profile()
    got = predict_training(prof, "async-easgd", 2, N_BYTES)
    assert got["exchange"].startswith("composed from the ping-pong fit: the profile has no "
                                      "easgd_exchange")
    upd = N_BYTES / 5e9
    composed = 1e-4 + upd + 2 * p2p_time_s(prof, N_BYTES) + upd + 2 * 2e-7
    assert got["iteration_s"] == pytest.approx(composed)
    # timed at another message size: composed too, naming both sizes
    other = predict_training(_with_exchange(prof, message_bytes=1024), "async-easgd", 2, N_BYTES)
    assert "timed at 1024 B, the run sends 38440 B" in other["exchange"]
    assert other["iteration_s"] == pytest.approx(composed)


def test_async_prediction_has_no_straggler_term():
    # per-call times spread from 1x to 5x the median: a synchronous step waits for
    # the slowest rank, an asynchronous worker does not
    quiet = [1e-4] * 1001
    wide = [1e-4 * (0.6 + 4.4 * (i / 1000) ** 3) for i in range(1001)]
    calm = _with_exchange(_profile(quantiles={"model_fwd_bwd_s": quiet},
                                   noise={"model_fwd_bwd_s": 0.0}))
    noisy = _with_exchange(_profile(quantiles={"model_fwd_bwd_s": wide},
                                    noise={"model_fwd_bwd_s": 2.0}))
    for p in (2, 3, 4):
        a0 = predict_training(calm, "async-easgd", p, N_BYTES)
        a1 = predict_training(noisy, "async-easgd", p, N_BYTES)
        assert a1 == a0
        s0 = predict_training(calm, "sgd-allreduce", p, N_BYTES)["iteration_s"]
        s1 = predict_training(noisy, "sgd-allreduce", p, N_BYTES)["iteration_s"]
        assert s1 > 1.5 * s0


def test_exchange_reps_fit_the_budget():
    assert exchange_reps(1e-3, 1.0) == 1000
    assert exchange_reps(10.0, 1.0) == 50 and exchange_reps(0.0, 1.0) == 20000


_SCRIPT = """
import json
from mpi4py import MPI
from dlscale.validation.easgd_exchange import easgd_exchange
res = easgd_exchange(MPI.COMM_WORLD, 0.2)
if MPI.COMM_WORLD.Get_rank() == 0:
    print(json.dumps(res))
"""


@pytest.mark.mpi
def test_exchange_timed_on_two_ranks():
    mpi_or_skip()
    import json

    proc = run_script(2, _SCRIPT, timeout=90)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["ranks"] == [0, 1] and res["message_bytes"] == int(N_BYTES)
    assert 0 < res["service_s"] < res["exchange_s"] < 0.1 and res["reps"] >= 50


def test_report_says_where_the_async_exchange_was_composed():
    from dlscale.commands import validate as validate_cmd

    row = {"kind": "training", "case": "async-easgd p=2", "measured_s": 1e-4,
           "predicted_s": 1e-4, "error": 0.0, "spread": 0.0,
           "exchange": predict_training(_profile(), "async-easgd", 2, N_BYTES)["exchange"]}
    lines = validate_cmd.report_lines({"rows": [row], "summary": {}})
    assert ("note: async-easgd p=2: master/worker exchange composed from the ping-pong fit: "
            "the profile has no easgd_exchange (written before issue 16)") in lines
    row["exchange"] = "measured"
    assert not any("master/worker exchange" in line
                   for line in validate_cmd.report_lines({"rows": [row], "summary": {}}))
