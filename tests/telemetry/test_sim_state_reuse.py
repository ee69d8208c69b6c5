"""The simulated GPUs work a state out once per stretch of time and reuse it; what a user
sees must be exactly what evaluating the scenario afresh at every call gives.

The reference here is the plain computation, written out in this file: every NVML call
evaluates every process's signals at that time and builds new pynvml objects, and the
host answers each lookup afresh. Both run under the real NVML backend, in lockstep on
the same virtual times, and their snapshots must be equal, field for field.
"""

from __future__ import annotations

import math

import pynvml
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sim_support import make_scenario

from gpuwatch.core.snapshot import BackendKind, HostStatus, ProcessSample
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.hostinfo import HostProcess
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.catalog import builtin_names, resolve_scenario
from gpuwatch.telemetry.sim.gpu_state import GpuState, scenario_span
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.probes import ScenarioProbes
from gpuwatch.telemetry.sim.scenario import Scenario

GPU_CALLS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses")


class FreshNvml(SimulatedNvml):
    """The simulated NVML with nothing kept between calls: each call works out the
    GPU's state from the scenario at that time."""

    def _state(self, gpu: int, t: float) -> GpuState:
        spec = self.scenario.gpus[gpu]
        used = spec.memory_base_bytes
        util = busy = 0.0
        compute: list = []
        graphics: list = []
        alive = False
        for p in self.scenario.processes:
            if p.gpu != gpu or not p.alive_at(t):
                continue
            alive = True
            local = t - p.start_s
            mem = int(p.memory.at(local))
            used += mem
            util += p.gpu_util_percent.at(local)
            busy += p.memory_busy_percent.at(local)
            info = pynvml.nvmlFriendlyObject({
                "pid": p.pid, "usedGpuMemory": mem if p.report_memory else None,
                "gpuInstanceId": 0xFFFFFFFF, "computeInstanceId": 0xFFFFFFFF})
            if p.kind != "graphics":
                compute.append(info)
            if p.kind != "compute":
                graphics.append(info)
        limit = spec.memory_total_bytes - spec.memory_reserved_bytes
        return GpuState(min(used, limit), min(util, 100.0), min(busy, 100.0), compute,
                        graphics, alive, t, t)


class FreshHost:
    """The scenario's host details, looked up afresh each time."""

    def __init__(self, nvml: SimulatedNvml, clock: SteppedClock):
        self._nvml, self._clock = nvml, clock
        self._by_pid = {p.pid: p for p in nvml.scenario.processes}

    def pid_namespace_isolated(self) -> bool:
        return False

    def lookup(self, pids):
        t = self._nvml.scenario_time_s()
        epoch = self._clock.now_s() - t
        out = {}
        for pid in pids:
            p = self._by_pid.get(pid)
            if p is not None and p.alive_at(t):
                out[pid] = HostProcess(p.name, p.cmdline, p.user, p.container, p.cpu_percent,
                                       p.rss_bytes, epoch + p.start_s)
        return out


def backends(scenario: Scenario, *, loop: bool = False) -> tuple[NvmlBackend, NvmlBackend]:
    """(the simulation as shipped, the fresh reference), on clocks with the same epoch."""
    made = []
    epoch = 1_700_000_000.0
    for lib_type, host_type in ((SimulatedNvml, ScenarioHost), (FreshNvml, FreshHost)):
        clock = SteppedClock()
        clock.epoch_s = epoch
        lib = lib_type(scenario, clock, loop=loop)
        probes = ScenarioProbes(lib)
        made.append(NvmlBackend(lib, host_type(lib, clock), clock, kind=BackendKind.SIMULATED,
                                scenario=scenario.name, pcie_thread=False,
                                probes=probes if probes else None,
                                scenario_duration_s=scenario.duration_s).open())
    return made[0], made[1]


def times_to_try(scenario: Scenario, grid: int = 97) -> list[float]:
    """A grid over the scenario, and every moment something starts or stops, with the
    nearest times on either side (where rounding could put a reused state wrong)."""
    edges = {0.0, scenario.duration_s}
    for p in scenario.processes:
        edges.add(p.start_s)
        if p.end_s is not None:
            edges.add(p.end_s)
        for signal in (p.memory, p.gpu_util_percent, p.memory_busy_percent):
            edges.update(p.start_s + x for x in getattr(signal, "times", ()))
    for f in scenario.faults:
        edges.add(f.start_s)
        if f.end_s is not None:
            edges.add(f.end_s)
    if len(edges) > 150:      # churn: hundreds of processes; 150 of their edges is plenty
        edges = set(sorted(edges)[::len(edges) // 150 + 1])
    times = {scenario.duration_s * k / grid for k in range(grid + 1)}
    for e in edges:
        times.update((math.nextafter(e, -math.inf), e, math.nextafter(e, math.inf)))
    return sorted(t for t in times if t >= 0)


def lockstep(scenario: Scenario, times: list[float], *, loop: bool = False) -> int:
    """Sample both backends at each time; their snapshots and the raw process lists
    must be equal. Returns the number of processes seen, to show the run saw some."""
    shipped, fresh = backends(scenario, loop=loop)
    seen = 0
    try:
        for t in times:
            shipped.clock.set_elapsed(t)
            fresh.clock.set_elapsed(t)
            a, b = shipped.sample(), fresh.sample()
            assert a == b, f"{scenario.name} differs at {t!r} s"
            seen += len(a.processes)
            for gpu in range(len(scenario.gpus)):
                for call in GPU_CALLS:
                    assert raw_list(shipped, call, gpu) == raw_list(fresh, call, gpu), \
                        f"{scenario.name}: {call} differs on GPU {gpu} at {t!r} s"
    finally:
        shipped.close()
        fresh.close()
    return seen


def raw_list(backend: NvmlBackend, call: str, gpu: int) -> list | str:
    lib = backend._lib
    try:
        return [vars(p) for p in getattr(lib, call)(lib.nvmlDeviceGetHandleByIndex(gpu))]
    except pynvml.NVMLError as exc:
        return f"error {exc.value}"


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_scenario_shows_what_a_fresh_evaluation_shows(name):
    scenario = resolve_scenario(name)
    times = times_to_try(scenario)
    assert lockstep(scenario, times) > 0
    # time going back (a replay, a loop) and jumping about
    assert lockstep(scenario, times[::-1][::3] + times[::7]) >= 0


def test_a_looping_scenario_shows_the_same_on_every_lap():
    scenario = resolve_scenario("churn")
    d = scenario.duration_s
    times = [k * d / 41 for k in range(0, 41 * 3 + 1)]
    assert lockstep(scenario, times, loop=True) > 0


def test_the_fault_scenarios_lose_and_regain_gpus_alike():
    scenario = resolve_scenario("faults")
    shipped, fresh = backends(scenario)
    states = set()
    try:
        for k in range(0, 4 * int(scenario.duration_s)):
            t = k / 4
            shipped.clock.set_elapsed(t)
            fresh.clock.set_elapsed(t)
            a, b = shipped.sample(), fresh.sample()
            assert a == b, t
            states.update(g.state for g in a.gpus)
    finally:
        shipped.close()
        fresh.close()
    assert len(states) == 3     # ok, error and lost all seen


def test_a_process_built_as_a_plain_tuple_is_a_full_process_sample():
    """The backend builds found processes as raw tuples: the fields must line up."""
    shipped, _ = backends(resolve_scenario("workstation"))
    try:
        shipped.clock.set_elapsed(60.0)
        for p in shipped.sample().processes:
            fields = p._asdict()
            assert ProcessSample(**fields) == p
            assert p.host_status is HostStatus.FOUND and p.resolved
            assert set(fields) == set(ProcessSample._fields)
    finally:
        shipped.close()


def test_reused_states_are_reused():
    """Flat stretches are answered from one worked-out state: no new objects a tick."""
    scenario = make_scenario()
    shipped, _ = backends(scenario)
    try:
        shipped.clock.set_elapsed(200.0)
        first = shipped.sample()
        shipped.clock.set_elapsed(260.0)
        second = shipped.sample()
        assert second.gpus[0] is first.gpus[0]          # memory flat after 100 s
        assert second.gpus[0].processes[0].used_bytes == 11 * 2**30
        shipped.clock.set_elapsed(50.0)                  # on the ramp: a new state
        assert shipped.sample().gpus[0].processes[0].used_bytes < 11 * 2**30
    finally:
        shipped.close()


def test_a_span_covers_the_local_times_it_promises():
    """scenario_span's ends map back inside the local span whatever the rounding."""
    for start in (0.0, 0.1, 1 / 3, 7.7, 123456.789, 1e9 - 0.3):
        for lo, hi in ((0.0, 1.0), (0.3, 0.30000000000000004), (1 / 7, 2 / 7), (5.5, 1e6)):
            g_lo, g_hi = scenario_span(lo, hi, start)
            for t in (g_lo, math.nextafter(g_hi, -math.inf)):
                if g_lo <= t < g_hi:
                    assert lo <= t - start <= hi


# -- any scenario -----------------------------------------------------------------------

sizes = st.sampled_from(["0MiB", "100MiB", "100MiB", "1GiB", "2.5GiB"])
percents = st.sampled_from([0, 10, 10, 55.5, 100])


@st.composite
def memory_signals(draw, values=sizes):
    kind = draw(st.sampled_from(["constant", "points", "sawtooth", "spikes", "wave"]))
    if kind == "constant":
        return draw(values)
    if kind == "points":
        n = draw(st.integers(1, 6))
        times = sorted(draw(st.sets(st.sampled_from([0, 0.1, 1, 2.5, 3, 10, 30.3, 60]),
                                    min_size=n, max_size=n)))
        return [[t, draw(values)] for t in times]
    if kind == "sawtooth":
        low = draw(values)
        return {"generator": "sawtooth", "low": low,
                "high": draw(st.sampled_from([low, "2.5GiB"])), "period_s": 7}
    if kind == "spikes":
        base = draw(values)
        return {"generator": "spikes", "base": base,
                "peak": draw(st.sampled_from([base, "2.5GiB"])), "every_s": 9, "width_s": 2}
    mean = draw(st.sampled_from(["1GiB", "2GiB"]))
    return {"generator": "wave", "mean": mean,
            "amplitude": draw(st.sampled_from(["0MiB", "512MiB"])), "period_s": 11}


@st.composite
def processes(draw, pid: int):
    start = draw(st.sampled_from([0, 0, 0.1, 1 / 3, 5, 17.25]))
    p = {"pid": pid, "gpu": draw(st.integers(0, 1)), "name": "python",
         "memory": draw(memory_signals()),
         "kind": draw(st.sampled_from(["compute", "graphics", "compute+graphics"])),
         "report_memory": draw(st.booleans()), "start_s": start,
         "gpu_util_percent": draw(st.one_of(percents, st.just([[0, 5], [4, 5], [9, 80]]))),
         "memory_busy_percent": draw(percents)}
    if draw(st.booleans()):
        p["end_s"] = start + draw(st.sampled_from([0.2, 3, 12.5, 40]))
    return p


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=6, unique=True).flatmap(
           lambda pids: st.tuples(*[processes(pid) for pid in pids])),
       st.lists(st.floats(0, 70, allow_nan=False), min_size=1, max_size=25))
def test_any_scenario_at_any_times_shows_what_a_fresh_evaluation_shows(procs, times):
    scenario = make_scenario(processes=list(procs), duration_s=60)
    lockstep(scenario, times + sorted(times))


def test_a_list_object_handed_back_changed_in_place_is_read_again():
    """A library may reuse one list object: unchanged lists are recognised by their
    items, never by the list being the same object."""
    clock = SteppedClock()
    lib = SimulatedNvml(make_scenario(), clock)
    kept: list = []
    original = lib.nvmlDeviceGetComputeRunningProcesses

    def same_list(handle):
        kept[:] = original(handle)
        return kept

    lib.nvmlDeviceGetComputeRunningProcesses = same_list
    backend = NvmlBackend(lib, ScenarioHost(lib, clock), clock, pcie_thread=False).open()
    try:
        used = []
        for t in (50.0, 60.0):
            clock.set_elapsed(t)
            used.append(backend.sample().gpus[0].processes[0].used_bytes)
    finally:
        backend.close()
    assert used == [6 * 2**30, 7 * 2**30]


class WobblyClock(SteppedClock):
    """A clock whose "now" and elapsed time are read at slightly different moments, as
    a scaled clock's are."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def now_s(self) -> float:
        self.reads += 1
        return super().now_s() + (self.reads % 3) * 2e-5


def test_host_answers_survive_clock_wobble_but_not_a_lap():
    scenario = make_scenario()
    clock = WobblyClock()
    lib = SimulatedNvml(scenario, clock, loop=True)
    host = ScenarioHost(lib, clock)
    clock.set_elapsed(30.0)
    first = host.lookup({1001, 1002})
    clock.set_elapsed(31.0)
    assert host.lookup({1001, 1002}) is first             # nothing started or ended
    clock.set_elapsed(30.0 + scenario.duration_s)          # the next lap: started anew
    lap = host.lookup({1001, 1002})
    assert lap[1001].started_at_s == pytest.approx(first[1001].started_at_s
                                                   + scenario.duration_s, abs=1e-3)
