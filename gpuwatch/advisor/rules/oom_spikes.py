"""The spikes of a GPU's peak envelope, as ``oom_climb`` and ``oom_risk`` use them:
found once a trend bucket and kept for ``spike_memory_s`` (the search itself is
``advisor/spikes.py``), left out of the envelope a climb is judged on, and the tallest
of late counted on top of a climb's level."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gpuwatch.advisor import spikes
from gpuwatch.advisor.climb import Climb, sawtooth, step_period
from gpuwatch.advisor.context import RuleContext
from gpuwatch.core.snapshot import GpuSample


def gpu_spikes(ctx: RuleContext, gpu: GpuSample, tie: float) -> list[spikes.Spike]:
    """The spikes of the GPU's envelope over the last ``spike_memory_s``, oldest first.
    They are looked for once a trend bucket (``_new_spikes``); one seen again (the
    buckets move with each sample) is merged with what was known of it. ``tie``: peaks
    closer than this are a tie (``oom_climb``'s share of the card)."""
    s = ctx.settings
    key = ("spikes", gpu.index)
    looked, known = ctx.memo.get(key, (-math.inf, []))
    if ctx.now_s - looked >= s.trend_bucket_s:
        looked = ctx.now_s
        known = [k for k in known if k.end_s >= ctx.now_s - s.spike_memory_s]
        for new in _new_spikes(ctx, gpu, tie):
            same = [k for k in known if k.start_s <= new.end_s and new.start_s <= k.end_s]
            known = [k for k in known if k not in same]
            known.append(replace(new, start_s=min([new.start_s] + [k.start_s for k in same]),
                                 end_s=max([new.end_s] + [k.end_s for k in same])))
        known.sort(key=lambda k: k.start_s)
        ctx.memo[key] = (looked, known)
    return known


def _new_spikes(ctx: RuleContext, gpu: GpuSample, tie: float) -> list[spikes.Spike]:
    """``spikes.find`` over a window that holds the longest spike (``spike_most_s``) and
    four buckets either side, on buckets of 1½ of the slowest process's step. None on a
    GPU that is flat, or too young to know its steps (a slow sawtooth's tops, on buckets
    narrower than its step, rise and fall back like spikes)."""
    s = ctx.settings
    if tie <= 0 or ctx.gpu_flat(gpu.index, s.spike_most_s):
        return []
    w = ctx.gpu_window(gpu.index, s.spike_most_s)
    t, used = w["timestamp_s"], w["used_bytes"]
    if t.size < 3 or t[0] > ctx.now_s - s.spike_most_s + s.trend_bucket_s:
        return []
    keep = ~np.isnan(used)
    saw = sawtooth(t[keep], used[keep], tie)
    width = max(s.trend_bucket_s, 1.5 * saw.period_s,
                1.5 * _slowest_step(ctx, gpu, s.spike_most_s, tie))
    span = s.spike_most_s + 2 * (spikes.SIDE + 1) * width
    w = ctx.gpu_window(gpu.index, span)
    t = w["timestamp_s"]
    first = bool(t.size) and t[0] > ctx.now_s - span + width     # all there is
    return spikes.find(t, w["used_bytes"], width, spikes.margin(tie, saw, width),
                       s.spike_most_s, first)


def _slowest_step(ctx: RuleContext, gpu: GpuSample, window_s: float, tie: float) -> float:
    """The longest training step of the GPU's processes over ``window_s`` (0: none seen):
    the sawtooth the GPU's samples show is mostly its fastest process's."""
    longest = 0.0
    for p in gpu.processes:
        w = ctx.process_window(gpu.index, p.pid, window_s)
        used = w["used_bytes"]
        if used.size >= 4:
            keep = ~np.isnan(used)
            longest = max(longest, step_period(w["timestamp_s"][keep], used[keep], tie))
    return longest


def spike_allowance(ctx: RuleContext, gpu: GpuSample, climb: Climb,
                    tie: float) -> tuple[spikes.Spike | None, float]:
    """The tallest spike of late (``gpu_spikes``), and how much of it to count on top of
    the climb's level: its height, less what of it the level may hold already (a spike
    under way: the newest peak above the envelope before, carried on at the climb's
    rate)."""
    tall = spikes.tallest(gpu_spikes(ctx, gpu, tie))
    if tall is None:
        return None, 0.0
    s = ctx.settings
    w = ctx.gpu_window(gpu.index, s.spike_most_s + 4 * climb.bucket_s)
    now = spikes.under_way(w["timestamp_s"], w["used_bytes"], climb.rate, climb.bucket_s,
                           s.spike_most_s)
    return tall, max(0.0, tall.height - now)
