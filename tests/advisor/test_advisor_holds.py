"""A climb that held is over, however the samples fall: a warm-up, the plateau after it
and an evaluation's step up are a step, not one run of new highs.

On buckets of a step and a half, a plateau's peaks scatter by what the sawtooth climbs
between two samples; one of them can top the others by a hair, and with a bucket
forgiven the warm-up, the plateau and the evaluation's buffers read as a single climb
— "full in ~5 min" on a card at 84 % that will stay there.
"""

from __future__ import annotations

from advisor_support import GIB
from generated_shapes import RunSpec, Shape, judge
from hypothesis import given
from hypothesis import strategies as st


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


@given(late_evaluations())
def test_an_evaluation_after_a_warm_up_and_its_plateau_is_no_climb(spec: RunSpec) -> None:
    out = judge(spec)
    assert out.loud == [], spec.label
