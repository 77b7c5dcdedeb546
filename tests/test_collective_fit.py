import numpy as np
import pytest

from dlscale.perfmodel.network.collectives import rabenseifner_allreduce_s
from dlscale.validation.collective_fit import (
    MMAP_THRESHOLD_MAX_BYTES,
    fit_allreduce,
    library_allreduce_algorithms,
    predict_allreduce,
    temp_fault_bytes,
)

MPICH = "MPICH Version:      5.0.2"
INTRA = {"latency_s": 2e-6, "bandwidth_Bps": 5e9}


def test_mpich_default_selection_by_size_and_rank_count():
    assert library_allreduce_algorithms(MPICH, [1024, 64 << 20], [2, 3, 4]) == ["rabenseifner"]
    assert library_allreduce_algorithms(MPICH, [8], [2]) == ["recursive-doubling"]
    # 12 bytes = 3 floats on 4 ranks: fewer elements than p' = 4
    assert library_allreduce_algorithms(MPICH, [12], [4]) == ["recursive-doubling"]
    assert library_allreduce_algorithms(MPICH, [12], [3]) == ["rabenseifner"]
    assert library_allreduce_algorithms("Open MPI v5.0.3", [1024], [4]) is None


def test_temp_fault_bytes_follow_glibc_threshold_and_mpich_fold():
    big = MMAP_THRESHOLD_MAX_BYTES
    got = temp_fault_bytes("rabenseifner", [big // 2, big, big, big, 2 * big], [4, 2, 3, 4, 8])
    assert got.tolist() == [0.0, big / 2, big, big / 2, big]
    assert temp_fault_bytes("recursive-doubling", big, 4) == big
    assert temp_fault_bytes("ring", 2 * big, 4) == 0.0


def _runs(times, sizes, counts):
    return [{"ranks": p, "sizes_bytes": list(sizes), "times_s": [times(n, p) for n in sizes]}
            for p in counts]


def test_page_faults_are_priced_not_fitted():
    c = 7e-10
    sizes = [float(1 << k) for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB, every other

    def truth(n, p):
        return (2 * rabenseifner_allreduce_s(n, p, INTRA["latency_s"], 1 / INTRA["bandwidth_Bps"])
                + float(temp_fault_bytes("rabenseifner", n, p)) * c)

    runs = _runs(truth, sizes, [2, 4])
    fit = fit_allreduce(runs, INTRA, algorithms=["rabenseifner"], page_fault_s_per_B=c)
    assert fit["page_fault"] == {"s_per_B": c, "threshold_bytes": MMAP_THRESHOLD_MAX_BYTES}
    for n, p in ((32 << 20, 2), (32 << 20, 3), (16 << 20, 3), (2 << 20, 4)):
        assert predict_allreduce(fit, n, p) == pytest.approx(truth(n, p), rel=1e-6)
    blind = fit_allreduce(runs, INTRA, algorithms=["rabenseifner"])
    assert abs(predict_allreduce(blind, 32 << 20, 3) / truth(32 << 20, 3) - 1) > 0.05


def test_sizes_between_two_segments_are_interpolated_log_log():
    sizes = [float(1 << k) for k in (10, 12, 14, 18, 20, 22)]

    def truth(n, p):
        slow = 1.0 if n < 65536 else 3.0  # a protocol change somewhere in 16 KiB .. 256 KiB
        return slow * rabenseifner_allreduce_s(n, p, INTRA["latency_s"], 1 / INTRA["bandwidth_Bps"])

    fit = fit_allreduce(_runs(truth, sizes, [2, 4]), INTRA, algorithms=["rabenseifner"])
    assert [s["min_bytes"] for s in fit["segments"]] == [1024.0, 262144.0]
    for p in (2, 3, 4):
        lo, hi = truth(16384.0, p), truth(262144.0, p)
        assert predict_allreduce(fit, 65536, p) == pytest.approx(np.sqrt(lo * hi), rel=1e-9)
        assert predict_allreduce(fit, 1 << 19, p) == pytest.approx(truth(1 << 19, p), rel=1e-9)
    both = predict_allreduce(fit, np.array([16384.0, 65536.0]), np.array([2, 2]))
    assert both.shape == (2,) and both[1] > both[0]


def test_a_point_to_point_break_in_the_gap_says_which_segment_holds():
    sizes = [float(1 << k) for k in (10, 12, 14, 18, 20, 22)]

    def truth(n, p):  # Rabenseifner's messages are n/p: the protocol changes at 32 KiB of them
        slow = 1.0 if n / p < 32768 else 3.0
        return slow * rabenseifner_allreduce_s(n, p, INTRA["latency_s"], 1 / INTRA["bandwidth_Bps"])

    segs = [{"min_bytes": 1, "alpha_s": 2e-6, "beta_s_per_B": 2e-10},
            {"min_bytes": 32768, "alpha_s": 6e-6, "beta_s_per_B": 6e-10}]
    intra = {**INTRA, "segments": segs}
    fit = fit_allreduce(_runs(truth, sizes, [2]), intra, algorithms=["rabenseifner"])
    assert fit["p2p_breaks_bytes"] == [32768.0]
    assert [s["min_bytes"] for s in fit["segments"]] == [1024.0, 262144.0]
    # in the gap 16 KiB .. 256 KiB at p = 2 the messages are 8 .. 128 KiB: one break
    for n in (32768.0, 65536.0, 131072.0):
        assert predict_allreduce(fit, n, 2) == pytest.approx(truth(n, 2), rel=1e-9)
    # at p = 16 the messages (1 .. 16 KiB) do not reach the break: log-log as before
    lo, hi = predict_allreduce(fit, 16384.0, 16), predict_allreduce(fit, 262144.0, 16)
    assert predict_allreduce(fit, 65536.0, 16) == pytest.approx(np.sqrt(lo * hi), rel=1e-9)
    # without the break (a profile without p2p segments) the gap is interpolated
    plain = fit_allreduce(_runs(truth, sizes, [2]), INTRA, algorithms=["rabenseifner"])
    assert "p2p_breaks_bytes" not in plain
    assert predict_allreduce(plain, 65536.0, 2) != pytest.approx(truth(65536.0, 2), rel=1e-3)
