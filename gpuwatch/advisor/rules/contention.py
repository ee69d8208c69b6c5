"""``contention``: several processes share a GPU and their needs together do not fit.

A process's need is its linked budget's peak (or its measured peak over the last two
minutes if that is larger); without a budget, its measured peak. Processes below
512 MiB (the desktop, a browser) are not rivals. Peaks that do not coincide today can
coincide tomorrow: when they do, one of the processes runs out of memory.
"""

from __future__ import annotations

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.snapshot import GpuSample
from gpuwatch.core.units import format_bytes

CODE = "contention"


def _needs(ctx: RuleContext, gpu: GpuSample,
           peaks: list[float | None]) -> list[tuple[int, str | None, float, bool]]:
    """(pid, name, need, from a budget) for every process on the GPU (``peaks``: their
    measured peaks, in its order)."""
    out = []
    links = ctx.links
    for p, peak in zip(gpu.processes, peaks, strict=True):
        link = links.get((gpu.index, p.pid)) if links else None
        if link is not None:
            out.append((p.pid, p.name, max(float(link.peak_bytes), peak or 0.0), True))
        elif peak is not None:
            out.append((p.pid, p.name, peak, False))
    return out


def _best_other_gpu(ctx: RuleContext, index: int) -> tuple[int, float] | None:
    best = None
    for g in ctx.ok_gpus():
        limit = ctx.limit_bytes(g)
        if g.index == index or limit is None or g.memory.used_bytes is None:
            continue
        free = limit - g.memory.used_bytes
        if best is None or free > best[1]:
            best = (g.index, free)
    return best


def contention(ctx: RuleContext) -> list[Finding]:
    s = ctx.settings
    out = []
    for gpu in ctx.ok_gpus():
        limit = ctx.limit_bytes(gpu)
        peaks = ctx.process_peaks(gpu, s.contention_window_s)
        linked = bool(ctx.links) and any((gpu.index, p.pid) in ctx.links
                                         for p in gpu.processes)
        # the needs' sizes alone first (the tuples only for a GPU that is over)
        sizes = ([n[2] for n in _needs(ctx, gpu, peaks)] if linked
                 else [peak for peak in peaks if peak is not None])
        bar_bytes = s.contention_min_process_bytes
        rival_sizes = [size for size in sizes if size >= bar_bytes]
        if limit is None or len(rival_sizes) < 2:
            continue
        known = sum(p.used_bytes or 0 for p in gpu.processes)
        driver = max(0.0, (gpu.memory.used_bytes or known) - known)
        small = sum(size for size in sizes if size < bar_bytes)
        combined = sum(rival_sizes) + small + driver
        bar = limit * (0.97 if ctx.is_active(CODE, gpu.index) else 1.0)
        if combined <= bar:
            continue
        rivals = [n for n in _needs(ctx, gpu, peaks) if n[2] >= bar_bytes]
        rivals.sort(key=lambda n: -n[2])
        listing = ", ".join(f"pid {pid} ({name or '?'}) {format_bytes(need)}"
                            f"{' budget' if budgeted else ' peak'}"
                            for pid, name, need, budgeted in rivals)
        actions = []
        other = _best_other_gpu(ctx, gpu.index)
        smallest = rivals[-1]
        if other is not None and other[1] >= smallest[2]:
            actions.append(HintAction(f"Move pid {smallest[0]} to GPU {other[0]} "
                                      f"({format_bytes(other[1])} free), e.g. with "
                                      f"CUDA_VISIBLE_DEVICES={other[0]}"))
        actions.append(HintAction("Run them one after the other, or shrink one of them "
                                  f"by {format_bytes(combined - limit)}"))
        out.append(Finding(
            code=CODE, severity=Severity.WARNING, gpu_index=gpu.index, pid=None,
            title=(f"GPU {gpu.index}: {len(rivals)} processes need {format_bytes(combined)} "
                   f"together; {format_bytes(limit)} fits"),
            evidence=(listing, f"with the driver and small processes: {format_bytes(combined)} "
                      f"vs {format_bytes(limit)} usable ({format_bytes(combined - limit)} over)"),
            actions=tuple(actions), badge=badges.over(combined - limit),
            values=(("combined_bytes", int(combined)), ("usable_bytes", int(limit)),
                    ("processes", len(rivals))),
        ))
    return out
