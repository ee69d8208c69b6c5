"""Readings of one GPU through NVML: memory, PCIe, NVLink and the process lists.

Each function takes the NVML module and a :class:`Device` (the GPU's handle and what
was learnt about it) and raises :class:`GpuLost` when the GPU stops answering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pynvml

from gpuwatch.core.snapshot import MemoryInfo
from gpuwatch.telemetry.nvml import codes
from gpuwatch.telemetry.nvml.gpm import NO_FIGURES, GpmReader
from gpuwatch.telemetry.nvml.translate import EMPTY_MEMORY, LOST_CODES, GpuLost
from gpuwatch.telemetry.pcie import PcieReading

# What a lost GPU says, by the NVML code that said it was lost.
LOST_TEXTS: dict[int, str] = {
    codes.GPU_IS_LOST: "GPU lost (it stopped answering; a reset or reboot may be needed)",
    codes.GPU_NOT_FOUND: "GPU lost (the driver no longer finds it; a reboot may be needed)",
    codes.RESET_REQUIRED: "GPU lost (it needs a reset: nvidia-smi -r, or a reboot)",
}
_FRIENDLY = {
    codes.code("TIMEOUT"): "NVML timed out",
    codes.NO_PERMISSION: "no permission",
    codes.NOT_SUPPORTED: "not supported by this GPU or driver",
}
_CODE_NAMES = {value: name for name, value in codes.all_codes().items()}

_NO_V2 = frozenset({codes.FUNCTION_NOT_FOUND, codes.NOT_SUPPORTED,
                    codes.ARGUMENT_VERSION_MISMATCH})
# NVML_VALUE_NOT_AVAILABLE (2**64 - 1) marks unknown per-process memory; nothing at or
# above 2**63 bytes is a real figure (nor storable as SQLite's signed 64-bit integer).
_UNKNOWN_MEMORY = 2**63
_ALL_LINKS = 0xFFFFFFFF              # NVLink throughput fields: this scope sums every link
_NVLINK_TX = pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX
_NVLINK_RX = pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX
NVLINK_ALL_LINKS = [(_NVLINK_TX, _ALL_LINKS), (_NVLINK_RX, _ALL_LINKS)]


@dataclass(slots=True)
class Device:
    """One GPU as the backend knows it; ``handle`` is None while the GPU is lost."""

    index: int
    handle: Any = None
    name: str | None = None
    uuid: str | None = None
    peak_bandwidth_bytes_per_s: float | None = None
    power_limit_w: float | None = None
    mig_enabled: bool | None = None
    memory_v2: bool = True
    nvlink_links: int = 0
    nvlink_fields: list = field(default_factory=lambda: NVLINK_ALL_LINKS)
    nvlink_last: tuple[float, float, float] | None = None   # (elapsed s, tx KiB, rx KiB)
    lost_reason: str | None = None      # why there is no handle: the GPU's error text
    lost: bool = True                   # False: it failed for a reason other than "lost"
    retry_at_s: float = 0.0
    generation: int = 0                 # counts attachments: a stale handle's news is old
    # What the last tick read and made, reused while unchanged (most ticks, as training
    # holds its memory flat): (compute list, graphics list, merged, error) as NVML gave
    # them; (lists merged, host answers, hidden, processes, hidden count); the GpuSample
    # and the readings it was made from; (total, used, free, reserved) and its MemoryInfo.
    lists_seen: tuple | None = None
    processes_seen: tuple | None = None
    sample_seen: tuple | None = None
    memory_seen: tuple | None = None
    pci_bus_id: str | None = None
    gpm: GpmReader | None = None        # the GPU's performance monitor, where it has one
    unsupported: set[str] = field(default_factory=set)   # calls it answered NOT_SUPPORTED
    energy_j: float | None = None       # the last tick's energy counter reading


def gpu_lost(exc: pynvml.NVMLError) -> GpuLost:
    """The GpuLost for one of NVML's lost codes, in a sentence a person can act on."""
    return GpuLost(LOST_TEXTS.get(exc.value, f"GPU lost ({exc})"))


def describe_error(exc: pynvml.NVMLError) -> str:
    """NVML's error in words, with its name to search for: "NVML timed out (TIMEOUT)"."""
    name = _CODE_NAMES.get(exc.value)
    words = _FRIENDLY.get(exc.value) or str(exc)
    if name is None:
        return words
    return name if words.startswith("NVML Error with code") else f"{words} ({name})"


def optional(fn: Any, *args: Any) -> Any:
    """The call's result; None when unsupported or failing; raises GpuLost only when NVML
    says the GPU is lost."""
    try:
        return fn(*args)
    except pynvml.NVMLError as exc:
        if exc.value in LOST_CODES:
            raise gpu_lost(exc) from None
        return None
    except codes.LIBRARY_MISMATCH:
        return None


def read_memory(lib: Any, dev: Device) -> tuple[MemoryInfo, str | None]:
    """Memory info (v2 with reserved; v1 on older drivers) and an error text, if any."""
    h = dev.handle
    if dev.memory_v2:
        try:
            m = lib.nvmlDeviceGetMemoryInfo(h, version=lib.nvmlMemory_v2)
            return _memory_info(dev, m.total, m.used, m.free, m.reserved), None
        except pynvml.NVMLError as exc:
            if exc.value in LOST_CODES:
                raise gpu_lost(exc) from None
            if exc.value not in _NO_V2:
                return EMPTY_MEMORY, f"memory could not be read: {exc}"
    try:
        m = lib.nvmlDeviceGetMemoryInfo(h)
    except pynvml.NVMLError as exc:
        if exc.value in LOST_CODES:
            raise gpu_lost(exc) from None
        if exc.value == codes.NOT_SUPPORTED:   # unified memory (Grace, GB10)
            return EMPTY_MEMORY, None
        return EMPTY_MEMORY, f"memory could not be read: {exc}"
    dev.memory_v2 = False   # v2 failed where v1 works: an older driver (reserved in used)
    return _memory_info(dev, m.total, m.used, m.free, None), None


def _memory_info(dev: Device, total: int, used: int, free: int,
                 reserved: int | None) -> MemoryInfo:
    """The MemoryInfo of these figures: the last one again when they are unchanged."""
    figures = (total, used, free, reserved)
    seen = dev.memory_seen
    if seen is not None and seen[0] == figures:
        return seen[1]
    info = MemoryInfo(_real(total) or None, _real(used), _real(free),
                      _real(reserved))
    dev.memory_seen = (figures, info)
    return info


def _real(value: int | None) -> int | None:
    """A byte count from the driver, or None where it cannot be one."""
    return None if value is None or not 0 <= value < _UNKNOWN_MEMORY else value


def read_pcie(lib: Any, dev: Device) -> PcieReading | None:
    """PCIe rates in bytes/s. Each NVML call here blocks ~20 ms on real hardware."""
    h = dev.handle
    if h is None:
        return None
    tx = optional(lib.nvmlDeviceGetPcieThroughput, h, lib.NVML_PCIE_UTIL_TX_BYTES)
    rx = optional(lib.nvmlDeviceGetPcieThroughput, h, lib.NVML_PCIE_UTIL_RX_BYTES)
    return PcieReading(tx * 1024.0 if tx is not None else None,
                       rx * 1024.0 if rx is not None else None)


def nvlink_count(lib: Any, handle: Any) -> int:
    values = optional(lib.nvmlDeviceGetFieldValues, handle,
                      [lib.NVML_FI_DEV_NVLINK_LINK_COUNT])
    if not values or values[0].nvmlReturn != pynvml.NVML_SUCCESS:
        return 0
    return int(values[0].value.ullVal)


def read_nvlink(lib: Any, dev: Device, now_s: float) -> tuple[float | None, float | None]:
    """NVLink data rates (tx, rx) from the cumulative KiB counters, summed over all links."""
    if not dev.nvlink_links:
        return None, None
    fields = dev.nvlink_fields
    values = optional(lib.nvmlDeviceGetFieldValues, dev.handle, fields)
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
        if fields is NVLINK_ALL_LINKS:    # an older driver without the aggregate scope
            links = range(dev.nvlink_links)
            dev.nvlink_fields = [(_NVLINK_TX, k) for k in links] + [(_NVLINK_RX, k) for k in links]
            return read_nvlink(lib, dev, now_s)
        return None, None
    tx, rx = totals
    last, dev.nvlink_last = dev.nvlink_last, (now_s, float(tx), float(rx))
    if last is None or now_s <= last[0]:
        return None, None          # a rate needs two readings
    dt = now_s - last[0]
    return max(0.0, (tx - last[1]) * 1024 / dt), max(0.0, (rx - last[2]) * 1024 / dt)


_MEMORY_TEMP = [pynvml.NVML_FI_DEV_MEMORY_TEMP]
_NOT_THERE = frozenset({codes.NOT_SUPPORTED, codes.FUNCTION_NOT_FOUND})


def _supported(dev: Device, key: str, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, None when failing; a call the GPU does not support is not made
    again until the GPU is attached anew (most GPUs lack one or two of these)."""
    if key in dev.unsupported:
        return None
    try:
        return fn(*args)
    except pynvml.NVMLError as exc:
        if exc.value in LOST_CODES:
            raise gpu_lost(exc) from None
        if exc.value in _NOT_THERE:
            dev.unsupported.add(key)
        return None
    except (AttributeError, *codes.LIBRARY_MISMATCH):    # an older binding
        dev.unsupported.add(key)
        return None


def read_engines(lib: Any, dev: Device, peak: float | None) -> dict[str, Any]:
    """The GPM figures (measured bandwidth, engine activity), encoder and decoder
    utilisation and memory temperature: GpuSample fields by name."""
    h = dev.handle
    try:
        gpm = dev.gpm.read() if dev.gpm is not None else NO_FIGURES
    except pynvml.NVMLError as exc:      # only a lost GPU's answers come out
        raise gpu_lost(exc) from None
    dram = gpm.dram_active_percent
    enc = _supported(dev, "enc", lib.nvmlDeviceGetEncoderUtilization, h)
    dec = _supported(dev, "dec", lib.nvmlDeviceGetDecoderUtilization, h)
    temps = _supported(dev, "memtemp", lib.nvmlDeviceGetFieldValues, h, _MEMORY_TEMP)
    memory_temp = None
    if temps and temps[0].nvmlReturn == pynvml.NVML_SUCCESS:
        memory_temp = float(temps[0].value.uiVal)
        if not 0 < memory_temp < 200:      # 0 on GPUs without the sensor
            memory_temp = None
    elif temps:
        dev.unsupported.add("memtemp")
    return {
        "dram_active_percent": dram,
        "measured_bandwidth_bytes_per_s": dram / 100 * peak if dram is not None and peak
        else None,
        "graphics_active_percent": gpm.graphics_active_percent,
        "sm_active_percent": gpm.sm_active_percent,
        "tensor_active_percent": gpm.tensor_active_percent,
        "encoder_util_percent": float(enc[0]) if enc else None,
        "decoder_util_percent": float(dec[0]) if dec else None,
        "memory_temperature_c": memory_temp,
    }


def read_energy(lib: Any, dev: Device) -> float | None:
    """Energy the GPU used since the driver loaded, in J (NVML counts mJ; Volta on)."""
    mj = _supported(dev, "energy", lib.nvmlDeviceGetTotalEnergyConsumption, dev.handle)
    return mj / 1000 if mj is not None else None


def read_pci_bus_id(lib: Any, handle: Any) -> str | None:
    """The GPU's PCI address as NVML writes it ("00000000:18:00.0"); None if unknown."""
    info = optional(lib.nvmlDeviceGetPciInfo, handle)
    if info is None:
        return None
    bus_id = info.busId
    bus_id = bus_id.decode(errors="replace") if isinstance(bus_id, bytes) else str(bus_id)
    return bus_id if bus_id.isprintable() and 0 < len(bus_id) <= 32 else None


def open_gpm(lib: Any, handle: Any) -> GpmReader | None:
    """The GPU's GPM reader where it has GPM; raises GpuLost when the GPU is lost."""
    try:
        return GpmReader.open(lib, handle)
    except pynvml.NVMLError as exc:
        raise gpu_lost(exc) from None
