"""A climb that held is over, however the samples fall: a warm-up, the plateau after it
and an evaluation's step up are a step, not one run of new highs.

On buckets of a step and a half, a plateau's peaks scatter by what the sawtooth climbs
between two samples; one of them can top the others by a hair, and with a bucket
forgiven the warm-up, the plateau and the evaluation's buffers read as a single climb
— "full in ~5 min" on a card at 84 % that will stay there.
"""

from __future__ import annotations

import numpy as np
from advisor_support import GIB
from generated_shapes import RunSpec, Shape, judge
from hypothesis import assume, example, given
from hypothesis import strategies as st

from gpuwatch.advisor.climb import Climb, current_climb
from gpuwatch.advisor.holds import Holds


@st.composite
def late_evaluations(draw) -> RunSpec:
    """One training process: a warm-up of 1–6 min, a plateau of one to six training
    steps, then an evaluation's step up (3–12 % of the card) held 1–3 min, its peak at
    most 85 % of the card."""
    period = draw(st.floats(5.0, 60.0))
    warmup_s = draw(st.floats(60.0, 360.0))
    plateau_s = draw(st.floats(1.0, 6.0)) * period
    amplitude = draw(st.floats(0.02, 0.15))
    eval_height = draw(st.floats(0.03, 0.12))
    level = draw(st.floats(0.3, 0.85)) - amplitude - eval_height
    eval_s = draw(st.floats(60.0, 180.0))
    start = draw(st.floats(0.0, 10.0))
    shape = Shape(start_s=start, end_s=None, context=0.02, level=max(level, 0.1),
                  warmup=draw(st.sampled_from(("linear", "staircase", "plateau"))),
                  warmup_s=warmup_s, steps=draw(st.integers(2, 6)), period_s=period,
                  amplitude=amplitude, phase_s=draw(st.floats(0.0, 60.0)),
                  eval_every_s=warmup_s + plateau_s, eval_height=eval_height,
                  eval_s=eval_s)
    duration = int(start + warmup_s + plateau_s + eval_s + 120)
    total = draw(st.sampled_from((24, 40, 80))) * GIB
    return RunSpec(total, 0, 0.01, [[shape]], duration,
                   label=f"warm-up {shape.warmup} {warmup_s:.0f} s, plateau "
                         f"{plateau_s:.0f} s, steps {period:.0f} s ±{100 * amplitude:.0f} %, "
                         f"evaluation +{100 * eval_height:.0f} % for {eval_s:.0f} s")


def _late(warmup: str, warmup_s: float, steps: int, level: float, amplitude: float,
          plateau_s: float, eval_height: float, eval_s: float, start_s: float,
          phase_s: float, period_s: float = 5.0) -> RunSpec:
    """One run of the family, written out (steps of 5 s unless told, on a 24 GiB card)."""
    shape = Shape(start_s=start_s, end_s=None, context=0.02, level=level, warmup=warmup,
                  warmup_s=warmup_s, steps=steps, period_s=period_s, amplitude=amplitude,
                  phase_s=phase_s, eval_every_s=warmup_s + plateau_s,
                  eval_height=eval_height, eval_s=eval_s)
    return RunSpec(24 * GIB, 0, 0.01, [[shape]],
                   int(start_s + warmup_s + plateau_s + eval_s + 120), label=warmup)


# A linear warm-up ending 9 s before the sixth minute, then an evaluation of the warm-up's
# own pace; a two-step staircase warm-up whose second step, a plateau and an evaluation
# make three new highs on minute buckets under a sawtooth of 14 % of the card; a warm-up
# levelling off towards its plateau at 190 s, then an evaluation's +8 % five seconds
# later (read as more of a 7 %/min climb from 84 %: critical at 213 s); a linear warm-up
# ending at 353 s, 30 s of plateau and an evaluation's +9 % under a 12 s ±10 % sawtooth
# (the step and its sampled tops creeping up read as the climb's own, past the warm-up:
# a warning at 431 s).
@example(_late("linear", 350.9, 4, 0.444, 0.02, 27.4, 0.032, 138.0, 0.0, 30.94))
@example(_late("staircase", 156.5, 2, 0.647, 0.143, 7.5, 0.03, 90.7, 5.54, 43.15))
@example(_late("plateau", 190.0, 2, 0.7, 0.06, 5.0, 0.08, 120.0, 3.0, 47.0))
@example(_late("linear", 351.37, 3, 0.4857, 0.1041, 30.16, 0.0852, 87.43, 1.62, 2.5,
               period_s=12.064))
@given(late_evaluations())
def test_an_evaluation_after_a_warm_up_and_its_plateau_is_no_climb(spec: RunSpec) -> None:
    out = judge(spec)
    assert out.loud == [], spec.label


# --- the hold tests alone, on sampled sawtooths ----------------------------------------

TOTAL = 80.0 * GIB
TIE = 0.002 * TOTAL


def _sampled(seconds: int, seed: int) -> np.ndarray:
    """One sample a second, each at an instant that wanders across its second."""
    rng = np.random.default_rng(seed)
    return np.arange(seconds, dtype=float) + rng.uniform(0.0, 1.0, seconds)


def _climb_of(bucket_s: float, under_way: bool = False):
    """The rule's judgement of a climb; ``under_way``: as an open hint's (looser)."""
    def climb_of(t: np.ndarray, used: np.ndarray) -> Climb | None:
        if under_way:
            return current_climb(t, used, TIE, bucket_s, max(120.0, 4 * bucket_s), 0.4, 2)
        return current_climb(t, used, TIE, bucket_s, max(120.0, 4 * bucket_s), 0.6)
    return climb_of


@given(period=st.floats(2.0, 60.0), size=st.floats(0.01, 0.3),
       pace=st.floats(0.005, 0.2), seed=st.integers(0, 2**16))
def test_a_steady_climb_is_neither_held_nor_a_step(period: float, size: float, pace: float,
                                                    seed: int) -> None:
    """A level rising at 0.5–20 % of the card a minute under any sawtooth: the climb
    found is the climb judged — not stopped, not cut at a hold, not a step."""
    t = _sampled(600, seed)
    used = (0.1 + pace * t / 60 + size * (t % period) / period) * TOTAL
    climb_of = _climb_of(10.0)
    climb = climb_of(t[t >= t[-1] - 300], used[t >= t[-1] - 300])
    assume(climb is not None)
    holds = Holds.of(t[t >= t[-1] - 300], used[t >= t[-1] - 300], TIE)
    assert not holds.stopped(climb)
    assert holds.after_hold(climb) == climb
    assert holds.past_a_step(climb, _climb_of(10.0, under_way=True)) == climb


@given(period=st.floats(5.0, 40.0), size=st.floats(0.01, 0.1), height=st.floats(0.04, 0.15),
       tau=st.floats(60.0, 240.0), after=st.floats(1.0, 1.5), seed=st.integers(0, 2**16))
def test_a_step_on_a_climb_goes_on_at_the_climbs_pace(
        period: float, size: float, height: float, tau: float, after: float,
        seed: int) -> None:
    """A warm-up approaching its plateau, then an evaluation's step up: from the first
    top after the step until it has been seen to hold, the climb is the approach's — at
    its pace, not the step's — going on from the stepped-up level."""
    # a step that stands out of the noise of sampling the sawtooth's tops
    assume(height >= 8 * max(0.002, size / period))
    step_s = 330.0
    t = _sampled(400, seed)
    t = t[t <= step_s + 2 + after * period]
    level = 0.2 + 0.4 * (1 - np.exp(-t / tau)) + np.where(t >= step_s, height, 0.0)
    used = (level + size * (t % period) / period) * TOTAL
    climb_of = _climb_of(10.0)
    recent = t >= t[-1] - 300
    climb = climb_of(t[recent], used[recent])
    # a climb established before the step (without one, a step and a climb setting
    # out look alike until persistence and the newest samples' hold judge them)
    early = recent & (t < step_s - 30)
    before = climb_of(t[early], used[early])
    assume(climb is not None and before is not None and before.span_s >= 40)
    assume(climb.span_s >= 40)          # the rule judges only a climb that has persisted
    judged = Holds.of(t[recent], used[recent], TIE).past_a_step(
        climb, _climb_of(10.0, under_way=True))
    if judged is None:
        return
    # the approach's fastest pace over the stretch its rate is read from (two minutes,
    # or four buckets)
    recent = max(120.0, 4 * judged.bucket_s)
    pace = 0.4 / tau * np.exp(-(step_s - recent) / tau) * TOTAL
    assert judged.rate <= 1.5 * pace + TIE / 10.0
    assert judged.level_bytes == climb.level_bytes     # from the stepped-up level


# --- a step that came at once, against a climb that comes evenly ---------------------------

@given(period=st.floats(2.0, 60.0), size=st.floats(0.01, 0.3),
       pace=st.floats(0.005, 0.2), seed=st.integers(0, 2**16))
def test_a_steady_climbs_new_highs_never_came_at_once(period: float, size: float,
                                                       pace: float, seed: int) -> None:
    """A level rising at 0.5–20 % of the card a minute under any sawtooth: over the last
    five minutes its new highs came evenly, never as a step — judged from a bucket (a
    step and a half, 10 s at least) into the samples, as the rule does, so that the peak
    before holds a top of the sawtooth."""
    t = _sampled(600, seed)
    used = (0.1 + pace * t / 60 + size * (t % period) / period) * TOTAL
    recent = t >= t[-1] - 300
    holds = Holds.of(t[recent], used[recent], TIE)
    assert holds.step_end_s(float(t[recent][0]) + max(10.0, 1.5 * period)) is None


@given(period=st.floats(2.0, 40.0), size=st.floats(0.01, 0.15),
       height=st.floats(0.03, 0.15), pace=st.floats(0.0, 0.01),
       held=st.floats(40.0, 180.0), seed=st.integers(0, 2**16))
def test_a_step_that_holds_came_at_once_and_is_over_within_a_step(
        period: float, size: float, height: float, pace: float, held: float,
        seed: int) -> None:
    """A level that holds or creeps (up to 1 % of the card a minute), then an
    evaluation's step up that holds: its new highs came at once, and were over within
    one training step (10 s at least) of it, however the sampler caught the tops."""
    window = max(period, 10.0)
    assume(held >= 3 * window)
    # a step that stands out of the creep and of the noise of sampling the tops
    assume(height >= 8 * max(0.002, size / period) + 2 * pace * held / 60)
    step_s = 200.0
    t = _sampled(int(step_s + held), seed)
    level = 0.3 + pace * t / 60 + np.where(t >= step_s, height, 0.0)
    used = (level + size * (t % period) / period) * TOTAL
    since = step_s - 30.0
    end = Holds.of(t, used, TIE).step_end_s(since)
    assert end is not None
    assert step_s <= end <= step_s + window + period + 1.0

