"""Which checks cannot judge yet, for want of history: short sentences for a window that
would otherwise say "nothing needs your attention" while it simply does not know yet.

* ``oom-risk`` forecasts a climb from ``trend_min_span_s`` (2 min) of a GPU's history,
  and not a process's climb at the pace it started with in its first ``oom_warmup_s``
  (6 min) on the GPU (its warm-up);
* ``memory-leak`` judges a process after ``leak_warmup_s`` + ``leak_min_span_s``
  (16 min) of its history.
"""

from __future__ import annotations

import math

from gpuwatch.advisor.context import first_seen_s
from gpuwatch.advisor.settings import AdvisorSettings
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import GpuState, ProcessSample
from gpuwatch.core.units import format_duration

NAMED = 3    # processes named in one sentence; the rest are counted


def _so_far(seconds: float) -> str:
    """Whole minutes, or tens of seconds under a minute: ``5 min``, ``40 s``."""
    step = 60 if seconds >= 60 else 10
    return format_duration(math.floor(max(0.0, seconds) / step) * step)


def _who(p: ProcessSample) -> str:
    return f"pid {p.pid} ({p.name or '?'})"


def _listing(young: list[tuple[ProcessSample, float]]) -> str:
    """``pid 1 (python) has 5 min so far``, or for several ``pid 1 (python), pid 2
    (python), pid 3 (python) and 2 more have 1 min to 5 min so far``."""
    if len(young) == 1:
        p, age = young[0]
        return f"{_who(p)} has {_so_far(age)} so far"
    names = ", ".join(_who(p) for p, _ in young[:NAMED])
    if len(young) > NAMED:
        names += f" and {len(young) - NAMED} more"
    else:
        names = " and".join(names.rsplit(",", 1))
    low, high = (_so_far(f(age for _, age in young)) for f in (min, max))
    return f"{names} have {high if low == high else f'{low} to {high}'} so far"


def pending_judgements(history: History, settings: AdvisorSettings) -> list[str]:
    snap = history.latest
    if snap is None:
        return []
    s, now = settings, snap.timestamp_s
    out: list[str] = []
    leak_needs = s.leak_warmup_s + s.leak_min_span_s
    leak_young: list[tuple[ProcessSample, float]] = []
    for gpu in snap.gpus:
        if gpu.state != GpuState.OK:
            continue
        procs = [p for p in gpu.processes if p.kind != "graphics" and p.used_bytes is not None]
        if not procs:
            continue
        ring = history.gpu(gpu.index)
        seen = (None if ring is None else
                ring.since(now - s.trend_window_s, ("timestamp_s",))["timestamp_s"])
        span = now - float(seen[0]) if seen is not None and seen.size else 0.0
        if span < s.trend_min_span_s:
            out.append(f"Forecasts of GPU {gpu.index} running out of memory need "
                       f"{format_duration(s.trend_min_span_s)} of history "
                       f"({_so_far(span)} so far)")
        warming = []
        for p in procs:
            first = first_seen_s(history, gpu.index, p.pid)
            age = math.inf if first is None else now - first
            if age < s.oom_warmup_s:
                warming.append((p, age))
            if age < leak_needs:
                leak_young.append((p, age))
        if warming:
            warming.sort(key=lambda pa: pa[1])
            out.append(f"Warming up on GPU {gpu.index}, so growth at its starting pace "
                       f"is not forecast until it has run {format_duration(s.oom_warmup_s)}: "
                       f"{_listing(warming)}")
    if leak_young:
        leak_young.sort(key=lambda pa: -pa[1])
        out.append(f"Leak detection needs {format_duration(leak_needs)} of history per "
                   f"process: {_listing(leak_young)}")
    return out
