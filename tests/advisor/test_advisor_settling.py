"""A warm-up's approach to its plateau climbs ever slower; memory that came at once and
then climbs at a steady pace, or a steady climb from the start, does not. The pace test
of a warm-up (growth since arrival against its pace now × its age) fails the first, as
an approach has grown several times that; ``settling`` tells it by its falling pace."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.advisor.climb import settling

TOTAL = 80.0 * 1024**3
TIE = 0.002 * TOTAL
BUCKET_S = 10.0


def sampled(seconds: float, seed: int) -> np.ndarray:
    """One sample a second, each at an instant that wanders across its second."""
    n = int(seconds)
    rng = np.random.default_rng(seed)
    return np.arange(n, dtype=float) + rng.uniform(0.0, 1.0, n)


def stepping(t: np.ndarray, period_s: float, size: float) -> np.ndarray:
    """The training steps' sawtooth, as fractions of the card."""
    return size * (t % period_s) / period_s


def approach(rng: np.random.Generator, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A warm-up approaching its plateau (25–70 % of the card, time constant 50–90 s),
    judged 2 to 3 time constants in, while it still climbs (at least 140 s: four
    buckets to each third; the pace of three scatters too much to compare)."""
    tau, height = rng.uniform(50.0, 90.0), rng.uniform(0.25, 0.7)
    t = sampled(max(140.0, rng.uniform(2.0, 3.0) * tau), int(rng.integers(2**16)))
    used = (0.02 + height * (1 - np.exp(-t / tau))
            + stepping(t, rng.uniform(1.0, 8.0), size)) * TOTAL
    return t, used


@given(seed=st.integers(0, 2**32 - 1))
def test_an_approach_to_its_plateau_is_settling(seed: int) -> None:
    assert settling(*approach(np.random.default_rng(seed), 0.0), TIE, BUCKET_S)


def jump_then_steady(rng: np.random.Generator, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A jump of 5–50 % of the card anywhere in the process's first third (a model
    loaded), then a climb of 0.3–3 %/min of the card, judged at 100–400 s."""
    age = rng.uniform(100.0, 400.0)
    at, jump, pace = rng.uniform(0.0, age / 3), rng.uniform(0.05, 0.5), rng.uniform(0.005, 0.05)
    t = sampled(age, int(rng.integers(2**16)))
    used = (0.02 + jump * (t >= at) + pace * np.maximum(0.0, t - at) / 60
            + stepping(t, rng.uniform(1.0, 8.0), size)) * TOTAL
    return t, used


@given(seed=st.integers(0, 2**32 - 1))
def test_memory_that_came_at_once_then_climbs_steadily_is_not(seed: int) -> None:
    assert not settling(*jump_then_steady(np.random.default_rng(seed), 0.0), TIE, BUCKET_S)


def test_under_a_large_sawtooth_it_is_told_in_most_draws() -> None:
    """Under steps of up to 10 % of the card a bucket's peak misses the top by up to
    1 % of it, and the pace of a third of a few buckets scatters. Over 400 draws of each
    (the same draws on every run): an approach is still told in nearly all, and the
    noise margin keeps a steady climb after a jump from reading as settling in all but
    a few (without it, one in eight)."""
    def share(draw, **margin: float) -> float:
        rng = np.random.default_rng(7)
        return sum(settling(*draw(rng, rng.uniform(0.0, 0.1)), TIE, BUCKET_S, **margin)
                   for _ in range(400)) / 400
    assert share(approach) >= 0.9
    seemed, careless = share(jump_then_steady), share(jump_then_steady, sure=0.0)
    assert seemed <= 0.05 and careless > 2 * seemed


@given(pace=st.floats(0.005, 0.3), age=st.floats(100.0, 400.0), seed=st.integers(0, 2**16))
def test_a_steady_climb_from_the_start_is_not(pace: float, age: float, seed: int) -> None:
    t = sampled(age, seed)
    used = (0.02 + pace * t / 60) * TOTAL
    assert not settling(t, used, TIE, BUCKET_S)


def test_too_young_to_cut_in_thirds_is_not() -> None:
    t = sampled(90, 1)
    assert not settling(t, (0.02 + 0.5 * (1 - np.exp(-t / 20))) * TOTAL, TIE, BUCKET_S)
