"""The small CNN: gradient against finite differences, learning, bad input."""

import numpy as np
import pytest

import dlscale.kernels as K

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]


def test_gradient_matches_finite_differences():
    shape = K.CNNShape(side=6, filters=3, n_hidden=5, n_out=4)
    rng = np.random.default_rng(1)
    p = K.cnn_init_params(shape, seed=2) + rng.normal(0, 0.05, shape.n_params)
    X, y = rng.random((7, 36)), rng.integers(0, 4, 7)
    g = np.empty_like(p)
    K.cnn_loss_and_grad(p, g, X, y, shape)
    num = np.empty_like(p)
    tmp = np.empty_like(p)
    for k in range(p.size):
        e = np.zeros_like(p)
        e[k] = 1e-6
        num[k] = (K.cnn_loss_and_grad(p + e, tmp, X, y, shape)
                  - K.cnn_loss_and_grad(p - e, tmp, X, y, shape)) / 2e-6
    assert np.max(np.abs(g - num)) < 1e-6 * max(1.0, np.max(np.abs(num)))
    assert np.count_nonzero(g) > p.size // 2       # not a gradient of zeros


def test_sgd_learns_the_digits():
    d = K.load_digits_split(seed=0)
    shape = K.CNNShape(8, 8, 32, 10)
    p = K.cnn_init_params(shape, seed=0)
    g = np.empty_like(p)
    rng = np.random.default_rng(0)
    before = K.cnn_accuracy(p, d.X_test, d.y_test, shape)
    for _ in range(300):
        idx = rng.integers(0, len(d.y_train), 16)
        K.cnn_loss_and_grad(p, g, d.X_train[idx], d.y_train[idx], shape)
        K.sgd_update(p, g, 0.1)
    assert before < 0.3 and K.cnn_accuracy(p, d.X_test, d.y_test, shape) > 0.85


def test_bad_input_is_named():
    shape = K.CNNShape(8, 2, 4, 10)
    p = K.cnn_init_params(shape, 0)
    with pytest.raises(ValueError, match="X: must be float64 with 64 columns"):
        K.cnn_accuracy(p, np.zeros((2, 63)), np.zeros(2, dtype=int), shape)
    with pytest.raises(ValueError, match="params: must have"):
        K.cnn_accuracy(p[:-1], np.zeros((2, 64)), np.zeros(2, dtype=int), shape)
    with pytest.raises(ValueError, match="side"):
        K.CNNShape(3, 2, 4, 10)


@pytest.mark.parametrize("side, filters, hidden, n_out", [(8, 4, 8, 3), (7, 2, 5, 4)])
def test_loss_gradient_and_hits_match_a_numpy_reference(side, filters, hidden, n_out):
    # pins the numba kernel's forward and backward passes (odd side: the pooling drops
    # the last row and column) against an independent vectorized implementation
    shape = K.CNNShape(side, filters, hidden, n_out)
    rng = np.random.default_rng(4)
    p = K.cnn_init_params(shape, seed=5) + rng.normal(0, 0.05, shape.n_params)
    X, y = rng.random((9, side * side)), rng.integers(0, n_out, 9)
    g = np.empty_like(p)
    loss = K.cnn_loss_and_grad(p, g, X, y, shape)
    ref_loss, ref_grad, ref_hits = naive.cnn_loss_grad_hits(p, X, y, side, filters, hidden, n_out)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(g, ref_grad, rtol=1e-9, atol=1e-13)
    assert K.cnn_accuracy(p, X, y, shape) == ref_hits / 9
