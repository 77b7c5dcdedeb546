"""Hogwild (lock-free, multi-threaded) updates.

Lost updates are real races, so how many occur depends on the scheduler (a shared
2-core machine may run the threads one after the other).  The tests check what holds
for every interleaving; benchmarks/bench_kernels.py reports the lost-update counts.
"""

import numba
import numpy as np
import pytest

from dlscale.kernels import hogwild_easgd_center_update, hogwild_lost_updates, hogwild_sgd_update


def test_one_thread_loses_nothing_and_matches_serial():
    r = hogwild_lost_updates(n_elements=257, n_threads=1, passes=50)
    assert (r.applied, r.recorded, r.lost) == (257 * 50, 257 * 50, 0)
    np.testing.assert_array_equal(r.per_element, np.full(257, 50.0))


def test_several_threads_never_invent_updates():
    # Every element ends integer-valued between 1 (at least the last write adds one
    # to a value >= 0) and the number of increments issued; lost >= 0.
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    r = hogwild_lost_updates(n_elements=4096, n_threads=threads, passes=200)
    assert 0 <= r.lost < r.applied
    assert r.recorded == r.per_element.sum()
    assert np.all(r.per_element == np.round(r.per_element))
    assert r.per_element.min() >= 1 and r.per_element.max() <= threads * 200
    assert 0.0 <= r.lost_fraction < 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hogwild_center_single_row_equals_async_update(dtype):
    rng = np.random.default_rng(1)
    c = rng.standard_normal(100).astype(dtype)
    w = rng.standard_normal((1, 100)).astype(dtype)
    a = dtype(0.1) * dtype(0.5)
    want = c + a * (w[0] - c)
    got = hogwild_easgd_center_update(c.copy(), w, lr=0.1, rho=0.5, n_threads=2)
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps)


def test_hogwild_center_stays_in_convex_hull_whatever_the_races():
    rng = np.random.default_rng(2)
    c = rng.standard_normal(20000)
    w = rng.standard_normal((8, 20000))
    lo = np.minimum(c, w.min(axis=0))
    hi = np.maximum(c, w.max(axis=0))
    got = hogwild_easgd_center_update(c.copy(), w, lr=0.5, rho=0.5, n_threads=2)
    tol = 1e-12
    assert np.all(got >= lo - tol) and np.all(got <= hi + tol)
    # each element moved (every update contracts towards some worker, none is a no-op here)
    assert not np.array_equal(got, c)


def test_hogwild_sgd_integer_increments_bounded_by_serial_sum():
    # gradients of -1 with lr 1: serial result is T per element; races only lose
    g = -np.ones((4, 5000))
    x = hogwild_sgd_update(np.zeros(5000), g, lr=1.0, n_threads=2)
    assert np.all(x >= 1) and np.all(x <= 4)
    assert np.all(x == np.round(x))
    x1 = hogwild_sgd_update(np.zeros(5000), g, lr=1.0, n_threads=1)
    np.testing.assert_array_equal(x1, np.full(5000, 4.0))


def test_hogwild_bad_inputs():
    with pytest.raises(ValueError, match=r"workers: must have shape \(T, 3\) to match center, got \(2, 4\)"):
        hogwild_easgd_center_update(np.zeros(3), np.zeros((2, 4)), lr=0.1, rho=0.1)
    with pytest.raises(ValueError, match="workers: must be 2-D, got shape"):
        hogwild_easgd_center_update(np.zeros(3), np.zeros(3), lr=0.1, rho=0.1)
    with pytest.raises(ValueError, match="n_threads: must be an integer >= 1, got 0"):
        hogwild_sgd_update(np.zeros(3), np.zeros((1, 3)), lr=0.1, n_threads=0)
    with pytest.raises(TypeError, match="grads: dtype float32 does not match x dtype float64"):
        hogwild_sgd_update(np.zeros(3), np.zeros((1, 3), np.float32), lr=0.1)
