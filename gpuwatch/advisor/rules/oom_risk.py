"""``oom-risk``: the GPU is nearly full, or its peak memory is climbing towards full.

Two triggers. Free memory at the recent peak below a floor (5 % of total; critical
below 2 %). Or the envelope of the peaks (the maximum per 10 s bucket, so the
sawtooth of training steps does not matter) climbs steadily (Kendall's tau ≥ 0.6)
and its Theil–Sen line, drawn from the current peak, reaches total − reserved −
margin within the horizon (10 min; critical within 2 min). Both thresholds are
looser while the hint is open, so it does not flap.
"""

from __future__ import annotations

import math

import numpy as np

from gpuwatch.advisor.context import Finding, RuleContext, finite, format_growth
from gpuwatch.advisor.trend import Trend, bucket_extremes, theil_sen
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "oom-risk"


def _trend(ctx: RuleContext, gpu: GpuSample, active: bool) -> tuple[Trend | None, float | None]:
    """The peak trend and the latest bucket's peak (None when there is no data)."""
    s = ctx.settings
    w = ctx.gpu_window(gpu.index, s.trend_window_s)
    bt, by = bucket_extremes(w["timestamp_s"], w["used_bytes"], s.trend_bucket_s, "max")
    if by.size == 0:
        return None, None
    latest = float(by[-1])
    total = gpu.memory.total_bytes or 0
    trend = theil_sen(bt, by, tie=s.trend_tie_fraction * total)
    if trend is None or trend.span_s < s.trend_min_span_s or trend.slope <= 0:
        return None, latest
    if trend.tau < (s.trend_keep_tau if active else s.trend_min_tau):
        return None, latest
    if latest < float(by.max()) - 0.05 * total:   # well below the window's peak: the climb ended
        return None, latest
    return trend, latest


def _grower(ctx: RuleContext, gpu: GpuSample) -> tuple[int, str | None, float] | None:
    """The process whose memory grew most over the trend window: (pid, name, growth)."""
    best = None
    for p in gpu.processes:
        used = ctx.process_window(gpu.index, p.pid, ctx.settings.trend_window_s)["used_bytes"]
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
        w = ctx.gpu_window(gpu.index, s.free_window_s)
        used = w["used_bytes"]
        used = used[~np.isnan(used)]
        if used.size == 0:
            continue
        capacity = total - (gpu.memory.reserved_bytes or 0)
        free = max(0.0, capacity - float(used.max()))
        free_fraction = free / total
        low_free = free_fraction < (s.free_clear_fraction if active else s.free_warning_fraction)

        trend, latest = _trend(ctx, gpu, active)
        ttf = None
        if trend is not None and latest is not None:
            ttf = max(0.0, (limit - latest) / trend.slope)
        horizon = s.horizon_s * (1.5 if active else 1.0)
        trending = ttf is not None and ttf <= horizon
        if not (low_free or trending):
            continue

        critical = free_fraction < s.free_critical_fraction or (
            finite(ttf) and ttf is not None and ttf <= s.critical_horizon_s)
        if trending and ttf is not None:
            title = f"GPU {gpu.index} memory full in ~{format_duration(ttf)} at this rate"
        else:
            title = f"GPU {gpu.index} nearly full: {format_bytes(free)} free"
        evidence = [f"free {format_bytes(free)} of {format_bytes(total)} "
                    f"({100 * free_fraction:.0f} %) at the peak of the last "
                    f"{format_duration(s.free_window_s)}"]
        if trend is not None:
            evidence.append(f"peak memory climbing {format_growth(trend.slope)} over the last "
                            f"{format_duration(trend.span_s)} (steadiness tau {trend.tau:.2f})")
        grower = _grower(ctx, gpu)
        if grower is not None:
            pid, name, growth = grower
            evidence.append(f"pid {pid} ({name or '?'}) grew {format_bytes(growth)} in that time")
        out.append(Finding(
            code=CODE, severity=Severity.CRITICAL if critical else Severity.WARNING,
            gpu_index=gpu.index, pid=None, title=title, evidence=tuple(evidence),
            actions=_actions(ctx, gpu, None if grower is None else grower[0]),
            values=(("time_to_full_s", ttf), ("free_bytes", int(free)),
                    ("total_bytes", int(total)),
                    ("growth_bytes_per_s", None if trend is None else trend.slope),
                    ("top_pid", None if grower is None else grower[0])),
        ))
    return out
