"""Immutable records of one sampling tick: what every GPU and GPU process looked like.

These are the only telemetry types the layers above ``telemetry/`` ever see. Units are
in the field names; a value the hardware or driver does not report is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from gpuwatch.core.probe_format import ProbeReport


class GpuState(StrEnum):
    OK = "ok"
    LOST = "lost"      # the GPU fell off the bus or needs a reset; the others keep updating
    ERROR = "error"    # reads failed for another reason; see GpuSample.error


class BackendKind(StrEnum):
    NVML = "nvml"
    SIMULATED = "simulated"
    PROMETHEUS = "prometheus"        # many hosts, read from a Prometheus server


@dataclass(frozen=True, slots=True)
class BackendInfo:
    kind: BackendKind
    driver_version: str | None = None
    nvml_version: str | None = None
    cuda_driver_version: str | None = None
    scenario: str | None = None          # the simulated scenario's name
    hostname: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    total_bytes: int | None
    used_bytes: int | None
    free_bytes: int | None
    reserved_bytes: int | None  # None with v1-only drivers (reserved is then folded into used)

    @property
    def used_fraction(self) -> float | None:
        if not self.total_bytes or self.used_bytes is None:
            return None
        return self.used_bytes / self.total_bytes


class HostStatus(StrEnum):
    """What the host (psutil, /proc) could say about a pid the driver lists."""

    FOUND = "found"      # the process runs here: name, user, command line are known
    EXITED = "exited"    # no such process on the host (ended, or a zombie) yet the
                         # driver still lists it holding memory
    HIDDEN = "hidden"    # a container's PID namespace hides the driver's host pid


# How a process the host cannot find is named wherever processes are listed.
EXITED_PROCESS_LABEL = "(exited, still holding memory)"
HIDDEN_PROCESS_LABEL = "(not visible from this PID namespace)"


class ProcessSample(NamedTuple):
    """One process on one GPU. A NamedTuple, not a frozen dataclass: hundreds are built
    every tick, and a tuple is as immutable and six times cheaper to construct."""

    pid: int
    gpu_index: int
    used_bytes: int | None               # None when the driver does not say (e.g. WDDM)
    kind: str = "compute"                # "compute", "graphics" or "compute+graphics"
    name: str | None = None
    cmdline: tuple[str, ...] = ()
    user: str | None = None
    container: str | None = None         # "docker:3f2a1b9c4d5e", "k8s:…", "containerd:…"
    cpu_percent: float | None = None
    rss_bytes: int | None = None
    started_at_s: float | None = None    # Unix time
    resolved: bool = True                # False when the host could not see this pid
    host_status: HostStatus = HostStatus.FOUND   # why it could not, when it could not

    @property
    def found_on_host(self) -> bool:
        return self.host_status is HostStatus.FOUND


@dataclass(frozen=True, slots=True)
class GpuSample:
    index: int
    uuid: str | None
    name: str | None
    state: GpuState
    memory: MemoryInfo
    error: str | None = None             # why the state is not ok
    gpu_util_percent: float | None = None
    memory_busy_percent: float | None = None   # % of time memory was read/written, not occupancy
    peak_bandwidth_bytes_per_s: float | None = None
    estimated_bandwidth_bytes_per_s: float | None = None   # busy % x peak: an estimate
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    nvlink_tx_bytes_per_s: float | None = None
    nvlink_rx_bytes_per_s: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    graphics_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    mig_enabled: bool | None = None
    processes: tuple[ProcessSample, ...] = ()
    # Why the process list is missing or incomplete (NVML timed out, no permission, …);
    # None when it was read. An empty ``processes`` then means "unknown", not "none".
    processes_error: str | None = None
    pci_bus_id: str | None = None        # "00000000:18:00.0", as NVML and DCGM write it
    # Measured by the GPU's performance monitor (GPM, Hopper and later), over the time
    # since the previous sample; None where the GPU has no GPM, and on its first sample.
    dram_active_percent: float | None = None       # DRAM bandwidth used, % of peak
    measured_bandwidth_bytes_per_s: float | None = None   # DRAM active % x peak: measured
    graphics_active_percent: float | None = None   # % of time the graphics/compute engine ran
    sm_active_percent: float | None = None         # % of SMs busy
    tensor_active_percent: float | None = None     # % of time any tensor pipe was active
    encoder_util_percent: float | None = None
    decoder_util_percent: float | None = None
    memory_temperature_c: float | None = None      # HBM temperature (data-centre GPUs)
    # the last XID (driver error report) since gpuwatch started watching; None: none seen
    last_xid: int | None = None


class BudgetPeak(NamedTuple):
    """The peak a process's linked memory budget predicts, as a source reports it (a
    gpuwatch exporter's ``--budget`` links, read over Prometheus)."""

    gpu_index: int
    pid: int
    peak_bytes: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    timestamp_s: float                   # Unix time of the sample (virtual time when simulated)
    backend: BackendInfo
    gpus: tuple[GpuSample, ...]
    warnings: tuple[str, ...] = field(default=())   # e.g. a PID namespace hiding processes
    probes: tuple[ProbeReport, ...] = field(default=())  # in-process probe reports, by pid
    budget_peaks: tuple[BudgetPeak, ...] = field(default=())  # budgets the source links
    # (GPU index, energy in J since the driver loaded): a counter, kept beside the GPU
    # samples because it changes every tick (they are reused while nothing else changes)
    energy_consumed_j: tuple[tuple[int, float], ...] = field(default=())

    def gpu(self, index: int) -> GpuSample | None:
        for gpu in self.gpus:
            if gpu.index == index:
                return gpu
        return None

    def probe(self, pid: int) -> ProbeReport | None:
        for report in self.probes:
            if report.pid == pid:
                return report
        return None

    @property
    def processes(self) -> tuple[ProcessSample, ...]:
        return tuple(p for gpu in self.gpus for p in gpu.processes)
