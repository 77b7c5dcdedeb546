import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network import collectives as c

A, B, G = 2e-6, 1e-10, 2e-11
FLAT = sorted(c.ALLREDUCE)


@pytest.mark.parametrize("name", FLAT)
def test_one_rank_costs_nothing(name):
    assert c.allreduce_s(name, 1e8, 1, A, B, G) == 0.0


@pytest.mark.parametrize("name", FLAT)
def test_monotone_in_size_and_vectorized(name):
    n = np.geomspace(1, 1e9, 40)
    t = c.allreduce_s(name, n, 16, A, B, G)
    assert t.shape == (40,)
    assert np.all(np.diff(t) > 0)
    p = np.arange(2, 300)
    tp = c.allreduce_s(name, 1e6, p, A, B, G)
    assert tp.shape == p.shape and np.all(tp > 0)
    # scalar in, float out
    assert isinstance(c.allreduce_s(name, 1e6, 8, A, B, G), float)


def test_ring_bandwidth_limit():
    p = np.array([2, 3, 7, 64, 1000])
    n = 3e8
    assert c.ring_allreduce_s(n, p, 0.0, B) == pytest.approx(2 * (p - 1) / p * n * B)
    assert c.ring_allreduce_s(n, p, 0.0, B, G) == pytest.approx((p - 1) / p * n * (2 * B + G))
    assert c.ring_allreduce_s(0.0, p, A, B) == pytest.approx(2 * (p - 1) * A)


def test_rabenseifner_beats_ring_in_latency_for_small_messages():
    p = np.array([8, 64, 512, 4096])
    assert np.all(c.rabenseifner_allreduce_s(8.0, p, A, B) < c.ring_allreduce_s(8.0, p, A, B))
    # and equals ring's bandwidth term for large messages at alpha = 0 (power of two)
    assert c.rabenseifner_allreduce_s(1e9, p, 0.0, B, G) == pytest.approx(
        c.ring_allreduce_s(1e9, p, 0.0, B, G))


def test_recursive_doubling_power_of_two_matches_ceil_log2_form():
    p = np.array([2, 4, 8, 1024])
    assert c.recursive_doubling_allreduce_s(1e3, p, A, B, G) == pytest.approx(
        np.log2(p) * (A + 1e3 * B + 1e3 * G))


def test_non_power_of_two_fold_costs_more_than_the_power_below():
    for f in (c.recursive_doubling_allreduce_s, c.rabenseifner_allreduce_s):
        assert f(1e6, 6, A, B, G) > f(1e6, 4, A, B, G)
        # MPICH fold: 2 alpha + 2 n beta + n gamma extra
        assert f(1e6, 6, A, B, G) - f(1e6, 4, A, B, G) == pytest.approx(2 * A + 2e6 * B + 1e6 * G)


def test_binomial_and_reduce_broadcast_compose():
    p = np.array([2, 5, 33])
    n = 1e5
    assert c.binomial_tree_allreduce_s(n, p, A, B, G) == pytest.approx(
        c.reduce_s(n, p, A, B, G) + c.broadcast_s(n, p, A, B))


def test_double_binary_tree_limits():
    p = np.array([4, 64, 4096])
    # bandwidth bound: 2 n beta + n gamma, independent of p
    assert c.double_binary_tree_allreduce_s(1e9, p, 0.0, B, G) == pytest.approx(1e9 * (2 * B + G))
    # latency bound: 2 ceil(log2 p) alpha for a zero-byte message
    assert c.double_binary_tree_allreduce_s(0.0, p, A, B) == pytest.approx(2 * np.log2(p) * A)
    # never worse than the unpipelined binomial tree
    n = np.geomspace(1, 1e9, 30)
    assert np.all(c.double_binary_tree_allreduce_s(n, 64, A, B) <= c.binomial_tree_allreduce_s(n, 64, A, B) + 1e-15)


def test_double_binary_tree_hand_value():
    # D = 3, alpha = 1, n beta = 8: k* = sqrt(2 * 8 / 1) = 4, phase = (sqrt(2) + sqrt(8))^2 = 18
    assert c.double_binary_tree_allreduce_s(8.0, 8, 1.0, 1.0) == pytest.approx(36.0)


def test_hierarchical_reduces_to_flat_with_one_rank_per_node():
    nodes = np.array([1, 2, 16, 100])
    for name in FLAT:
        flat = c.allreduce_s(name, 1e7, nodes, A, B, G)
        hier = c.hierarchical_allreduce_s(1e7, nodes, 1, (1e-7, 1e-11), (A, B), G, inter_algorithm=name)
        assert hier == pytest.approx(flat)


def test_hierarchical_hand_value():
    # r = 4: 2 levels of reduce and bcast, each 1e6 * 1e-10; ring across 2 nodes: 1e6 * 1e-9
    t = c.hierarchical_allreduce_s(1e6, 2, 4, (0.0, 1e-10), (0.0, 1e-9), 1e-11)
    assert t == pytest.approx(4 * 1e-4 + 2 * 1e-5 + 1e-3 + 0.5 * 1e-5)


def test_other_collectives_hand_values():
    assert c.reduce_scatter_s(4e6, 4, 1e-6, 1e-9) == pytest.approx(3e-6 + 3e-3)
    assert c.allgather_s(4e6, 1, 1e-6, 1e-9) == 0.0
    assert c.gather_s(8e6, 8, 1e-6, 1e-9) == pytest.approx(3e-6 + 7e-3)
    assert c.broadcast_s(1e6, 1, 1e-6, 1e-9) == 0.0
    assert c.broadcast_s(8e6, 8, 0.0, 1e-9, "scatter-allgather") == pytest.approx(2 * 7e-3)


def test_parameter_server_is_linear_in_workers():
    w = np.array([1, 2, 8])
    t = c.parameter_server_s(1e6, w, A, B, 1e-11)
    assert t == pytest.approx(w * (2 * A + 2e6 * B + 1e6 * 1e-11))


def test_errors_name_the_value():
    with pytest.raises(ConfigError, match=r"p: must be integers >= 1, got 0"):
        c.ring_allreduce_s(1e6, 0, A, B)
    with pytest.raises(ConfigError, match=r"p: must be integers >= 1, got 2.5"):
        c.ring_allreduce_s(1e6, 2.5, A, B)
    with pytest.raises(ConfigError, match=r"beta_s_per_B: must be finite and >= 0, got -1"):
        c.ring_allreduce_s(1e6, 2, A, -1.0)
    with pytest.raises(ConfigError, match=r"ranks_per_node: must be integers >= 1, got 0"):
        c.hierarchical_allreduce_s(1e6, 2, 0, (A, B), (A, B))
    with pytest.raises(ConfigError, match=r"unknown name 'tree'; valid: auto, binomial-tree"):
        c.allreduce_s("tree", 1e6, 2, A, B)
    with pytest.raises(ConfigError, match=r"broadcast algorithm: unknown name 'pipe'"):
        c.broadcast_s(1e6, 2, A, B, "pipe")


def test_deterministic():
    n = np.geomspace(1, 1e9, 50)
    for name in FLAT:
        assert np.array_equal(c.allreduce_s(name, n, 37, A, B, G), c.allreduce_s(name, n, 37, A, B, G))


@pytest.mark.parametrize("name", FLAT)
def test_parameters_may_be_arrays_over_rank_counts(name):
    p = np.array([2, 16, 64])
    alpha = np.array([1e-6, 2e-6, 3e-6])
    beta = np.array([1e-10, 2e-10, 3e-10])
    t = c.allreduce_s(name, 1e6, p, alpha, beta, G)
    one_by_one = [c.allreduce_s(name, 1e6, int(pi), float(a), float(b), G) for pi, a, b in zip(p, alpha, beta, strict=True)]
    assert t == pytest.approx(one_by_one)


# -- "auto": what an MPI / NCCL tuner does ------------------------------------------------
SIZES = np.geomspace(8, 1e9, 25)
RANKS = np.unique(np.geomspace(2, 27_648, 30).astype(int))


def test_auto_is_the_minimum_of_the_candidates_vectorized():
    n, p = SIZES[:, None], RANKS[None, :]
    best, names = c.best_allreduce(n, p, A, B, G)
    cand = np.stack([c.allreduce_s(k, n, p, A, B, G) for k in c.ALLREDUCE])
    assert best.shape == names.shape == (len(SIZES), len(RANKS))
    np.testing.assert_array_equal(best, cand.min(axis=0))
    np.testing.assert_array_equal(names, np.asarray(list(c.ALLREDUCE))[cand.argmin(axis=0)])
    np.testing.assert_array_equal(c.auto_allreduce_s(n, p, A, B, G), best)
    np.testing.assert_array_equal(c.allreduce_s("auto", n, p, A, B, G), best)
    # every chosen name's own time is the minimum
    for k in set(names.ravel().tolist()):
        m = names == k
        np.testing.assert_array_equal(np.broadcast_to(c.allreduce_s(k, n, p, A, B, G), m.shape)[m],
                                      best[m])


def test_auto_with_hierarchical_and_per_candidate_beta():
    betas = {k: B * (1 + i) for i, k in enumerate(c.ALLREDUCE)}
    intra, inter = (1e-6, 2e-11), (A, B)
    n, p = SIZES[:, None], (RANKS[None, :] // 6 + 1) * 6
    best, names = c.best_allreduce(n, p, A, betas, G, ranks_per_node=6, intra=intra, inter=inter)
    cand = {k: np.broadcast_to(c.allreduce_s(k, n, p, A, betas[k], G), best.shape)
            for k in c.ALLREDUCE}
    cand["hierarchical"] = np.broadcast_to(
        c.hierarchical_allreduce_s(n, p // 6, 6, intra, inter, G), best.shape)
    stack = np.stack(list(cand.values()))
    np.testing.assert_array_equal(best, stack.min(axis=0))
    assert "hierarchical" in set(names.ravel().tolist())   # NVLink-like intra link pays off
    assert tuple(cand) == c.AUTO_CANDIDATES


def test_auto_picks_log_latency_for_tiny_and_bandwidth_optimal_for_large():
    # 8 B on 27,648 ranks: recursive doubling 14 + 2 (MPICH fold) = 16 latencies,
    # Rabenseifner 2 x 14 + 2 = 30, binomial tree 2 x 15 = 30, ring 2 x 27,647
    t, name = c.best_allreduce(8.0, 27_648, A, B, G)
    assert name == "recursive-doubling"
    assert t == pytest.approx(16 * A, rel=1e-3)
    # 1 GB on 64 ranks (a power of two): Rabenseifner moves what ring moves, 2 (p-1)/p n
    # beta, with 2 log2 64 = 12 latencies instead of 126
    assert c.best_allreduce(1e9, 64, A, B, G)[1] == "rabenseifner"
    # 1 GB on 48 ranks: Rabenseifner's MPICH fold adds 2 n beta; the ring does not
    assert c.best_allreduce(1e9, 48, A, B, G)[1] == "ring"
    # one rank: everything costs 0, the first candidate is named
    assert c.best_allreduce(1e6, 1, A, B, G) == (0.0, "ring")


def test_auto_unknown_names_list_auto():
    with pytest.raises(ConfigError, match=r"valid: auto, binomial-tree, .*ring"):
        c.allreduce_s("atuo", 1e6, 4, A, B)
    with pytest.raises(ConfigError, match="times: need at least one candidate"):
        c.fastest({})
