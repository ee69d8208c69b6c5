"""``budget-exceeds-capacity``: a linked budget's peak does not fit what is left on its GPU.

"Left" is total − reserved − a small margin − what everything else on the GPU holds
now (other processes and the driver). Fires as soon as the process is linked, which
is usually long before it reaches its peak; the actions are the budget's what-if
levers, each marked with whether it alone would make the run fit.
"""

from __future__ import annotations

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import Finding, RuleContext, process_of
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.units import format_bytes

CODE = "budget-exceeds-capacity"
MAX_ACTIONS = 4


def shortfall(ctx: RuleContext, gpu_index: int, pid: int) -> tuple[float, float] | None:
    """(bytes the linked budget lacks, bytes left for it), or None when it fits/unknown."""
    link = ctx.links.get((gpu_index, pid))
    gpu = ctx.snapshot.gpu(gpu_index)
    if link is None or gpu is None:
        return None
    limit, others = ctx.limit_bytes(gpu), ctx.others_bytes(gpu, pid)
    if limit is None or others is None:
        return None
    left = limit - others
    lacking = link.peak_bytes - left
    return (lacking, left) if lacking > 0 else None


def budget_exceeds_capacity(ctx: RuleContext) -> list[Finding]:
    out = []
    for (gpu_index, pid), link in sorted(ctx.links.items()):
        gpu = ctx.snapshot.gpu(gpu_index)
        proc = None if gpu is None else process_of(gpu, pid)
        if gpu is None or proc is None:
            continue
        found = shortfall(ctx, gpu_index, pid)
        if found is None:
            continue
        lacking, left = found
        total = gpu.memory.total_bytes or 0
        fits = [a for a in link.levers if (a.saves_bytes or 0) >= lacking]
        rest = [a for a in link.levers if a not in fits]
        actions = [HintAction(f"{a.text} — enough on its own", a.saves_bytes) for a in fits]
        actions += rest
        if not actions:
            actions = [HintAction("Lower the micro-batch or the sequence length, or run it on "
                                  "a GPU with more free memory")]
        out.append(Finding(
            code=CODE, severity=Severity.WARNING, gpu_index=gpu_index, pid=pid,
            process_name=proc.name,
            title=(f"Budget for pid {pid} needs {format_bytes(link.peak_bytes)}; "
                   f"GPU {gpu_index} has {format_bytes(max(0.0, left))} left"),
            evidence=(f"linked budget: {link.label}, peak {format_bytes(link.peak_bytes)}",
                      f"GPU {gpu_index}: {format_bytes(total)} total, "
                      f"{format_bytes(gpu.memory.reserved_bytes or 0)} reserved, "
                      f"{format_bytes(ctx.others_bytes(gpu, pid) or 0)} held by others",
                      f"short by {format_bytes(lacking)}: expect an out-of-memory error "
                      "at the run's peak"),
            actions=tuple(actions[:MAX_ACTIONS]), badge=badges.short(lacking),
            values=(("budget_bytes", link.peak_bytes), ("left_bytes", int(left)),
                    ("short_bytes", int(lacking))),
        ))
    return out
