"""The advisor: runs every rule on the latest history and keeps hints from flapping.

Call :meth:`Advisor.update` after each ``History.append``. It returns only what
changed (:class:`HintEvent` opened / updated / closed); :attr:`Advisor.active` is the
current list, worst first and, within a severity, soonest failure first.
:meth:`Advisor.pending_judgements` says which checks cannot judge yet (too little
history). Time is the snapshot's timestamp, never the wall clock.

Hysteresis in time, per hint key (code, GPU, pid):

* a condition must hold ``open_after_s`` before its hint opens (critical ones 5 s at
  most, ``immediate`` findings such as a lost GPU at once); missing from a sample or two
  (``open_gap_s``: a climb seen through a sawtooth's sampling noise drops out for a
  second now and then) it still holds;
* an open hint stays open until its condition has been gone ``clear_after_s`` (a rule
  may say the condition *ended*, e.g. memory was given back: then it closes at once);
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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpuwatch.advisor.budget_link import LinkedBudget, link_estimate
from gpuwatch.advisor.context import Finding, ProcessKey, RuleContext
from gpuwatch.advisor.gpu_log import GpuLog
from gpuwatch.advisor.pending import pending_judgements
from gpuwatch.advisor.process_log import ProcessLog
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


class _Live(Collection[tuple[int, int]]):
    """The snapshot's (GPU index, pid) keys, gathered only when first asked about: most
    samples never need them."""

    def __init__(self, snapshot: Snapshot):
        self._snapshot = snapshot
        self._keys: set[tuple[int, int]] | None = None

    def _all(self) -> set[tuple[int, int]]:
        if self._keys is None:
            self._keys = {(p.gpu_index, p.pid) for p in self._snapshot.processes}
        return self._keys

    def __contains__(self, key: object) -> bool:
        return key in self._all()

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def urgency(hint: Hint) -> tuple:
    """The order of :attr:`Advisor.active`: worst severity first; within a severity the
    soonest failure (``time_to_full_s``) first, hints without one after; then oldest."""
    ttf = hint.value("time_to_full_s")
    soon = float(ttf) if isinstance(ttf, int | float) and math.isfinite(ttf) else math.inf
    return (-hint.severity.rank, soon, hint.opened_at_s, hint.gpu_index,
            -1 if hint.pid is None else hint.pid, hint.code)


def _hint(f: Finding, opened_at_s: float, now_s: float) -> Hint:
    return Hint(code=f.code, severity=f.severity, gpu_index=f.gpu_index, pid=f.pid,
                title=f.title, evidence=f.evidence, actions=f.actions,
                opened_at_s=opened_at_s, updated_at_s=now_s,
                process_name=f.process_name, values=f.values, badge=f.badge)


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
        self._memo: dict = {}
        self._gpu_log = GpuLog()
        self._process_log = ProcessLog()
        self._history: History | None = None
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
        """Open hints, worst first; within a severity the soonest failure first (the
        shortest ``time_to_full_s``), then the oldest (see :func:`urgency`)."""
        hints = [t.hint for t in self._tracks.values() if t.hint is not None]
        return sorted(hints, key=urgency)

    def pending_judgements(self) -> list[str]:
        """Checks that cannot judge yet for want of history, one short sentence each
        (e.g. "Leak detection needs 16 min of history per process: pid 4242 (python)
        has 5 min so far"); empty when every check can judge. Reads the history last
        passed to :meth:`update`."""
        if self._history is None or self._history.latest is None:
            return []
        return pending_judgements(self._history, self.settings)

    def update(self, history: History) -> list[HintEvent]:
        """Evaluate the rules on ``history.latest``; return the hints that changed."""
        snap = history.latest
        if snap is None or (self._last_s is not None and snap.timestamp_s <= self._last_s):
            return []
        now = self._last_s = snap.timestamp_s
        self._history = history
        s = self.settings
        self._gpu_log.observe(snap)
        open_hints = {k: t.hint for k, t in self._tracks.items() if t.hint is not None}
        self._process_log.observe(history, open_hints, self._links, s.oom_exit_window_s,
                                  s.oom_exit_show_s)
        self._take_probe_figures(snap)
        ctx = RuleContext(history, s, self._links, self._allocator, frozenset(open_hints),
                          self._gpu_log, tuple(self._process_log.exits.values()),
                          self._memo)
        findings: dict[HintKey, Finding] = {}
        over: set[HintKey] = set()
        live = _Live(snap)
        due = self._due_periodic(now)
        for rule in self.rules:
            for f in self._run(rule, ctx, now, live, rule is due):
                if f.ended:
                    over.add(f.key)
                    continue
                seen = findings.get(f.key)
                if seen is None or f.severity > seen.severity:
                    findings[f.key] = f
        events = [e for f in findings.values() if (e := self._hold(f, now)) is not None]
        events += self._expire(findings, now, over)
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
             live: Collection[tuple[int, int]], due: bool = False) -> list[Finding]:
        """A rule's findings; slow-moving rules run only every ``RULE_PERIODS_S`` seconds
        (one of them a sample, see ``_due_periodic``; each once at the start) and their
        last findings stand in between (for processes still alive)."""
        period = RULE_PERIODS_S.get(rule, 0.0)
        last = self._rule_runs.get(rule)
        if period and last is not None and not due:
            found = last[1]
            if all(f.pid is None for f in found):
                return found
            return [f for f in found if f.pid is None or (f.gpu_index, f.pid) in live]
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

    def _expire(self, findings: Mapping[HintKey, Finding], now: float,
                over: Collection[HintKey] = ()) -> list[HintEvent]:
        """Close the hints whose condition has been gone long enough, or ended (``over``)."""
        events = []
        for key, track in list(self._tracks.items()):
            if key in findings:
                continue
            if track.hint is None:
                if key in over or now - track.last_true_s > self.settings.open_gap_s:
                    del self._tracks[key]        # broke off before it opened
            elif key in over or now - track.last_true_s >= (
                    self.settings.clear_after_s if track.finding.clear_after_s is None
                    else track.finding.clear_after_s):
                del self._tracks[key]
                self._closed_at[key] = now
                events.append(HintEvent(HintEventKind.CLOSED, replace(track.hint,
                                                                      updated_at_s=now), now))
        if events or len(self._closed_at) > 64:     # past their cooldown they mean nothing
            cooldown = self.settings.cooldown_s
            self._closed_at = {k: t for k, t in self._closed_at.items() if now - t < cooldown}
        return events
