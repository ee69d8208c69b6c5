"""A simulated NVML: a module object with pynvml's function names, structures and errors.

``SimulatedNvml(scenario, clock)`` behaves like the ``pynvml`` module for the calls a
monitor makes, driven by a scenario and a virtual clock. It returns pynvml's own ctypes
structures and friendly objects, and raises pynvml's own ``NVMLError_*`` classes, so
the real NVML backend runs on it unchanged. Scenario faults raise the named error for
the named call, GPU and time window.
"""

from __future__ import annotations

import time
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pynvml

from gpuwatch.telemetry.clock import Clock
from gpuwatch.telemetry.nvml import codes
from gpuwatch.telemetry.sim.gpm import SimulatedEngines
from gpuwatch.telemetry.sim.gpu_state import GpuState, GpuTimeline
from gpuwatch.telemetry.sim.scenario import (
    Scenario,
    ScenarioFault,
    ScenarioGpu,
    ScenarioProcess,
)

_IDLE_MEMORY_CLOCK_MHZ = 405
_DEFAULT_MAX_GRAPHICS_CLOCK_MHZ = 1755
_ALL_LINKS = 0xFFFFFFFF              # the field scope that sums every NVLink
_DEFAULT_PCIE_AT_FULL_UTIL = 2.0e9   # bytes/s host->device when a kernel runs all the time


@dataclass(frozen=True, slots=True)
class SimHandle:
    """What nvmlDeviceGetHandleByIndex returns here: an opaque handle with its index."""

    index: int


class SimulatedNvml(SimulatedEngines, types.ModuleType):
    """Import-compatible stand-in for ``pynvml`` over a scenario."""

    def __init__(self, scenario: Scenario, clock: Clock, *, loop: bool = False,
                 pcie_latency_s: float = 0.0, nvlink_aggregate: bool = True):
        super().__init__("gpuwatch.telemetry.sim.nvml")
        # Constants, structures and error classes are pynvml's own.
        for name, value in vars(pynvml).items():
            if name.startswith(("NVML", "nvmlMemory", "c_nvml", "nvmlFriendlyObject")):
                setattr(self, name, value)
        self.scenario = scenario
        self.clock = clock
        self.loop = loop
        self.pcie_latency_s = pcie_latency_s
        self.nvlink_aggregate = nvlink_aggregate   # False: a driver that answers per link only
        self.calls: Counter[str] = Counter()   # NVML calls made, by name
        self._initialised = 0
        by_gpu: list[list[ScenarioProcess]] = [[] for _ in scenario.gpus]
        for p in scenario.processes:
            by_gpu[p.gpu].append(p)
        self._timelines = [GpuTimeline(spec, procs)
                           for spec, procs in zip(scenario.gpus, by_gpu, strict=True)]
        self._nvlink_kib: dict[int, tuple[float, float]] = {}   # gpu -> (t, cumulative KiB)
        self._faults: dict[str, tuple[ScenarioFault, ...]] = {}   # call -> faults that may hit it
        self._engines_init()

    # -- time and faults -------------------------------------------------------------

    def scenario_time_s(self) -> float:
        t = self.clock.elapsed_s()
        return t % self.scenario.duration_s if self.loop else t

    def _enter(self, call: str, gpu: int | None, needs_init: bool = True) -> float:
        self.calls[call] += 1
        t = self.clock.elapsed_s()
        if self.loop:
            t %= self.scenario.duration_s
        faults = self._faults.get(call)
        if faults is None:
            faults = self._faults[call] = self._faults_of(call)
        for fault in faults:
            if fault.active(call, gpu, t):
                raise pynvml.NVMLError(fault.code)
        if needs_init and not self._initialised:
            raise pynvml.NVMLError(codes.UNINITIALIZED)
        return t

    def _faults_of(self, call: str) -> tuple[ScenarioFault, ...]:
        """The scenario's faults that may hit ``call``, in scenario order."""
        return tuple(f for f in self.scenario.faults if f.call in ("*", call))

    def _state(self, gpu: int, t: float) -> GpuState:
        """The GPU's readings at scenario time ``t``: worked out once, then shared by
        every call while nothing in the scenario changes."""
        return self._timelines[gpu].state(t)

    # -- initialisation and system ---------------------------------------------------

    def nvmlInit(self) -> None:
        self._enter("nvmlInit", None, needs_init=False)
        self._initialised += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self._enter("nvmlInitWithFlags", None, needs_init=False)
        self._initialised += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown", None)
        self._initialised -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion", None)
        return self.scenario.driver_version

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion", None)
        return self.scenario.nvml_version

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion", None)
        return self.scenario.cuda_driver_version

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount", None)
        return len(self.scenario.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimHandle:
        if not 0 <= index < len(self.scenario.gpus):
            self._enter("nvmlDeviceGetHandleByIndex", None)
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)
        self._enter("nvmlDeviceGetHandleByIndex", index)
        return SimHandle(index)

    # -- static device facts ------------------------------------------------------------

    def _spec(self, call: str, handle: object) -> tuple[int, ScenarioGpu, float]:
        """(GPU index, its facts, scenario time) for a call on a GPU."""
        gpus = self.scenario.gpus
        if not isinstance(handle, SimHandle) or not 0 <= handle.index < len(gpus):
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)
        gpu = handle.index
        return gpu, gpus[gpu], self._enter(call, gpu)

    def nvmlDeviceGetName(self, handle: object) -> str:
        return self._spec("nvmlDeviceGetName", handle)[1].name

    def nvmlDeviceGetUUID(self, handle: object) -> str:
        gpu, spec, _ = self._spec("nvmlDeviceGetUUID", handle)
        return spec.uuid or f"GPU-5111a7ed-{gpu:04x}-4000-8000-{gpu:012x}"

    def nvmlDeviceGetIndex(self, handle: object) -> int:
        return self._spec("nvmlDeviceGetIndex", handle)[0]

    def nvmlDeviceGetMemoryBusWidth(self, handle: object) -> int:
        spec = self._spec("nvmlDeviceGetMemoryBusWidth", handle)[1]
        if spec.memory_bus_width_bits is None:
            raise pynvml.NVMLError(codes.NOT_SUPPORTED)
        return spec.memory_bus_width_bits

    def nvmlDeviceGetMaxClockInfo(self, handle: object, clock_type: int) -> int:
        spec = self._spec("nvmlDeviceGetMaxClockInfo", handle)[1]
        if clock_type == pynvml.NVML_CLOCK_MEM:
            if spec.max_memory_clock_mhz is None:
                raise pynvml.NVMLError(codes.NOT_SUPPORTED)
            return spec.max_memory_clock_mhz
        return _DEFAULT_MAX_GRAPHICS_CLOCK_MHZ

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: object) -> int:
        return int(self._spec("nvmlDeviceGetEnforcedPowerLimit", handle)[1].power_limit_w * 1000)

    def nvmlDeviceGetMigMode(self, handle: object) -> list[int]:
        self._spec("nvmlDeviceGetMigMode", handle)
        return [0, 0]

    # -- live readings -------------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: object, version: int | None = None):
        gpu, spec, t = self._spec("nvmlDeviceGetMemoryInfo", handle)
        if version and not self.scenario.memory_info_v2:
            raise pynvml.NVMLError(codes.FUNCTION_NOT_FOUND)
        state = self._state(gpu, t)
        key = ("memory", version)
        made = state.structs.get(key)
        if made is None:
            made = state.structs[key] = _memory_struct(spec, state.used_bytes, version)
        return type(made).from_buffer_copy(made)   # a new structure each call, as NVML's

    def nvmlDeviceGetUtilizationRates(self, handle: object):
        gpu, _, t = self._spec("nvmlDeviceGetUtilizationRates", handle)
        state = self._state(gpu, t)
        made = state.structs.get("utilization")
        if made is None:
            made = state.structs["utilization"] = pynvml.c_nvmlUtilization_t()
            made.gpu, made.memory = round(state.util_percent), round(state.busy_percent)
        return pynvml.c_nvmlUtilization_t.from_buffer_copy(made)

    def nvmlDeviceGetTemperature(self, handle: object, sensor: int) -> int:
        gpu, _, t = self._spec("nvmlDeviceGetTemperature", handle)
        return round(31 + 0.48 * self._state(gpu, t).util_percent)

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        gpu, spec, t = self._spec("nvmlDeviceGetPowerUsage", handle)
        return self._power_mw(gpu, spec, t)

    def _power_mw(self, gpu: int, spec: ScenarioGpu, t: float) -> int:
        load = self._state(gpu, t).util_percent / 100
        return int((spec.idle_power_w + (spec.power_limit_w - spec.idle_power_w) * 0.9 * load)
                   * 1000)

    def nvmlDeviceGetClockInfo(self, handle: object, clock_type: int) -> int:
        gpu, spec, t = self._spec("nvmlDeviceGetClockInfo", handle)
        state = self._state(gpu, t)
        if clock_type == pynvml.NVML_CLOCK_MEM:
            if not state.any_alive:
                return _IDLE_MEMORY_CLOCK_MHZ
            return spec.max_memory_clock_mhz or _IDLE_MEMORY_CLOCK_MHZ
        return round(210 + (_DEFAULT_MAX_GRAPHICS_CLOCK_MHZ - 210) * state.util_percent / 100)

    def nvmlDeviceGetPcieThroughput(self, handle: object, counter: int) -> int:
        gpu, spec, t = self._spec("nvmlDeviceGetPcieThroughput", handle)
        if self.pcie_latency_s:
            time.sleep(self.pcie_latency_s)   # the real call blocks ~20 ms while it samples
        if spec.pcie_bytes_per_s is not None:
            rx = spec.pcie_bytes_per_s.at(t)
        else:
            rx = _DEFAULT_PCIE_AT_FULL_UTIL * self._state(gpu, t).util_percent / 100
        value = rx if counter == pynvml.NVML_PCIE_UTIL_RX_BYTES else rx * 0.35
        return int(value / 1024)   # NVML reports KiB/s

    def nvmlDeviceGetFieldValues(self, handle: object, field_ids: list):
        gpu, spec, t = self._spec("nvmlDeviceGetFieldValues", handle)
        values = (pynvml.c_nvmlFieldValue_t * len(field_ids))()
        cumulative_kib = self._nvlink_counter(gpu, spec, t)
        stamp = int(self.clock.now_s() * 1e6)
        for i, fid in enumerate(field_ids):
            field_id, scope = fid if isinstance(fid, tuple) else (fid, 0)
            v = values[i]
            v.fieldId, v.scopeId = field_id, scope
            v.timestamp = stamp
            v.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            if field_id == pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT:
                v.nvmlReturn, v.value.ullVal = pynvml.NVML_SUCCESS, spec.nvlink_links
            elif field_id == pynvml.NVML_FI_DEV_MEMORY_TEMP:
                v.valueType = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT
                v.nvmlReturn = pynvml.NVML_SUCCESS
                v.value.uiVal = round(35 + 0.3 * self._state(gpu, t).util_percent)
            elif field_id in (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                              pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX):
                if spec.nvlink_links == 0:
                    v.nvmlReturn = codes.NOT_SUPPORTED
                elif scope == _ALL_LINKS and self.nvlink_aggregate:
                    v.nvmlReturn = pynvml.NVML_SUCCESS
                    v.value.ullVal = int(cumulative_kib)
                elif scope < spec.nvlink_links:
                    v.nvmlReturn = pynvml.NVML_SUCCESS
                    v.value.ullVal = int(cumulative_kib / spec.nvlink_links)
                else:
                    v.nvmlReturn = codes.INVALID_ARGUMENT
            else:
                v.nvmlReturn = codes.NOT_SUPPORTED
        return values

    def _nvlink_counter(self, gpu: int, spec: ScenarioGpu, t: float) -> float:
        """Cumulative KiB moved per direction, integrated from the scenario's rate."""
        last_t, kib = self._nvlink_kib.get(gpu, (t, 0.0))
        if spec.nvlink_bytes_per_s is not None and t > last_t:
            kib += spec.nvlink_bytes_per_s.at(t) * (t - last_t) / 1024
        self._nvlink_kib[gpu] = (t, kib)
        return kib

    def _processes(self, call: str, handle: object, pick: Callable[[GpuState], list]) -> list:
        gpu, _, t = self._spec(call, handle)
        return list(pick(self._state(gpu, t)))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object) -> list:
        return self._processes("nvmlDeviceGetComputeRunningProcesses", handle,
                               lambda s: s.compute)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: object) -> list:
        return self._processes("nvmlDeviceGetGraphicsRunningProcesses", handle,
                               lambda s: s.graphics)

    nvmlDeviceGetComputeRunningProcesses_v3 = nvmlDeviceGetComputeRunningProcesses
    nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses
    nvmlDeviceGetGraphicsRunningProcesses_v3 = nvmlDeviceGetGraphicsRunningProcesses
    nvmlDeviceGetGraphicsRunningProcesses_v2 = nvmlDeviceGetGraphicsRunningProcesses


def _memory_struct(spec: ScenarioGpu, used: int, version: int | None):
    """What nvmlDeviceGetMemoryInfo fills in: v2 (``version`` given) counts reserved
    memory apart; v1 counts it as used."""
    total, reserved = spec.memory_total_bytes, spec.memory_reserved_bytes
    if version:
        mem = pynvml.c_nvmlMemory_v2_t()
        mem.version = version
        mem.total, mem.reserved, mem.used = total, reserved, used
        mem.free = total - reserved - used
        return mem
    mem = pynvml.c_nvmlMemory_t()
    mem.total, mem.used = total, used + reserved
    mem.free = total - mem.used
    return mem
