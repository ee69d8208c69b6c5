"""The advisor: runs every rule on the latest history and keeps hints from flapping.

Call :meth:`Advisor.update` after each ``History.append``. It returns only what
changed (:class:`HintEvent` opened / updated / closed); :attr:`Advisor.active` is the
current list, worst first. Time is the snapshot's timestamp, never the wall clock.

Hysteresis in time, per hint key (code, GPU, pid):

* a condition must hold ``open_after_s`` before its hint opens (critical ones 5 s at
  most, ``immediate`` findings such as a lost GPU at once);
* an open hint stays open until its condition has been gone ``clear_after_s``;
* a closed warning or info hint does not reopen within ``cooldown_s`` (a critical
  one always may);
* while open, a higher severity is reported at once; a lower one only after the higher
  has not been seen for ``downgrade_after_s`` (a sawtooth touching the critical bar
  every minute stays critical); title and evidence changes are reported at most every
  ``update_every_s`` (``active`` always has the newest evidence).

Rules add hysteresis in value (looser thresholds to stay open than to open).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpuwatch.advisor.budget_link import LinkedBudget, link_estimate
from gpuwatch.advisor.context import Finding, ProcessKey, RuleContext
from gpuwatch.advisor.gpu_log import GpuLog
from gpuwatch.advisor.rules import RULE_PERIODS_S, RULES
from gpuwatch.advisor.settings import AdvisorSettings
from gpuwatch.budget import Estimate, ModelSpec
from gpuwatch.core.hints import (
    AllocatorStats,
    Hint,
    HintEvent,
    HintEventKind,
    HintKey,
    Severity,
)
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import Snapshot

Rule = Callable[[RuleContext], list[Finding]]
CRITICAL_OPEN_AFTER_S = 5.0


@dataclass
class _Track:
    first_true_s: float
    last_true_s: float
    finding: Finding
    hint: Hint | None = None
    last_event_s: float = math.nan
    worst_seen_s: dict[Severity, float] = field(default_factory=dict)

    def severity(self, now: float, hold_s: float) -> Severity:
        """The worst severity seen within ``hold_s``, at least the latest finding's."""
        recent = [sev for sev, t in self.worst_seen_s.items() if now - t < hold_s]
        return max([self.finding.severity, *recent])


def _hint(f: Finding, opened_at_s: float, now_s: float) -> Hint:
    return Hint(code=f.code, severity=f.severity, gpu_index=f.gpu_index, pid=f.pid,
                title=f.title, evidence=f.evidence, actions=f.actions,
                opened_at_s=opened_at_s, updated_at_s=now_s,
                process_name=f.process_name, values=f.values)


class Advisor:
    """Hints from telemetry and budgets. Not thread-safe: call it from one thread."""

    def __init__(self, settings: AdvisorSettings | None = None,
                 rules: Sequence[Rule] | None = None):
        self.settings = settings or AdvisorSettings()
        self.rules: tuple[Rule, ...] = tuple(RULES if rules is None else rules)
        self._links: dict[ProcessKey, LinkedBudget] = {}
        self._allocator: dict[ProcessKey, AllocatorStats] = {}
        self._tracks: dict[HintKey, _Track] = {}
        self._closed_at: dict[HintKey, float] = {}
        self._rule_runs: dict[Rule, tuple[float, list[Finding]]] = {}
        self._gpu_log = GpuLog()
        self._last_s: float | None = None

    # --- inputs besides the history -------------------------------------------
    def link(self, gpu_index: int, pid: int, budget: LinkedBudget | Estimate,
             spec: ModelSpec | None = None) -> LinkedBudget:
        """Tie a process to a budget estimate (``spec`` adds its what-if levers)."""
        linked = budget if isinstance(budget, LinkedBudget) else link_estimate(budget, spec)
        self._links[(gpu_index, pid)] = linked
        return linked

    def unlink(self, gpu_index: int, pid: int) -> None:
        self._links.pop((gpu_index, pid), None)

    @property
    def links(self) -> Mapping[ProcessKey, LinkedBudget]:
        return dict(self._links)

    def set_allocator_stats(self, gpu_index: int, pid: int,
                            stats: AllocatorStats | None) -> None:
        """The caching allocator's figures for a process (from the probe), or None to drop."""
        if stats is None:
            self._allocator.pop((gpu_index, pid), None)
        else:
            self._allocator[(gpu_index, pid)] = stats

    def _take_probe_figures(self, snap: Snapshot) -> None:
        """Allocator figures that in-process probes published with this snapshot."""
        for report in snap.probes:
            stats = report.allocator_stats()
            if stats is None:
                continue
            for p in snap.processes:
                if p.pid == report.pid:
                    self._allocator[(p.gpu_index, p.pid)] = stats

    # --- outputs ------------------------------------------------------------------
    @property
    def active(self) -> list[Hint]:
        """Open hints, worst first (then oldest first)."""
        hints = [t.hint for t in self._tracks.values() if t.hint is not None]
        return sorted(hints, key=lambda h: (-h.severity.rank, h.opened_at_s, h.gpu_index,
                                            -1 if h.pid is None else h.pid, h.code))

    def update(self, history: History) -> list[HintEvent]:
        """Evaluate the rules on ``history.latest``; return the hints that changed."""
        snap = history.latest
        if snap is None or (self._last_s is not None and snap.timestamp_s <= self._last_s):
            return []
        now = self._last_s = snap.timestamp_s
        self._gpu_log.observe(snap)
        self._take_probe_figures(snap)
        open_keys = frozenset(k for k, t in self._tracks.items() if t.hint is not None)
        ctx = RuleContext(history, self.settings, self._links, self._allocator, open_keys,
                          self._gpu_log)
        findings: dict[HintKey, Finding] = {}
        live = {(p.gpu_index, p.pid) for p in snap.processes}
        due = self._due_periodic(now)
        for rule in self.rules:
            for f in self._run(rule, ctx, now, live, rule is due):
                seen = findings.get(f.key)
                if seen is None or f.severity > seen.severity:
                    findings[f.key] = f
        events = [e for f in findings.values() if (e := self._hold(f, now)) is not None]
        events += self._expire(findings, now)
        return events

    def _due_periodic(self, now: float) -> Rule | None:
        """The one slow-moving rule to run on this sample: the most overdue of those whose
        period has passed. Running at most one per sample keeps their costs (several ms
        each with 64 processes a GPU) from landing on the same sample; a rule waits at
        most a sample or two longer than its period."""
        overdue = [(now - last[0] - RULE_PERIODS_S[rule], i, rule)
                   for i, rule in enumerate(self.rules)
                   if rule in RULE_PERIODS_S and (last := self._rule_runs.get(rule)) is not None
                   and now - last[0] >= RULE_PERIODS_S[rule]]
        return max(overdue, key=lambda o: (o[0], -o[1]))[2] if overdue else None

    def _run(self, rule: Rule, ctx: RuleContext, now: float,
             live: set[tuple[int, int]], due: bool = False) -> list[Finding]:
        """A rule's findings; slow-moving rules run only every ``RULE_PERIODS_S`` seconds
        (one of them a sample, see ``_due_periodic``; each once at the start) and their
        last findings stand in between (for processes still alive)."""
        period = RULE_PERIODS_S.get(rule, 0.0)
        last = self._rule_runs.get(rule)
        if period and last is not None and not due:
            return [f for f in last[1] if f.pid is None or (f.gpu_index, f.pid) in live]
        found = rule(ctx)
        if period:
            self._rule_runs[rule] = (now, found)
        return found

    # --- hysteresis -------------------------------------------------------------
    def _hold(self, f: Finding, now: float) -> HintEvent | None:
        s = self.settings
        track = self._tracks.get(f.key)
        if track is None:
            track = self._tracks[f.key] = _Track(now, now, f)
        track.last_true_s, previous, track.finding = now, track.finding, f
        track.worst_seen_s[f.severity] = now
        if track.hint is None:
            hold = (0.0 if f.immediate else
                    min(s.open_after_s, CRITICAL_OPEN_AFTER_S) if f.severity is Severity.CRITICAL
                    else s.open_after_s)
            closed = self._closed_at.get(f.key)
            cooling = (closed is not None and now - closed < s.cooldown_s
                       and f.severity is not Severity.CRITICAL)
            if now - track.first_true_s < hold or cooling:
                return None
            track.hint = replace(_hint(f, now, now),
                                 severity=track.severity(now, s.downgrade_after_s))
            track.last_event_s = now
            self._closed_at.pop(f.key, None)
            return HintEvent(HintEventKind.OPENED, track.hint, now)
        old = track.hint
        track.hint = replace(_hint(f, old.opened_at_s, now),
                             severity=track.severity(now, s.downgrade_after_s))
        changed = (f.evidence, f.title, f.actions) != (previous.evidence, previous.title,
                                                       previous.actions)
        if (track.hint.severity != old.severity
                or (changed and now - track.last_event_s >= s.update_every_s)):
            track.last_event_s = now
            return HintEvent(HintEventKind.UPDATED, track.hint, now)
        return None

    def _expire(self, findings: Mapping[HintKey, Finding], now: float) -> list[HintEvent]:
        events = []
        for key, track in list(self._tracks.items()):
            if key in findings:
                continue
            if track.hint is None:
                del self._tracks[key]            # broke off before it opened
            elif now - track.last_true_s >= (self.settings.clear_after_s
                                             if track.finding.clear_after_s is None
                                             else track.finding.clear_after_s):
                del self._tracks[key]
                self._closed_at[key] = now
                events.append(HintEvent(HintEventKind.CLOSED, replace(track.hint,
                                                                      updated_at_s=now), now))
        return events
