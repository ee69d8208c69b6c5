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
import threading
from dataclasses import dataclass, field

import pynvml

from gpuwatch.telemetry.sim.scenario import ScenarioGpu, ScenarioProcess
from gpuwatch.telemetry.sim.signals import ALWAYS, Points

_NO_INSTANCE = 0xFFFFFFFF   # gpuInstanceId / computeInstanceId outside MIG
_INF = math.inf
# pynvml's friendly object, as its process-list calls return it: made without its
# constructor's setattr loop, its attributes given as one dict
_Friendly = pynvml.nvmlFriendlyObject
_new_friendly = object.__new__


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
    structs: dict = field(default_factory=dict)   # NVML structures filled in, to copy


def scenario_span(local_from: float, local_to: float, start_s: float) -> tuple[float, float]:
    """Scenario times ``[from, to)`` whose process-local time ``t - start_s`` lies within
    ``[local_from, local_to]``, whatever the subtraction rounds to.

    One step of floating-point spacing inwards at each end is enough: the rounded sum is
    within half a step of the exact one, and rounding the subtraction is monotonic."""
    lo = -_INF if local_from == -_INF else math.nextafter(local_from + start_s, _INF)
    hi = _INF if local_to == _INF else math.nextafter(local_to + start_s, -_INF)
    return lo, hi


class _Row:
    """One process as working out a state reads it: its facts looked up once, the
    straight piece of its memory signal it was last on (``at(x)`` is ``v0 + rise *
    (x - t0) / run`` for ``piece_from <= x < piece_until``), and its last friendly
    object with the figure it holds."""

    __slots__ = (
        "in_compute",
        "in_graphics",
        "info",
        "mem",
        "memory",
        "pid",
        "piece_from",
        "piece_until",
        "process",
        "report",
        "rise",
        "run",
        "start",
        "t0",
        "v0",
    )

    def __init__(self, p: ScenarioProcess):
        self.process, self.pid, self.start, self.memory = p, p.pid, p.start_s, p.memory
        self.in_compute, self.in_graphics = p.kind != "graphics", p.kind != "compute"
        self.report = p.report_memory
        self.piece_from, self.piece_until = _INF, -_INF     # no piece yet
        self.v0 = self.rise = self.t0 = 0.0
        self.run = 1.0
        self.mem = -1
        self.info: object = None

    def memory_at(self, local: float) -> int:
        """The memory at process-local time ``local``, off the signal (a new piece)."""
        memory = self.memory
        if isinstance(memory, Points):
            (self.piece_from, self.piece_until, self.v0, self.rise, self.t0,
             self.run) = memory.segment(local)
            return int(self.v0 + self.rise * (local - self.t0) / self.run)
        return int(memory.at(local))


class GpuTimeline:
    """One GPU of a scenario, with its processes in scenario order."""

    def __init__(self, spec: ScenarioGpu, processes: list[ScenarioProcess]):
        self._spec = spec
        self._rows = [_Row(p) for p in processes]
        self._limit = spec.memory_total_bytes - spec.memory_reserved_bytes
        # Times at which a process starts or ends: the set alive is the same between two.
        self._changes = sorted({p.start_s for p in processes}
                               | {p.end_s for p in processes if p.end_s is not None})
        self._alive: tuple[float, float, list[_Row], tuple | None] = (_INF, -_INF, [], None)
        self._state: GpuState | None = None
        self._working = threading.Lock()

    def state(self, t: float) -> GpuState:
        s = self._state
        if s is not None and s.valid_from <= t < s.valid_until:
            return s
        with self._working:     # a PCIe poller thread may ask too; rows are updated
            s = self._state = self._work_out(t)
        return s

    def _alive_at(self, t: float) -> tuple[float, float, list[_Row], tuple | None]:
        """(from, until, the rows of the processes alive in between, the utilisation and
        memory busy sums when none of theirs ever changes)."""
        alive = self._alive
        if alive[0] <= t < alive[1]:
            return alive
        changes = self._changes
        i = bisect.bisect_right(changes, t)
        lo = changes[i - 1] if i else -_INF
        hi = changes[i] if i < len(changes) else _INF
        rows = [r for r in self._rows if r.process.alive_at(t)]
        procs = [r.process for r in rows]
        sums = None
        if all(s.flat_span(0.0) == ALWAYS for p in procs
               for s in (p.gpu_util_percent, p.memory_busy_percent)):
            util = busy = 0.0
            for p in procs:      # in process order, as at every tick: the same rounding
                util += p.gpu_util_percent.at(0.0)
                busy += p.memory_busy_percent.at(0.0)
            sums = (util, busy)
        self._alive = (lo, hi, rows, sums)
        return self._alive

    def _work_out(self, t: float) -> GpuState:
        lo, hi, alive, sums = self._alive_at(t)
        steady = True
        used = self._spec.memory_base_bytes
        compute: list = []
        graphics: list = []
        for r in alive:
            local = t - r.start
            if r.piece_from <= local < r.piece_until:      # on the same straight piece
                mem = int(r.v0 + r.rise * (local - r.t0) / r.run)
            else:
                mem = r.memory_at(local)
            used += mem
            if steady:
                span = _flat_span(r.process, local)
                if span is None:
                    steady = False
                else:
                    span_lo, span_hi = scenario_span(*span, r.start)
                    lo = max(lo, span_lo)
                    hi = min(hi, span_hi)
            # The object made before while the figure is unchanged (flat memory is the
            # common case: no new objects a tick).
            if mem == r.mem:
                info = r.info
            else:
                info = r.info = _new_friendly(_Friendly)
                info.__dict__ = {"pid": r.pid, "usedGpuMemory": mem if r.report else None,
                                 "gpuInstanceId": _NO_INSTANCE,
                                 "computeInstanceId": _NO_INSTANCE}
                r.mem = mem
            if r.in_compute:
                compute.append(info)
            if r.in_graphics:
                graphics.append(info)
        if sums is not None:
            util, busy = sums
        else:
            util = busy = 0.0
            for r in alive:
                p, local = r.process, t - r.start
                util += p.gpu_util_percent.at(local)
                busy += p.memory_busy_percent.at(local)
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
