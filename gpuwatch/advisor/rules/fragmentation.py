"""``fragmentation``: memory held far beyond what the process's tensors need.

Two ways to see it:

* with a linked budget: the process's measured memory (90th percentile over the last
  minute) exceeds the budget's peak by a large amount, both absolute (≥ 2 GiB) and
  relative (≥ 50 % of the budget). The excess is what the caching allocator holds
  in blocks it cannot reuse, or something the budget does not know about.
* with allocator statistics (from the in-process probe): reserved ≫ allocated,
  a large ``inactive_split_bytes``, or allocation retries.
"""

from __future__ import annotations

import numpy as np

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import AllocatorStats, HintAction, Severity
from gpuwatch.core.snapshot import GpuSample, ProcessSample
from gpuwatch.core.units import format_bytes, format_duration

CODE = "fragmentation"
ALLOC_CONF = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"


def _actions(reclaim: float | None) -> tuple[HintAction, ...]:
    return (
        HintAction(f"Restart with {ALLOC_CONF} (PyTorch ≥ 2.1): segments grow in place "
                   "instead of splitting", None if reclaim is None else int(reclaim)),
        HintAction("Or cap block splitting: PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512"),
        HintAction("Pad variable-length batches to a few fixed lengths (bucketing) so "
                   "freed blocks fit the next step"),
    )


def unexplained(ctx: RuleContext, gpu_index: int, pid: int) -> tuple[float, float] | None:
    """(measured, measured − budget) when the process holds far more than its linked
    budget explains; None when it does not, or has no budget."""
    s = ctx.settings
    link = ctx.links.get((gpu_index, pid))
    if link is None:
        return None
    used = ctx.process_window(gpu_index, pid, s.frag_window_s)["used_bytes"]
    used = used[~np.isnan(used)]
    if used.size == 0:
        return None
    measured = float(np.percentile(used, 90))
    extra = measured - link.peak_bytes
    bar = 0.75 if ctx.is_active(CODE, gpu_index, pid) else 1.0
    if (extra < bar * s.frag_min_unexplained_bytes
            or extra < bar * s.frag_min_unexplained_fraction * link.peak_bytes):
        return None
    return measured, extra


def _from_budget(ctx: RuleContext, gpu: GpuSample, p: ProcessSample) -> Finding | None:
    s = ctx.settings
    link = ctx.links.get((gpu.index, p.pid))
    found = unexplained(ctx, gpu.index, p.pid)
    if link is None or found is None:
        return None
    measured, extra = found
    return Finding(
        code=CODE, severity=Severity.WARNING, gpu_index=gpu.index, pid=p.pid,
        process_name=p.name,
        title=(f"pid {p.pid} holds {format_bytes(extra)} more than its budget: "
               "likely allocator fragmentation"),
        badge=badges.fragmented(extra),
        evidence=(f"it holds {format_bytes(measured)} (its usual peak over the last "
                  f"{format_duration(s.frag_window_s)}); its budget ({link.label}) peaks at "
                  f"{format_bytes(link.peak_bytes)}",
                  f"{format_bytes(extra)} ({100 * extra / link.peak_bytes:.0f} % of the "
                  "budget) is not explained by the model, its optimizer or activations"),
        actions=_actions(extra),
        values=(("measured_bytes", int(measured)), ("budget_bytes", link.peak_bytes),
                ("unexplained_bytes", int(extra))),
    )


def _from_allocator(ctx: RuleContext, gpu: GpuSample, p: ProcessSample,
                    st: AllocatorStats) -> Finding | None:
    s = ctx.settings
    bar = 0.75 if ctx.is_active(CODE, gpu.index, p.pid) else 1.0
    evidence = []
    slack = None
    # Between steps a healthy caching allocator keeps what the step's top needs: judged
    # against that top (the peak allocation) where the probe reports it, not against
    # what happens to be allocated at the moment of the sample.
    needed = st.allocated_bytes if st.allocated_peak_bytes is None else \
        max(st.allocated_peak_bytes, st.allocated_bytes or 0)
    if st.reserved_bytes is not None and needed is not None:
        slack = st.reserved_bytes - needed
        if (slack >= bar * s.frag_min_slack_bytes
                and slack >= bar * s.frag_slack_fraction * st.reserved_bytes):
            evidence.append(
                f"allocator reserves {format_bytes(st.reserved_bytes)} but only "
                f"{format_bytes(st.allocated_bytes)} is allocated "
                f"({format_bytes(slack)} cached and idle)" if st.allocated_peak_bytes is None
                else f"allocator reserves {format_bytes(st.reserved_bytes)} but its tensors "
                f"never held more than {format_bytes(needed)} at once "
                f"({format_bytes(slack)} cached beyond any step's need)")
    if (st.inactive_split_bytes is not None
            and st.inactive_split_bytes >= bar * s.frag_min_inactive_split_bytes):
        evidence.append(f"{format_bytes(st.inactive_split_bytes)} sits in split blocks "
                        "that cannot serve larger requests")
    retries = st.num_alloc_retries or 0
    if retries > 0:
        evidence.append(f"{retries} allocation retr{'y' if retries == 1 else 'ies'}: the "
                        "allocator had to free its cache to satisfy a request")
    if not evidence:
        return None
    return Finding(
        code=CODE, severity=Severity.WARNING, gpu_index=gpu.index, pid=p.pid,
        process_name=p.name,
        title=f"pid {p.pid}: the caching allocator is fragmented",
        badge=badges.fragmented(slack),
        evidence=tuple(evidence),
        actions=_actions(slack if slack is not None and slack > 0 else None),
        values=(("reserved_bytes", st.reserved_bytes), ("allocated_bytes", st.allocated_bytes),
                ("inactive_split_bytes", st.inactive_split_bytes),
                ("num_alloc_retries", st.num_alloc_retries),
                ("allocated_peak_bytes", st.allocated_peak_bytes)),
    )


def fragmentation(ctx: RuleContext) -> list[Finding]:
    out: list[Finding] = []
    links, allocator = ctx.links, ctx.allocator
    if not links and not allocator:     # nothing to go on (the common case): no loop
        return out
    for gpu in ctx.ok_gpus():
        for p in gpu.processes:
            key = (gpu.index, p.pid)
            stats = allocator.get(key)
            if stats is None and key not in links:
                continue
            found = (_from_allocator(ctx, gpu, p, stats) if stats is not None else None) \
                or _from_budget(ctx, gpu, p)
            if found is not None:
                out.append(found)
    return out
