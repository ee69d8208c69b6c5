"""Which climb a GPU's memory is making, for ``oom-risk``: a trend of its peak envelope
carried by a process, or a process's staircase; not a step that holds and not a warm-up.

Three ways to see one, the cheapest first:

* the GPU's envelope climbs, and a process's own envelope carries it (``_climb``);
* with other processes on the GPU, a process's own envelope climbs while the GPU's, the
  sum of several sawtooths at their own phases, is too ragged to make new highs
  (``_led_by_a_process``: judged every ``LED_EVERY_S``, not every sample);
* a process climbs a staircase of regular steps (``_staircase``).

With other processes on the GPU the projection starts from their *coincident* peak —
every process at the top of its own step at once (``coincident_level``): their tops come
into line sooner or later, and that instant, not the typical sample, is when an
allocation fails.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from gpuwatch.advisor import spikes
from gpuwatch.advisor.climb import (
    DECELERATING,
    STILL_CLIMBING,
    Climb,
    Sawtooth,
    Stairs,
    current_climb,
    sawtooth,
    settling,
    staircase,
)
from gpuwatch.advisor.context import RuleContext
from gpuwatch.advisor.holds import ClimbOf, Holds
from gpuwatch.advisor.rules.oom_spikes import gpu_spikes
from gpuwatch.advisor.settings import AdvisorSettings
from gpuwatch.core.ring import Ring
from gpuwatch.core.snapshot import GpuSample, ProcessSample

LED_EVERY_S = 5.0      # how often a GPU of several processes is searched for a climbing one


def gpu_climb(ctx: RuleContext, gpu: GpuSample, active: bool) -> Climb | None:
    """The climb the GPU's memory is making now (None: none), projected from its
    processes' coincident peak when it has several."""
    climb = (_climb(ctx, gpu, active) or _led_by_a_process(ctx, gpu, active)
             or _staircase(ctx, gpu, active))
    if climb is None or len(gpu.processes) < 2:
        return climb
    level = coincident_level(ctx, gpu, ctx.settings.trend_window_s)
    if level is None or level <= climb.level_bytes:
        return climb
    lift = level - climb.level_bytes
    return replace(climb, level_bytes=level,
                   towards_bytes=None if climb.towards_bytes is None
                   else climb.towards_bytes + lift)


def coincident_level(ctx: RuleContext, gpu: GpuSample, span_s: float) -> float | None:
    """The GPU's memory if each of its processes stood at its own peak of the last
    ``span_s`` at once: their peaks, plus what no process is charged with now (the
    driver's and contexts' memory). None when fewer than two peaks are known, or when
    the processes are charged with more than the GPU holds (their figures overlap, and
    their sum says nothing of the card)."""
    peaks = [p for p in ctx.process_peaks(gpu, span_s) if p is not None]
    used = gpu.memory.used_bytes
    if len(peaks) < 2 or used is None:
        return None
    charged = sum(p.used_bytes for p in gpu.processes if p.used_bytes is not None)
    if charged > used:
        return None
    return float(used - charged) + float(sum(peaks))


def _climb(ctx: RuleContext, gpu: GpuSample, active: bool) -> Climb | None:
    """The current climb of the GPU's peak envelope, if there is one: a trend, not a step
    and not a process's warm-up, on each of ``_scales``: buckets of a training step
    (≥ 10 s) over 5 minutes for climbs of minutes, buckets of a minute over 15 minutes
    for slow ones, and wider buckets under a large sawtooth."""
    s = ctx.settings
    total = gpu.memory.total_bytes or 0
    tie = peak_tie(gpu, s)
    if tie > 0 and ctx.gpu_flat(gpu.index, s.trend_window_s):
        return None            # flat: the newest samples cannot top the earlier peaks
    known = gpu_spikes(ctx, gpu, tie)
    w = ctx.gpu_window(gpu.index, s.trend_window_s)
    t = w["timestamp_s"]
    used = spikes.without(t, w["used_bytes"], known)
    # The cheapest test first, as most samples fail it (memory flat, or a steady
    # sawtooth): a climb's newest samples (a minute: a slow step's top) top every
    # earlier peak of the window.
    if t.size < 3 or t[-1] - t[0] < s.trend_min_span_s:
        return None
    newest = t >= t[-1] - s.climb_newest_s
    if newest.all():
        return None
    top, before = Ring.peak_of(used[newest]), Ring.peak_of(used[~newest])
    if top is None or before is None or top - before < tie:
        return None
    keep = ~np.isnan(used)
    first_saw = sawtooth(t[keep], used[keep], tie)    # of the first window, read once
    for bucket_s, window_s in _scales(ctx, first_saw, tie):
        saw: Sawtooth | None = first_saw
        if window_s != s.trend_window_s:
            w = ctx.gpu_window(gpu.index, window_s)
            t = w["timestamp_s"]
            used = spikes.without(t, w["used_bytes"], known)
            saw = None
        climb = _climb_of(ctx, t, used, tie, bucket_s, active)
        if climb is None:
            continue
        holds = Holds.of(t, used, tie, saw)
        if holds.stopped(climb):
            return None
        # What is left since a process exited during the climb is well below it: the
        # climb ended, or its process did.
        exit_s = ctx.last_exit_s(gpu.index)
        if exit_s is not None and exit_s > climb.since_s:
            since_exit = Ring.peak_of(used[t >= exit_s])
            if since_exit is None or since_exit < climb.level_bytes - 0.05 * total:
                return None
        climb = holds.past_a_step(climb, _under_way(ctx, tie, climb.bucket_s, active))
        if climb is None:
            continue
        climb = holds.after_hold(climb)
        # A trend, not a step: new highs for long enough, over several training steps.
        persist = _persist(ctx, active, climb.bucket_s)
        if climb.span_s < persist:
            continue
        carried = _carried(ctx, gpu, climb, window_s, persist, active, known=known)
        if carried is not None:
            return carried
    return None


def _scales(ctx: RuleContext, saw: Sawtooth,
            tie: float) -> tuple[tuple[float, float], ...]:
    """The (bucket, window) pairs a climb is judged on: a training step (≥ 10 s) over 5
    minutes, for climbs of minutes; buckets of a minute over 15 minutes, for slower
    ones; and where a minute's peak cannot see the steps' top within half the tie
    (``Sawtooth.quiet_bucket_s``, from ``saw``, the sawtooth of the first window),
    wider buckets over a window as much wider, for slow climbs under a large sawtooth
    (a fast one shows on the minute buckets, and sooner)."""
    s = ctx.settings
    quiet = saw.quiet_bucket_s(tie, s.slow_bucket_s, s.slow_bucket_most_s)
    scales = [(s.trend_bucket_s, s.trend_window_s), (s.slow_bucket_s, s.slow_window_s)]
    if quiet > s.slow_bucket_s:
        scales.append((quiet, s.slow_window_s * quiet / s.slow_bucket_s))
    return tuple(scales)


def peak_tie(gpu: GpuSample, s: AdvisorSettings) -> float:
    """Peaks closer than this are a tie: a share of the card."""
    return s.trend_tie_fraction * (gpu.memory.total_bytes or 0)


def _recent_s(s: AdvisorSettings, bucket_s: float) -> float:
    """The newest stretch of a climb whose line is its rate: four buckets at least."""
    return max(s.trend_recent_s, 4 * bucket_s)


def _climb_of(ctx: RuleContext, t: np.ndarray, used: np.ndarray, tie: float,
              bucket_s: float, active: bool) -> Climb | None:
    """``current_climb`` of those samples by the bars of the moment: looser while the
    hint is open, so it does not flap (a lower tau, two buckets in a row a rising run
    may miss, a deeper slowing before it levels off)."""
    s = ctx.settings
    bar, gaps = (s.trend_keep_tau, 2) if active else (s.trend_min_tau, 1)
    return current_climb(t, used, tie, bucket_s, _recent_s(s, bucket_s), bar, gaps,
                         STILL_CLIMBING if active else DECELERATING)


def _persist(ctx: RuleContext, active: bool, bucket_s: float) -> float:
    """How long a run of new highs must last to be a trend: ``climb_persist_s`` and 2½
    buckets (each a training step and a half); half that to keep an open hint."""
    s = ctx.settings
    return (0.5 if active else 1.0) * max(s.climb_persist_s, 2.5 * bucket_s)


def _stairs(ctx: RuleContext, gpu: GpuSample) -> dict[int, Stairs]:
    """Each process's staircase (pid -> its steps). The search reads ``stairs_window_s``
    of a process's memory, so a process's finding stands until it is ``stairs_every_s``
    old *and* its memory has changed since (a flat process's never needs redoing); and
    at most a quarter of the GPU's processes (two at least) are searched on one sample,
    the stalest first, so a GPU of many busy processes spreads the work over samples."""
    s = ctx.settings
    key = ("stairs", gpu.index)
    known: dict[int, tuple[float, Stairs | None]] = ctx.memo.get(key, {})
    runs = ctx.history.process_runs(gpu.index)
    flat_since = (None if runs is None or len(runs.value) != len(gpu.processes)
                  else runs.changed_s)
    stale = []
    for i, p in enumerate(gpu.processes):
        old = known.get(p.pid)
        if old is None:
            stale.append((-math.inf, p.pid))
        elif ctx.now_s - old[0] >= s.stairs_every_s and (
                flat_since is None or flat_since[i] > old[0]):
            stale.append((old[0], p.pid))
    stale.sort()
    tie = peak_tie(gpu, s)
    fresh = {p.pid: known[p.pid] for p in gpu.processes if p.pid in known}
    for _, pid in stale[:max(2, len(gpu.processes) // 4)]:
        w = ctx.process_window(gpu.index, pid, s.stairs_window_s)
        fresh[pid] = (ctx.now_s, staircase(w["timestamp_s"], w["used_bytes"], tie,
                                           s.trend_bucket_s))
    ctx.memo[key] = fresh
    return {pid: st for pid, (_, st) in fresh.items() if st is not None}


def _staircase(ctx: RuleContext, gpu: GpuSample, active: bool) -> Climb | None:
    """The GPU's climb when one of its processes climbs a staircase (the soonest to
    fill it, if several): steps up that hold, regular in height and interval. Not a
    process's warm-up, nor one whose next step is overdue (it stopped)."""
    best = None
    for pid, st in _stairs(ctx, gpu).items():
        if st.over(ctx.now_s):
            continue
        since_step = max(st.bucket_s, ctx.now_s - st.last_step_s)
        level = ctx.gpu_peak(gpu.index, since_step)
        if level is None:
            continue
        climb = Climb(rate=st.step_bytes / st.every_s, span_s=st.last_step_s - st.first_step_s,
                      tau=1.0, since_s=st.first_step_s, bucket_s=st.bucket_s,
                      level_bytes=level, stairs=st,
                      next_step_in_s=max(0.0, st.last_step_s + st.every_s - ctx.now_s))
        if not active and _warming_up(ctx, gpu, pid, climb):
            continue
        limit = ctx.limit_bytes(gpu)
        ttf = None if limit is None else climb.time_to(limit)
        if ttf is not None and (best is None or ttf < best[0]):
            best = (ttf, climb)
    return None if best is None else best[1]


def _carried(ctx: RuleContext, gpu: GpuSample, climb: Climb, window_s: float,
             persist: float, active: bool,
             among: Sequence[ProcessSample] | None = None,
             known: Sequence[spikes.Spike] = ()) -> Climb | None:
    """The GPU's climb as its processes carry it: each process whose own envelope makes a
    trend (not a warm-up) adds its rate. Processes arriving one after another, or the
    tops of several processes' steps coming into line, lift the GPU's envelope without
    any process climbing: no trend. None when no process carries the climb. ``among``:
    the processes to judge (all of the GPU's), each then also held to ``Holds.stopped``;
    ``known``: the GPU's spikes, left out of each process's envelope too."""
    s = ctx.settings
    tie = peak_tie(gpu, s)
    before = _under_way(ctx, tie, climb.bucket_s, active)
    warming = _warming_now(ctx, gpu.index)
    rates, own = 0.0, []
    for p in gpu.processes if among is None else among:
        if not active and p.pid in warming:
            continue
        w = ctx.process_window(gpu.index, p.pid, window_s)
        if w["used_bytes"].size < 3:
            continue
        pt = w["timestamp_s"]
        pused = spikes.without(pt, w["used_bytes"], known)
        c = _climb_of(ctx, pt, pused, tie, climb.bucket_s, active)
        if c is None or c.span_s < persist:
            continue
        holds = Holds.of(pt, pused, tie)
        if among is not None and holds.stopped(c):
            continue
        c = holds.past_a_step(c, before)
        if c is not None and among is not None:
            c = holds.after_hold(c)
        if c is None or c.span_s < persist:
            continue
        if not active and _warming_up(ctx, gpu, p.pid, c,  # an open hint stays open
                                      slow_scale=window_s != s.trend_window_s):
            warming.add(p.pid)
            continue
        rates += c.rate
        own.append(c)
    if not own:
        return None
    towards = None
    if len(own) == 1 and own[0].towards_bytes is not None:
        towards = climb.level_bytes + own[0].towards_bytes - own[0].level_bytes
    first = min(own, key=lambda c: c.since_s)
    return replace(climb, rate=rates, towards_bytes=towards,
                   settle_s=own[0].settle_s if towards is not None else None,
                   tau=min(c.tau for c in own), span_s=first.span_s, since_s=first.since_s)


def _warming_now(ctx: RuleContext, gpu_index: int) -> set[int]:
    """The processes of the GPU found warming up on this sample. A warm-up read at the
    pace of the finest scale is one at every scale: the wider buckets' line through the
    same climb is slower, and against that pace the growth since arrival looks like
    memory that came at once."""
    key = ("warming", gpu_index)
    memo = ctx.memo.get(key)
    if memo is None or memo[0] != ctx.now_s:
        memo = (ctx.now_s, set())
        ctx.memo[key] = memo
    return memo[1]


def _under_way(ctx: RuleContext, tie: float, bucket_s: float, active: bool) -> ClimbOf:
    """The climb under way in some samples, as steady as an open hint's must be (the
    question is whether one was, not whether to warn of it), levelling off by the bar
    of the moment."""
    s = ctx.settings
    slowing = STILL_CLIMBING if active else DECELERATING

    def climb_of(t: np.ndarray, used: np.ndarray) -> Climb | None:
        return current_climb(t, used, tie, bucket_s, _recent_s(s, bucket_s),
                             s.trend_keep_tau, 2, slowing)
    return climb_of


def _warming_up(ctx: RuleContext, gpu: GpuSample, pid: int, climb: Climb,
                slow_scale: bool = False) -> bool:
    """The process is in its first ``oom_warmup_s`` and has grown at about its climb's
    pace since it arrived, or ever slower (``settling``: an approach to its plateau,
    which has grown several times its pace now × its age): the climb is its warm-up
    (loading, the first steps and evaluation filling the caching allocator), not a
    trend. A process whose memory mostly came at once and then keeps climbing at a
    steady pace is not warming up.

    On the slow scales (``slow_scale``: buckets of a minute and wider) every climb in
    those minutes is the warm-up's: a line through the few wide buckets of a warm-up
    joins its steps and an evaluation into a slow climb, and a climb slow enough to need
    those buckets loses nothing by being judged once the warm-up is over.

    A climb that began in those minutes stays the warm-up's until it has made new highs
    of its own for as long as a trend must (``_persist``) after them: a warm-up that ends
    near the last of its minutes, and an evaluation's buffers soon after it, continue
    its line for a step or two. A staircase that began in them stays the warm-up's until
    two of its steps have come after them (one interval: the pace seen again)."""
    s = ctx.settings
    gpu_index = gpu.index
    first = ctx.first_seen_s(gpu_index, pid)
    if first is None:
        return False
    age = ctx.now_s - first
    end = first + s.oom_warmup_s
    # (a warm-up that ends at 6 min is seen to end a few buckets later)
    over = age >= s.oom_warmup_s + 2.5 * climb.bucket_s
    if over:
        if _outgrew_warm_up(ctx, gpu, pid, climb, end):
            return False
    elif slow_scale:
        return True
    w = ctx.process_window(gpu_index, pid, age + 1)
    t, used = w["timestamp_s"], w["used_bytes"]
    known = ~np.isnan(used)
    t, used = t[known], used[known]
    if used.size < 2:
        return False
    arrival = float(used[t <= t[0] + climb.bucket_s].max())
    recent = float(used[t >= t[-1] - climb.bucket_s].max())
    if recent - arrival <= s.warmup_pace_ratio * climb.rate * max(age, climb.bucket_s):
        return True
    return not over and settling(t, used, peak_tie(gpu, s), climb.bucket_s)


def _outgrew_warm_up(ctx: RuleContext, gpu: GpuSample, pid: int, climb: Climb,
                     end: float) -> bool:
    """The climb is no longer the warm-up's, which ended at ``end``: it began after it,
    or has climbed on its own since — a staircase by two steps after it, any other
    climb by a trend of new highs since (from the bucket before ``end``, on the climb's
    buckets, for as long as a trend must), and where those new highs came at once (an
    evaluation's step), by such a trend after the step."""
    st = climb.stairs
    if st is not None:
        return st.first_step_s >= end or (
            st.last_step_s >= end and 1 + (st.last_step_s - end) // st.every_s >= 2)
    if climb.since_s >= end:
        return True
    s = ctx.settings
    w = ctx.process_window(gpu.index, pid, ctx.now_s - end + climb.bucket_s)
    t, used = w["timestamp_s"], w["used_bytes"]
    tie = peak_tie(gpu, s)
    persist = _persist(ctx, False, climb.bucket_s)
    recent = _recent_s(s, climb.bucket_s)

    def trend_in(keep: np.ndarray | slice) -> Climb | None:
        """The climb of those samples, if it has made new highs as long as a trend must."""
        c = current_climb(t[keep], used[keep], tie, climb.bucket_s, recent, s.trend_min_tau)
        return c if c is not None and c.span_s >= persist else None

    after = trend_in(slice(None))
    if after is None:
        return False
    # An evaluation's step up soon after the warm-up, and its sawtooth's sampled tops
    # creeping up to the step's top, are new highs too: where the new highs since the
    # warm-up came at once, only what climbed after the step is the climb's own.
    stepped = Holds.of(t, used, tie).step_end_s(max(after.since_s, end))
    return stepped is None or trend_in(t >= stepped) is not None


def _led_by_a_process(ctx: RuleContext, gpu: GpuSample, active: bool) -> Climb | None:
    """With several processes on the GPU: the climb its processes' own envelopes make
    (each a trend, not a warm-up), where the GPU's envelope does not show one. The
    search stands for ``LED_EVERY_S`` (a climb this needs to find is minutes long)."""
    if len(gpu.processes) < 2:
        return None
    s = ctx.settings
    key = ("led", gpu.index)
    memo = ctx.memo.get(key)
    if memo is not None and ctx.now_s - memo[0] < LED_EVERY_S and memo[2] == active:
        return memo[1]
    tie = peak_tie(gpu, s)
    # the cheap test first: a process whose newest minute holds its peak of the window
    # (while the hint is open, every process: an evaluation's spike may top that minute)
    # A process whose memory has not changed over the window makes no new highs at
    # either scale: it is never read.
    runs = ctx.history.process_runs(gpu.index)
    moving = list(gpu.processes)
    if runs is not None and len(runs.value) == len(gpu.processes):
        since = ctx.now_s - s.trend_window_s
        moving = [p for p, changed in zip(gpu.processes, runs.changed_s.tolist(), strict=True)
                  if changed > since]
    rising = moving
    if not active and moving:
        newest = ctx.process_peaks(gpu, s.climb_newest_s)
        window = ctx.process_peaks(gpu, s.trend_window_s)
        ids = {p.pid for p in moving}
        rising = [p for p, n, w in zip(gpu.processes, newest, window, strict=True)
                  if p.pid in ids and n is not None and w is not None and n >= w]
    found = None
    if rising and tie > 0:
        base = Climb(rate=0.0, span_s=0.0, tau=1.0, since_s=ctx.now_s, bucket_s=0.0,
                     level_bytes=float(ctx.gpu_peak(gpu.index, s.trend_window_s) or 0.0))
        w = ctx.gpu_window(gpu.index, s.trend_window_s)
        t, used = w["timestamp_s"], w["used_bytes"]
        keep = ~np.isnan(used)
        for bucket_s, window_s in _scales(ctx, sawtooth(t[keep], used[keep], tie), tie):
            persist = _persist(ctx, active, bucket_s)
            found = _carried(ctx, gpu, replace(base, bucket_s=bucket_s), window_s, persist,
                             active, among=rising)
            if found is not None:
                break
    ctx.memo[key] = (ctx.now_s, found, active)
    return found
