"""``likely-oom``: a process exited while its GPU was full, or while ``oom-risk`` was open
for that GPU: it probably died of an out-of-memory error.

NVML cannot say why a process ended, so this is an inference, and the hint says
"likely". It names the memory the GPU held as the process went, the budget linked to it
if any, and the levers that would have made it fit. It opens at once and stays up for
``oom_exit_show_s`` (10 min), then closes.
"""

from __future__ import annotations

import os

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.advisor.process_log import ProcessExit
from gpuwatch.advisor.rules.fragmentation import ALLOC_CONF
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.units import format_bytes, format_duration

CODE = "likely-oom"
MAX_ACTIONS = 4


def short_command(name: str | None, cmdline: tuple[str, ...]) -> str:
    """``python train.py`` from ``("python", "train.py", "--batch", "8")``; ``python -m
    ipykernel_launcher`` for a module; the process name when there is no command line."""
    if not cmdline:
        return name or "?"
    words = [os.path.basename(cmdline[0])]
    rest = list(cmdline[1:])
    if rest[:1] == ["-m"] and len(rest) > 1:
        words += rest[:2]
    elif rest and not rest[0].startswith("-"):
        words.append(os.path.basename(rest[0]))
    return " ".join(words)


def _died_full(ctx: RuleContext, e: ProcessExit) -> bool:
    capacity = e.gpu_capacity_bytes
    full = (capacity is not None and e.gpu_peak_bytes is not None
            and e.gpu_peak_bytes >= ctx.settings.oom_exit_used_fraction * capacity)
    return full or e.oom_risk is not None


def _actions(e: ProcessExit) -> tuple[HintAction, ...]:
    actions = [HintAction("Check its log for \"CUDA out of memory\" "
                          "(torch.OutOfMemoryError) to confirm")]
    if e.budget is not None and e.budget.levers:
        actions += [HintAction(f"Resume from its last checkpoint with {a.text}", a.saves_bytes)
                    for a in e.budget.levers[:MAX_ACTIONS - 1]]
    else:
        actions += [HintAction("Resume from its last checkpoint with a smaller micro-batch "
                               "(raise gradient accumulation to keep the effective batch)"),
                    HintAction("Or enable activation checkpointing, which trades about a "
                               "third more compute for most of the activation memory"),
                    HintAction(f"If memory was fragmented, start it with {ALLOC_CONF}")]
    return tuple(actions[:MAX_ACTIONS])


def _finding(ctx: RuleContext, e: ProcessExit) -> Finding:
    total = e.gpu_total_bytes or 0
    peak = e.gpu_peak_bytes
    who = f"pid {e.pid} ({short_command(e.name, e.cmdline)})"
    at = (f"{format_bytes(peak)} / {format_bytes(total)}" if peak is not None and total
          else "a full GPU")
    evidence = []
    if peak is not None and total:
        evidence.append(f"GPU {e.gpu_index} held {format_bytes(peak)} of {format_bytes(total)} "
                        f"({100 * peak / total:.0f} %) in its last "
                        f"{format_duration(ctx.settings.oom_exit_window_s)}"
                        + ("" if e.used_bytes is None
                           else f", {format_bytes(e.used_bytes)} of it held by this process"))
    if e.oom_risk is not None:
        evidence.append(f"the out-of-memory warning had been up for "
                        f"{format_duration(e.exited_at_s - e.oom_risk.opened_at_s)}: "
                        f"\"{e.oom_risk.title}\"")
    if e.budget is not None:
        capacity = e.gpu_capacity_bytes
        evidence.append(f"its linked budget ({e.budget.label}) peaks at "
                        f"{format_bytes(e.budget.peak_bytes)}"
                        + ("" if capacity is None else
                           f"; GPU {e.gpu_index} has {format_bytes(capacity)} usable"))
    return Finding(
        code=CODE, severity=Severity.WARNING, gpu_index=e.gpu_index, pid=e.pid,
        process_name=e.name,
        title=f"{who} exited at {at} — likely out of memory",
        badge=badges.died(e.pid),
        evidence=tuple(evidence), actions=_actions(e),
        values=(("exited_at_s", e.exited_at_s), ("gpu_used_bytes", peak),
                ("total_bytes", total or None), ("process_bytes", e.used_bytes),
                ("budget_bytes", None if e.budget is None else e.budget.peak_bytes)),
        immediate=True, clear_after_s=0.0,
    )


def likely_oom(ctx: RuleContext) -> list[Finding]:
    show = ctx.settings.oom_exit_show_s
    return [_finding(ctx, e) for e in ctx.exits
            if ctx.now_s - e.exited_at_s < show and _died_full(ctx, e)]
