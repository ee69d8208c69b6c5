"""Builders for advisor tests: constructed snapshots and histories, and scenario runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gpuwatch.advisor import Advisor, AdvisorSettings, LinkedBudget
from gpuwatch.advisor.context import RuleContext
from gpuwatch.advisor.gpu_log import GpuLog
from gpuwatch.core.hints import AllocatorStats, HintEvent, HintEventKind, HintKey
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.telemetry.source import SourceOptions, open_backend

MIB = 1024**2
GIB = 1024**3
T0 = 1_700_000_000.0


def gpu(index: int = 0, total: float = 24 * GIB, used: float | None = 0.0,
        reserved: float = 0.0, util: float | None = None, busy: float | None = None,
        procs: Iterable[tuple[int, float | None]] = (), state: GpuState = GpuState.OK,
        kind: str = "compute") -> GpuSample:
    """A GPU sample; ``procs`` are (pid, used bytes). ``used`` None: memory unknown."""
    free = None if used is None else total - used - reserved
    return GpuSample(
        index=index, uuid=None, name="Test GPU", state=state,
        memory=MemoryInfo(int(total), None if used is None else int(used),
                          None if free is None else int(free), int(reserved)),
        gpu_util_percent=util, memory_busy_percent=busy,
        processes=tuple(ProcessSample(pid, index, None if u is None else int(u), kind,
                                      name=f"proc{pid}") for pid, u in procs))


def snapshot(t: float, *gpus: GpuSample) -> Snapshot:
    return Snapshot(T0 + t, BackendInfo(BackendKind.SIMULATED), tuple(gpus))


def history_of(make: Callable[[float], Snapshot], duration_s: float,
               step_s: float = 1.0) -> History:
    """A history of ``make(t)`` for t = 0, step, … ≤ duration (seconds after T0)."""
    h = History()
    n = int(duration_s / step_s)
    for i in range(n + 1):
        h.append(make(i * step_s))
    return h


def context(history: History, settings: AdvisorSettings | None = None,
            links: Mapping[tuple[int, int], LinkedBudget] | None = None,
            allocator: Mapping[tuple[int, int], AllocatorStats] | None = None,
            active: Iterable[HintKey] = ()) -> RuleContext:
    log = GpuLog()
    log.observe(history.latest)   # type: ignore[arg-type]
    return RuleContext(history, settings or AdvisorSettings(), links or {}, allocator or {},
                       frozenset(active), log)


@dataclass
class Run:
    """What one scenario run produced."""

    events: list[tuple[float, HintEvent]] = field(default_factory=list)   # (elapsed s, event)
    first_open: dict[str, float] = field(default_factory=dict)           # code -> elapsed s
    full_at_s: dict[int, float] = field(default_factory=dict)            # gpu -> first full

    def codes(self, min_severity: str | None = None) -> set[str]:
        order = ["info", "warning", "critical"]
        bar = 0 if min_severity is None else order.index(min_severity)
        return {e.hint.code for _, e in self.events
                if e.kind is not HintEventKind.CLOSED
                and order.index(e.hint.severity.value) >= bar}


def run_scenario(demo: str, duration_s: float, step_s: float = 1.0,
                 advisor: Advisor | None = None, loop: bool = False,
                 times: Iterable[float] | None = None) -> Run:
    """Drive a scenario through the real simulated backend and the advisor, sampling
    every ``step_s`` up to ``duration_s`` (or at ``times``, ascending)."""
    backend = open_backend(SourceOptions(demo=demo, time_scale="max", loop=loop))
    advisor = advisor or Advisor()
    history = History()
    run = Run()
    if times is None:
        times = [i * step_s for i in range(int(duration_s / step_s) + 1)]
    try:
        for t in times:
            backend.clock.set_elapsed(t)   # type: ignore[attr-defined]
            snap = backend.sample()
            history.append(snap)
            for g in snap.gpus:
                m = g.memory
                if m.free_bytes == 0 and g.index not in run.full_at_s:
                    run.full_at_s[g.index] = t
            for event in advisor.update(history):
                run.events.append((t, event))
                if event.kind is HintEventKind.OPENED:
                    run.first_open.setdefault(event.hint.code, t)
    finally:
        backend.close()
    return run
