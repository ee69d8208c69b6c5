"""``oom-risk`` on the shapes that separate a current climb from one that has ended: a
warm-up that levels off, a process's first minutes, a step, and what the hint says."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from advisor_support import GIB, MIB, context, gpu, history_of, snapshot

from gpuwatch.advisor import AdvisorSettings
from gpuwatch.advisor.context import format_eta, steadily
from gpuwatch.advisor.rules import oom_risk
from gpuwatch.core.hints import Severity

TOTAL = 40 * GIB


def saw(t: float, low: float, high: float, period: float) -> float:
    return low + (high - low) * ((t % period) / period)


SETTLED_S = 400      # the climbs start this long after their process: past its warm-up


def found(used: Callable[[float], float], duration: float, born: float | None = None,
          settings: AdvisorSettings | None = None):
    """oom-risk on a GPU whose one process uses ``used(t)``. By default the process has
    run ``SETTLED_S`` before t = 0 at ``used(0)`` (the climb is not its warm-up); with
    ``born`` it appears at ``born`` s (the driver holds 512 MiB before that)."""
    shift = SETTLED_S if born is None else 0.0
    born = 0.0 if born is None else born

    def make(t: float):
        if t < born:
            return snapshot(t, gpu(total=TOTAL, used=512 * MIB))
        u = used(max(born, t - shift))
        return snapshot(t, gpu(total=TOTAL, used=512 * MIB + u, procs=[(7, u)]))
    return oom_risk(context(history_of(make, duration + shift), settings))


SHAPES: list[tuple[str, Callable[[float], float], float, Severity | None]] = [
    # (name, used at t, duration, expected) — 40 GiB card, process from t = 0
    ("climbing 3 GiB/min, still climbing", lambda t: 10 * GIB + t * 50 * MIB, 300,
     Severity.WARNING),
    ("the same climb, levelled off 40 s ago", lambda t: 10 * GIB + min(t, 260) * 50 * MIB, 300,
     None),
    ("the same climb under a 20 s sawtooth, levelled off 40 s ago",
     lambda t: saw(t, 8 * GIB, 12 * GIB, 20) + min(t, 260) * 50 * MIB, 300, None),
    ("a fast climb to 28 % free that stopped a minute ago",
     lambda t: GIB + min(t, 240) * 120 * MIB, 300, None),
    # steps of 6 GiB every 90 s: a staircase from its third step, warned while its next
    # step is due (two more fill the card); over once that step is late by more than a
    # quarter of its interval
    ("a regular staircase, its next step due",
     lambda t: (8 + 6 * min(3, int(t // 90))) * GIB, 310, Severity.WARNING),
    ("a staircase whose next step is 40 s late",
     lambda t: (8 + 6 * min(3, int(t // 90))) * GIB, 400, None),
    ("irregular steps: 30 s, then 200 s apart",
     lambda t: (8 + 6 * ((t >= 60) + (t >= 90) + (t >= 290))) * GIB, 320, None),
    ("an evaluation lifts memory 8 GiB at once, then stays", lambda t: (20 if t < 250 else 28)
     * GIB, 300, None),
]


@pytest.mark.parametrize(("name", "used", "duration", "expected"), SHAPES,
                         ids=[s[0] for s in SHAPES])
def test_only_a_current_climb_is_a_risk(name: str, used: Callable[[float], float],
                                        duration: float, expected: Severity | None) -> None:
    result = found(used, duration)
    assert [f.severity for f in result] == ([] if expected is None else [expected]), result


def test_a_levelled_off_climb_that_the_old_fit_would_still_project() -> None:
    """The 5-minute line alone still climbs steeply here: only the recent envelope says
    the climb is over."""
    from gpuwatch.advisor.trend import bucket_extremes, theil_sen

    used = lambda t: GIB + min(t, 240) * 120 * MIB   # noqa: E731
    h = history_of(lambda t: snapshot(t, gpu(total=TOTAL, used=used(t), procs=[(7, used(t))])),
                   300)
    w = context(h).gpu_window(0, 300)
    trend = theil_sen(*bucket_extremes(w["timestamp_s"], w["used_bytes"], 10, "max"),
                      tie=0.002 * TOTAL)
    assert trend is not None and trend.tau > 0.6
    assert (0.98 * TOTAL - used(300)) / trend.slope < 120     # "full in under 2 min"
    assert oom_risk(context(h)) == []


def test_a_climb_at_the_pace_a_process_started_with_is_its_warm_up() -> None:
    """For its first 6 minutes, a process that has climbed at one pace since it arrived
    is warming up; past them, or when most of its memory came at once and it keeps
    climbing slower, it is a trend."""
    pace = lambda t: GIB + t * 50 * MIB    # noqa: E731  3 GiB/min from its start
    assert found(pace, 300, born=0) == []                         # 5 min old: warming up
    (f,) = found(pace, 420, born=0)                               # 7 min old, still climbing
    assert f.severity is Severity.WARNING
    assert found(pace, 300, born=0, settings=AdvisorSettings(oom_warmup_s=120))
    jump = lambda t: min(t, 20) * GIB + t * 30 * MIB   # noqa: E731  20 GiB at once, then 1.8 GiB/min
    (f,) = found(jump, 200, born=0)
    assert f.severity is Severity.WARNING


def test_an_approach_to_its_plateau_is_a_warm_up_throughout() -> None:
    """A process that climbs ever slower towards its plateau (time constant 87 s, under
    13 s steps of ±3 GiB) has grown several times its pace now × its age from a minute
    and a half on; it is still warming up, judged at any second of its first 6 minutes
    (the pace test alone warned from 220 s)."""
    approach = lambda t: (GIB + 26 * GIB * (1 - math.exp(-t / 87))     # noqa: E731
                          + saw(t, 0, 6 * GIB, 13))
    warned = [d for d in range(60, 361, 5) if found(approach, d, born=0)]
    assert warned == []


def test_a_step_that_then_holds_is_not_a_trend() -> None:
    """Another process arriving (a step up that holds) soon after a warm-up, and an
    evaluation's buffers: not a climb, however close to the card's top the step lands."""
    steps = lambda t: (20 if t < 150 else 31 if t < 200 else 33) * GIB   # noqa: E731
    assert found(steps, 260) == []


def test_critical_needs_a_short_time_to_full_and_a_current_climb() -> None:
    (slow,) = found(lambda t: 10 * GIB + t * 50 * MIB, 300)
    assert slow.severity is Severity.WARNING
    ttf = dict(slow.values)["time_to_full_s"]
    assert 120 < ttf < 600                                        # type: ignore[operator]
    (fast,) = found(lambda t: 10 * GIB + t * 80 * MIB, 340)
    assert fast.severity is Severity.CRITICAL
    assert dict(fast.values)["time_to_full_s"] <= 120             # type: ignore[operator]


def test_the_hint_says_it_in_words() -> None:
    (f,) = found(lambda t: 10 * GIB + t * 50 * MIB, 300)
    assert f.title.startswith("GPU 0 memory full in ~") and f.title.endswith("at this rate")
    text = " ".join((f.title, *f.evidence))
    assert "tau" not in text and "steadiness" not in text
    assert any("steadily for the last 4 min" in e for e in f.evidence), f.evidence
    assert any(e.startswith("pid 7 (proc7) grew") for e in f.evidence)


def test_full_already_is_full_now() -> None:
    used = lambda t: min(10 * GIB + t * 100 * MIB, 0.995 * TOTAL - 512 * MIB)   # noqa: E731
    (f,) = found(used, 360)
    assert f.severity is Severity.CRITICAL
    assert f.title.startswith("GPU 0 memory full now: ") and "~0 s" not in f.title


@pytest.mark.parametrize(("seconds", "text"), [
    (3, "5 s"), (42, "40 s"), (113, "1 min 50 s"), (754, "13 min"), (11_400, "3 h 10 min"),
])
def test_times_to_come_are_rounded_as_people_say_them(seconds: float, text: str) -> None:
    assert format_eta(seconds) == text


def test_steadiness_in_words() -> None:
    assert [steadily(t) for t in (0.95, 0.8, 0.6)] == ["steadily", "fairly steadily",
                                                       "unevenly"]
