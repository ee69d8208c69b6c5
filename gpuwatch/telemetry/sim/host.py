"""Host details of simulated processes, answered from the scenario."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

from gpuwatch.telemetry.clock import Clock
from gpuwatch.telemetry.hostinfo import HostProcess
from gpuwatch.telemetry.sim.library import SimulatedNvml


class ScenarioHost:
    """Answers from the scenario. A scenario's facts do not change while a process
    lives, so the same answer (the same dict) is given again while the pids asked about
    are the same and no process has started or ended since: callers must not change it."""

    def __init__(self, nvml: SimulatedNvml, clock: Clock):
        self._nvml = nvml
        self._clock = clock
        processes = nvml.scenario.processes
        self._by_pid = {p.pid: p for p in processes}
        # Times at which a process starts or ends: who is alive is the same between two.
        self._changes = sorted({p.start_s for p in processes}
                               | {p.end_s for p in processes if p.end_s is not None})
        self._answers: dict[int, HostProcess] = {}   # the scenario's facts do not change
        self._epoch: float | None = None
        # A lap of a looping scenario moves the epoch by the scenario's length; a scaled
        # clock read twice (the time, then the scenario time) moves it by microseconds.
        self._restart_s = min(1.0, nvml.scenario.duration_s / 2)
        self._last: tuple[float, float, frozenset[int], dict[int, HostProcess]] | None = None

    def pid_namespace_isolated(self) -> bool:
        return False

    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        t = self._nvml.scenario_time_s()
        epoch = self._clock.now_s() - t
        if self._epoch is None or abs(epoch - self._epoch) > self._restart_s:
            self._answers.clear()     # a looping scenario restarts its processes
            self._epoch = epoch
            self._last = None
        last = self._last
        if last is not None and last[0] <= t < last[1] and last[2] == pids:
            return last[3]
        out: dict[int, HostProcess] = {}
        wanted = frozenset(pids)
        for pid in wanted:
            p = self._by_pid.get(pid)
            if p is None or not p.alive_at(t):
                continue
            answer = self._answers.get(pid)
            if answer is None:
                answer = self._answers[pid] = HostProcess(
                    name=p.name,
                    cmdline=p.cmdline,
                    user=p.user,
                    container=p.container,
                    cpu_percent=p.cpu_percent,
                    rss_bytes=p.rss_bytes,
                    started_at_s=epoch + p.start_s,
                )
            out[pid] = answer
        i = bisect.bisect_right(self._changes, t)
        changes = self._changes
        self._last = (changes[i - 1] if i else -math.inf,
                      changes[i] if i < len(changes) else math.inf, wanted, out)
        return out
