"""``oom-risk``: the GPU is nearly full, or its peak memory is climbing towards full.

Two triggers. Free memory at the recent peak below a floor (5 % of total; critical
below 2 %). Or a current climb: the envelope of the peaks (the maximum per 10 s bucket,
so the sawtooth of training steps does not matter) climbs steadily over the last
5 minutes (Kendall's tau ≥ 0.6), *and* over the last 2 minutes on its own, with the
newest minute above every earlier peak; drawn from the current peak at the last
2 minutes' rate, it reaches total − reserved − margin within the horizon (10 min;
critical within 2 min). A climb that has levelled off is not a risk, however steep it
was: the end of a warm-up stays quiet. Growth of a process in its first 2 minutes on
the GPU (loading, first steps) is its warm-up and is not projected.

Thresholds are looser while the hint is open, so it does not flap. When a process
leaves the GPU and gives its memory back, an open hint closes at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuwatch.advisor.context import (
    Finding,
    RuleContext,
    ended,
    finite,
    format_eta,
    format_growth,
    steadily,
)
from gpuwatch.advisor.trend import bucket_extremes, theil_sen
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "oom-risk"


@dataclass(frozen=True, slots=True)
class Climb:
    """A current climb of the peak envelope."""

    rate: float        # bytes per second now: the slope over the last trend_recent_s
    span_s: float      # how long the fitted window is
    tau: float         # how steadily the whole window climbs


def _peak(values: np.ndarray) -> float | None:
    """The largest known value; None when there is none."""
    peak = float(np.fmax.reduce(values)) if values.size else math.nan
    return None if math.isnan(peak) else peak


def _climb(ctx: RuleContext, gpu: GpuSample, active: bool) -> tuple[Climb | None, float | None]:
    """The current climb, if there is one, and the latest bucket's peak (None: no data)."""
    s = ctx.settings
    total = gpu.memory.total_bytes or 0
    tie = s.trend_tie_fraction * total
    if tie > 0 and ctx.gpu_flat(gpu.index, s.trend_window_s):
        return None, None      # flat: the newest quarter cannot top the earlier peaks
    w = ctx.gpu_window(gpu.index, s.trend_window_s)
    t, used = w["timestamp_s"], w["used_bytes"]
    # The cheapest of the tests below first, as most samples fail it (memory flat, or
    # a steady sawtooth): a current climb's newest quarter tops every earlier peak.
    newest_s = s.trend_recent_s / 4
    newest = t >= t[-1] - newest_s if t.size else t.astype(bool)
    if newest.all() or not newest.any():
        return None, None
    top, before = _peak(used[newest]), _peak(used[~newest])
    if top is None or before is None or top - before < tie:
        return None, None
    bt, by = bucket_extremes(t, used, s.trend_bucket_s, "max")
    if by.size == 0:
        return None, None
    latest = float(by[-1])
    bar = s.trend_keep_tau if active else s.trend_min_tau
    trend = theil_sen(bt, by, tie=tie)
    if (trend is None or trend.span_s < s.trend_min_span_s or trend.slope <= 0
            or trend.tau < bar):
        return None, latest
    # Well below the window's peak now (the latest bucket's peak, or what is left since a
    # process exited in it): the climb ended, or its process did.
    exit_s = ctx.last_exit_s(gpu.index)
    if exit_s is not None and exit_s > t[-1] - s.trend_bucket_s:
        since_exit = _peak(used[t >= exit_s])
        latest = latest if since_exit is None else since_exit
    if latest < float(by.max()) - 0.05 * total:
        return None, latest
    # Current: the last few minutes climb steadily on their own (their line is the rate)…
    recent = bt >= bt[-1] - s.trend_recent_s
    line = theil_sen(bt[recent], by[recent], tie=tie)
    if line is None or line.slope <= 0 or line.tau < bar:
        return None, latest
    # …and the newest quarter of them tops every earlier peak by about what that rate
    # says (half of it; a quarter to stay open, so a climb that slows down keeps its
    # hint): a climb that levelled off, such as the end of a warm-up, falls short at once.
    share = 0.25 if active else 0.5
    if top - before < share * line.slope * newest_s:
        return None, latest
    return Climb(line.slope, trend.span_s, trend.tau), latest


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


def warming_up(ctx: RuleContext, gpu_index: int, pid: int) -> bool:
    """The process is in its first ``oom_warmup_s`` on the GPU (as far as we have seen)."""
    first = ctx.first_seen_s(gpu_index, pid)
    return first is not None and ctx.now_s - first < ctx.settings.oom_warmup_s


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

        climb, latest = _climb(ctx, gpu, active)
        if climb is not None and any(warming_up(ctx, gpu.index, p.pid) for p in gpu.processes):
            grower = _grower(ctx, gpu, s.trend_recent_s)
            if grower is not None and warming_up(ctx, gpu.index, grower[0]):
                climb = None                       # a process's warm-up, not a trend
        ttf = None
        if climb is not None and latest is not None:
            ttf = max(0.0, (limit - latest) / climb.rate)
        horizon = s.horizon_s * (1.5 if active else 1.0)
        trending = ttf is not None and ttf <= horizon
        if not (low_free or trending):
            if active and exit_s is not None and ctx.now_s - exit_s <= s.free_window_s:
                out.append(ended(CODE, gpu.index))   # its process left: memory is back
            continue

        critical = free_fraction < s.free_critical_fraction or (
            finite(ttf) and ttf is not None and ttf <= s.critical_horizon_s)
        if free_fraction < s.free_critical_fraction or (trending and ttf is not None
                                                        and ttf < 2.5):
            title = f"GPU {gpu.index} memory full now: {format_bytes(free)} free"
        elif trending and ttf is not None:
            title = f"GPU {gpu.index} memory full in ~{format_eta(ttf)} at this rate"
        else:
            title = f"GPU {gpu.index} nearly full: {format_bytes(free)} free"
        when = ("now" if span < 1 else
                f"at the highest point of the last {format_duration(span)}")
        evidence = [f"free {format_bytes(free)} of {format_bytes(total)} "
                    f"({100 * free_fraction:.0f} %) {when}"]
        grower = _grower(ctx, gpu, s.trend_window_s)
        if climb is not None:
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
            gpu_index=gpu.index, pid=None, title=title, evidence=tuple(evidence),
            actions=_actions(ctx, gpu, None if grower is None else grower[0]),
            values=(("time_to_full_s", ttf), ("free_bytes", int(free)),
                    ("total_bytes", int(total)),
                    ("growth_bytes_per_s", None if climb is None else climb.rate),
                    ("top_pid", None if grower is None else grower[0])),
        ))
    return out
