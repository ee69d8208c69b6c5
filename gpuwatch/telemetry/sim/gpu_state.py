"""What one simulated GPU shows at a scenario time, worked out once per stretch of time.

A monitor asks NVML about ten things per GPU per tick, and most scenario processes hold
their memory and utilisation flat for long stretches. :class:`GpuTimeline` works out a
GPU's state (memory used, utilisation, the process lists) when asked at a time outside
the stretch it last worked out, and answers from it while time stays within: the
stretch ends where a process starts or ends, or where one of its signals may change.

The values are exactly those evaluated afresh at each time: a stretch only covers times
at which every signal's :meth:`~gpuwatch.telemetry.sim.signals.Signal.flat_span` promises
the same value, converted to scenario time with a margin for rounding.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import pynvml

from gpuwatch.telemetry.sim.scenario import ScenarioGpu, ScenarioProcess

_NO_INSTANCE = 0xFFFFFFFF   # gpuInstanceId / computeInstanceId outside MIG
_INF = math.inf


@dataclass(slots=True)
class GpuState:
    """A GPU's readings, valid for scenario times in ``[valid_from, valid_until)``.

    The process lists hold pynvml friendly objects that are never changed once made;
    callers get copies of the lists.
    """

    used_bytes: int
    util_percent: float
    busy_percent: float
    compute: list
    graphics: list
    any_alive: bool
    valid_from: float
    valid_until: float


def friendly_process(pid: int, used: int | None) -> object:
    """pynvml's friendly object for a process, as its process-list calls return it."""
    info = pynvml.nvmlFriendlyObject.__new__(pynvml.nvmlFriendlyObject)
    info.__dict__ = {"pid": pid, "usedGpuMemory": used, "gpuInstanceId": _NO_INSTANCE,
                     "computeInstanceId": _NO_INSTANCE}
    return info


def scenario_span(local_from: float, local_to: float, start_s: float) -> tuple[float, float]:
    """Scenario times ``[from, to)`` whose process-local time ``t - start_s`` lies within
    ``[local_from, local_to]``, whatever the subtraction rounds to.

    One step of floating-point spacing inwards at each end is enough: the rounded sum is
    within half a step of the exact one, and rounding the subtraction is monotonic."""
    lo = -_INF if local_from == -_INF else math.nextafter(local_from + start_s, _INF)
    hi = _INF if local_to == _INF else math.nextafter(local_to + start_s, -_INF)
    return lo, hi


class GpuTimeline:
    """One GPU of a scenario, with its processes in scenario order."""

    def __init__(self, spec: ScenarioGpu, processes: list[ScenarioProcess]):
        self._spec = spec
        self._processes = processes
        self._limit = spec.memory_total_bytes - spec.memory_reserved_bytes
        # Times at which a process starts or ends: the set alive is the same between two.
        self._changes = sorted({p.start_s for p in processes}
                               | {p.end_s for p in processes if p.end_s is not None})
        self._alive: tuple[float, float, list[tuple]] = (_INF, -_INF, [])
        self._state: GpuState | None = None
        # pid -> (bytes, friendly object): the object made before while unchanged
        self._infos: dict[int, tuple[int, object]] = {}

    def state(self, t: float) -> GpuState:
        s = self._state
        if s is not None and s.valid_from <= t < s.valid_until:
            return s
        s = self._state = self._work_out(t)
        return s

    def _alive_at(self, t: float) -> tuple[float, float, list[tuple]]:
        """(from, until, a row per process alive in between: what working out a state
        reads of it, looked up once)."""
        alive = self._alive
        if alive[0] <= t < alive[1]:
            return alive
        changes = self._changes
        i = bisect.bisect_right(changes, t)
        lo = changes[i - 1] if i else -_INF
        hi = changes[i] if i < len(changes) else _INF
        rows = [(p, p.pid, p.start_s, p.memory.at, p.gpu_util_percent.at,
                 p.memory_busy_percent.at, p.kind != "graphics", p.kind != "compute",
                 p.report_memory)
                for p in self._processes if p.alive_at(t)]
        self._alive = (lo, hi, rows)
        return self._alive

    def _work_out(self, t: float) -> GpuState:
        lo, hi, alive = self._alive_at(t)
        steady = True
        used = self._spec.memory_base_bytes
        util = busy = 0.0
        compute: list = []
        graphics: list = []
        infos = self._infos
        for p, pid, start, memory_at, util_at, busy_at, in_compute, in_graphics, report in alive:
            local = t - start
            mem = int(memory_at(local))
            used += mem
            util += util_at(local)
            busy += busy_at(local)
            if steady:
                span = _flat_span(p, local)
                if span is None:
                    steady = False
                else:
                    span_lo, span_hi = scenario_span(*span, start)
                    lo = max(lo, span_lo)
                    hi = min(hi, span_hi)
            # The object made before while the figure is unchanged (flat memory is the
            # common case: no new objects a tick).
            cached = infos.get(pid)
            if cached is not None and cached[0] == mem:
                info = cached[1]
            else:
                info = friendly_process(pid, mem if report else None)
                infos[pid] = (mem, info)
            if in_compute:
                compute.append(info)
            if in_graphics:
                graphics.append(info)
        if not steady or not lo <= t < hi:
            lo, hi = t, math.nextafter(t, _INF)    # good for this very time only
        return GpuState(min(used, self._limit), min(util, 100.0), min(busy, 100.0),
                        compute, graphics, bool(alive), lo, hi)


def _flat_span(p: ScenarioProcess, local: float) -> tuple[float, float] | None:
    """The process-local span around ``local`` over which all its signals hold still."""
    lo, hi = -_INF, _INF
    for signal in (p.memory, p.gpu_util_percent, p.memory_busy_percent):
        span = signal.flat_span(local)
        if span is None:
            return None
        lo, hi = max(lo, span[0]), min(hi, span[1])
    return lo, hi
