"""NvmlBackend: opens NVML once, samples every GPU, and keeps lost GPUs apart."""

from __future__ import annotations

import contextlib
import socket
import types
from typing import Any

import pynvml

from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    Snapshot,
)
from gpuwatch.telemetry.clock import Clock, WallClock
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.hostinfo import HostInfo, HostProcess
from gpuwatch.telemetry.nvml.process_lists import ProcessLists
from gpuwatch.telemetry.nvml.readings import (
    Device,
    describe_error,
    gpu_lost,
    nvlink_count,
    open_gpm,
    optional,
    read_energy,
    read_engines,
    read_memory,
    read_nvlink,
    read_pci_bus_id,
    read_pcie,
)
from gpuwatch.telemetry.nvml.samples import gpu_processes, gpu_sample
from gpuwatch.telemetry.nvml.translate import (
    EMPTY_MEMORY,
    INIT_FAILURES,
    LOST_CODES,
    GpuLost,
    text,
)
from gpuwatch.telemetry.nvml.xid import XidWatch
from gpuwatch.telemetry.pcie import PciePoller, PcieReading
from gpuwatch.telemetry.probes import ProbeSource

UNREAD_GPU = "the GPU could not be read"    # the process list of a GPU without a handle
RESTING_PCIE_S = 10.0    # PCIe rates while nobody looks: each read costs CPU (pcie.py)
NO_GPUS_WARNING = (
    "NVML lists no GPUs on this machine. Check that the NVIDIA driver is loaded and that "
    "`nvidia-smi -L` lists the GPUs (CUDA_VISIBLE_DEVICES does not apply: NVML sees "
    "every GPU regardless). In a container, the GPUs must be passed in "
    "(e.g. `docker run --gpus all`, or the NVIDIA Container Toolkit).")


class NvmlBackend:
    """Samples every GPU through an NVML module (``pynvml`` or a simulated one)."""

    def __init__(self, lib: types.ModuleType = pynvml, host: HostInfo | None = None,
                 clock: Clock | None = None, *, kind: BackendKind = BackendKind.NVML,
                 scenario: str | None = None, pcie_thread: bool = True,
                 pcie_interval_s: float = 1.0, lost_retry_s: float = 2.0,
                 probes: ProbeSource | None = None, scenario_duration_s: float | None = None):
        if host is None:
            from gpuwatch.telemetry.host import PsutilHost
            host = PsutilHost()
        self._lib = lib
        self._host = host
        self._probes = probes
        self.scenario_duration_s = scenario_duration_s   # simulated: the scenario's length
        self.clock: Clock = clock or WallClock()
        self._kind = kind
        self._scenario = scenario
        self._lost_retry_s = lost_retry_s
        self._devices: list[Device] = []
        self._pcie: PciePoller | None = None
        self._pcie_thread = pcie_thread
        self._pcie_interval_s = pcie_interval_s
        self._pcie_resting = False
        self._process_lists = ProcessLists(lib)
        self._xids: XidWatch | None = None
        # GPU index -> (its attachment, why): lost as the PCIe thread found it
        self._pcie_lost: dict[int, tuple[int, str]] = {}
        self.info = BackendInfo(kind=kind, scenario=scenario)
        self._open = False

    # -- life cycle ------------------------------------------------------------------

    def open(self) -> NvmlBackend:
        lib = self._lib
        try:
            lib.nvmlInit()
        except pynvml.NVMLError as exc:
            reason = INIT_FAILURES.get(exc.value, f"NVML could not start: {exc}.")
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
        self._devices = [Device(i) for i in range(count)]
        self._xids = XidWatch(lib)
        for dev in self._devices:
            self._attach(dev)
        if self._pcie_thread:
            self._pcie = PciePoller(self._poll_pcie, self._attached_indices,
                                    self._pcie_pace())
            self._pcie.start()
        return self

    def gpu_identities(self) -> list[tuple[int, str | None]]:
        """Every GPU's (index, UUID) as opened; the UUID is None while a GPU is lost."""
        return [(dev.index, dev.uuid) for dev in self._devices]

    def set_host_detail(self, full: bool) -> None:
        """Whether every tick reads each process's resident set (see the host's
        ``set_detail``), and PCIe every ``pcie_interval_s`` rather than every
        :data:`RESTING_PCIE_S`: off while nobody looks at them, e.g. the window in the
        tray or ``record`` without ``--json``."""
        set_detail = getattr(self._host, "set_detail", None)
        if set_detail is not None:
            set_detail(full)
        self._pcie_resting = not full
        if self._pcie is not None:
            self._pcie.set_interval(self._pcie_pace())

    def _pcie_pace(self) -> float:
        if self._pcie_resting:
            return max(self._pcie_interval_s, RESTING_PCIE_S)
        return self._pcie_interval_s

    def close(self) -> None:
        if self._pcie is not None:
            self._pcie.stop()
            self._pcie = None
        close_host = getattr(self._host, "close", None)
        if close_host is not None:
            close_host()
        for dev in self._devices:
            if dev.gpm is not None:
                dev.gpm.close()
                dev.gpm = None
        if self._xids is not None:
            self._xids.close()
            self._xids = None
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
            return text(fn())
        except pynvml.NVMLError:
            return None

    def _cuda_version(self) -> str | None:
        try:
            v = int(self._lib.nvmlSystemGetCudaDriverVersion())
        except (pynvml.NVMLError, AttributeError):
            return None
        return f"{v // 1000}.{v % 1000 // 10}"

    # -- per-call translation ----------------------------------------------------------

    def _attach(self, dev: Device) -> bool:
        """(Re)acquire a GPU's handle and its static facts; False if it is lost."""
        lib = self._lib
        try:
            handle = lib.nvmlDeviceGetHandleByIndex(dev.index)
        except pynvml.NVMLError as exc:
            if exc.value in LOST_CODES:
                self._mark_lost(dev, str(gpu_lost(exc)))
            else:
                self._mark_lost(dev, f"the GPU could not be opened: {describe_error(exc)}",
                                lost=False)
            return False
        try:
            name = optional(lib.nvmlDeviceGetName, handle)
            uuid = optional(lib.nvmlDeviceGetUUID, handle)
            width = optional(lib.nvmlDeviceGetMemoryBusWidth, handle)
            mem_clock = optional(lib.nvmlDeviceGetMaxClockInfo, handle, lib.NVML_CLOCK_MEM)
            limit_mw = optional(lib.nvmlDeviceGetEnforcedPowerLimit, handle)
            mig = optional(lib.nvmlDeviceGetMigMode, handle)
            links = nvlink_count(lib, handle)
            bus_id = read_pci_bus_id(lib, handle)
            gpm = open_gpm(lib, handle)
        except GpuLost as exc:
            self._mark_lost(dev, str(exc))
            return False
        dev.handle = handle
        dev.name = text(name) if name is not None else None
        dev.uuid = text(uuid) if uuid is not None else None
        # Peak DRAM bandwidth: bus width in bytes x memory clock x 2 (double data rate).
        dev.peak_bandwidth_bytes_per_s = (width / 8 * mem_clock * 1e6 * 2
                                          if width and mem_clock else None)
        dev.power_limit_w = limit_mw / 1000 if limit_mw is not None else None
        dev.mig_enabled = bool(mig[0]) if mig is not None else None
        dev.nvlink_links = links
        dev.pci_bus_id = bus_id
        dev.gpm = gpm
        dev.unsupported = set()
        dev.lost_reason = None
        dev.generation += 1
        if self._xids is not None:
            self._xids.watch(dev.index, handle)
        return True

    def _mark_lost(self, dev: Device, reason: str, *, lost: bool = True) -> None:
        """No handle until a retry; ``lost`` False: unusable for a reason NVML does not
        call lost (the state is then ``error``)."""
        dev.handle = None
        if dev.gpm is not None:
            dev.gpm.close()
            dev.gpm = None
        dev.lost_reason = reason
        dev.lost = lost
        dev.nvlink_last = None
        dev.retry_at_s = self.clock.elapsed_s() + self._lost_retry_s

    def _attached_indices(self) -> list[int]:
        return [d.index for d in self._devices if d.handle is not None]

    def _poll_pcie(self, index: int) -> PcieReading | None:
        """For the poller thread. A GPU that NVML calls lost here is marked lost by the
        next sample, as a lost answer inside the sample would mark it."""
        dev = self._devices[index]
        generation = dev.generation
        try:
            return read_pcie(self._lib, dev)
        except GpuLost as exc:
            self._pcie_lost[index] = (generation, str(exc))
            return None

    # -- one sample --------------------------------------------------------------------

    def sample(self) -> Snapshot:
        """Read every GPU once. Never raises for a single GPU's trouble."""
        timestamp = self.clock.now_s()
        xids = self._xids
        if xids is not None:
            xids.poll()
        elapsed = self.clock.elapsed_s()
        readings: list[tuple[Device, dict[str, Any] | None, dict[int, tuple], str | None]] = []
        for dev in self._devices:
            pcie_lost = self._pcie_lost.pop(dev.index, None)
            if (pcie_lost is not None and dev.handle is not None
                    and pcie_lost[0] == dev.generation):
                self._mark_lost(dev, pcie_lost[1])
            reattached = dev.handle is None
            if reattached and (elapsed < dev.retry_at_s or not self._attach(dev)):
                readings.append((dev, None, {}, None))
                continue
            try:
                # A GPU back from lost reads PCIe here once, as an inline sample would:
                # it is not back while a call the PCIe thread makes still says lost.
                readings.append((dev, *self._read_gpu(dev, pcie_here=reattached)))
            except GpuLost as exc:
                self._mark_lost(dev, str(exc))
                readings.append((dev, None, {}, None))

        pids: set[int] = set()
        for _, _, procs, _ in readings:
            pids.update(procs)
        host = self._host.lookup(pids) if pids else {}
        # some pid not found on the host (a subset test: no new set a tick)
        isolated = not host.keys() >= pids and self._host.pid_namespace_isolated()
        hidden = 0
        gpus = []
        for dev, fields, procs, procs_error in readings:
            if fields is None:
                gpus.append(GpuSample(index=dev.index, uuid=dev.uuid, name=dev.name,
                                      state=GpuState.LOST if dev.lost else GpuState.ERROR,
                                      memory=EMPTY_MEMORY, error=dev.lost_reason,
                                      last_xid=xids.last.get(dev.index) if xids else None,
                                      processes_error=UNREAD_GPU))
                continue
            processes, gpu_hidden = gpu_processes(dev, procs, host, isolated)
            hidden += gpu_hidden
            gpus.append(gpu_sample(dev, fields, processes, procs_error))
        probes = self._read_probes(pids, host) if pids and self._probes is not None else ()
        warnings: tuple[str, ...] = ()
        if not self._devices:
            warnings = (NO_GPUS_WARNING,)
        if hidden:
            warnings = (
                f"gpuwatch runs in a container whose PID namespace hides the GPU processes: "
                f"{hidden} of {len(pids)} pids reported by NVML are not visible here. "
                "Run the container with --pid=host to see their names and users.",
            )
        energy = tuple((dev.index, dev.energy_j) for dev, fields, _, _ in readings
                       if fields is not None and dev.energy_j is not None)
        return Snapshot(timestamp, self.info, tuple(gpus), warnings, probes,
                        energy_consumed_j=energy)

    def _read_probes(self, pids: set[int], host: dict[int, HostProcess]) -> tuple:
        """Probe reports of listed processes, not older than the process (pid reuse)."""
        reports = []
        for pid, report in self._probes.read(pids).items():
            started = host[pid].started_at_s if pid in host else None
            if started is None or report.published_at_s >= started - 1.0:
                reports.append(report)
        return tuple(reports)

    def _read_gpu(self, dev: Device, pcie_here: bool = False,
                  ) -> tuple[dict[str, Any], dict[int, tuple], str | None]:
        lib, h = self._lib, dev.handle
        opt = optional
        memory, error = read_memory(lib, dev)
        util = opt(lib.nvmlDeviceGetUtilizationRates, h)
        gpu_util = float(util.gpu) if util is not None else None
        busy = float(util.memory) if util is not None else None
        peak = dev.peak_bandwidth_bytes_per_s
        power_mw = opt(lib.nvmlDeviceGetPowerUsage, h)
        pcie = (self._pcie.latest(dev.index) if self._pcie is not None and not pcie_here
                else read_pcie(lib, dev))
        nvlink_tx, nvlink_rx = read_nvlink(lib, dev, self.clock.elapsed_s())
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
            "pci_bus_id": dev.pci_bus_id,
            **read_engines(lib, dev, peak),
            "last_xid": self._xids.last.get(dev.index) if self._xids is not None else None,
        }
        dev.energy_j = read_energy(lib, dev)
        return (fields, *self._process_lists.read(dev))
