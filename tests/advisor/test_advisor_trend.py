"""The robust trend: bucket envelopes, Theil–Sen slope and Kendall's tau."""

from __future__ import annotations

import numpy as np
import pytest

from gpuwatch.advisor.trend import bucket_extremes, theil_sen

T = np.arange(0.0, 300.0, 1.0)


def sawtooth(t: np.ndarray, low: float, high: float, period: float) -> np.ndarray:
    return low + (high - low) * ((t % period) / period)


@pytest.mark.parametrize(("name", "y", "slope", "tau_min", "tau_max"), [
    ("flat sawtooth", sawtooth(T, 15.0, 18.0, 2.4), 0.0, -0.3, 0.3),
    ("steady ramp", 10.0 + 0.05 * T, 0.05, 0.99, 1.0),
    ("ramp under a sawtooth bigger than a bucket's rise", sawtooth(T, 10, 14, 3) + 0.02 * T,
     0.02, 0.9, 1.0),
    ("one step up in the middle", np.where(T < 150, 6.4, 9.8), None, 0.3, 0.6),
    ("falling", 30.0 - 0.01 * T, -0.01, -1.0, -0.99),
])
def test_peak_envelope_trend(name: str, y: np.ndarray, slope: float | None, tau_min: float,
                             tau_max: float) -> None:
    bt, by = bucket_extremes(T, y, 10.0, "max")
    trend = theil_sen(bt, by, tie=1e-6)
    assert trend is not None
    if slope is not None:
        assert trend.slope == pytest.approx(slope, abs=2e-3), name
    assert tau_min <= trend.tau <= tau_max, (name, trend.tau)


def test_buckets_drop_unknown_values_and_align_to_the_newest_sample() -> None:
    t = np.arange(0.0, 25.0)
    y = t.copy()
    y[3] = np.nan
    centres, maxima = bucket_extremes(t, y, 10.0, "max")
    assert maxima.tolist() == [4.0, 14.0, 24.0]
    _, minima = bucket_extremes(t, y, 10.0, "min")
    assert minima.tolist() == [0.0, 5.0, 15.0]
    assert centres[-1] == pytest.approx(19.5)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_too_few_points_give_no_trend(n: int) -> None:
    assert theil_sen(np.arange(n, dtype=float), np.arange(n, dtype=float)) is None


def test_a_spike_barely_moves_the_slope() -> None:
    y = 5.0 + 0.1 * np.arange(30.0)
    y[10] = 500.0
    trend = theil_sen(np.arange(30.0), y)
    assert trend is not None and trend.slope == pytest.approx(0.1, rel=0.05)
    assert trend.at(29.0) == pytest.approx(7.9, rel=0.01)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 101, 1770])
def test_median_is_numpys(n: int) -> None:
    from gpuwatch.advisor.trend import _median

    a = np.random.default_rng(n).normal(size=n)
    assert _median(a) == float(np.median(a))
    a[n // 2] = np.nan
    assert np.isnan(_median(a))
    assert np.isnan(_median(np.empty(0)))
