"""The engine's hysteresis: hold before opening, hold before closing, cooldown, severity."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from advisor_support import GIB, T0, gpu, snapshot

from gpuwatch.advisor import Advisor, AdvisorSettings
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import HintEventKind, Severity
from gpuwatch.core.history import History

SETTINGS = AdvisorSettings(open_after_s=15, clear_after_s=30, cooldown_s=120,
                           downgrade_after_s=300, update_every_s=300)

Schedule = Callable[[float], Severity | None]   # elapsed s -> severity of the finding, or none


def rule_for(schedule: Schedule, evidence: Callable[[float], str] = lambda t: "e",
             immediate: bool = False) -> Callable[[RuleContext], list[Finding]]:
    def rule(ctx: RuleContext) -> list[Finding]:
        t = ctx.now_s - T0
        sev = schedule(t)
        if sev is None:
            return []
        return [Finding("test", sev, 0, 42, "title", (evidence(t),), immediate=immediate)]
    return rule


def drive(schedule: Schedule, until: float, step: float = 1.0,
          **kw: object) -> tuple[Advisor, list[tuple[float, str, str]]]:
    advisor = Advisor(SETTINGS, rules=[rule_for(schedule, **kw)])   # type: ignore[arg-type]
    history = History()
    log = []
    t = 0.0
    while t <= until:
        history.append(snapshot(t, gpu(used=GIB)))
        for e in advisor.update(history):
            log.append((e.at_s - T0, e.kind.value, e.hint.severity.value))
        t += step
    return advisor, log


W, C = Severity.WARNING, Severity.CRITICAL

CASES: list[tuple[str, Schedule, float, list[tuple[float, str, str]]]] = [
    ("a blip shorter than the hold never opens", lambda t: W if 10 <= t < 20 else None, 100, []),
    ("opens after the hold, closes after the clear hold",
     lambda t: W if 10 <= t < 60 else None, 200,
     [(25, "opened", "warning"), (89, "closed", "warning")]),
    ("a short gap does not close it", lambda t: W if 10 <= t < 60 or 70 <= t < 120 else None,
     300, [(25, "opened", "warning"), (149, "closed", "warning")]),
    ("a sample missing now and then does not restart the hold",
     lambda t: W if 10 <= t < 60 and t % 5 != 0 else None, 200,
     [(26, "opened", "warning"), (89, "closed", "warning")]),
    ("a gap longer than a few samples restarts it",
     lambda t: W if 10 <= t < 20 or 24 <= t < 60 else None, 200,
     [(39, "opened", "warning"), (89, "closed", "warning")]),
    ("cooldown: a warning does not reopen at once",
     lambda t: W if 0 <= t < 40 or 100 <= t < 400 else None, 500,
     [(15, "opened", "warning"), (69, "closed", "warning"), (189, "opened", "warning"),
      (429, "closed", "warning")]),
    ("cooldown does not hold back a critical",
     lambda t: W if 0 <= t < 40 else C if 100 <= t < 150 else None, 300,
     [(15, "opened", "warning"), (69, "closed", "warning"), (105, "opened", "critical"),
      (179, "closed", "critical")]),
    ("escalation is reported at once", lambda t: W if t < 50 else C, 80,
     [(15, "opened", "warning"), (50, "updated", "critical")]),
    ("a critical that recurs every minute stays critical",
     lambda t: C if t % 60 < 5 else W, 400, [(15, "opened", "critical")]),
    ("de-escalation waits for the downgrade hold", lambda t: C if t < 20 else W, 400,
     [(5, "opened", "critical"), (319, "updated", "warning")]),
]


@pytest.mark.parametrize(("name", "schedule", "until", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_hysteresis(name: str, schedule: Schedule, until: float,
                    expected: list[tuple[float, str, str]]) -> None:
    _, log = drive(schedule, until)
    assert log == expected


def test_critical_findings_open_within_five_seconds() -> None:
    _, log = drive(lambda t: C if t >= 10 else None, 30)
    assert log == [(15, "opened", "critical")]


def test_immediate_findings_open_and_close_without_holds() -> None:
    _, log = drive(lambda t: W if 10 <= t < 13 else None, 30, immediate=True)
    assert log[0] == (10, "opened", "warning")


def test_evidence_updates_are_throttled_but_active_is_current() -> None:
    advisor, log = drive(lambda t: W, 700, evidence=lambda t: f"at {t:.0f}")
    assert [k for _, k, _ in log] == ["opened", "updated", "updated"]
    assert [t for t, _, _ in log] == [15, 315, 615]
    (hint,) = advisor.active
    assert hint.evidence == ("at 700",)
    assert hint.opened_at_s == T0 + 15 and hint.updated_at_s == T0 + 700


def test_same_snapshot_twice_changes_nothing() -> None:
    advisor = Advisor(SETTINGS, rules=[rule_for(lambda t: C, immediate=True)])
    history = History()
    history.append(snapshot(0, gpu()))
    assert len(advisor.update(history)) == 1
    assert advisor.update(history) == []
    assert advisor.update(History()) == []


def test_active_is_worst_first() -> None:
    def rule(ctx: RuleContext) -> list[Finding]:
        return [Finding("a", Severity.INFO, 0, None, "i", immediate=True),
                Finding("b", Severity.CRITICAL, 1, None, "c", immediate=True),
                Finding("c", Severity.WARNING, 0, 5, "w", immediate=True),
                Finding("c", Severity.INFO, 0, 5, "duplicate, milder")]

    advisor = Advisor(SETTINGS, rules=[rule])
    history = History()
    history.append(snapshot(0, gpu()))
    events = advisor.update(history)
    assert {e.kind for e in events} == {HintEventKind.OPENED}
    assert [h.code for h in advisor.active] == ["b", "c", "a"]
    assert [h.severity for h in advisor.active] == [C, W, Severity.INFO]
    assert advisor.active[1].key == ("c", 0, 5)


def test_link_takes_an_estimate_and_keeps_levers() -> None:
    from gpuwatch.budget import Setup, Workload, estimate, lookup_model

    spec = lookup_model("gpt2-medium")
    est = estimate(spec, Workload(batch=8, seq=1024), Setup(precision="amp-bf16"))
    advisor = Advisor()
    linked = advisor.link(0, 7, est, spec)
    assert linked.peak_bytes == est.total_bytes and linked.batch == 8
    assert linked.levers and linked.levers[0].saves_bytes is not None
    assert linked.max_batch(80 * GIB) is not None and linked.max_batch(80 * GIB) > 8
    assert "gpt2-medium" in linked.label
    advisor.unlink(0, 7)
    assert advisor.links == {}


def test_slow_rules_take_turns() -> None:
    """The periodic rules all run on the first sample; after that at most one a sample,
    each within a sample or two of its period."""
    from gpuwatch.advisor.rules import RULE_PERIODS_S, RULES

    runs: dict[str, list[float]] = {}

    def counted(rule):   # the real rule, with a log of when it ran
        def wrapper(ctx: RuleContext) -> list[Finding]:
            runs.setdefault(rule.__name__, []).append(ctx.now_s - T0)
            return rule(ctx)
        return wrapper

    wrapped = {rule: counted(rule) for rule in RULES}
    periods = {wrapped[rule]: period for rule, period in RULE_PERIODS_S.items()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gpuwatch.advisor.engine.RULE_PERIODS_S", periods)
        advisor = Advisor(SETTINGS, rules=list(wrapped.values()))
        history = History()
        for t in range(61):
            history.append(snapshot(float(t), gpu(used=GIB, procs=[(7, GIB)])))
            advisor.update(history)
    slow = {rule.__name__: period for rule, period in RULE_PERIODS_S.items()}
    for name, period in slow.items():
        times = runs[name]
        assert times[0] == 0
        gaps = [b - a for a, b in pairwise(times)]
        assert gaps and all(period <= gap <= period + len(slow) for gap in gaps), (name, gaps)
    per_sample: dict[float, int] = {}
    for name in slow:
        for t in runs[name][1:]:
            per_sample[t] = per_sample.get(t, 0) + 1
    assert max(per_sample.values()) == 1
    assert len(runs["oom_risk"]) == 61                 # the others: every sample


def test_an_ended_condition_closes_its_hint_at_once() -> None:
    from gpuwatch.advisor.context import ended

    def rule(ctx: RuleContext) -> list[Finding]:
        t = ctx.now_s - T0
        if t < 40:
            return [Finding("test", W, 0, None, "title")]
        return [ended("test", 0)] if t == 40 else []

    advisor = Advisor(SETTINGS, rules=[rule])
    history, log = History(), []
    for t in range(0, 100):
        history.append(snapshot(float(t), gpu(used=GIB)))
        log += [(e.at_s - T0, e.kind.value) for e in advisor.update(history)]
    assert log == [(15, "opened"), (40, "closed")]          # not 30 s later


def test_an_ended_condition_that_never_opened_leaves_nothing() -> None:
    from gpuwatch.advisor.context import ended

    advisor = Advisor(SETTINGS, rules=[lambda ctx: [ended("test", 0)]])
    history = History()
    history.append(snapshot(0, gpu()))
    assert advisor.update(history) == [] and advisor.active == []


def test_same_severity_sorts_by_time_to_failure() -> None:
    def rule(ctx: RuleContext) -> list[Finding]:
        return [Finding("slow", W, 0, None, "full in 9 min", immediate=True,
                        values=(("time_to_full_s", 540.0),)),
                Finding("none", W, 1, None, "no forecast", immediate=True),
                Finding("soon", W, 2, None, "full in 3 min", immediate=True,
                        values=(("time_to_full_s", 180.0),)),
                Finding("worst", C, 3, None, "critical, later", immediate=True,
                        values=(("time_to_full_s", 900.0),))]

    advisor = Advisor(SETTINGS, rules=[rule])
    history = History()
    history.append(snapshot(0, gpu()))
    advisor.update(history)
    assert [h.code for h in advisor.active] == ["worst", "soon", "slow", "none"]


def test_closed_hints_are_forgotten_once_past_their_cooldown():
    advisor = Advisor()
    cooldown = advisor.settings.cooldown_s
    advisor._closed_at = {("leak", 0, pid): 0.0 for pid in range(1000)}
    advisor._closed_at[("leak", 0, 5000)] = 10 * cooldown - 1
    assert advisor._expire({}, 10 * cooldown) == []
    assert advisor._closed_at == {("leak", 0, 5000): 10 * cooldown - 1}
