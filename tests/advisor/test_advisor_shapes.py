"""The advisor on generated shapes (``generated_shapes.py``): healthy runs raise no warning and no
critical hint; failing runs are warned of in time, and not before their climb began.

"In time": at least 60 s, and at least a quarter of the climb's duration (at most
10 min), before the card is full. The quick profile: healthy runs and failing runs, each
judged on its own;
the long profile (2,000 runs, half of each) is ``benchmarks/advisor_shapes.py``, whose
figures ``docs/advisor.md`` publishes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from generated_shapes import (
    RunSpec,
    assert_warned_in_time,
    failing_runs,
    healthy_runs,
    judge,
)
from hypothesis import given, settings


# The examples are drawn the same way on every run (derandomize), so CI judges the
# same runs each time; the long profile (benchmarks/advisor_shapes.py) draws fresh ones
# and docs/advisor.md publishes its rates.
@settings(derandomize=True)
@given(healthy_runs(duration=(600, 1200)))
def test_healthy_runs_stay_quiet(spec: RunSpec) -> None:
    assert judge(spec).loud == [], spec.label


# Each failing run on its own: warned in time (a staircase from its third step, a ramp
# once it has made new highs for 40 s and four training steps), never before its climb.
@settings(max_examples=12, derandomize=True, deadline=None)
@given(failing_runs(longest_fill_s=3600))
def test_failing_runs_are_warned_in_time(spec: RunSpec) -> None:
    assert_warned_in_time(spec)


def test_the_shapes_are_what_they_say() -> None:
    """A healthy GPU peaks at 85 % of its card at most; a failing run fills its card."""
    @settings(max_examples=20)
    @given(healthy_runs(duration=(600, 600)))
    def healthy(spec: RunSpec) -> None:
        _, per, _ = spec.demands()
        for demands in per:
            total = np.nansum(np.vstack(demands), axis=0) + spec.driver * spec.total_bytes
            assert total.max() <= 0.851 * spec.total_bytes

    @settings(max_examples=20)
    @given(failing_runs(longest_fill_s=1800))
    def failing(spec: RunSpec) -> None:
        assert spec.demands()[2] is not None

    healthy()
    failing()


@settings(max_examples=25, deadline=None)
@given(failing_runs(longest_fill_s=1800))
def test_evaluations_are_counted_and_can_be_taken_out(spec: RunSpec) -> None:
    """Each process's evaluations are numbered from 1 in the order it holds them (any
    part of one after its warm-up, however short, is held), and the same run without
    them differs by their spikes alone: the climb is the same."""
    t, with_evals, _ = spec.demands()
    _, alone, _ = spec.without_evaluations().demands()
    for shape, a, b in zip(spec.gpus[0], with_evals[0], alone[0], strict=True):
        spike = a - b
        held = np.array([shape.evaluation_at(float(x)) or 0 for x in
                         t + 0.5 * ((t * 0.6180339887) % 1.0)])    # the instants sampled
        known = ~np.isnan(a)
        # a spike where, and only where, an evaluation is held
        assert np.all(np.abs(spike[known & (held > 0)] - shape.eval_height * spec.total_bytes)
                      <= 1 << 20), spec.label
        assert np.all(spike[known & (held == 0)] == 0), spec.label
        # numbered 1, 2, … as they come: each evaluation's held part, in the middle
        every, n = shape.eval_every_s, 0
        life_s = spec.duration_s - shape.start_s if shape.end_s is None \
            else shape.end_s - shape.start_s
        for k in range(int(life_s // every) + 1 if every else 0):
            start = max(k * every, shape.warmup_s)
            end = min(k * every + shape.eval_s, life_s)
            if end > start:
                n += 1
                assert shape.evaluation_at(shape.start_s + (start + end) / 2) == n, spec.label


# The seven runs the first profile on fresh draws (seed 1) found wrong — warm-ups that
# approach their plateau, a staircase warm-up and an evaluation after it, an evaluation's
# step in mid-run, a leak after a visitor holding half the card, climbs filled by a
# recurring evaluation (docs/advisor.md, "Fresh draws") — each judged again, as built.
FRESH = [RunSpec.from_json(json.loads(line)) for line in
         (Path(__file__).with_name("data") / "fresh_draws.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("spec", FRESH, ids=[f"run{i}" for i in range(len(FRESH))])
def test_the_runs_fresh_draws_found_wrong_are_right(spec: RunSpec) -> None:
    if spec.failure is None:
        assert judge(spec).loud == [], spec.label
    else:
        assert_warned_in_time(spec)
