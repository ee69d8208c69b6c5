"""The NVML backend: every NVML call gpuwatch makes, and the one place NVML errors end.

It runs unchanged on the real ``pynvml`` module and on
:class:`gpuwatch.telemetry.sim.library.SimulatedNvml`. Errors are translated here:
an unsupported reading becomes ``None``; a lost GPU becomes a ``lost`` sample while the
others keep updating (and is re-attached when it answers again); a missing library or
driver becomes :class:`NvmlUnavailableError`. Nothing above this module sees NVMLError.
"""

from __future__ import annotations

import contextlib
import socket
import types
from dataclasses import dataclass, field
from typing import Any

import pynvml

from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)
from gpuwatch.telemetry.clock import Clock, WallClock
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.hostinfo import HostInfo, HostProcess
from gpuwatch.telemetry.pcie import PciePoller, PcieReading

_LOST = {pynvml.NVML_ERROR_GPU_IS_LOST, pynvml.NVML_ERROR_GPU_NOT_FOUND,
         pynvml.NVML_ERROR_RESET_REQUIRED}
_NO_V2 = {pynvml.NVML_ERROR_FUNCTION_NOT_FOUND, pynvml.NVML_ERROR_NOT_SUPPORTED,
          pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH}
_UNKNOWN_MEMORY = 2**64 - 1
_ALL_LINKS = 0xFFFFFFFF    # NVLink throughput fields: this scope sums every link
_NVLINK_ALL_LINKS = [(pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, _ALL_LINKS),
                     (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, _ALL_LINKS)]


def _nvlink_per_link_fields(links: int) -> list[tuple[int, int]]:
    return [(fid, link) for fid in (pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                                        pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
            for link in range(links)]
_INIT_FAILURES = {
    pynvml.NVML_ERROR_LIBRARY_NOT_FOUND:
        "No NVIDIA driver found: the NVML library (libnvidia-ml.so.1) is not installed.",
    pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "The NVIDIA kernel driver is not loaded.",
    pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        "The NVIDIA driver and its NVML library are different versions "
        "(reboot after a driver update).",
    pynvml.NVML_ERROR_NO_PERMISSION: "No permission to use NVML (check /dev/nvidia* access).",
}
EMPTY_MEMORY = MemoryInfo(None, None, None, None)


class _GpuLost(Exception):
    pass


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass(slots=True)
class _Device:
    index: int
    handle: Any = None
    name: str | None = None
    uuid: str | None = None
    peak_bandwidth_bytes_per_s: float | None = None
    power_limit_w: float | None = None
    mig_enabled: bool | None = None
    memory_v2: bool = True
    nvlink_links: int = 0
    nvlink_fields: list = field(default_factory=lambda: _NVLINK_ALL_LINKS)
    nvlink_last: tuple[float, float, float] | None = None   # (elapsed s, tx KiB, rx KiB)
    lost_reason: str | None = None
    retry_at_s: float = 0.0


class NvmlBackend:
    """Samples every GPU through an NVML module (``pynvml`` or a simulated one)."""

    def __init__(self, lib: types.ModuleType = pynvml, host: HostInfo | None = None,
                 clock: Clock | None = None, *, kind: BackendKind = BackendKind.NVML,
                 scenario: str | None = None, pcie_thread: bool = True,
                 pcie_interval_s: float = 1.0, lost_retry_s: float = 2.0):
        if host is None:
            from gpuwatch.telemetry.host import PsutilHost
            host = PsutilHost()
        self._lib = lib
        self._host = host
        self.clock: Clock = clock or WallClock()
        self._kind = kind
        self._scenario = scenario
        self._lost_retry_s = lost_retry_s
        self._devices: list[_Device] = []
        self._pcie: PciePoller | None = None
        self._pcie_thread = pcie_thread
        self._pcie_interval_s = pcie_interval_s
        self._compute_fn = lib.nvmlDeviceGetComputeRunningProcesses
        self._graphics_fn = lib.nvmlDeviceGetGraphicsRunningProcesses
        self.info = BackendInfo(kind=kind, scenario=scenario)
        self._open = False

    # -- life cycle ------------------------------------------------------------------

    def open(self) -> NvmlBackend:
        lib = self._lib
        try:
            lib.nvmlInit()
        except pynvml.NVMLError as exc:
            reason = _INIT_FAILURES.get(exc.value, f"NVML could not start: {exc}.")
            raise NvmlUnavailableError(reason, exc.value) from None
        try:
            count = lib.nvmlDeviceGetCount()
        except pynvml.NVMLError as exc:
            lib.nvmlShutdown()
            raise NvmlUnavailableError(f"NVML could not count the GPUs: {exc}.", exc.value) \
                from None
        self._open = True
        self.info = BackendInfo(
            kind=self._kind,
            driver_version=self._system(lib.nvmlSystemGetDriverVersion),
            nvml_version=self._system(lib.nvmlSystemGetNVMLVersion),
            cuda_driver_version=self._cuda_version(),
            scenario=self._scenario,
            hostname=socket.gethostname(),
        )
        self._devices = [_Device(i) for i in range(count)]
        for dev in self._devices:
            self._attach(dev)
        if self._pcie_thread:
            self._pcie = PciePoller(self._poll_pcie, self._attached_indices,
                                    self._pcie_interval_s)
            self._pcie.start()
        return self

    def close(self) -> None:
        if self._pcie is not None:
            self._pcie.stop()
            self._pcie = None
        if self._open:
            self._open = False
            with contextlib.suppress(pynvml.NVMLError):
                self._lib.nvmlShutdown()

    def __enter__(self) -> NvmlBackend:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _system(self, fn: Any) -> str | None:
        try:
            return _text(fn())
        except pynvml.NVMLError:
            return None

    def _cuda_version(self) -> str | None:
        try:
            v = int(self._lib.nvmlSystemGetCudaDriverVersion())
        except (pynvml.NVMLError, AttributeError):
            return None
        return f"{v // 1000}.{v % 1000 // 10}"

    # -- per-call translation ----------------------------------------------------------

    @staticmethod
    def _opt(fn: Any, *args: Any) -> Any:
        """The call's result, None when unsupported or failing; raises _GpuLost if lost."""
        try:
            return fn(*args)
        except pynvml.NVMLError as exc:
            if exc.value in _LOST:
                raise _GpuLost(str(exc)) from None
            return None
        except pynvml.NVMLLibraryMismatchError:
            return None

    def _attach(self, dev: _Device) -> bool:
        """(Re)acquire a GPU's handle and its static facts; False if it is lost."""
        lib = self._lib
        try:
            handle = lib.nvmlDeviceGetHandleByIndex(dev.index)
        except pynvml.NVMLError as exc:
            self._mark_lost(dev, str(exc))
            return False
        try:
            name = self._opt(lib.nvmlDeviceGetName, handle)
            uuid = self._opt(lib.nvmlDeviceGetUUID, handle)
            width = self._opt(lib.nvmlDeviceGetMemoryBusWidth, handle)
            mem_clock = self._opt(lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_MEM)
            limit_mw = self._opt(lib.nvmlDeviceGetEnforcedPowerLimit, handle)
            mig = self._opt(lib.nvmlDeviceGetMigMode, handle)
            links = self._nvlink_count(handle)
        except _GpuLost as exc:
            self._mark_lost(dev, str(exc))
            return False
        dev.handle = handle
        dev.name = _text(name) if name is not None else None
        dev.uuid = _text(uuid) if uuid is not None else None
        # Peak DRAM bandwidth: bus width in bytes x memory clock x 2 (double data rate).
        dev.peak_bandwidth_bytes_per_s = (width / 8 * mem_clock * 1e6 * 2
                                          if width and mem_clock else None)
        dev.power_limit_w = limit_mw / 1000 if limit_mw is not None else None
        dev.mig_enabled = bool(mig[0]) if mig is not None else None
        dev.nvlink_links = links
        dev.lost_reason = None
        return True

    def _mark_lost(self, dev: _Device, reason: str) -> None:
        dev.handle = None
        dev.lost_reason = reason
        dev.nvlink_last = None
        dev.retry_at_s = self.clock.elapsed_s() + self._lost_retry_s

    def _nvlink_count(self, handle: Any) -> int:
        values = self._opt(self._lib.nvmlDeviceGetFieldValues, handle,
                           [self._lib.NVML_FI_DEV_NVLINK_LINK_COUNT])
        if not values or values[0].nvmlReturn != pynvml.NVML_SUCCESS:
            return 0
        return int(values[0].value.ullVal)

    def _attached_indices(self) -> list[int]:
        return [d.index for d in self._devices if d.handle is not None]

    # -- readings ----------------------------------------------------------------------

    def _read_memory(self, dev: _Device) -> tuple[MemoryInfo, str | None]:
        lib, h = self._lib, dev.handle
        if dev.memory_v2:
            try:
                m = lib.nvmlDeviceGetMemoryInfo(h, version=lib.nvmlMemory_v2)
                return MemoryInfo(m.total or None, m.used, m.free, m.reserved), None
            except pynvml.NVMLError as exc:
                if exc.value in _LOST:
                    raise _GpuLost(str(exc)) from None
                if exc.value not in _NO_V2:
                    return EMPTY_MEMORY, f"memory could not be read: {exc}"
        try:
            m = lib.nvmlDeviceGetMemoryInfo(h)
        except pynvml.NVMLError as exc:
            if exc.value in _LOST:
                raise _GpuLost(str(exc)) from None
            if exc.value == pynvml.NVML_ERROR_NOT_SUPPORTED:   # unified memory (Grace, GB10)
                return EMPTY_MEMORY, None
            return EMPTY_MEMORY, f"memory could not be read: {exc}"
        dev.memory_v2 = False   # v2 failed where v1 works: an older driver (reserved in used)
        return MemoryInfo(m.total or None, m.used, m.free, None), None

    def _read_pcie(self, index: int) -> PcieReading | None:
        dev = self._devices[index]
        lib, h = self._lib, dev.handle
        if h is None:
            return None
        tx = self._opt(lib.nvmlDeviceGetPcieThroughput, h, lib.NVML_PCIE_UTIL_TX_BYTES)
        rx = self._opt(lib.nvmlDeviceGetPcieThroughput, h, lib.NVML_PCIE_UTIL_RX_BYTES)
        return PcieReading(tx * 1024.0 if tx is not None else None,
                           rx * 1024.0 if rx is not None else None)

    def _poll_pcie(self, index: int) -> PcieReading | None:
        """For the poller thread: a lost GPU is noticed by the next sample, not here."""
        try:
            return self._read_pcie(index)
        except _GpuLost:
            return None

    def _read_nvlink(self, dev: _Device) -> tuple[float | None, float | None]:
        """NVLink data rates from the cumulative KiB counters, summed over all links."""
        if not dev.nvlink_links:
            return None, None
        fields = dev.nvlink_fields
        values = self._opt(self._lib.nvmlDeviceGetFieldValues, dev.handle, fields)
        if values is None:
            return None, None
        n = len(fields) // 2
        totals = [0, 0]
        answered = False
        for i, v in enumerate(values):
            if v.nvmlReturn == pynvml.NVML_SUCCESS:
                totals[i >= n] += v.value.ullVal
                answered = True
        if not answered:
            if fields is _NVLINK_ALL_LINKS:    # an older driver without the aggregate scope
                dev.nvlink_fields = _nvlink_per_link_fields(dev.nvlink_links)
                return self._read_nvlink(dev)
            return None, None
        tx, rx = totals
        now = self.clock.elapsed_s()
        last, dev.nvlink_last = dev.nvlink_last, (now, float(tx), float(rx))
        if last is None or now <= last[0]:
            return None, None
        dt = now - last[0]
        return max(0.0, (tx - last[1]) * 1024 / dt), max(0.0, (rx - last[2]) * 1024 / dt)

    def _read_processes(self, dev: _Device) -> dict[int, tuple[int | None, str]]:
        """pid -> (used bytes or None, kind), compute and graphics lists merged."""
        merged: dict[int, tuple[int | None, str]] = {}
        for kind in ("compute", "graphics"):
            procs = self._list_processes(kind, dev.handle)
            for p in procs or ():
                used = p.usedGpuMemory
                if used is not None and used >= _UNKNOWN_MEMORY:
                    used = None
                seen = merged.get(p.pid)
                if seen is None:
                    merged[p.pid] = (used, kind)
                else:  # in both lists: the same memory, reported twice
                    known = [u for u in (seen[0], used) if u is not None]
                    merged[p.pid] = (max(known) if known else None, "compute+graphics")
        return merged

    def _list_processes(self, kind: str, handle: Any) -> list | None:
        fn = self._compute_fn if kind == "compute" else self._graphics_fn
        try:
            return fn(handle)
        except pynvml.NVMLLibraryMismatchError:
            # The driver predates the _v3 call the bindings use by default.
            fallback = getattr(self._lib, f"nvmlDevice{'Get' + kind.title()}RunningProcesses_v2")
            if kind == "compute":
                self._compute_fn = fallback
            else:
                self._graphics_fn = fallback
            return self._opt(fallback, handle)
        except pynvml.NVMLError as exc:
            if exc.value in _LOST:
                raise _GpuLost(str(exc)) from None
            return None

    # -- one sample --------------------------------------------------------------------

    def sample(self) -> Snapshot:
        """Read every GPU once. Never raises for a single GPU's trouble."""
        timestamp = self.clock.now_s()
        elapsed = self.clock.elapsed_s()
        readings: list[tuple[_Device, dict[str, Any] | None, dict[int, tuple]]] = []
        for dev in self._devices:
            if dev.handle is None and (elapsed < dev.retry_at_s or not self._attach(dev)):
                readings.append((dev, None, {}))
                continue
            try:
                readings.append((dev, *self._read_gpu(dev)))
            except _GpuLost as exc:
                self._mark_lost(dev, str(exc))
                readings.append((dev, None, {}))

        pids = {pid for _, _, procs in readings for pid in procs}
        host = self._host.lookup(pids) if pids else {}
        isolated = bool(pids - host.keys()) and self._host.pid_namespace_isolated()
        hidden = 0
        gpus = []
        for dev, fields, procs in readings:
            if fields is None:
                gpus.append(GpuSample(index=dev.index, uuid=dev.uuid, name=dev.name,
                                      state=GpuState.LOST, memory=EMPTY_MEMORY,
                                      error=f"GPU lost: {dev.lost_reason}"))
                continue
            processes = []
            for pid, (used, kind) in procs.items():
                details = host.get(pid)
                if details is not None:
                    processes.append(_process(pid, dev.index, used, kind, details))
                elif isolated:   # NVML's host pid is invisible from this PID namespace
                    hidden += 1
                    processes.append(ProcessSample(pid, dev.index, used, kind, resolved=False))
                # else: the process ended between NVML's list and the host lookup
            processes.sort(key=lambda p: -(p.used_bytes or 0))
            gpus.append(GpuSample(**fields, processes=tuple(processes)))
        warnings = ()
        if hidden:
            warnings = (
                f"gpuwatch runs in a container whose PID namespace hides the GPU processes: "
                f"{hidden} of {len(pids)} pids reported by NVML are not visible here. "
                "Run the container with --pid=host to see their names and users.",
            )
        return Snapshot(timestamp, self.info, tuple(gpus), warnings)

    def _read_gpu(self, dev: _Device) -> tuple[dict[str, Any], dict[int, tuple]]:
        lib, h = self._lib, dev.handle
        opt = self._opt
        memory, error = self._read_memory(dev)
        util = opt(lib.nvmlDeviceGetUtilizationRates, h)
        gpu_util = float(util.gpu) if util is not None else None
        busy = float(util.memory) if util is not None else None
        peak = dev.peak_bandwidth_bytes_per_s
        power_mw = opt(lib.nvmlDeviceGetPowerUsage, h)
        if self._pcie is not None:
            pcie = self._pcie.latest(dev.index)
        else:
            pcie = self._read_pcie(dev.index)
        nvlink_tx, nvlink_rx = self._read_nvlink(dev)
        fields = {
            "index": dev.index,
            "uuid": dev.uuid,
            "name": dev.name,
            "state": GpuState.OK if error is None else GpuState.ERROR,
            "error": error,
            "memory": memory,
            "gpu_util_percent": gpu_util,
            "memory_busy_percent": busy,
            "peak_bandwidth_bytes_per_s": peak,
            "estimated_bandwidth_bytes_per_s": busy / 100 * peak
            if busy is not None and peak else None,
            "pcie_tx_bytes_per_s": pcie.tx_bytes_per_s if pcie else None,
            "pcie_rx_bytes_per_s": pcie.rx_bytes_per_s if pcie else None,
            "nvlink_tx_bytes_per_s": nvlink_tx,
            "nvlink_rx_bytes_per_s": nvlink_rx,
            "temperature_c": opt(lib.nvmlDeviceGetTemperature, h, lib.NVML_TEMPERATURE_GPU),
            "power_w": power_mw / 1000 if power_mw is not None else None,
            "power_limit_w": dev.power_limit_w,
            "graphics_clock_mhz": opt(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_GRAPHICS),
            "memory_clock_mhz": opt(lib.nvmlDeviceGetClockInfo, h, lib.NVML_CLOCK_MEM),
            "mig_enabled": dev.mig_enabled,
        }
        return fields, self._read_processes(dev)


def _process(pid: int, gpu: int, used: int | None, kind: str, host: HostProcess) -> ProcessSample:
    # Positional: this runs for every process on every tick.
    return ProcessSample(pid, gpu, used, kind, host.name, host.cmdline, host.user,
                         host.container, host.cpu_percent, host.rss_bytes, host.started_at_s)
