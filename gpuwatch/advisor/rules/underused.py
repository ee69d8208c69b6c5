"""``underused``: the GPU computes hard but its memory mostly sits idle.

Fires when, for 10 minutes, the peak memory in use stays below 30 % of total while
the GPU's mean utilisation is at least 50 % (a busy run with room for a larger
batch; an idle notebook holding a little memory is not worth a hint). With a linked
budget the action names the largest batch the solver fits.
"""

from __future__ import annotations

import numpy as np

from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "underused"


def _batch_actions(ctx: RuleContext, gpu: GpuSample) -> list[HintAction]:
    out = []
    for p in gpu.processes:
        link = ctx.links.get((gpu.index, p.pid))
        limit, others = ctx.limit_bytes(gpu), ctx.others_bytes(gpu, p.pid)
        if link is None or limit is None or others is None or link.batch is None:
            continue
        best = link.max_batch(limit - others)
        if best is not None and best > link.batch:
            out.append(HintAction(f"pid {p.pid}: raise the micro-batch from {link.batch} to "
                                  f"{best} (the budget fits it in "
                                  f"{format_bytes(limit - others)})"))
    return out


def underused(ctx: RuleContext) -> list[Finding]:
    s = ctx.settings
    out = []
    for gpu in ctx.ok_gpus():
        total = gpu.memory.total_bytes
        if not total or not any(p.kind != "graphics" for p in gpu.processes):
            continue
        w = ctx.gpu_window(gpu.index, s.underused_window_s, ("used_bytes", "gpu_util_percent"))
        t, used, util = w["timestamp_s"], w["used_bytes"], w["gpu_util_percent"]
        if t.size < 2 or t[-1] - t[0] < 0.95 * s.underused_window_s:
            continue
        active = ctx.is_active(CODE, gpu.index)
        fraction_bar = s.underused_fraction + (0.05 if active else 0.0)
        flat_peak, sure = ctx.steady_gpu_peak(gpu.index, s.underused_window_s)
        if sure and (flat_peak is None or flat_peak >= fraction_bar * total):
            continue                  # flat memory, unknown or above the bar: no need
        peak = float(np.fmax.reduce(used))      # (NaN only where all are unknown)
        if peak != peak or peak >= fraction_bar * total or np.isnan(util).all():
            continue
        mean_util = float(np.nanmean(util))     # (only once the memory is low enough)
        util_bar = s.underused_min_util_percent - (10.0 if active else 0.0)
        if mean_util < util_bar:
            continue
        idle = total - peak - (gpu.memory.reserved_bytes or 0)
        actions = _batch_actions(ctx, gpu) or [HintAction(
            f"Raise the batch size (about {format_bytes(idle)} is idle), or share this GPU "
            "with another job")]
        out.append(Finding(
            code=CODE, severity=Severity.INFO, gpu_index=gpu.index, pid=None,
            title=f"GPU {gpu.index} memory mostly idle: peak {100 * peak / total:.0f} % in use",
            evidence=(f"peak {format_bytes(peak)} of {format_bytes(total)} over the last "
                      f"{format_duration(t[-1] - t[0])}",
                      f"while the GPU was busy {mean_util:.0f} % of the time"),
            actions=tuple(actions),
            values=(("peak_bytes", int(peak)), ("total_bytes", int(total)),
                    ("gpu_util_percent", mean_util)),
        ))
    return out
