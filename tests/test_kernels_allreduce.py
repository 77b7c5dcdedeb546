"""In-process allreduce drivers: exact sums, identical results on every rank, bytes moved.

Exactness: with integer-valued floats every partial sum is exactly representable, so
every algorithm must return the exact sum whatever its summation order.  For general
float64 data the ring result must equal, bit for bit, the numpy sum taken in the
ring's order (tests/naive.py).  For float32 every algorithm must stay within the
recursive-summation bound ``(P-1) u sum_i |x_i|`` (u = 2**-24) of the exact sum.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.kernels import (
    ALGORITHMS,
    allreduce_inplace,
    chunk_bounds,
    doubling_step,
    halving_step,
    ring_allgather_step,
    ring_reduce_scatter_step,
    tree_broadcast_step,
    tree_reduce_step,
)

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]

FAST = settings(max_examples=30, deadline=None)
PS = st.sampled_from([1, 2, 3, 5, 8])
NS = st.sampled_from([0, 1, 2, 7, 13, 64, 101])
ALGS = st.sampled_from(sorted(ALGORITHMS))


@FAST
@given(alg=ALGS, p=PS, n=NS, seed=st.integers(0, 2**16), dtype=st.sampled_from([np.float32, np.float64]))
def test_integer_valued_sum_is_exact_and_identical_on_all_ranks(alg, p, n, seed, dtype):
    x = np.random.default_rng(seed).integers(-1000, 1000, size=(p, n)).astype(dtype)
    want = x.astype(np.int64).sum(axis=0)
    st_ = allreduce_inplace(x, alg)
    assert np.array_equal(x, np.broadcast_to(want, x.shape))
    assert st_.sent_elements.sum() == 2 * (p - 1) * n
    assert st_.total_bytes == 2 * (p - 1) * n * np.dtype(dtype).itemsize


@FAST
@given(p=PS, n=NS, seed=st.integers(0, 2**16))
def test_ring_float64_equals_same_order_numpy_sum_bit_for_bit(p, n, seed):
    x = np.random.default_rng(seed).standard_normal((p, n))
    want = naive.ring_sum_same_order(x)
    allreduce_inplace(x, "ring")
    for r in range(p):
        np.testing.assert_array_equal(x[r], want)


@FAST
@given(alg=ALGS, p=PS, n=NS, seed=st.integers(0, 2**16))
def test_float32_within_recursive_summation_bound(alg, p, n, seed):
    x = np.random.default_rng(seed).standard_normal((p, n)).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=0)
    bound = (p - 1) * 2.0**-24 * np.abs(x.astype(np.float64)).sum(axis=0) * (1 + 1e-6)
    allreduce_inplace(x, alg)
    assert np.all(np.abs(x.astype(np.float64) - exact) <= bound)
    assert np.all(x == x[0])


@pytest.mark.parametrize("p", [1, 2, 3, 8])
@pytest.mark.parametrize("n", [0, 1, 7, 13, 24, 97])
def test_ring_moves_exactly_the_formula_bytes(p, n):
    st_ = allreduce_inplace(np.ones((p, n)), "ring")
    assert st_.sent_elements.tolist() == naive.ring_sent_elements(n, p)
    assert st_.steps == 2 * (p - 1)
    if n % p == 0:  # 2 (P-1)/P n per rank
        assert np.all(st_.sent_elements * p == 2 * (p - 1) * n)


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8])
def test_binomial_tree_sends_n_per_tree_edge(p):
    st_ = allreduce_inplace(np.ones((p, 11)), "binomial-tree")
    assert st_.sent_elements.tolist() == naive.tree_sent_elements(11, p)
    assert st_.steps == 2 * int(np.ceil(np.log2(p)))


@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_rabenseifner_power_of_two_sends_ring_volume(p):
    n = 8 * 7
    st_ = allreduce_inplace(np.ones((p, n)), "rabenseifner")
    assert np.all(st_.sent_elements * p == 2 * (p - 1) * n)
    assert st_.steps == 2 * int(np.log2(p))


def test_rabenseifner_non_power_of_two_folds_extra_ranks():
    # P = 6 = 4 + 2: ranks 0 and 2 send their vector first and receive the result last
    n = 40
    st_ = allreduce_inplace(np.ones((6, n)), "rabenseifner")
    assert st_.sent_elements[0] == n and st_.sent_elements[2] == n
    assert st_.steps == 2 * 2 + 2


@pytest.mark.parametrize("inter", sorted(ALGORITHMS))
def test_hierarchical_counts_intra_and_inter_node_traffic(inter):
    nodes, rpn, n = 3, 4, 10
    x = np.arange(nodes * rpn * n, dtype=np.float64).reshape(nodes * rpn, n)
    want = x.sum(axis=0)
    st_ = allreduce_inplace(x, "hierarchical", ranks_per_node=rpn, inter_algorithm=inter)
    assert np.array_equal(x, np.broadcast_to(want, x.shape))
    assert st_.inter_node_sent_elements.sum() == 2 * (nodes - 1) * n
    assert (st_.sent_elements - st_.inter_node_sent_elements).sum() == nodes * 2 * (rpn - 1) * n
    assert np.all(st_.inter_node_sent_elements[np.arange(nodes * rpn) % rpn != 0] == 0)


def test_steps_by_hand_equal_driver():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 23))
    y = x.copy()
    allreduce_inplace(x, "ring")
    sent = np.zeros(5, dtype=np.int64)
    for s in range(4):
        ring_reduce_scatter_step(y, s, sent=sent)
    for s in range(4):
        ring_allgather_step(y, s, sent=sent)
    np.testing.assert_array_equal(x, y)
    assert sent.sum() == 2 * 4 * 23
    z = np.arange(15.0).reshape(5, 3)
    for m in (1, 2, 4):
        tree_reduce_step(z, m)
    assert z[0].tolist() == [30.0, 35.0, 40.0]
    for m in (4, 2, 1):
        tree_broadcast_step(z, m)
    assert np.all(z == z[0])


def test_chunk_bounds_handle_remainders():
    assert chunk_bounds(7, 3).tolist() == [0, 3, 5, 7]
    assert chunk_bounds(2, 4).tolist() == [0, 1, 2, 2, 2]
    assert chunk_bounds(0, 3).tolist() == [0, 0, 0, 0]


def test_allreduce_bad_inputs():
    with pytest.raises(ValueError, match="algorithm: unknown allreduce 'rings'; valid: ring, rabenseifner, binomial-tree, hierarchical"):
        allreduce_inplace(np.ones((2, 2)), "rings")
    with pytest.raises(ValueError, match="ranks_per_node: must divide the 6 ranks, got 4"):
        allreduce_inplace(np.ones((6, 2)), "hierarchical", ranks_per_node=4)
    with pytest.raises(ValueError, match="ranks_per_node: required"):
        allreduce_inplace(np.ones((6, 2)), "hierarchical")
    with pytest.raises(ValueError, match=r"bufs: must be 2-D, got shape \(4,\)"):
        allreduce_inplace(np.ones(4))
    with pytest.raises(TypeError, match="bufs: dtype must be float32 or float64, got int32"):
        allreduce_inplace(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match=r"step: must be in \[0, 1\] for 3 ranks, got 2"):
        ring_reduce_scatter_step(np.ones((3, 3)), 2)
    with pytest.raises(ValueError, match="ranks: must be distinct row indices"):
        tree_reduce_step(np.ones((3, 3)), 1, ranks=np.array([0, 0]))


def test_halving_doubling_steps_by_hand_equal_driver():
    rng = np.random.default_rng(8)
    x = rng.integers(-9, 9, (4, 11)).astype(np.float64)
    want = x.sum(axis=0)
    lo, hi = np.zeros(4, np.int64), np.full(4, 11, np.int64)
    sent = np.zeros(4, np.int64)
    for m in (2, 1):
        halving_step(x, m, lo, hi, sent=sent)
    assert sorted(zip(lo.tolist(), hi.tolist(), strict=True)) == [(0, 2), (2, 5), (5, 8), (8, 11)]
    for v in range(4):  # each rank owns its reduced segment
        np.testing.assert_array_equal(x[v, lo[v]:hi[v]], want[lo[v]:hi[v]])
    for m in (1, 2):
        doubling_step(x, m, lo, hi, sent=sent)
    np.testing.assert_array_equal(x, np.broadcast_to(want, x.shape))
    assert sent.sum() == 2 * 3 * 11
    with pytest.raises(ValueError, match="mask: must be a power of two below the rank count 3"):
        halving_step(np.ones((3, 2)), 1, np.zeros(3, np.int64), np.full(3, 2, np.int64))


def test_kernels_are_cached_on_disk():
    # cache=True on every compiled kernel: a second process loads machine code from disk
    import importlib

    from numba.core.registry import CPUDispatcher

    for mod in ("allreduce", "reduction_steps", "easgd", "sgd", "hogwild", "sparse", "fusion", "model"):
        m = importlib.import_module(f"dlscale.kernels.{mod}")
        kernels = [v for v in vars(m).values() if isinstance(v, CPUDispatcher)]
        assert kernels, mod
        for k in kernels:
            assert type(k._cache).__name__ == "FunctionCache", (mod, k.py_func.__name__)
