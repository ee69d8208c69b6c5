"""The training steps' sawtooth as samples show it, and the bucket wide enough to see its
top: a slow drift of the tops under a short, large sawtooth is a climb on such buckets,
where minute buckets scatter by more than the drift adds between them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpuwatch.advisor.climb import Sawtooth, current_climb, sawtooth

TOTAL = 80.0 * 1024**3
TIE = 0.002 * TOTAL
SLOW_BUCKET_S, MOST_S = 60.0, 240.0


def sampled(seconds: int, seed: int) -> np.ndarray:
    """One sample a second, each at an instant that wanders across its second. (A
    sampler locked to a step of about a whole number of seconds sees the same few points
    of it, drifting slowly: the peaks then wander over minutes, which no bucket of a few
    minutes smooths.)"""
    rng = np.random.default_rng(seed)
    return np.arange(seconds, dtype=float) + rng.uniform(0.0, 1.0, seconds)


def drifting(t: np.ndarray, period_s: float, size: float, fill_s: float,
             room: float) -> np.ndarray:
    """A sawtooth (fractions of the card) whose top rises ``room`` in ``fill_s``: the
    drift of a run whose steps grow."""
    phase = (t % period_s) / period_s
    return (0.1 + (size + room * t / fill_s) * phase) * TOTAL


@given(period=st.floats(2.0, 30.0), size=st.floats(0.02, 0.5), seed=st.integers(0, 2**16))
def test_the_samples_tell_the_period_and_size(period: float, size: float, seed: int) -> None:
    t = sampled(300, seed)
    used = (0.2 + size * (t % period) / period) * TOTAL
    saw = sawtooth(t, used, TIE)
    assert saw.period_s == pytest.approx(period, rel=0.1, abs=1.0)
    # a bucket's range runs from near a bottom to near a top: short of the whole size by
    # about what the sawtooth climbs between two samples
    assert size * (1 - 2 / period) * TOTAL <= saw.size <= size * TOTAL * 1.001
    assert saw.spacing_s == pytest.approx(1.0, abs=0.2)


@given(size=st.floats(0.0, 1.0), spacing=st.floats(0.2, 5.0))
def test_the_quiet_bucket_sees_the_top_within_the_tie(size: float, spacing: float) -> None:
    saw = Sawtooth(period_s=2.0, size=size * TOTAL, spacing_s=spacing)
    bucket = saw.quiet_bucket_s(TIE, SLOW_BUCKET_S, MOST_S)
    assert SLOW_BUCKET_S <= bucket <= MOST_S
    if SLOW_BUCKET_S < bucket < MOST_S:
        assert saw.top_noise(bucket) == pytest.approx(TIE / 2)
    elif bucket == SLOW_BUCKET_S:
        assert saw.top_noise(bucket) <= TIE / 2 * 1.000001


def test_no_sawtooth_needs_no_wider_bucket() -> None:
    t = sampled(300, 1)
    saw = sawtooth(t, np.full(t.size, 0.5 * TOTAL), TIE)
    assert saw.size == 0.0 and saw.period_s == 0.0
    assert saw.quiet_bucket_s(TIE, SLOW_BUCKET_S, MOST_S) == SLOW_BUCKET_S


def _climb_after(t: np.ndarray, used: np.ndarray, bucket_s: float):
    window = t >= t[-1] - 15 * bucket_s
    return current_climb(t[window], used[window], TIE, bucket_s, max(120.0, 4 * bucket_s),
                         0.6, 1, 0.6)


@given(period=st.floats(1.5, 13.0), size=st.floats(0.02, 0.3), fill_h=st.floats(2.0, 4.0),
       room=st.floats(0.3, 0.7), seed=st.integers(0, 2**16))
def test_a_slow_drift_under_a_short_step_is_a_climb(period: float, size: float,
                                                     fill_h: float, room: float,
                                                     seed: int) -> None:
    """An hour into a drift that fills the card in 2–4 hours, its tops rising under a
    step of 1.5–13 s: the buckets the sawtooth's size calls for find the climb, at
    about the tops' pace, wherever a bucket adds more than twice the tie (a slower
    climb is a tie, bucket after bucket: the free-memory floor warns of it)."""
    t = sampled(3600, seed)
    used = drifting(t, period, size, fill_h * 3600, room)
    recent = t >= t[-1] - 300
    bucket = sawtooth(t[recent], used[recent], TIE).quiet_bucket_s(TIE, SLOW_BUCKET_S,
                                                                    MOST_S)
    pace = room / (fill_h * 3600) * TOTAL
    assume(pace * bucket >= 2 * TIE)
    climb = _climb_after(t, used, bucket)
    assert climb is not None
    assert 0.5 * pace <= climb.rate <= 2 * pace


def test_minute_buckets_lose_that_drift_in_the_sawtooth() -> None:
    """Why the bucket widens: under a 1.6 s step grown to half the card, a minute's peak
    misses the top by about as much as the drift adds in a minute, so a run of new highs
    keeps breaking off; on the wider buckets it runs back to the window's start."""
    t = sampled(3600, 7)
    used = drifting(t, 1.6, 0.3, 3 * 3600, 0.6)
    recent = t >= t[-1] - 300
    bucket = sawtooth(t[recent], used[recent], TIE).quiet_bucket_s(TIE, SLOW_BUCKET_S,
                                                                    MOST_S)
    assert bucket > SLOW_BUCKET_S
    wide = _climb_after(t, used, bucket)
    assert wide is not None and wide.span_s >= 12 * bucket
    minute = _climb_after(t, used, SLOW_BUCKET_S)
    assert minute is None or minute.span_s < 0.5 * wide.span_s
