"""Host details of simulated processes, answered from the scenario."""

from __future__ import annotations

from collections.abc import Iterable

from gpuwatch.telemetry.clock import Clock
from gpuwatch.telemetry.hostinfo import HostProcess
from gpuwatch.telemetry.sim.library import SimulatedNvml


class ScenarioHost:
    def __init__(self, nvml: SimulatedNvml, clock: Clock):
        self._nvml = nvml
        self._clock = clock
        self._by_pid = {p.pid: p for p in nvml.scenario.processes}
        self._answers: dict[int, HostProcess] = {}   # the scenario's facts do not change
        self._epoch = None

    def pid_namespace_isolated(self) -> bool:
        return False

    def lookup(self, pids: Iterable[int]) -> dict[int, HostProcess]:
        t = self._nvml.scenario_time_s()
        epoch = self._clock.now_s() - t
        if epoch != self._epoch:      # a looping scenario restarts its processes
            self._answers.clear()
            self._epoch = epoch
        out: dict[int, HostProcess] = {}
        for pid in pids:
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
        return out
