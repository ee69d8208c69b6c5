"""The advisor on generated shapes (``generated_shapes.py``): healthy runs raise no warning and no
critical hint; failing runs are warned of in time, and not before their climb began.

"In time": at least 60 s, and at least a quarter of the climb's duration (at most
10 min), before the card is full. The quick profile: healthy runs one by one, and a family
of 12 failing runs of which at least 75 % must be warned in time;
the long profile (2,000 runs, half of each) is ``benchmarks/advisor_shapes.py``, whose
figures ``docs/advisor.md`` publishes.
"""

from __future__ import annotations

import numpy as np
from generated_shapes import RunSpec, failing_runs, healthy_runs, judge
from hypothesis import Phase, given, settings
from hypothesis import strategies as st


# The examples are drawn the same way on every run (derandomize): the quick profile is a
# fixed family that must hold, so a change that breaks one of them fails here, while
# the detector's known misses (0.5 % of healthy runs, some staircases) are measured by
# the long profile, whose rates docs/advisor.md publishes, instead of flaking CI.
@settings(derandomize=True)
@given(healthy_runs(duration=(600, 1200)))
def test_healthy_runs_stay_quiet(spec: RunSpec) -> None:
    assert judge(spec).loud == [], spec.label


IN_TIME_AT_LEAST = 0.75     # the long profile measures about 0.9 (docs/advisor.md)


def _in_time(spec: RunSpec) -> bool:
    """Whether ``spec``'s failure is warned of in time; raises when a hint comes before
    its climb began (never allowed) or the shape does not fill its card."""
    assert spec.failure is not None
    out = judge(spec)
    before = [x for x in out.loud if x[0] < spec.failure.start_s]
    assert before == [], spec.label
    assert out.full_s is not None, spec.label            # the shape does fill the card
    first = next((x[0] for x in out.loud if x[0] >= spec.failure.start_s), None)
    return first is not None and out.full_s - first >= spec.required_lead_s(out.full_s)


# One drawn family of twelve failing runs, judged together: never a hint before a climb
# began, and most warned in time. The detector's known misses (staircases with steps
# minutes apart, some fast ramps after a staircase warm-up) make a per-run assertion a
# coin toss in CI; their rate is the long profile's to measure.
@settings(max_examples=1, phases=[Phase.generate], derandomize=True, deadline=None)
@given(st.lists(failing_runs(longest_fill_s=3600), min_size=12, max_size=12))
def test_failing_runs_are_warned_in_time(specs: list[RunSpec]) -> None:
    warned = [_in_time(spec) for spec in specs]
    missed = [spec.label for spec, ok in zip(specs, warned, strict=True) if not ok]
    assert sum(warned) >= IN_TIME_AT_LEAST * len(specs), missed


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
