"""``oom-risk``: the GPU is nearly full, or its peak memory is climbing towards full.

Two triggers. Free memory at the recent peak below a floor (5 % of total; critical
below 2 %). Or a current climb of the envelope of the step peaks (``oom_climb.py``): a
trend carried by a process, not a step that holds and not its warm-up — a rising run
of new highs, or a staircase of regular steps — that reaches total − reserved −
margin within the horizon (10 min; critical within 2 min, for a climb that is both
short and consistent), or reaches it with the tallest spike of late (an evaluation's
buffers: up and back within minutes) on top. A climb that has levelled off or stopped
is not a risk, however steep it was: the end of a warm-up stays quiet.

Thresholds are looser while the hint is open, so it does not flap. When a process
leaves the GPU and gives its memory back, an open hint closes at once.
"""

from __future__ import annotations

import math

import numpy as np

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import (
    Finding,
    RuleContext,
    ended,
    finite,
    format_eta,
    format_growth,
    steadily,
)
from gpuwatch.advisor.rules.oom_climb import gpu_climb, peak_tie
from gpuwatch.advisor.rules.oom_spikes import spike_allowance
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "oom-risk"


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

        climb = gpu_climb(ctx, gpu, active)
        # a spike seen lately (an evaluation's buffers) may come back on top of the climb
        spike, allowance = ((None, 0.0) if climb is None else
                            spike_allowance(ctx, gpu, climb, peak_tie(gpu, s)))
        ttf = None if climb is None else climb.time_to(limit - allowance)
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
        full_now = free_fraction < s.free_critical_fraction or (
            trending and ttf is not None and ttf < 2.5)
        if full_now:
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
        if spike is not None and allowance > 0 and trending and not full_now:
            evidence.append(f"a spike of {format_bytes(spike.height)} above the climb "
                            f"{format_duration(ctx.now_s - spike.end_s)} ago, for "
                            f"{format_duration(max(1.0, spike.end_s - spike.start_s))} "
                            "(an evaluation?), is counted as coming back on top of it")
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
