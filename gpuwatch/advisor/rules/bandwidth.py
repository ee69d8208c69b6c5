"""``bandwidth-saturated``: device memory busy near 100 % for minutes (informational).

NVML's memory utilisation is the fraction of time memory was being read or written,
not occupancy. When even its 10th percentile over two minutes is ≥ 95 %, the run is
memory-bound: larger arithmetic intensity (fused kernels, flash attention, bf16) pays
more than more compute.
"""

from __future__ import annotations

import numpy as np

from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.units import format_duration, format_rate

CODE = "bandwidth-saturated"


def bandwidth_saturated(ctx: RuleContext) -> list[Finding]:
    s = ctx.settings
    out = []
    for gpu in ctx.ok_gpus():
        w = ctx.gpu_window(gpu.index, s.bandwidth_window_s,
                           ("memory_busy_percent", "estimated_bandwidth_bytes_per_s"))
        t, busy = w["timestamp_s"], w["memory_busy_percent"]
        known = ~np.isnan(busy)
        if known.sum() < 3 or t[-1] - t[0] < 0.95 * s.bandwidth_window_s:
            continue
        bar = s.bandwidth_busy_percent - (5.0 if ctx.is_active(CODE, gpu.index) else 0.0)
        if float(np.fmax.reduce(busy)) < bar:      # no quantile is above the largest
            continue
        low = float(np.quantile(busy[known], s.bandwidth_quantile))
        if low < bar:
            continue
        bw = w["estimated_bandwidth_bytes_per_s"]
        share = 100 * (1 - s.bandwidth_quantile)
        evidence = [f"memory busy (being read or written) {low:.0f} % of the time or more, in "
                    f"{share:.0f} % of the samples of the last {format_duration(t[-1] - t[0])}"]
        if not np.isnan(bw).all():
            evidence.append(f"≈ {format_rate(float(np.nanmean(bw)))} estimated "
                            "(busy % × peak bandwidth)")
        out.append(Finding(
            code=CODE, severity=Severity.INFO, gpu_index=gpu.index, pid=None,
            title=f"GPU {gpu.index} is memory-bandwidth bound",
            evidence=tuple(evidence),
            actions=(HintAction("Fuse memory-bound operations (torch.compile), use flash "
                                "attention and 16-bit activations to move fewer bytes"),),
            values=(("memory_busy_percent", low),),
        ))
    return out
