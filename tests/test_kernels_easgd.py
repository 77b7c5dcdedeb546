"""EASGD family against tests/naive.py, conservation properties and input checks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.kernels import (
    easgd_center_update_async,
    easgd_center_update_sync,
    easgd_elastic_exchange,
    easgd_worker_update,
    measgd_worker_update,
    nesterov_lookahead,
)

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]

SIZES = st.sampled_from([0, 1, 2, 7, 13, 31, 64, 97, 1000])
DTYPES = st.sampled_from([np.float32, np.float64])
SEEDS = st.integers(0, 2**16)
FAST = settings(max_examples=25, deadline=None)


def _arrays(n, dtype, seed, k):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(k)]


def _close(a, b, dtype):
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(a, b, rtol=8 * eps, atol=8 * eps)


@FAST
@given(n=SIZES, dtype=DTYPES, seed=SEEDS)
def test_worker_update_matches_numpy(n, dtype, seed):
    x, g, c = _arrays(n, dtype, seed, 3)
    want = naive.easgd_worker(x, g, c, dtype(0.05), dtype(0.3))
    got = easgd_worker_update(x, g, c, lr=0.05, rho=0.3)
    assert got is x and got.dtype == dtype
    _close(got, want, dtype)


@FAST
@given(n=SIZES, dtype=DTYPES, seed=SEEDS, p=st.sampled_from([1, 2, 3, 8]))
def test_center_updates_match_numpy(n, dtype, seed, p):
    c, x = _arrays(n, dtype, seed, 2)
    workers = np.stack(_arrays(n, dtype, seed + 1, p))
    s = workers.sum(axis=0)
    _close(easgd_center_update_async(c.copy(), x, lr=0.1, rho=0.5),
           naive.center_async(c, x, dtype(0.1), dtype(0.5)), dtype)
    _close(easgd_center_update_sync(c.copy(), s, p, lr=0.1, rho=0.5),
           naive.center_sync(c, s, dtype(p), dtype(0.1), dtype(0.5)), dtype)


@FAST
@given(n=SIZES, dtype=DTYPES, seed=SEEDS)
def test_elastic_exchange_and_momentum_match_numpy(n, dtype, seed):
    x, c, v, g = _arrays(n, dtype, seed, 4)
    wx, wc = naive.elastic_exchange(x, c, dtype(0.2))
    gx, gc = easgd_elastic_exchange(x.copy(), c.copy(), alpha=0.2)
    _close(gx, wx, dtype)
    _close(gc, wc, dtype)
    wx, wv = naive.measgd(x, v, g, c, dtype(0.01), dtype(0.5), dtype(0.9))
    x2, v2 = x.copy(), v.copy()
    measgd_worker_update(x2, v2, g, c, lr=0.01, rho=0.5, momentum=0.9)
    _close(x2, wx, dtype)
    _close(v2, wv, dtype)
    _close(nesterov_lookahead(x, v, 0.9), x + dtype(0.9) * v, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sync_center_with_rho_zero_does_not_move(dtype):
    c, s = _arrays(101, dtype, 3, 2)
    before = c.copy()
    easgd_center_update_sync(c, s, 4, lr=0.3, rho=0.0)
    np.testing.assert_array_equal(c, before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nothing_moves_when_workers_equal_center(dtype):
    # exact: x - c == 0, so every update adds exactly zero
    p = 4
    c = np.arange(37, dtype=dtype)
    workers = [c.copy() for _ in range(p)]
    zero = np.zeros_like(c)
    for w in workers:
        easgd_worker_update(w, zero, c, lr=0.1, rho=0.7)
        np.testing.assert_array_equal(w, c)
    s = np.sum(np.stack(workers), axis=0)  # p * c exactly for these small integers
    c2 = easgd_center_update_sync(c.copy(), s, p, lr=0.1, rho=0.7)
    np.testing.assert_array_equal(c2, c)
    x, c3 = easgd_elastic_exchange(c.copy(), c.copy(), alpha=0.5)
    np.testing.assert_array_equal(x, c)
    np.testing.assert_array_equal(c3, c)


def test_elastic_exchange_conserves_sum():
    x, c = _arrays(1001, np.float64, 9, 2)
    total = x + c
    easgd_elastic_exchange(x, c, alpha=0.3)
    np.testing.assert_allclose(x + c, total, rtol=0, atol=4 * np.finfo(np.float64).eps * np.abs(total).max())


def test_shapes_are_kept_for_multidimensional_tensors():
    x = np.ones((3, 4))
    out = easgd_worker_update(x, np.ones((3, 4)), np.zeros((3, 4)), lr=0.5, rho=0.0)
    assert out.shape == (3, 4)
    assert out[2, 3] == 0.5


def test_bad_inputs_raise_before_work():
    x = np.ones(4)
    with pytest.raises(ValueError, match=r"lr: must be a finite number >= 0, got -0.1"):
        easgd_worker_update(x, x.copy(), x.copy(), lr=-0.1, rho=0.1)
    assert (x == 1).all()
    with pytest.raises(ValueError, match=r"grad: shape \(3,\) does not match x shape \(4,\)"):
        easgd_worker_update(x, np.ones(3), x.copy(), lr=0.1, rho=0.1)
    with pytest.raises(TypeError, match="center: dtype float32 does not match x dtype float64"):
        easgd_worker_update(x, x.copy(), np.ones(4, np.float32), lr=0.1, rho=0.1)
    with pytest.raises(TypeError, match="x: dtype must be float32 or float64, got int64"):
        easgd_worker_update(np.ones(4, np.int64), x, x, lr=0.1, rho=0.1)
    with pytest.raises(ValueError, match="x: must be C-contiguous"):
        easgd_worker_update(np.ones(8)[::2], x, x, lr=0.1, rho=0.1)
    with pytest.raises(TypeError, match="x: must be a numpy ndarray, got list"):
        easgd_worker_update([1.0], x, x, lr=0.1, rho=0.1)
    with pytest.raises(ValueError, match=r"alpha: must be a finite number >= 0 and <= 1, got 1\.5"):
        easgd_elastic_exchange(x, x.copy(), alpha=1.5)
    with pytest.raises(ValueError, match="n_workers: must be an integer >= 1, got 0"):
        easgd_center_update_sync(x, x.copy(), 0, lr=0.1, rho=0.1)
    with pytest.raises(ValueError, match=r"momentum: must be a finite number >= 0 and < 1, got 1\.0"):
        measgd_worker_update(x, x.copy(), x.copy(), x.copy(), lr=0.1, rho=0.1, momentum=1.0)
    with pytest.raises(ValueError, match="lr: must be a finite number >= 0, got nan"):
        easgd_center_update_async(x, x.copy(), lr=float("nan"), rho=0.1)
    ro = np.ones(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="x: is updated in place and must be writeable"):
        easgd_worker_update(ro, x, x, lr=0.1, rho=0.1)
