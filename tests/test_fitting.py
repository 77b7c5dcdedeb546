import math

import numpy as np
import pytest

from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting import fit_hockney, fit_loggp, fit_piecewise_hockney
from dlscale.perfmodel.fitting.collectives import fit_collective, fit_collective_piecewise

SIZES = 2.0 ** np.arange(0, 27)  # 1 B .. 64 MiB


def _ring(n, p, a, b, g=0.0):
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b + (p - 1) / p * n * g


def _tree(n, p, a, b, g=0.0):
    lg = np.ceil(np.log2(p))
    return 2 * lg * (a + n * b) + lg * n * g


def test_hockney_recovers_exact_line():
    fit = fit_hockney(SIZES, 3e-6 + SIZES / 7e9)
    assert fit.alpha_s == pytest.approx(3e-6, rel=1e-9)
    assert fit.bandwidth_Bps == pytest.approx(7e9, rel=1e-9)
    assert max(abs(e) for e in fit.rel_error) < 1e-9


def test_hockney_is_relative_error_fit_not_absolute():
    # 10% noise on the small sizes must not wreck alpha (an absolute fit would ignore them)
    rng = np.random.default_rng(0)
    t = (1e-6 + SIZES / 1e10) * (1 + 0.05 * rng.standard_normal(SIZES.size))
    fit = fit_hockney(SIZES, t)
    assert fit.alpha_s == pytest.approx(1e-6, rel=0.1)


def test_hockney_rejects_bad_input():
    with pytest.raises(ConfigError, match="need at least 2 measurements to fit, got 1"):
        fit_hockney([1], [1e-6])
    with pytest.raises(ConfigError, match=r"times_s: must be finite and > 0"):
        fit_hockney([1, 2], [1e-6, 0.0])
    with pytest.raises(ConfigError, match="needs one time per size, got 1 times for 2 sizes"):
        fit_hockney([1, 2], [1e-6])


def test_piecewise_finds_two_protocol_breaks():
    t = np.select(
        [SIZES < 1024, SIZES < 65536],
        [5e-7 + SIZES / 1e9, 2e-6 + SIZES / 4e9],
        4e-5 + SIZES / 8e9,
    )
    fit = fit_piecewise_hockney(SIZES, t)
    assert fit.breaks_bytes == (1024.0, 65536.0)
    seg = fit.segments
    assert seg[0].alpha_s == pytest.approx(5e-7, rel=1e-6)
    assert 1 / seg[2].beta_s_per_B == pytest.approx(8e9, rel=1e-6)
    np.testing.assert_allclose(fit.predict_s(SIZES), t, rtol=1e-8)


def test_piecewise_on_noise_stays_close_and_strict_guard_keeps_one_segment():
    rng = np.random.default_rng(1)
    t = (2e-6 + SIZES / 5e9) * (1 + 0.02 * rng.standard_normal(SIZES.size))
    fit = fit_piecewise_hockney(SIZES, t)
    assert len(fit.segments) <= 2 and max(abs(e) for e in fit.rel_error) < 0.05
    assert len(fit_piecewise_hockney(SIZES, t, min_gain=0.4).segments) == 1


def test_piecewise_respects_min_points_and_max_segments():
    t = np.where(SIZES < 8, 1e-6, 1e-5 + SIZES / 1e9)
    fit = fit_piecewise_hockney(SIZES, t, max_segments=2, min_points=4)
    assert len(fit.segments) <= 2
    assert all(s.max_bytes / s.min_bytes >= 8 for s in fit.segments)  # >= 4 sizes each
    with pytest.raises(ConfigError, match="max_segments: must be an integer >= 1, got 0"):
        fit_piecewise_hockney(SIZES, t, max_segments=0)
    with pytest.raises(ConfigError, match="min_points: must be an integer >= 2, got 1"):
        fit_piecewise_hockney(SIZES, t, min_points=1)


def test_piecewise_sorts_unsorted_input():
    t = 1e-6 + SIZES / 2e9
    perm = np.random.default_rng(2).permutation(SIZES.size)
    fit = fit_piecewise_hockney(SIZES[perm], t[perm])
    assert list(fit.sizes_bytes) == sorted(SIZES.tolist())


def test_loggp_parameters():
    L, o, g, G = 1.5e-6, 4e-7, 6e-7, 1 / 6e9
    one_way = L + 2 * o + (SIZES - 1) * G
    stream = np.maximum(g, SIZES * G)
    fit = fit_loggp(SIZES, one_way, SIZES, stream, o)
    assert fit.L_s == pytest.approx(L, rel=1e-6)
    assert fit.o_s == o and fit.g_s == g
    assert fit.G_s_per_B == pytest.approx(G, rel=1e-6)
    assert max(abs(e) for e in fit.rel_error) < 1e-6
    with pytest.raises(ConfigError, match="send_overhead_s: must be a number >= 0"):
        fit_loggp(SIZES, one_way, SIZES, stream, -1.0)


@pytest.mark.parametrize("form", [_ring, _tree])
def test_collective_efficiency_recovers_slowdown(form):
    n = np.tile(SIZES[::3], 2)
    p = np.repeat([2, 4], SIZES[::3].size)
    t = form(n, p, 3e-6, 4e-10)  # 3x the latency, 4x the per-byte cost
    fit = fit_collective("x", form, n, p, t, 1e-6, 1e-10)
    assert fit.latency_efficiency == pytest.approx(1 / 3, rel=1e-6)
    assert fit.bandwidth_efficiency == pytest.approx(1 / 4, rel=1e-6)
    assert math.isinf(fit.reduction_efficiency)
    assert fit.rms_rel_error < 1e-8


def test_collective_rejects_single_rank():
    with pytest.raises(ConfigError, match=r"ranks: collectives are fitted for p >= 2, got \[1.0\]"):
        fit_collective("ring", _ring, [1, 2], [1, 1], [1e-6, 1e-6], 1e-6, 1e-9)


def test_collective_piecewise_finds_protocol_break_shared_by_rank_counts():
    sizes = 2.0 ** np.arange(4, 24)
    n = np.tile(sizes, 3)
    p = np.repeat([2, 3, 4], sizes.size)
    slow = n >= 65536  # a second protocol: 3x the per-byte cost
    t = np.where(slow, _ring(n, p, 1e-6, 3e-10, 1e-10), _ring(n, p, 2e-6, 1e-10, 1e-10))
    fit = fit_collective_piecewise("ring", _ring, n, p, t, 1e-6, 1e-10, 1e-10)
    assert [s.min_bytes for s in fit.segments] == [16.0, 65536.0]
    assert fit.segments[0].latency_factor == pytest.approx(2.0, rel=1e-6)
    assert fit.rms_rel_error < 1e-6
    # predicts an unseen rank count from the factors
    np.testing.assert_allclose(fit.predict_s([1024, 1 << 20], 8, _ring),
                               [_ring(1024, 8, 2e-6, 1e-10, 1e-10), _ring(1 << 20, 8, 1e-6, 3e-10, 1e-10)],
                               rtol=1e-6)


def test_collective_piecewise_one_segment_on_noise():
    sizes = 2.0 ** np.arange(4, 24)
    n = np.tile(sizes, 2)
    p = np.repeat([2, 4], sizes.size)
    noise = 1 + 0.03 * np.random.default_rng(3).standard_normal(n.size)
    t = _tree(n, p, 1e-6, 1e-10) * noise
    fit = fit_collective_piecewise("tree", _tree, n, p, t, 1e-6, 1e-10)
    assert len(fit.segments) == 1


def test_collective_piecewise_offset_is_a_known_unfitted_part():
    n = np.tile(2.0 ** np.arange(10, 20), 2)
    p = np.repeat([2, 4], 10)
    off = np.where(n >= 2 ** 18, 1e-4, 0.0)  # e.g. page faults of a fresh buffer
    t = _ring(n, p, 2e-6, 2e-10) + off
    fit = fit_collective_piecewise("ring", _ring, n, p, t, 1e-6, 1e-10, offset_s=off)
    assert [s.bandwidth_factor for s in fit.segments] == pytest.approx([2.0] * len(fit.segments))
    assert max(abs(e) for e in fit.rel_error) < 1e-9
    np.testing.assert_allclose(fit.predict_s(n, p, _ring, offset_s=off), t, rtol=1e-9)
    without = fit_collective_piecewise("ring", _ring, n, p, t, 1e-6, 1e-10)
    assert without.rms_rel_error > 1e-3  # the offset is not a ring: factors cannot absorb it
