"""The simulated GPU performance monitor (GPM), events and the other per-engine readings.

A scenario GPU with ``gpm = true`` (a Hopper or later part) answers NVML's GPM calls as
the driver does: samples are opaque C pointers the caller allocates, fills and frees,
and ``nvmlGpmMetricsGet`` fills pynvml's own request structure with the average of the
readings at the two samples' times. What the monitor measures follows the scenario:

- DRAM bandwidth utilisation: :data:`DRAM_PER_BUSY` x the memory busy %. NVML's busy %
  counts time in which memory was read or written at all; the share of peak bandwidth
  used is lower, so a GPM GPU shows its measured figure below the busy-% estimate;
- graphics engine active: the GPU utilisation; SMs active: :data:`SM_PER_UTIL` x it;
- any tensor pipe active: :data:`TENSOR_PER_UTIL` x it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml

from gpuwatch.telemetry.nvml import codes

DRAM_PER_BUSY = 0.8
SM_PER_UTIL = 0.9
TENSOR_PER_UTIL = 0.6
_GPM_METRICS = {
    pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: lambda util, busy: busy * DRAM_PER_BUSY,
    pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL: lambda util, busy: util,
    pynvml.NVML_GPM_METRIC_SM_UTIL: lambda util, busy: util * SM_PER_UTIL,
    pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: lambda util, busy: util * TENSOR_PER_UTIL,
}


class SimulatedEngines:
    """Mixed into SimulatedNvml: needs its ``_spec`` and ``_state`` and ``clock``."""

    _spec: Any
    _state: Any
    _power_mw: Any
    _enter: Any
    clock: Any

    def _engines_init(self) -> None:
        # sample address -> (its buffer, (gpu, util %, busy %) once filled)
        self._gpm_samples: dict[int, list[Any]] = {}
        self._energy_mj: dict[int, tuple[float, float]] = {}   # gpu -> (t, cumulative mJ)

    # -- GPM -----------------------------------------------------------------------------

    def nvmlGpmQueryDeviceSupport(self, handle: object) -> Any:
        spec = self._spec("nvmlGpmQueryDeviceSupport", handle)[1]
        support = pynvml.c_nvmlGpmSupport_t()
        support.version = pynvml.NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = 1 if spec.gpm else 0
        return support

    def nvmlGpmSampleAlloc(self) -> Any:
        self._enter("nvmlGpmSampleAlloc", None)
        buffer = ctypes.create_string_buffer(16)
        self._gpm_samples[ctypes.addressof(buffer)] = [buffer, None]
        return ctypes.cast(buffer, pynvml.c_nvmlGpmSample_t)

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        self._enter("nvmlGpmSampleFree", None)
        if self._gpm_samples.pop(_address(sample), None) is None:
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)

    def nvmlGpmSampleGet(self, handle: object, sample: Any) -> Any:
        gpu, spec, t = self._spec("nvmlGpmSampleGet", handle)
        entry = self._gpm_samples.get(_address(sample))
        if entry is None:
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)
        if not spec.gpm:
            raise pynvml.NVMLError(codes.NOT_SUPPORTED)
        state = self._state(gpu, t)
        entry[1] = (gpu, state.util_percent, state.busy_percent)
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        first = self._gpm_samples.get(_address(request.sample1))
        second = self._gpm_samples.get(_address(request.sample2))
        if first is None or second is None or first[1] is None or second[1] is None:
            self._enter("nvmlGpmMetricsGet", None)
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)
        gpu = second[1][0]
        self._enter("nvmlGpmMetricsGet", gpu)
        if request.version != pynvml.NVML_GPM_METRICS_GET_VERSION:
            raise pynvml.NVMLError(codes.ARGUMENT_VERSION_MISMATCH)
        if first[1][0] != gpu or not 0 < request.numMetrics <= len(request.metrics):
            raise pynvml.NVMLError(codes.INVALID_ARGUMENT)
        util = (first[1][1] + second[1][1]) / 2
        busy = (first[1][2] + second[1][2]) / 2
        for i in range(request.numMetrics):
            metric = request.metrics[i]
            work = _GPM_METRICS.get(metric.metricId)
            if work is None:
                metric.nvmlReturn, metric.value = codes.NOT_SUPPORTED, 0.0
            else:
                metric.nvmlReturn, metric.value = pynvml.NVML_SUCCESS, min(100.0, work(util, busy))
        return request

    # -- events: a simulated GPU reports no XID errors ---------------------------------

    def nvmlEventSetCreate(self) -> object:
        self._enter("nvmlEventSetCreate", None)
        return object()

    def nvmlDeviceRegisterEvents(self, handle: object, event_types: int,
                                 event_set: object) -> None:
        self._spec("nvmlDeviceRegisterEvents", handle)

    def nvmlEventSetWait_v2(self, event_set: object, timeout_ms: int) -> Any:
        self._enter("nvmlEventSetWait_v2", None)
        raise pynvml.NVMLError(codes.code("TIMEOUT"))     # nothing arrived

    def nvmlEventSetFree(self, event_set: object) -> None:
        self._enter("nvmlEventSetFree", None)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: object) -> int:
        """mJ since the scenario started: the power draw integrated over time."""
        gpu, spec, t = self._spec("nvmlDeviceGetTotalEnergyConsumption", handle)
        last_t, mj = self._energy_mj.get(gpu, (0.0, 0.0))
        if t > last_t:
            mj += self._power_mw(gpu, spec, t) * (t - last_t)
            self._energy_mj[gpu] = (t, mj)
        return int(mj)

    # -- encoder, decoder, PCI -------------------------------------------------

    def nvmlDeviceGetEncoderUtilization(self, handle: object) -> list[int]:
        self._spec("nvmlDeviceGetEncoderUtilization", handle)
        return [0, 167_000]

    def nvmlDeviceGetDecoderUtilization(self, handle: object) -> list[int]:
        self._spec("nvmlDeviceGetDecoderUtilization", handle)
        return [0, 167_000]

    def nvmlDeviceGetPciInfo(self, handle: object) -> Any:
        gpu = self._spec("nvmlDeviceGetPciInfo", handle)[0]
        info = pynvml.nvmlPciInfo_t()
        info.domain, info.bus, info.device = 0, 0x18 + gpu, 0
        info.busId = f"00000000:{0x18 + gpu:02X}:00.0".encode()
        info.busIdLegacy = f"0000:{0x18 + gpu:02X}:00.0".encode()
        return info


def _address(sample: Any) -> int | None:
    return ctypes.cast(sample, ctypes.c_void_p).value
