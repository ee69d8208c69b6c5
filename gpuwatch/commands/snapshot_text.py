"""Snapshots as text for a terminal: a block per GPU and a table of its processes."""

from __future__ import annotations

import shlex
import time

from gpuwatch.commands.term_colour import memory_level, paint
from gpuwatch.core.safe_text import clip, visible
from gpuwatch.core.snapshot import (
    EXITED_PROCESS_LABEL,
    HIDDEN_PROCESS_LABEL,
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    HostStatus,
    ProcessSample,
    Snapshot,
)
from gpuwatch.core.units import format_bytes, format_duration, format_rate


def describe_backend(info: BackendInfo) -> str:
    if info.kind is BackendKind.SIMULATED:
        return f"Simulated GPUs (scenario '{visible(info.scenario)}'), not real hardware"
    if info.kind is BackendKind.PROMETHEUS:
        return f"GPUs read from Prometheus at {visible(info.hostname)}"
    parts = ["NVML"]
    if info.driver_version:
        parts.append(f"driver {visible(info.driver_version)}")
    if info.cuda_driver_version:
        parts.append(f"CUDA {info.cuda_driver_version}")
    return ", ".join(parts)


def _memory_line(g: GpuSample) -> str:
    m = g.memory
    if m.total_bytes is None:
        return ("memory: could not be read" if g.state is not GpuState.OK
                else "memory: not reported by this GPU")
    pct = f" ({m.used_fraction * 100:.0f} %)" if m.used_fraction is not None else ""
    reserved = f", {format_bytes(m.reserved_bytes)} reserved" if m.reserved_bytes else ""
    return (f"memory: {format_bytes(m.used_bytes)} used of {format_bytes(m.total_bytes)}{pct}, "
            f"{format_bytes(m.free_bytes)} free{reserved}")


def _activity_line(g: GpuSample) -> str:
    bits = []
    if g.gpu_util_percent is not None:
        bits.append(f"GPU busy {g.gpu_util_percent:.0f} %")
    if g.memory_busy_percent is not None:
        est = g.estimated_bandwidth_bytes_per_s
        peak = g.peak_bandwidth_bytes_per_s
        measured = g.measured_bandwidth_bytes_per_s       # GPM, where the GPU has it
        if measured is not None and peak:
            bw = f", {format_rate(measured)} of {format_rate(peak)} peak (measured)"
        elif est is not None and peak:
            bw = f" ≈ {format_rate(est)} of {format_rate(peak)} peak (estimate)"
        else:
            bw = ""
        bits.append(f"memory busy {g.memory_busy_percent:.0f} % of the time{bw}")
    if g.pcie_rx_bytes_per_s is not None or g.pcie_tx_bytes_per_s is not None:
        bits.append(f"PCIe rx {format_rate(g.pcie_rx_bytes_per_s)} "
                    f"tx {format_rate(g.pcie_tx_bytes_per_s)}")
    if g.nvlink_rx_bytes_per_s is not None:
        bits.append(f"NVLink rx {format_rate(g.nvlink_rx_bytes_per_s)} "
                    f"tx {format_rate(g.nvlink_tx_bytes_per_s)}")
    return " · ".join(bits)


def _sensors_line(g: GpuSample) -> str:
    bits = []
    if g.temperature_c is not None:
        bits.append(f"{g.temperature_c:.0f} °C")
    if g.power_w is not None:
        limit = f" / {g.power_limit_w:.0f} W" if g.power_limit_w else ""
        bits.append(f"{g.power_w:.0f} W{limit}")
    if g.graphics_clock_mhz is not None:
        bits.append(f"clocks {g.graphics_clock_mhz} / {g.memory_clock_mhz} MHz (graphics/memory)")
    if g.mig_enabled:
        bits.append("MIG on")
    return " · ".join(bits)


def format_snapshot(s: Snapshot, width: int = 100, colour: bool = False) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.timestamp_s))
    lines = [f"{describe_backend(s.backend)} · {stamp}"]
    for w in s.warnings:
        lines.append(paint(f"warning: {visible(w)}", "warning", colour))
    if not s.gpus and not s.warnings:
        lines.append("No GPUs found.")
    for g in s.gpus:
        lines.append("")
        title = f"GPU {g.index}  {visible(g.name) or 'unknown GPU'}"
        if g.state is not GpuState.OK:
            title += "  " + paint(f"[{g.state.value.upper()}]", "critical", colour)
        lines.append(title)
        if g.state is not GpuState.OK:
            lines.append("  " + (visible(g.error) or "no reason given by the driver"))
        if g.state is GpuState.LOST:
            continue
        level = memory_level(g.memory.total_bytes, g.memory.free_bytes)
        for text in (paint(_memory_line(g), level, colour), _activity_line(g),
                     _sensors_line(g)):
            if text:
                lines.append("  " + text)
        if g.processes_error is not None:
            state = "incomplete" if g.processes else "unavailable"
            lines.append(f"  process list {state}: {visible(g.processes_error)}")
        elif not g.processes:
            lines.append("  no processes")
        if not g.processes:
            continue
        lines.append(f"  {'PID':>7}  {'USER':<10} {'GPU MEMORY':>10}  {'RUNNING':>11}  COMMAND")
        for p in g.processes:
            running = format_duration(s.timestamp_s - p.started_at_s) if p.started_at_s else ""
            command = _command(p)
            if p.container:
                command = f"[{p.container}] {command}"
            user = p.user or ("-" if p.host_status is HostStatus.EXITED else "?")
            head = (f"{p.pid:>7}  {clip(user, 10, ''):<10} "
                    f"{format_bytes(p.used_bytes):>10}  {running:>11}  ")
            lines.append("  " + head + clip(command, max(8, width - 2 - len(head))))
    return "\n".join(lines)


def _command(p: ProcessSample) -> str:
    if p.cmdline:
        return shlex.join(p.cmdline)
    if p.name:
        return p.name
    if p.host_status is HostStatus.EXITED:
        return EXITED_PROCESS_LABEL
    return HIDDEN_PROCESS_LABEL


def format_tick(s: Snapshot, elapsed_s: float, colour: bool = False) -> list[str]:
    """One compact line per GPU for `gpuwatch record`."""
    if not s.gpus:
        return [f"{format_duration(elapsed_s):>10}  no GPUs"]
    out = []
    for g in s.gpus:
        head = f"{format_duration(elapsed_s):>10}  GPU {g.index}"
        if g.state is not GpuState.OK and g.memory.total_bytes is None:
            # lost, or unreadable as a whole (a host that stopped answering): say why
            fallback = "GPU lost" if g.state is GpuState.LOST else "could not be read"
            out.append(f"{head}  " + paint(visible(g.error) or fallback, "critical", colour))
            continue
        m = g.memory
        pct = f"{m.used_fraction * 100:3.0f} %" if m.used_fraction is not None else "  n/a"
        pct = paint(pct, memory_level(m.total_bytes, m.free_bytes), colour)
        busy = (f"busy {g.memory_busy_percent:3.0f} %" if g.memory_busy_percent is not None
                else "busy n/a")
        out.append(f"{head}  {format_bytes(m.used_bytes):>9} / {format_bytes(m.total_bytes)} "
                   f"{pct}  {busy}  " + _tick_processes(g))
    return out


def _tick_processes(g: GpuSample) -> str:
    if g.processes_error is None:
        return f"{len(g.processes)} proc"
    if g.processes:
        return f"{len(g.processes)} proc (list incomplete)"
    return "processes unavailable"
