import json
import math

import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.validation.local_model import (
    expected_max_normal,
    median_of_max_s,
    mva_cycle_s,
    p2p_time_s,
    predict_training,
)
from dlscale.validation.mpi_training import train
from tests.mpi_helpers import MPIEXEC, mpi_or_skip, run_script

N_BYTES = 38440.0


def _profile(**kernels):
    k = {"model_fwd_bwd_s": 1e-4, "sgd_Bps": 1e10, "easgd_Bps": 5e9, "reduce_Bps": 2e10,
         "noise": {"model_fwd_bwd_s": 0.1}}
    k.update(kernels)
    fit = {"algorithm": "ring", "alpha_s": 1e-6, "beta_s_per_B": 1e-10, "gamma_s_per_B": 0.0,
           "segments": [{"min_bytes": 4.0, "max_bytes": 1e8, "latency_factor": 2.0,
                         "bandwidth_factor": 1.0, "reduction_factor": 1.0}]}
    intra = {"latency_s": 1e-6, "bandwidth_Bps": 1e10,
             "segments": [{"min_bytes": 1, "max_bytes": 4096, "alpha_s": 1e-6, "beta_s_per_B": 0.0},
                          {"min_bytes": 8192, "max_bytes": 1e8, "alpha_s": 5e-6,
                           "beta_s_per_B": 1e-10}],
             "loggp": {"L_s": 5e-7, "o_s": 2e-7, "g_s": 3e-7, "G_s_per_B": 1e-10},
             "exchange": {"segments": [{"min_bytes": 1, "max_bytes": 1e8, "alpha_s": 2e-6,
                                        "beta_s_per_B": 2e-10}]}}
    return MachineProfile(p2p={"intra-node": intra}, kernels=k,
                          collectives={"allreduce": {"fit": fit}})


def test_expected_max_and_mva_reference_values():
    # E[max of 2 standard normals] = 1/sqrt(pi)
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-6)
    assert expected_max_normal(4) == pytest.approx(1.029375, rel=1e-5)
    # one client: no queueing; many clients: throughput bound by the server
    assert mva_cycle_s(1, 1.0, 0.25) == pytest.approx(1.25)
    assert mva_cycle_s(100, 1.0, 0.25) == pytest.approx(25.0, rel=1e-3)


def test_median_of_max_against_sampling():
    # bimodal single-call times, as on a shared host: 80 us, 30 % of calls at 120 us
    rng = __import__("numpy").random.default_rng(0)
    np = __import__("numpy")
    calls = np.where(rng.random(200_000) < 0.3, 120e-6, 80e-6) + rng.normal(0, 1e-6, 200_000)
    pct = [float(v) for v in np.quantile(calls, np.linspace(0, 1, 1001))]
    for p in (1, 2, 4):
        sampled = np.median(calls[: 50_000 * p].reshape(p, -1).max(axis=0))
        assert median_of_max_s(pct, p) == pytest.approx(sampled, rel=0.02)
    # 2 ranks: P(both fast) = 0.49 < 0.5, so the median slowest call is a slow one
    assert median_of_max_s(pct, 2) > 115e-6 > median_of_max_s(pct, 1)


def test_quantiles_replace_the_normal_straggler_term():
    pct = [1e-4 + 2e-8 * i for i in range(1001)]  # uniform on 100..120 us
    prof = _profile(quantiles={"model_fwd_bwd_s": pct})
    plain = _profile()
    for p in (2, 4):
        got = predict_training(prof, "sgd-allreduce", p, N_BYTES)
        ref = predict_training(plain, "sgd-allreduce", p, N_BYTES)
        assert got["compute_s"] == pytest.approx(1e-4 + 2e-5 * 0.5 ** (1 / p))
        assert got["iteration_s"] - got["compute_s"] == pytest.approx(
            ref["iteration_s"] - ref["compute_s"])
    # the asynchronous workers do not wait for each other: the median call
    assert predict_training(prof, "async-easgd", 2, N_BYTES)["compute_s"] == 1e-4


def test_piecewise_p2p_time_picks_segment():
    prof = _profile()
    assert p2p_time_s(prof, 100) == pytest.approx(1e-6)
    assert p2p_time_s(prof, 10000) == pytest.approx(5e-6 + 1e-6)


def test_training_predictions_follow_the_documented_forms():
    prof = _profile()
    straggle = 1e-4 * (1 + 0.1 / math.sqrt(math.pi))
    # sgd-allreduce: compute with stragglers + fitted allreduce (ring, 2x latency) + update
    ar = 2 * (2 * 1e-6) + 2 * 0.5 * N_BYTES * 1e-10
    got = predict_training(prof, "sgd-allreduce", 2, N_BYTES)
    assert got["iteration_s"] == pytest.approx(straggle + ar + N_BYTES / 1e10)
    # sgd-ring: ring closed form with the exchange fit and gamma = 1/reduce_Bps
    ring = 2 * 2e-6 + N_BYTES * 2e-10 + 0.5 * N_BYTES / 2e10
    got = predict_training(prof, "sgd-ring", 2, N_BYTES)
    assert got["iteration_s"] == pytest.approx(straggle + ring + N_BYTES / 1e10)
    # async with one worker: compute + update + 2 transfers + master service
    upd = N_BYTES / 5e9
    think = 1e-4 + upd + 2 * (5e-6 + N_BYTES * 1e-10)
    got = predict_training(prof, "async-easgd", 2, N_BYTES)
    assert got["iteration_s"] == pytest.approx(think + upd + 2 * 2e-7)
    # more workers queue at the master: never faster
    assert predict_training(prof, "async-easgd", 8, N_BYTES)["iteration_s"] > got["iteration_s"]


def test_sgd_ring_uses_the_measured_ring_allreduce_fit_where_the_profile_has_it():
    prof = _profile()
    ring_fit = {**prof.collectives["allreduce"]["fit"], "alpha_s": 1e-5}
    with_ring = MachineProfile(p2p=prof.p2p, kernels=prof.kernels, collectives={
        **prof.collectives, "ring_allreduce": {"algorithm": "ring", "fit": ring_fit}})
    straggle = 1e-4 * (1 + 0.1 / math.sqrt(math.pi))
    ring = 2 * (2 * 1e-5) + 2 * 0.5 * N_BYTES * 1e-10  # 2 steps at 2x the fit's alpha, + beta
    got = predict_training(with_ring, "sgd-ring", 2, N_BYTES)
    assert got["comm_s"] == pytest.approx(ring)
    assert got["iteration_s"] == pytest.approx(straggle + ring + N_BYTES / 1e10)


def test_training_prediction_errors():
    prof = _profile()
    with pytest.raises(ConfigError, match="no prediction for 'hogwild'"):
        predict_training(prof, "hogwild", 2, N_BYTES)
    bare = MachineProfile(p2p=prof.p2p, kernels={"model_fwd_bwd_s": 1e-4, "sgd_Bps": 1e9})
    with pytest.raises(ConfigError, match=r"profile.collectives.allreduce.fit: missing"):
        predict_training(bare, "sgd-allreduce", 2, N_BYTES)
    with pytest.raises(ConfigError, match=r"profile.kernels.easgd_Bps: missing"):
        predict_training(bare, "async-easgd", 2, N_BYTES)


def test_train_rejects_bad_arguments():
    with pytest.raises(ConfigError, match="algorithm: unknown name 'sgd'"):
        train(None, "sgd")
    with pytest.raises(ConfigError, match="iterations: must be an integer >= 1, got 0"):
        train(None, "sgd-ring", iterations=0)


SCRIPT = """
import json, sys
import numpy as np
from mpi4py import MPI
from dlscale.validation.mpi_ring import ring_allreduce
from dlscale.validation.mpi_training import TRAINING_ALGORITHMS, train
comm = MPI.COMM_WORLD
out = {}
for n in (1, 7, 1000):   # integer-valued floats: every summation order is exact
    x = np.random.default_rng([comm.rank, n]).integers(0, 1000, n).astype(np.float32)
    ref = np.empty_like(x)
    comm.Allreduce(x, ref)
    out[f"ring{n}"] = bool(np.array_equal(ring_allreduce(comm, x), ref))
out["all_equal"] = comm.allreduce(all(out.values()), op=MPI.LAND)
for algo in TRAINING_ALGORITHMS:
    r = train(comm, algo, iterations=40, warmup=2)
    if r is not None:
        out[algo] = r.to_dict()
if comm.rank == 0:
    json.dump(out, open(sys.argv[1], "w"))
"""


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("ranks", [2, 3])
def test_real_training_over_mpi(tmp_path, ranks):
    mpi_or_skip()
    out = tmp_path / "train.json"
    proc = run_script(ranks, SCRIPT, str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["all_equal"] is True
    for algo in ("sgd-ring", "sgd-allreduce", "sync-easgd", "async-easgd"):
        r = res[algo]
        assert r["ranks"] == ranks and r["iterations"] == 40
        assert r["iteration_s"] > 0 and r["compute_s"] > 0
        assert r["accuracy"] > 0.5  # 10 classes: chance is 0.1
        assert r["message_bytes"] == 4 * r["n_params"]
    if ranks == 2:  # a + b == b + a: the ring and MPI sums are bit-identical on 2 ranks
        assert res["sgd-ring"]["loss"] == res["sgd-allreduce"]["loss"]
        assert res["sgd-ring"]["accuracy"] == res["sgd-allreduce"]["accuracy"]


def test_mpiexec_path_is_next_to_interpreter():
    assert MPIEXEC.name == "mpiexec"


def test_oversubscribed_ranks_share_the_cores():
    prof = _profile()
    shared = MachineProfile(p2p=prof.p2p, kernels=prof.kernels, collectives=prof.collectives,
                            provenance={"hosts": ["vm"], "cores": 2})
    alone = predict_training(prof, "sgd-allreduce", 4, N_BYTES)
    got = predict_training(shared, "sgd-allreduce", 4, N_BYTES)
    assert got["compute_s"] == pytest.approx(2 * alone["compute_s"])  # 4 ranks on 2 cores
    assert predict_training(shared, "sgd-allreduce", 2, N_BYTES) == predict_training(
        prof, "sgd-allreduce", 2, N_BYTES)


def test_measured_synchronous_step_replaces_processor_sharing_where_oversubscribed():
    prof = _profile()
    sync = {"ranks": 4, "step_s": 3e-4, "barrier_s": 2e-5, "compute_s": 2.8e-4, "sleep_s": 7e-5}
    intra = {**prof.p2p["intra-node"], "sync_step": sync}
    shared = MachineProfile(p2p={"intra-node": intra}, kernels=prof.kernels,
                            collectives=prof.collectives, provenance={"hosts": ["vm"], "cores": 2})
    plain = MachineProfile(p2p=prof.p2p, kernels=prof.kernels, collectives=prof.collectives,
                           provenance={"hosts": ["vm"], "cores": 2})
    got = predict_training(shared, "sgd-allreduce", 4, N_BYTES)
    ref = predict_training(plain, "sgd-allreduce", 4, N_BYTES)
    assert got["compute_s"] == pytest.approx(2.8e-4)
    assert got["comm_s"] == pytest.approx(ref["comm_s"] + 7e-5)  # one wake-up per step
    # measured on 4 ranks: not used for 3, nor where the ranks have a core each
    assert predict_training(shared, "sgd-allreduce", 3, N_BYTES) == predict_training(
        plain, "sgd-allreduce", 3, N_BYTES)
    assert predict_training(shared, "sgd-allreduce", 2, N_BYTES) == predict_training(
        plain, "sgd-allreduce", 2, N_BYTES)
    # asynchronous workers: processor sharing, but not the synchronous step's straggler
    a_got = predict_training(shared, "async-easgd", 4, N_BYTES)
    assert a_got["compute_s"] == pytest.approx(2 * 1e-4)
    a_ref = predict_training(plain, "async-easgd", 4, N_BYTES)
    assert a_got["iteration_s"] > a_ref["iteration_s"]  # the sleep waiting for the center
