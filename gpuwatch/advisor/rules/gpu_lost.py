"""``gpu-lost`` while a GPU is off the bus (critical, at once); ``gpu-recovered`` when it
comes back (info, shown for two minutes)."""

from __future__ import annotations

from gpuwatch.advisor import badges
from gpuwatch.advisor.context import Finding, RuleContext
from gpuwatch.core.hints import HintAction, Severity
from gpuwatch.core.units import format_duration

LOST = "gpu-lost"
RECOVERED = "gpu-recovered"


def gpu_lost(ctx: RuleContext) -> list[Finding]:
    log, now = ctx.gpu_log, ctx.now_s
    out = []
    for index, since in sorted(log.lost_since.items()):
        name = log.names.get(index)
        evidence = [f"no readings for {format_duration(now - since)}"]
        if log.errors.get(index):
            evidence.append(f"driver says: {log.errors[index]}")
        out.append(Finding(
            code=LOST, severity=Severity.CRITICAL, gpu_index=index, pid=None,
            title=f"GPU {index}{f' ({name})' if name else ''} was lost", badge=badges.LOST,
            evidence=tuple(evidence),
            actions=(HintAction("Check `dmesg` for Xid errors; the processes on it have "
                                "probably failed"),
                     HintAction("A GPU reset (nvidia-smi -r) or a reboot brings it back")),
            values=(("lost_at_s", since),), immediate=True, clear_after_s=0.0,
        ))
    for index, (lost_at, back_at) in sorted(log.recovered.items()):
        if now - back_at > ctx.settings.recovered_show_s or index in log.lost_since:
            continue
        out.append(Finding(
            code=RECOVERED, severity=Severity.INFO, gpu_index=index, pid=None,
            title=f"GPU {index} is back after {format_duration(back_at - lost_at)}",
            evidence=(f"lost for {format_duration(back_at - lost_at)}",),
            actions=(HintAction("Restart the jobs that ran on it from their last checkpoint"),),
            values=(("lost_at_s", lost_at), ("recovered_at_s", back_at)), immediate=True,
        ))
    return out
