import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.network.p2p import LogGP, PiecewiseHockney, hockney_s


def test_hockney_is_vectorized_and_linear():
    t = hockney_s(np.array([0.0, 1e3, 2e3]), 1e-6, 1e-9)
    assert t == pytest.approx([1e-6, 2e-6, 3e-6])
    assert isinstance(hockney_s(10, 1e-6, 1e-9), float)


def test_hockney_rejects_negative_size():
    with pytest.raises(ConfigError, match=r"n_bytes: must be finite and >= 0, got -1"):
        hockney_s(-1, 1e-6, 1e-9)


def test_piecewise_picks_the_regime_at_the_break():
    ph = PiecewiseHockney((1000.0, 1e5), (1e-6, 5e-6, 20e-6), (1e-9, 5e-10, 1e-10))
    n = np.array([999.0, 1000.0, 99_999.0, 1e5, 1e7])
    assert ph.regime(n).tolist() == [0, 1, 1, 2, 2]
    expect = [1e-6 + 999e-9, 5e-6 + 1000 * 5e-10, 5e-6 + 99_999 * 5e-10, 20e-6 + 1e-5, 20e-6 + 1e-3]
    assert ph.time_s(n) == pytest.approx(expect)


def test_piecewise_single_equals_hockney():
    n = np.geomspace(1, 1e9, 20)
    assert PiecewiseHockney.single(2e-6, 3e-10).time_s(n) == pytest.approx(hockney_s(n, 2e-6, 3e-10))


def test_piecewise_validates_lengths_and_breaks():
    with pytest.raises(ConfigError, match=r"alphas_s: needs 2 values for 1 breaks, got 1"):
        PiecewiseHockney((10.0,), (1e-6,), (1e-9, 1e-9))
    with pytest.raises(ConfigError, match=r"breaks_bytes: must be positive and strictly increasing"):
        PiecewiseHockney((10.0, 5.0), (1e-6,) * 3, (1e-9,) * 3)


def test_loggp_single_and_train():
    m = LogGP(L_s=2e-6, o_s=1e-6, g_s=3e-6, G_s_per_B=1e-9)
    assert m.time_s(1) == pytest.approx(4e-6)
    assert m.time_s(1001) == pytest.approx(4e-6 + 1e-6)
    # short messages are gap-bound: 4 messages -> 3 gaps of g
    assert m.train_s(1, 4) == pytest.approx(4e-6 + 3 * 3e-6)
    # long messages are bandwidth-bound: per message o + (n-1) G
    assert m.train_s(1e6 + 1, 2) == pytest.approx(m.time_s(1e6 + 1) + 1e-6 + 1e-3)
    assert m.hockney() == (4e-6, 1e-9)


def test_loggp_rejects_negative_parameter():
    with pytest.raises(ConfigError, match=r"LogGP\.g_s: must be finite and >= 0, got -1"):
        LogGP(1e-6, 1e-6, -1.0, 1e-9)
