"""``oom-risk``: the GPU is nearly full, or its peak memory is climbing towards full.

Two triggers. Free memory at the recent peak below a floor (5 % of total; critical
below 2 %). Or a current climb of the envelope of the step peaks (``climb.py``): a
trend carried by a process, not a step that holds and not its warm-up — a rising run
of new highs, or a staircase of regular steps — that reaches total − reserved −
margin within the horizon (10 min; critical within 2 min, for a climb that is both
short and consistent). A climb that has levelled off or stopped is not a risk, however
steep it was: the end of a warm-up stays quiet.

Thresholds are looser while the hint is open, so it does not flap. When a process
leaves the GPU and gives its memory back, an open hint closes at once.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gpuwatch.advisor import badges
from gpuwatch.advisor.climb import (
    DECELERATING,
    STILL_CLIMBING,
    Climb,
    Stairs,
    current_climb,
    staircase,
    step_period,
)
from gpuwatch.advisor.context import (
    Finding,
    RuleContext,
    ended,
    finite,
    format_eta,
    format_growth,
    steadily,
)
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "oom-risk"


def _peak(values: np.ndarray) -> float | None:
    """The largest known value; None when there is none."""
    peak = float(np.fmax.reduce(values)) if values.size else math.nan
    return None if math.isnan(peak) else peak


def _climb(ctx: RuleContext, gpu: GpuSample, active: bool) -> Climb | None:
    """The current climb of the GPU's peak envelope, if there is one: a trend, not a step
    and not a process's warm-up. Two scales: buckets of a training step (≥ 10 s) over
    5 minutes for climbs of minutes, buckets of a minute over 15 minutes for slow ones."""
    s = ctx.settings
    total = gpu.memory.total_bytes or 0
    tie = s.trend_tie_fraction * total
    if tie > 0 and ctx.gpu_flat(gpu.index, s.trend_window_s):
        return None            # flat: the newest samples cannot top the earlier peaks
    w = ctx.gpu_window(gpu.index, s.trend_window_s)
    t, used = w["timestamp_s"], w["used_bytes"]
    # The cheapest test first, as most samples fail it (memory flat, or a steady
    # sawtooth): a climb's newest samples (a minute: a slow step's top) top every
    # earlier peak of the window.
    if t.size < 3 or t[-1] - t[0] < s.trend_min_span_s:
        return None
    newest = t >= t[-1] - s.climb_newest_s
    if newest.all():
        return None
    top, before = _peak(used[newest]), _peak(used[~newest])
    if top is None or before is None or top - before < tie:
        return None
    bar = s.trend_keep_tau if active else s.trend_min_tau
    gaps = 2 if active else 1
    slowing = STILL_CLIMBING if active else DECELERATING
    for bucket_s, window_s in ((s.trend_bucket_s, s.trend_window_s),
                               (s.slow_bucket_s, s.slow_window_s)):
        if window_s != s.trend_window_s:
            w = ctx.gpu_window(gpu.index, window_s)
            t, used = w["timestamp_s"], w["used_bytes"]
        climb = current_climb(t, used, tie, bucket_s, max(s.trend_recent_s, 4 * bucket_s),
                              bar, gaps, slowing)
        if climb is None:
            continue
        if _stopped(t, used, tie, climb):
            return None
        # What is left since a process exited during the climb is well below it: the
        # climb ended, or its process did.
        exit_s = ctx.last_exit_s(gpu.index)
        if exit_s is not None and exit_s > climb.since_s:
            since_exit = _peak(used[t >= exit_s])
            if since_exit is None or since_exit < climb.level_bytes - 0.05 * total:
                return None
        # A trend, not a step: new highs for long enough, over several training steps.
        persist = (0.5 if active else 1.0) * max(s.climb_persist_s, 2.5 * climb.bucket_s)
        if climb.span_s < persist:
            continue
        carried = _carried(ctx, gpu, climb, window_s, persist, bar, gaps, active)
        if carried is not None:
            return carried
    return None


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
    tie = s.trend_tie_fraction * (gpu.memory.total_bytes or 0)
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
        if not active and _warming_up(ctx, gpu.index, pid, climb):
            continue
        limit = ctx.limit_bytes(gpu)
        ttf = None if limit is None else climb.time_to(limit)
        if ttf is not None and (best is None or ttf < best[0]):
            best = (ttf, climb)
    return None if best is None else best[1]


def _stopped(t: np.ndarray, used: np.ndarray, tie: float, climb: Climb) -> bool:
    """A climb that the newest samples show has stopped: over the newest training step
    and a half (30 s at least), at the climb's rate the envelope would have topped every
    earlier peak, and it did not. Not judged when that rise would be lost in the noise
    of sampling a step's top (one sample's climb of the sawtooth) or in the tie."""
    period = step_period(t, used, tie)
    span = max(30.0, 1.5 * period)
    d = np.diff(used[~np.isnan(used)])
    rises = d[d > 0]
    noise = float(np.percentile(rises, 90)) if rises.size and period > 0 else 0.0
    if climb.rate * span < 2 * max(tie, noise):
        return False
    newest = t >= t[-1] - span
    top, before = _peak(used[newest]), _peak(used[~newest])
    return top is not None and before is not None and top - before < tie


def _carried(ctx: RuleContext, gpu: GpuSample, climb: Climb, window_s: float,
             persist: float, bar: float, gaps: int, active: bool) -> Climb | None:
    """The GPU's climb as its processes carry it: each process whose own envelope makes a
    trend (not a warm-up) adds its rate. Processes arriving one after another, or the
    tops of several processes' steps coming into line, lift the GPU's envelope without
    any process climbing: no trend. None when no process carries the climb."""
    s = ctx.settings
    tie = s.trend_tie_fraction * (gpu.memory.total_bytes or 0)
    rates, own = 0.0, []
    for p in gpu.processes:
        w = ctx.process_window(gpu.index, p.pid, window_s)
        if w["used_bytes"].size < 3:
            continue
        c = current_climb(w["timestamp_s"], w["used_bytes"], tie, climb.bucket_s,
                          max(s.trend_recent_s, 4 * climb.bucket_s), bar, gaps,
                          STILL_CLIMBING if active else DECELERATING)
        if c is None or c.span_s < persist:
            continue
        if not active and _warming_up(ctx, gpu.index, p.pid, c):  # an open hint stays open
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


def _warming_up(ctx: RuleContext, gpu_index: int, pid: int, climb: Climb) -> bool:
    """The process is in its first ``oom_warmup_s`` and has grown at about its climb's
    pace since it arrived: the climb is its warm-up (loading, the first steps and
    evaluation filling the caching allocator), not a trend. A process whose memory
    mostly came at once and then keeps climbing slower is not warming up."""
    s = ctx.settings
    first = ctx.first_seen_s(gpu_index, pid)
    # (a warm-up that ends at 6 min is seen to end a few buckets later)
    if first is None or ctx.now_s - first >= s.oom_warmup_s + 2.5 * climb.bucket_s:
        return False
    age = ctx.now_s - first
    w = ctx.process_window(gpu_index, pid, age + 1)
    t, used = w["timestamp_s"], w["used_bytes"]
    known = ~np.isnan(used)
    t, used = t[known], used[known]
    if used.size < 2:
        return False
    arrival = float(used[t <= t[0] + climb.bucket_s].max())
    recent = float(used[t >= t[-1] - climb.bucket_s].max())
    return recent - arrival <= s.warmup_pace_ratio * climb.rate * max(age, climb.bucket_s)


def _grower(ctx: RuleContext, gpu: GpuSample,
            span_s: float) -> tuple[int, str | None, float] | None:
    """The process whose memory grew most over the last ``span_s``: (pid, name, growth)."""
    best = None
    for p in gpu.processes:
        used = ctx.process_window(gpu.index, p.pid, span_s)["used_bytes"]
        if used.size < 2:
            continue
        first, last = float(used[0]), float(used[-1])
        if math.isnan(first) or math.isnan(last):    # unknown at an end: the known ones
            used = used[~np.isnan(used)]
            if used.size < 2:
                continue
            first, last = float(used[0]), float(used[-1])
        growth = last - first
        if growth > 0 and (best is None or growth > best[2]):
            best = (p.pid, p.name, growth)
    return best


def _actions(ctx: RuleContext, gpu: GpuSample, pid: int | None) -> tuple[HintAction, ...]:
    actions = [HintAction("Save a checkpoint now, before the run fails")]
    link = None if pid is None else ctx.links.get((gpu.index, pid))
    if link is not None:
        actions += [HintAction(a.text, a.saves_bytes) for a in link.levers[:3]]
    else:
        actions.append(HintAction("Lower the micro-batch (raise gradient accumulation to keep "
                                  "the effective batch), or enable activation checkpointing"))
    return tuple(actions)


def oom_risk(ctx: RuleContext) -> list[Finding]:
    s = ctx.settings
    out = []
    for gpu in ctx.ok_gpus():
        total, limit = gpu.memory.total_bytes, ctx.limit_bytes(gpu)
        if not total or limit is None:
            continue
        active = ctx.is_active(CODE, gpu.index)
        # "free" is read from after the last process exit: what it held is given back
        exit_s = ctx.last_exit_s(gpu.index)
        span = s.free_window_s if exit_s is None else min(s.free_window_s,
                                                          ctx.now_s - exit_s)
        peak = ctx.gpu_peak(gpu.index, span)
        if peak is None:
            continue
        capacity = total - (gpu.memory.reserved_bytes or 0)
        free = max(0.0, capacity - peak)
        free_fraction = free / total
        low_free = free_fraction < (s.free_clear_fraction if active else s.free_warning_fraction)

        climb = _climb(ctx, gpu, active) or _staircase(ctx, gpu, active)
        ttf = None if climb is None else climb.time_to(limit)
        horizon = s.horizon_s * (1.5 if active else 1.0)
        if climb is not None:          # a climb that has gone on for longer is warned sooner
            horizon = max(horizon, min(1.5 * s.horizon_s, climb.span_s))
        if climb is not None and climb.stairs is not None:
            # memory that comes in whole steps is warned a step sooner: the step that
            # fills the card arrives at once
            horizon = max(horizon, min(climb.span_s, horizon + climb.stairs.every_s))
        trending = ttf is not None and ttf <= horizon
        if not (low_free or trending):
            if active and exit_s is not None and ctx.now_s - exit_s <= s.free_window_s:
                out.append(ended(CODE, gpu.index))   # its process left: memory is back
            continue

        # critical: memory really almost gone, or a projection both short and consistent
        critical = free_fraction < s.free_critical_fraction or (
            climb is not None and finite(ttf) and ttf is not None
            and ttf <= s.critical_horizon_s and climb.tau >= s.critical_min_tau
            and climb.span_s >= max(s.critical_persist_s, 3 * climb.bucket_s))
        if free_fraction < s.free_critical_fraction or (trending and ttf is not None
                                                        and ttf < 2.5):
            title = f"GPU {gpu.index} memory full now: {format_bytes(free)} free"
            badge = badges.oom(ttf, free, full_now=True)
        elif trending and ttf is not None:
            title = f"GPU {gpu.index} memory full in ~{format_eta(ttf)} at this rate"
            badge = badges.oom(ttf, free, full_now=False)
        else:
            title = f"GPU {gpu.index} nearly full: {format_bytes(free)} free"
            badge = badges.oom(None, free, full_now=False)
        when = ("now" if span < 1 else
                f"at the highest point of the last {format_duration(span)}")
        evidence = [f"free {format_bytes(free)} of {format_bytes(total)} "
                    f"({100 * free_fraction:.0f} %) {when}"]
        grower = _grower(ctx, gpu, s.trend_window_s)
        if climb is not None and climb.stairs is not None:
            st = climb.stairs
            evidence.append(f"peak memory climbs in steps of {format_bytes(st.step_bytes)} "
                            f"every {format_duration(st.every_s)} ({st.steps} so far), the "
                            f"next due in ~{format_eta(max(1.0, climb.next_step_in_s))}")
        elif climb is not None:
            evidence.append(f"peak memory climbing {format_growth(climb.rate)}, "
                            f"{steadily(climb.tau)} for the last "
                            f"{format_duration(climb.span_s)}")
            if grower is not None:
                pid, name, growth = grower
                evidence.append(f"pid {pid} ({name or '?'}) grew {format_bytes(growth)} "
                                "in that time")
        elif grower is not None:
            pid, name, growth = grower
            evidence.append(f"pid {pid} ({name or '?'}) grew {format_bytes(growth)} in the "
                            f"last {format_duration(s.trend_window_s)}")
        out.append(Finding(
            code=CODE, severity=Severity.CRITICAL if critical else Severity.WARNING,
            gpu_index=gpu.index, pid=None, title=title, evidence=tuple(evidence), badge=badge,
            actions=_actions(ctx, gpu, None if grower is None else grower[0]),
            values=(("time_to_full_s", ttf), ("free_bytes", int(free)),
                    ("total_bytes", int(total)),
                    ("growth_bytes_per_s", None if climb is None else climb.rate),
                    ("top_pid", None if grower is None else grower[0])),
        ))
    return out
