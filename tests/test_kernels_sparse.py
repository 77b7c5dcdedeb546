"""Sparse gradients: scatter-add densify with repeated indices, gather by concatenation, byte counts."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.kernels import dense_bytes, densify, indexed_slices_bytes, scatter_add, sparse_gather

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]


@settings(max_examples=25, deadline=None)
@given(n_rows=st.sampled_from([1, 2, 7, 50]), nnz=st.sampled_from([0, 1, 13, 200]),
       dim=st.sampled_from([1, 3, 16]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16))
def test_densify_matches_numpy_add_at(n_rows, nnz, dim, dtype, seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_rows, size=nnz)  # many repeats when nnz > n_rows
    val = rng.integers(-8, 8, size=(nnz, dim)).astype(dtype)  # integer-valued: exact in any order
    got = densify(idx, val, n_rows)
    assert got.dtype == dtype and got.shape == (n_rows, dim)
    np.testing.assert_array_equal(got, naive.densify(idx, val, n_rows))


def test_repeated_indices_accumulate_in_place():
    dense = np.ones((3, 2), dtype=np.float32)
    scatter_add(dense, np.array([2, 2, 2], dtype=np.int32), np.ones((3, 2), dtype=np.float32))
    assert dense.tolist() == [[1, 1], [1, 1], [4, 4]]


def test_gather_then_densify_equals_sum_of_dense():
    rng = np.random.default_rng(0)
    parts = [(rng.integers(0, 10, 5), rng.standard_normal((5, 4))) for _ in range(3)]
    idx, val = sparse_gather(parts)
    assert idx.size == 15 and val.shape == (15, 4)
    np.testing.assert_allclose(densify(idx, val, 10), sum(densify(i, v, 10) for i, v in parts), rtol=1e-12, atol=1e-12)


def test_byte_counts():
    assert dense_bytes(1000, 64, 4) == 256000
    assert indexed_slices_bytes(10, 64, 4) == 10 * (64 * 4 + 8)
    assert indexed_slices_bytes(0, 64, 4) == 0
    # gathering P ranks' slices moves P times one rank's slices
    assert sum(indexed_slices_bytes(5, 4, 8) for _ in range(3)) == indexed_slices_bytes(15, 4, 8)


def test_sparse_bad_inputs():
    with pytest.raises(ValueError, match="indices: must be < n_rows=3, got 3"):
        densify(np.array([3]), np.ones((1, 2)), 3)
    with pytest.raises(ValueError, match="indices: must be >= 0, got -1"):
        densify(np.array([-1]), np.ones((1, 2)), 3)
    with pytest.raises(ValueError, match="values: has 2 rows but indices has 1 entries"):
        densify(np.array([0]), np.ones((2, 2)), 3)
    with pytest.raises(TypeError, match="indices: dtype must be an integer type, got float64"):
        densify(np.array([0.0]), np.ones((1, 2)), 3)
    with pytest.raises(ValueError, match=r"slices\[1\].values: shape\[1\]/dtype 3/float64 differ"):
        sparse_gather([(np.array([0]), np.ones((1, 2))), (np.array([0]), np.ones((1, 3)))])
    with pytest.raises(ValueError, match="slices: need at least one"):
        sparse_gather([])
