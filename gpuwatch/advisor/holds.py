"""Whether a climb of the peak envelope held: stopped now, held somewhere inside its run,
or stepped up so recently that a step which will hold cannot yet be told from a trend.

A climb at rate r tops its earlier peaks by about r × a training step and a half (30 s
at least) over any such stretch, give or take the scatter of sampling a step's top
(a sampler catches a step at a random point: what its sawtooth climbs between two
samples). Where that rise is lost in the noise — one sample's climb of the sawtooth,
or the tie — no hold is judged.

Pure functions over numpy arrays, for ``rules/oom_climb.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from gpuwatch.advisor.climb import Climb, Sawtooth, sawtooth

ClimbOf = Callable[[np.ndarray, np.ndarray], "Climb | None"]


@dataclass(frozen=True, slots=True)
class Holds:
    """The known samples of one window, with what a hold in them is measured against."""

    t: np.ndarray
    used: np.ndarray
    span_s: float       # a training step and a half, 30 s at least
    least: float        # a top by less than this is no new high (the tie, or the scatter)
    noise: float        # the tie, or one sample's climb of the sawtooth if more
    scatter: float      # how far a sampled top falls short of the top, at most about
    period_s: float

    @classmethod
    def of(cls, t: np.ndarray, used: np.ndarray, tie: float,
           saw: Sawtooth | None = None) -> Holds:
        """``saw``: the samples' sawtooth, when the caller has read it already."""
        known = ~np.isnan(used)
        t, used = t[known], used[known]
        saw = sawtooth(t, used, tie) if saw is None else saw
        d = np.diff(used)
        rises = d[d > 0]
        climb = float(np.percentile(rises, 90)) if rises.size and saw.period_s > 0 else 0.0
        scatter = saw.top_noise(saw.period_s) if saw.period_s > 0 else 0.0
        return cls(t, used, max(30.0, 1.5 * saw.period_s), max(tie, scatter),
                   max(tie, climb), scatter, saw.period_s)

    def judged(self, climb: Climb) -> bool:
        """The climb's rise stands out of the noise, so a hold can be seen: over the span,
        twice one sample's climb of the sawtooth; from one top to the next, the bar of a
        new high and four times the scatter of sampling a top (each of two tops may be
        caught up to two spacings early)."""
        top_to_top = self.period_s if self.period_s > 0 else self.span_s   # (no sawtooth)
        return (self.t.size >= 2 and climb.rate * self.span_s >= 2 * self.noise
                and climb.rate * top_to_top >= self.least + 4 * self.scatter)

    def inner_span_s(self) -> float:
        """A hold inside a run lasts two and a half steps (30 s at least): it has seen two
        tops after the one before it, whatever the phase."""
        return max(30.0, 2.5 * self.period_s)

    def stopped(self, climb: Climb) -> bool:
        """The newest span did not top the earlier peaks, though at the climb's rate it
        would have: the climb is over (a step up that holds, an evaluation's, still
        shows its sawtooth, whose tops scatter by ``least``)."""
        if not self.judged(climb):
            return False
        newest = self.t >= self.t[-1] - self.span_s
        if newest.all() or not newest.any():
            return False
        return float(self.used[newest].max() - self.used[~newest].max()) < self.least

    def after_hold(self, climb: Climb) -> Climb:
        """The climb from the newest hold *inside* its run on (itself if none). Sampling
        noise can bridge a plateau with a new high by a hair and a forgiven bucket, so a
        warm-up, the plateau after it and an evaluation's step up read as one run of new
        highs; what climbs after a hold is judged on its own. (Over two and a half steps
        a steady climb tops its earlier peaks by two steps' rise, less the scatter of
        two sampled tops: well above the bar where ``judged``.)"""
        if not self.judged(climb):
            return climb
        span = self.inner_span_s()
        inside = self.t >= climb.since_s
        t, high = self.t[inside], np.maximum.accumulate(self.used[inside])
        ends = np.searchsorted(t, t + span)
        starts = np.flatnonzero(ends < t.size)
        held = starts[high[ends[starts]] - high[starts] < self.least]
        if held.size == 0:
            return climb
        since = float(t[ends[held[-1]]])
        return climb if since <= climb.since_s else replace(
            climb, since_s=since, span_s=float(self.t[-1]) - since)

    def past_a_step(self, climb: Climb, climb_of: ClimbOf) -> Climb | None:
        """The climb, or what it was before a step up too recent to judge. Within a step
        and a half of the next top after a step (an evaluation's buffers, a process's
        allocation), nobody can tell whether it holds; its rise, many times the climb's
        pace, would otherwise be projected as a trend. So the climb before the step
        (``climb_of`` those samples, judged as under way) goes on from the stepped-up
        level, and levels off as much higher. With no climb before it, a step is one
        unless the climb's own rate accounts for it and its new highs came evenly (a
        climb setting out; an evaluation's step in mid-run, and the sampled tops of its
        sawtooth creeping up to the step's top, read as 10 %/min otherwise).

        A step is a stretch of a step and a half whose envelope rose by more than twice
        the mean of the three stretches before it, and by four times the scatter of
        sampling a top more: all are read the same way, so a steady climb's noise is in
        each. A climb that was levelling off is held to its own forecast instead
        (``_levelling_step``)."""
        t, used = self.t, self.used
        if t.size < 3:
            return climb
        high = np.maximum.accumulate(used)
        back = np.searchsorted(t, t - self.span_s)
        young = np.flatnonzero((t >= t[-1] - self.span_s - max(self.period_s, 10.0))
                               & (back > 0))
        if young.size == 0:
            return climb
        # the pace of the three stretches before (a stretch of a step and a half holds one
        # top or two; three hold four or five: their mean is steadier)
        earlier = np.maximum(np.searchsorted(t, t[young] - 4 * self.span_s) - 1, 0)
        rise = high[young] - high[back[young] - 1]
        pace = (high[back[young] - 1] - high[earlier]) / 3
        stepped = rise > 2 * pace + 4 * self.least
        if stepped.any():
            start = int(back[young[np.argmax(stepped)]])     # the stretch the step came in
            before = climb_of(t[:start], used[:start]) if start >= 3 else None
        else:
            before = self._levelling_step(young, back, rise, climb_of)
            if before is None:
                return climb
        if before is None:
            # a climb setting out: its rate accounts for the rise, which came evenly (the
            # line through a step and the few tops after it has the step's pace)
            setting_out = (float(rise.max()) <= 2 * climb.rate * self.span_s + 2 * self.least
                           and self.step_end_s(climb.since_s) is None)
            return climb if setting_out else None
        lift = climb.level_bytes - before.level_bytes
        return replace(before, level_bytes=climb.level_bytes,
                       towards_bytes=None if before.towards_bytes is None
                       else before.towards_bytes + lift)

    def step_end_s(self, since_s: float) -> float | None:
        """When the envelope's new highs since ``since_s`` came at once (a step: an
        evaluation's buffers, an allocation), the time that step was over; None where
        they came evenly, add up to four times the scatter or less, or the samples are
        too few. New highs are measured against the peak of the samples before
        ``since_s``, which must hold a training step's top (a step and a half of them):
        from a sample caught low on its sawtooth, the next top is no step."""
        first = int(np.searchsorted(self.t, since_s))
        if self.t.size - first < 3:
            return None
        high = np.maximum.accumulate(self.used)
        rise = float(high[-1] - high[first])
        if rise <= 4 * self.least:
            return None
        end = self._at_once(first, self.t.size - 1, rise)
        return None if end is None else float(self.t[end])

    def _at_once(self, first: int, last: int, rise: float) -> int | None:
        """The sample by which most of ``rise`` (the envelope's new highs from sample
        ``first`` to ``last``) had come, where it came within one training step (10 s at
        least), as a step's memory does; None where it came evenly, as a climb's does.
        Only told where the stretch holds three such windows."""
        window = max(self.period_s, 10.0)
        t = self.t[first:last + 1]
        if t[-1] - t[0] < 3 * window:
            return None
        high = np.maximum.accumulate(self.used[:last + 1])[first:]
        ends = np.minimum(np.searchsorted(t, t + window), t.size - 1)
        gained = high[ends] - high
        most = int(np.argmax(gained))
        return first + int(ends[most]) if float(gained[most]) >= 2 / 3 * rise else None

    def _levelling_step(self, young: np.ndarray, back: np.ndarray, rise: np.ndarray,
                        climb_of: ClimbOf) -> Climb | None:
        """The climb before a step up on a climb that was levelling off (a warm-up's
        approach to its plateau), or None where there is no such step. The stretches
        before such a step climbed faster than the climb does by then, so their mean
        pace sets the bar too high: an evaluation's +8 % five seconds after a warm-up
        that levels off read as more of it (a 7 %/min climb from 84 %, critical). Here
        the bar is the levelling climb's own forecast over the stretch, plus four times
        the scatter, and the rise must have come at once (``_at_once``): a ramp
        setting out from a load that levels off (``oom-ramp``) comes evenly, and is a
        climb."""
        most = int(np.argmax(rise))                 # the stretch the step would be in
        if rise[most] <= 4 * self.least:
            return None
        start, end = int(back[young[most]]), int(young[most])
        if start < 3 or self._at_once(start - 1, end, float(rise[most])) is None:
            return None
        before = climb_of(self.t[:start], self.used[:start])
        if before is None or before.towards_bytes is None or before.settle_s is None:
            return None
        room = max(0.0, before.towards_bytes - before.level_bytes)
        expected = room * -np.expm1(-self.span_s / before.settle_s)
        if rise[most] <= expected + 4 * self.least:
            return None
        return before
