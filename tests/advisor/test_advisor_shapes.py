"""The advisor on generated shapes (``shapes.py``): healthy runs raise no warning and no
critical hint; failing runs are warned of in time, and not before their climb began.

"In time": at least 60 s, and at least a quarter of the climb's duration (at most
10 min), before the card is full. 40 healthy and 20 failing runs in the quick profile;
the long profile (2,000 runs, half of each) is ``benchmarks/advisor_shapes.py``, whose
figures ``docs/advisor.md`` publishes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import Phase, given, settings
from shapes import RunSpec, failing_runs, healthy_runs, judge


@given(healthy_runs(duration=(600, 1200)))
def test_healthy_runs_stay_quiet(spec: RunSpec) -> None:
    assert judge(spec).loud == [], spec.label


@settings(max_examples=20, phases=[Phase.generate])
@given(failing_runs(longest_fill_s=3600))
def test_failing_runs_are_warned_in_time(spec: RunSpec) -> None:
    assert spec.failure is not None
    out = judge(spec)
    before = [x for x in out.loud if x[0] < spec.failure.start_s]
    assert before == [], spec.label
    assert out.full_s is not None, spec.label            # the shape does fill the card
    first = next((x[0] for x in out.loud if x[0] >= spec.failure.start_s), None)
    assert first is not None, f"no warning: {spec.label}"
    lead = out.full_s - first
    assert lead >= spec.required_lead_s(out.full_s), (lead, out.loud[:3], spec.label)


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
