"""``memory-leak``: the floor of a process's memory keeps rising, step after step.

The floor is the minimum per 30 s bucket (the trough of each training step). It leaks
when, over at least 10 minutes after a warm-up of up to 6 minutes, the floors' Theil–Sen slope
is above 10 MiB/min, they rise consistently (Kendall's tau ≥ 0.7), and both halves
of the window rise (a single step up, such as a notebook loading a second model, is
not a leak).

Through NVML a fragmenting caching allocator looks the same as a leak; when a linked
budget shows the process far above what it needs, or its probe shows that most of what
it holds is idle cache, ``fragmentation`` speaks instead.
"""

from __future__ import annotations

import numpy as np

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import (
    Finding,
    RuleContext,
    format_eta,
    format_growth,
    steadily,
)
from gpuwatch.advisor.rules.fragmentation import ALLOC_CONF, unexplained
from gpuwatch.advisor.trend import Trend, bucket_extremes, theil_sen
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample, ProcessSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "memory-leak"


def floor_trend(ctx: RuleContext, gpu_index: int, pid: int) -> Trend | None:
    """The leak's line through the process's floors, or None when it does not leak."""
    s = ctx.settings
    w = ctx.process_window(gpu_index, pid, s.leak_window_s)
    t, used = w["timestamp_s"], w["used_bytes"]
    if t.size < 3:
        return None
    ring = ctx.history.process(gpu_index, pid)
    first_seen = t[0] if ring is None or len(ring) == t.size else -np.inf
    keep = t >= first_seen + s.leak_warmup_s
    t, used = t[keep], used[keep]
    if t.size < 8:
        return None
    q = t.size // 4    # cheapest test first: a leak lifts the floor of the last quarter
    # fmin skips NaN like nanmin, and gives NaN for a quarter all unknown without a warning
    lift = np.fmin.reduce(used[-q:]) - np.fmin.reduce(used[:q]) if q else np.nan
    if not lift >= 0.25 * s.leak_min_rate_bytes_per_s * float(t[-1] - t[0]):
        return None
    bt, by = bucket_extremes(t, used, s.leak_bucket_s, "min")
    if by.size < 4 or bt[-1] - bt[0] < s.leak_min_span_s:
        return None
    quarter = max(1, by.size // 4)    # cheap test first: a steady leak lifts the last quarter
    rise = float(np.median(by[-quarter:]) - np.median(by[:quarter]))
    if rise < 0.25 * s.leak_min_rate_bytes_per_s * float(bt[-1] - bt[0]):
        return None
    trend = theil_sen(bt, by, tie=s.leak_tie_bytes)
    if (trend is None or trend.span_s < s.leak_min_span_s
            or trend.slope < s.leak_min_rate_bytes_per_s):
        return None
    keep_bar = 0.75 if ctx.is_active(CODE, gpu_index, pid) else 1.0
    if trend.tau < s.leak_min_tau * keep_bar:
        return None
    half = bt.size // 2
    for part in (slice(0, half + 1), slice(half, None)):
        sub = theil_sen(bt[part], by[part], tie=s.leak_tie_bytes)
        if sub is None or sub.slope < 0.5 * keep_bar * max(s.leak_min_rate_bytes_per_s,
                                                            trend.slope):
            return None
    return trend


def floor_may_move(ctx: RuleContext, gpu: GpuSample) -> list[int]:
    """The positions among ``gpu.processes`` of those whose memory changed over the rows
    ``floor_trend`` reads (the leak window, less a process's warm-up when the window
    holds its first row): ``floor_trend`` is None for every other one, their floors
    being flat. All of them when the runs are not known."""
    runs = ctx.history.process_runs(gpu.index)
    if runs is None or len(runs.value) != len(gpu.processes):
        return list(range(len(gpu.processes)))
    s = ctx.settings
    window_from = ctx.now_s - s.leak_window_s
    whole = runs.oldest_s >= window_from          # the window holds the process's first row
    read_from = np.where(whole, runs.oldest_s + s.leak_warmup_s, window_from)
    return np.flatnonzero(runs.changed_s > read_from).tolist()


def _finding(ctx: RuleContext, gpu: GpuSample, p: ProcessSample, trend: Trend) -> Finding:
    limit = ctx.limit_bytes(gpu)
    used = gpu.memory.used_bytes
    window = ctx.gpu_window(gpu.index, ctx.settings.free_window_s)["used_bytes"]
    peak = float(np.nanmax(window)) if window.size and not np.isnan(window).all() else used
    ttf = None if limit is None or peak is None else max(0.0, (limit - peak) / trend.slope)
    start, end = trend.at(trend.t_ref - trend.span_s), trend.at(trend.t_ref)
    if p.used_bytes is not None:
        end = min(end, float(p.used_bytes))
    evidence = [f"the low point of its memory between steps rose {steadily(trend.tau)} for "
                f"{format_duration(trend.span_s)}: {format_bytes(start)} → "
                f"{format_bytes(end)}, {format_growth(trend.slope)}"]
    if ttf is not None:
        evidence.append(f"at this rate GPU {gpu.index} is full in ~{format_eta(ttf)}")
    return Finding(
        code=CODE, severity=Severity.WARNING, gpu_index=gpu.index, pid=p.pid,
        process_name=p.name,
        title=f"pid {p.pid} ({p.name or '?'}) leaks ~{format_growth(trend.slope)}",
        badge=badges.leak(trend.slope),
        evidence=tuple(evidence),
        actions=(HintAction("Look for tensors kept across steps: accumulate losses with "
                            "loss.item() or loss.detach(), not the tensor itself"),
                 HintAction("Compare torch.cuda.memory_allocated() at the same point of two "
                            "steps: if it stays flat while this grows, it is the caching "
                            f"allocator fragmenting; try {ALLOC_CONF}")),
        values=(("leak_bytes_per_s", trend.slope), ("time_to_full_s", ttf),
                ("floor_bytes", int(end))),
    )


def _mostly_cache(ctx: RuleContext, gpu_index: int, pid: int) -> bool:
    """The probe says most of what the process holds is idle cache, not tensors: the
    growth is the caching allocator's (``fragmentation`` speaks), not a leak."""
    stats = ctx.allocator.get((gpu_index, pid))
    if stats is None or stats.reserved_bytes is None or stats.allocated_bytes is None:
        return False
    return stats.allocated_bytes < 0.5 * stats.reserved_bytes


def memory_leak(ctx: RuleContext) -> list[Finding]:
    out = []
    for gpu in ctx.ok_gpus():
        for i in floor_may_move(ctx, gpu):
            p = gpu.processes[i]
            if _mostly_cache(ctx, gpu.index, p.pid):
                continue
            trend = floor_trend(ctx, gpu.index, p.pid)
            if trend is not None and unexplained(ctx, gpu.index, p.pid) is None:
                out.append(_finding(ctx, gpu, p, trend))
    return out
