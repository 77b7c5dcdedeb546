"""SGD baselines against tests/naive.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlscale.kernels import momentum_sgd_update, sgd_update

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests import naive
except ImportError:  # pragma: no cover
    import naive  # type: ignore[no-redef]

FAST = settings(max_examples=25, deadline=None)


@FAST
@given(n=st.sampled_from([0, 1, 2, 7, 13, 97, 1000]), dtype=st.sampled_from([np.float32, np.float64]),
       seed=st.integers(0, 2**16), wd=st.sampled_from([0.0, 1e-4, 0.01]), nesterov=st.booleans())
def test_sgd_and_momentum_match_numpy(n, dtype, seed, wd, nesterov):
    rng = np.random.default_rng(seed)
    x, v, g = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    eps = np.finfo(dtype).eps
    want = naive.sgd(x, g, dtype(0.1), dtype(wd))
    np.testing.assert_allclose(sgd_update(x.copy(), g, lr=0.1, weight_decay=wd), want, rtol=8 * eps, atol=8 * eps)
    wx, wv = naive.momentum_sgd(x, v, g, dtype(0.1), dtype(0.9), dtype(wd), nesterov)
    x2, v2 = x.copy(), v.copy()
    momentum_sgd_update(x2, v2, g, lr=0.1, momentum=0.9, weight_decay=wd, nesterov=nesterov)
    np.testing.assert_allclose(x2, wx, rtol=8 * eps, atol=8 * eps)
    np.testing.assert_allclose(v2, wv, rtol=8 * eps, atol=8 * eps)


def test_zero_lr_leaves_parameters_but_momentum_accumulates():
    x, v, g = np.ones(5), np.zeros(5), np.full(5, 2.0)
    momentum_sgd_update(x, v, g, lr=0.0, momentum=0.5)
    np.testing.assert_array_equal(x, np.ones(5))
    np.testing.assert_array_equal(v, np.full(5, 2.0))


def test_sgd_bad_inputs():
    x = np.ones(3)
    with pytest.raises(ValueError, match="weight_decay: must be a finite number >= 0, got -1"):
        sgd_update(x, x.copy(), lr=0.1, weight_decay=-1)
    with pytest.raises(TypeError, match="lr: must be a real number, got str"):
        sgd_update(x, x.copy(), lr="0.1")
    with pytest.raises(TypeError, match="nesterov: must be a bool, got int"):
        momentum_sgd_update(x, x.copy(), x.copy(), lr=0.1, momentum=0.9, nesterov=1)
    with pytest.raises(ValueError, match=r"velocity: shape \(2,\) does not match x shape \(3,\)"):
        momentum_sgd_update(x, np.ones(2), x.copy(), lr=0.1, momentum=0.9)
