"""Healthy runs stay quiet: eight hours of each built-in healthy scenario raise no warning
and no critical hint.

Each run samples every 10 s of virtual time (2,880 samples), and every second around
the moments that used to raise false alarms: the warm-up, the evaluations, the
restart. Info hints are allowed where they are true.
"""

from __future__ import annotations

import pytest
from advisor_support import Run, run_scenario

from gpuwatch.core.hints import HintEventKind
from gpuwatch.telemetry.sim.catalog import resolve_scenario

EIGHT_HOURS = 8 * 3600

# scenario -> the windows (start, end s) sampled every second
HEALTHY = {
    "warmup-sawtooth": [(0, 600)],
    "warmup-staircase": [(0, 600)],
    "eval-spikes": [(0, 600), (7150, 7700)],
    "checkpoint-restart": [(0, 600), (10950, 11700)],
    "notebook-idle": [(0, 900), (3800, 4200)],
}


def sample_times(dense: list[tuple[int, int]]) -> list[float]:
    times = set(range(0, EIGHT_HOURS + 1, 10))
    for start, end in dense:
        times.update(range(start, end + 1))
    return sorted(float(t) for t in times)


def loud(run: Run) -> list[str]:
    return [f"{t:.0f} s {e.kind.value} {e.hint.severity.value} {e.hint.code}: {e.hint.title}"
            for t, e in run.events
            if e.kind is not HintEventKind.CLOSED and e.hint.severity.value != "info"]


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_eight_healthy_hours_without_a_warning(name: str) -> None:
    assert resolve_scenario(name).duration_s == EIGHT_HOURS
    run = run_scenario(name, EIGHT_HOURS, times=sample_times(HEALTHY[name]))
    assert loud(run) == []


def test_the_runs_cover_what_used_to_alarm() -> None:
    """The dense windows hold each scenario's climbs (a quiet run is not an empty one)."""
    for name, dense in HEALTHY.items():
        scenario = resolve_scenario(name)
        starts = [p.start_s for p in scenario.processes if p.kind != "graphics"]
        assert starts and all(any(a <= s and s + 120 <= b for a, b in dense) for s in starts)
