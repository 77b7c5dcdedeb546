"""Small real model and data: loss/gradient against numpy, finite differences, training to a held-out accuracy."""

import sys

import numpy as np
import pytest

from dlscale.kernels import (
    ModelShape,
    accuracy,
    allreduce_inplace,
    easgd_center_update_sync,
    easgd_worker_update,
    forward,
    init_params,
    load_digits_split,
    loss_and_grad,
    sgd_update,
    synthetic_classification,
)

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hidden", [0, 5])
def test_loss_and_grad_match_numpy(dtype, hidden):
    shape = ModelShape(n_in=6, n_hidden=hidden, n_out=3)
    rng = np.random.default_rng(hidden)
    p = init_params(shape, seed=1, dtype=dtype)
    p += rng.normal(0, 0.1, p.size).astype(dtype)  # non-zero biases
    X = rng.standard_normal((9, 6)).astype(dtype)
    y = rng.integers(0, 3, 9)
    g = np.empty_like(p)
    loss = loss_and_grad(p, g, X, y, shape)
    want_loss, want_g = naive.model_loss_grad(p.astype(np.float64), X.astype(np.float64), y, 6, hidden, 3)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert loss == pytest.approx(want_loss, rel=tol)
    np.testing.assert_allclose(g, want_g, rtol=tol * 10, atol=tol)
    assert forward(p, X, shape).shape == (9, 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_confident_predictions_leave_no_subnormal_in_the_gradient(dtype):
    # logits 95 apart: the wrong classes' softmax probabilities (e^-95 ~ 5e-42)
    # are below float32's smallest normal and, for float64, still normal
    shape = ModelShape(n_in=1, n_hidden=0, n_out=3)
    params = np.array([0.0, 0.0, 0.0, 95.0, 0.0, 30.0], dtype=dtype)  # W (1x3), b
    X, y = np.zeros((2, 1), dtype=dtype), np.array([0, 0])
    grad = np.empty_like(params)
    loss_and_grad(params, grad, X, y, shape)
    tiny = np.finfo(dtype).tiny
    assert not np.any((grad != 0) & (np.abs(grad) < tiny))
    # the flushed gradient differs from the exact one by less than the smallest normal
    b = params[3:].astype(np.float64)
    exact = np.exp(b - b.max()) / np.exp(b - b.max()).sum()
    exact[0] -= 1.0
    np.testing.assert_allclose(grad[3:], exact, rtol=1e-6, atol=tiny)
    if dtype == np.float32:
        assert grad[4] == 0.0  # e^-95 flushed
    else:
        assert 0.0 < grad[4] < 1e-40  # e^-95 is normal in float64: kept


def test_gradient_matches_finite_differences():
    shape = ModelShape(4, 3, 3)
    rng = np.random.default_rng(7)
    p = init_params(shape, seed=2) + rng.normal(0, 0.1, shape.n_params)
    X, y = rng.standard_normal((5, 4)), rng.integers(0, 3, 5)
    g = np.empty_like(p)
    loss_and_grad(p, g, X, y, shape)
    h = 1e-6
    fd = np.empty_like(p)
    tmp = np.empty_like(p)
    for k in range(p.size):
        e = np.zeros_like(p)
        e[k] = h
        fd[k] = (loss_and_grad(p + e, tmp, X, y, shape) - loss_and_grad(p - e, tmp, X, y, shape)) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_sync_sgd_on_digits_reaches_94_percent_held_out():
    # 4 workers, each a minibatch of 32 from its own shard; gradients summed by the
    # in-process ring allreduce, averaged, one SGD step; 300 steps.
    ds = load_digits_split(test_fraction=0.25, seed=0)
    shape = ModelShape(ds.n_features, 32, ds.n_classes)
    p, workers = init_params(shape, seed=0), 4
    grads = np.zeros((workers, shape.n_params))
    rng = np.random.default_rng(0)
    shards = np.array_split(np.arange(ds.y_train.size), workers)
    assert accuracy(p, ds.X_test, ds.y_test, shape) < 0.5
    for _ in range(300):
        for r in range(workers):
            idx = rng.choice(shards[r], 32)
            loss_and_grad(p, grads[r], ds.X_train[idx], ds.y_train[idx], shape)
        allreduce_inplace(grads, "ring")
        sgd_update(p, grads[0] / workers, lr=0.5)
    assert accuracy(p, ds.X_test, ds.y_test, shape) >= 0.94


def test_sync_easgd_on_digits_center_reaches_90_percent():
    ds = load_digits_split(seed=1)
    shape = ModelShape(ds.n_features, 0, ds.n_classes)
    workers = 4
    center = init_params(shape, seed=1)
    xs = np.stack([center.copy() for _ in range(workers)])
    g = np.empty_like(center)
    rng = np.random.default_rng(1)
    shards = np.array_split(np.arange(ds.y_train.size), workers)
    for _ in range(200):
        for r in range(workers):
            idx = rng.choice(shards[r], 32)
            loss_and_grad(xs[r], g, ds.X_train[idx], ds.y_train[idx], shape)
            easgd_worker_update(xs[r], g, center, lr=0.3, rho=0.5)
        s = xs.copy()
        allreduce_inplace(s, "binomial-tree")
        easgd_center_update_sync(center, s[0], workers, lr=0.3, rho=0.5)
    assert accuracy(center, ds.X_test, ds.y_test, shape) >= 0.90


def test_synthetic_data_is_seeded_and_learnable():
    a = synthetic_classification(600, n_features=8, n_classes=3, seed=4)
    b = synthetic_classification(600, n_features=8, n_classes=3, seed=4)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    assert not np.array_equal(a.X_train, synthetic_classification(600, 8, 3, seed=5).X_train)
    shape = ModelShape(8, 0, 3)
    p, g = init_params(shape, seed=0), np.empty(shape.n_params)
    for _ in range(200):
        loss_and_grad(p, g, a.X_train, a.y_train, shape)
        sgd_update(p, g, lr=0.5)
    assert accuracy(p, a.X_test, a.y_test, shape) >= 0.8
    f32 = synthetic_classification(10, 4, 2, seed=0, dtype=np.float32)
    assert f32.X_train.dtype == np.float32 and f32.y_train.dtype == np.int64


def test_digits_split_is_deterministic_and_disjoint():
    a, b = load_digits_split(seed=3), load_digits_split(seed=3)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert a.X_train.shape == (1348, 64) and a.X_test.shape == (449, 64)
    assert 0.0 <= a.X_train.min() and a.X_train.max() <= 1.0


def test_missing_scikit_learn_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(ImportError, match=r"pip install scikit-learn"):
        load_digits_split()


def test_model_bad_inputs():
    shape = ModelShape(4, 0, 3)
    p = init_params(shape, seed=0)
    with pytest.raises(ValueError, match="params: must have 15 elements"):
        accuracy(p[:-1], np.ones((1, 4)), np.array([0]), shape)
    with pytest.raises(ValueError, match=r"y: labels must be in \[0, 3\), got range \[0, 3\]"):
        accuracy(p, np.ones((2, 4)), np.array([0, 3]), shape)
    with pytest.raises(TypeError, match="X: dtype float32 does not match params dtype float64"):
        accuracy(p, np.ones((1, 4), np.float32), np.array([0]), shape)
    with pytest.raises(ValueError, match=r"X: must have 4 columns, got shape \(1, 5\)"):
        forward(p, np.ones((1, 5)), shape)
    with pytest.raises(ValueError, match="n_out: must be an integer >= 2, got 1"):
        ModelShape(4, 0, 1)
