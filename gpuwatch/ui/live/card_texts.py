"""The words and figures of a GPU card, as runs of text: no widgets here.

Kept apart from :mod:`gpuwatch.ui.live.gpu_card` (which lays them out and paints them)
so each line's wording can be read, and tested, on its own.
"""

from __future__ import annotations

import re

from gpuwatch.core.snapshot import EXITED_PROCESS_LABEL, GpuSample, HostStatus, ProcessSample
from gpuwatch.core.units import SIZE_UNITS, UnitSystem, format_bytes, format_percent, format_rate
from gpuwatch.ui.live.card_state import headroom_text
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.text_lines import Run
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.bandwidth_units import format_bandwidth

LEGEND_PROCESSES = 3

BUSY_TIP = ("Share of the last sample period in which device memory was being read or "
            "written (NVML utilization.memory). It is not how full memory is.")
BANDWIDTH_TIP = ("Estimated DRAM bandwidth: memory busy % × the peak bandwidth from bus "
                 "width and memory clock. An estimate, not a counter.")
UTIL_TIP = "Share of time a kernel was running (NVML utilization.gpu)"
PCIE_TIP = "PCIe receive (↓ host to GPU) and transmit (↑ GPU to host)"
NVLINK_TIP = ("NVLink receive (↓) and transmit (↑), all links together, from NVML's "
              "throughput counters")


# a GPU of a cluster view, as the Prometheus source names it: "node-h100-07/0 · H100 80GB HBM3"
HOST_GPU = re.compile(r"(?P<host>.+)/(?P<gpu>\d+) · (?P<model>.+)")


def title_runs(index: int, name: str) -> list[Run]:
    """"GPU 3  H100 80GB HBM3"; a GPU of a cluster view (named "host/0 · model" by the
    Prometheus source) stands under its host's header and reads "GPU 0  model": its
    index on its own host."""
    m = HOST_GPU.fullmatch(name)
    if m is None:
        return [Run(f"GPU {index}", bold=True), Run(f"  {name}")]
    return [Run(f"GPU {m['gpu']}", bold=True), Run(f"  {m['model']}")]


def lost_reason(error: str | None) -> tuple[str, str]:
    """(line, tooltip) of a GPU that cannot be read: "Driver: GPU lost (…)", or for a
    cluster host that does not answer "Unreachable: its scrape fails (…)" (its host's
    header names the host)."""
    reason = error or "no reason given"
    m = re.fullmatch(r"host (?P<host>.+?) unreachable: (?P<why>.+)", reason)
    if m is not None:
        return f"Unreachable: {m['why']}", f"Host {m['host']} unreachable: {m['why']}"
    return f"Driver: {reason}", f"The driver's reason: {reason}"


def title_tip(index: int, name: str, uuid: str | None) -> str:
    """The title's tooltip: "node-h100-07 · GPU 0 · GPU 3 in this window · GPU-…"."""
    m = HOST_GPU.fullmatch(name)
    host = "" if m is None else f"{m['host']} · GPU {m['gpu']} · "
    return f"{host}GPU {index} in this window" + (f" · {uuid}" if uuid else "")


def proc_name(p: ProcessSample) -> str:
    if p.name or p.cmdline:
        return p.name or p.cmdline[0]
    if p.host_status is HostStatus.EXITED:
        return EXITED_PROCESS_LABEL
    return f"pid {p.pid}"


def in_unit_of(n: int | None, total: int | None, units: UnitSystem) -> str:
    """The used figure in the unit of the total, so '17.7 / 24.0 GiB' reads at a glance."""
    if n is None:
        return "n/a"
    unit = format_bytes(total or n, units).rsplit(" ", 1)[-1]
    factor = SIZE_UNITS.get(unit.upper(), 1)
    return f"{n / factor:.1f}"


def used_runs(g: GpuSample, units: UnitSystem) -> list[Run]:
    """"61.7 / 79.6 GiB used" (the figure bold)."""
    m = g.memory
    return [Run(in_unit_of(m.used_bytes, m.total_bytes, units), bold=True),
            Run(f" / {format_bytes(m.total_bytes, units)} used")]


def legend_runs(g: GpuSample, procs: list[ProcessSample], units: UnitSystem) -> list[Run]:
    """The largest processes with their colour's square, then how many more."""
    c = theme.colors()
    runs: list[Run] = []
    for p in sorted(procs, key=lambda p: -(p.used_bytes or 0))[:LEGEND_PROCESSES]:
        runs += [Run("■ ", theme.process_color(p.pid).name()), Run(f"{proc_name(p)} "),
                 Run(f"{format_bytes(p.used_bytes, units)}   ", c.muted)]
    more = len(procs) - LEGEND_PROCESSES
    if more > 0:
        runs.append(Run(f"+{more} more", c.muted))
    if g.processes_error is not None:
        state = "incomplete" if procs else "unavailable"
        runs.append(Run(f"Process list {state}: {g.processes_error}", c.warning))
    elif not procs:
        runs.append(Run("No processes", c.muted))
    return runs


NO_READING = "—"      # a figure the driver did not give this sample (its reason: tooltip)


def metric_texts(g: GpuSample, compact: bool = False) -> tuple[str, str, str, str, str]:
    """(memory busy, bandwidth, GPU busy, PCIe, NVLink); NVLink is "" where the GPU has
    none (or the driver does not count it). ``compact``: the short forms of a narrow
    card (the tooltips keep the meaning). A figure the driver did not give reads "—"
    (:func:`missing_reason` says why, for the tooltip)."""
    peak = format_bandwidth(g.peak_bandwidth_bytes_per_s)
    rate = format_bandwidth(g.estimated_bandwidth_bytes_per_s)
    nvlink = "" if g.nvlink_rx_bytes_per_s is None and g.nvlink_tx_bytes_per_s is None \
        else link_text("NVLink", g.nvlink_rx_bytes_per_s, g.nvlink_tx_bytes_per_s, compact)
    pcie = link_text("PCIe", g.pcie_rx_bytes_per_s, g.pcie_tx_bytes_per_s, compact)
    busy = format_percent(g.memory_busy_percent, NO_READING)
    util = format_percent(g.gpu_util_percent, NO_READING)
    measured = g.measured_bandwidth_bytes_per_s      # the GPU's monitor (GPM) measured it
    if measured is not None:
        shown = format_bandwidth(measured)
        bandwidth = (f"{shown} meas." if compact else
                     f"{shown} measured (≈ {rate} est.) of {peak}")
    elif g.peak_bandwidth_bytes_per_s is None:    # no peak known: no estimate to give
        bandwidth = "bandwidth n/a" if compact else "bandwidth n/a (peak unknown)"
    elif g.estimated_bandwidth_bytes_per_s is None:
        bandwidth = f"bandwidth {NO_READING}" + ("" if compact else f" of {peak}")
    else:
        bandwidth = f"≈ {rate} est." if compact else f"≈ {rate} est. of {peak}"
    if compact:
        return (f"Mem busy {busy}", bandwidth, f"GPU busy {util}", pcie, nvlink)
    of_time = "" if g.memory_busy_percent is None else " of time"
    return (f"Memory busy {busy}{of_time}", bandwidth, f"GPU busy {util}", pcie, nvlink)


def missing_reason(g: GpuSample) -> str:
    """The tooltip line for a figure shown as "—"."""
    return ("No reading this sample: " + g.error) if g.error else \
        "No reading this sample: the driver gave none for it."


def link_text(name: str, rx: float | None, tx: float | None, compact: bool) -> str:
    """"PCIe ↓ 1.8 GB/s  ↑ 644 MB/s"; compact, both in the larger one's unit, said once:
    "PCIe ↓1.8 ↑0.6 GB/s"."""
    down, up = format_rate(rx, unknown=NO_READING), format_rate(tx, unknown=NO_READING)
    if not compact:
        return f"{name} ↓ {down}  ↑ {up}"
    if rx is None or tx is None:
        return f"{name} ↓{down} ↑{up}"
    unit = format_rate(max(rx, tx)).rpartition(" ")[2]          # "GB/s"
    factor = SIZE_UNITS.get(unit.removesuffix("/s").upper(), 1)
    digits = 0 if factor == 1 or max(rx, tx) / factor >= 100 else 1
    return f"{name} ↓{rx / factor:.{digits}f} ↑{tx / factor:.{digits}f} {unit}"


def vitals_runs(g: GpuSample, thresholds: Thresholds, compact: bool = False) -> list[Run]:
    """"75 °C · 376 / 450 W", the temperature amber (and "hot") above its threshold;
    ``compact`` leaves the power limit out."""
    c = theme.colors()
    temp = "n/a °C" if g.temperature_c is None else f"{g.temperature_c:.0f} °C"
    hot = g.temperature_c is not None and g.temperature_c >= thresholds.temperature_warning_c
    if g.power_w is None:
        power = "n/a W"
    elif g.power_limit_w and not compact:
        power = f"{g.power_w:.0f} / {g.power_limit_w:.0f} W"
    else:
        power = f"{g.power_w:.0f} W"
    return [Run(f"{temp} hot" if hot else temp, c.warning if hot else None),
            Run(f" · {power}")]


def budget_lines(overlay: Overlay, capacity: int | None, tensors_bytes: float | None,
                 units: UnitSystem) -> tuple[list[list[Run]], str]:
    """The card's budget lines and their tooltip: first the key figures, predicted and
    measured, then what stands out: more than the GPU holds (critical, in words),
    unexplained bytes, or the room left, in neutral words ("may grow ~4.0 GiB more":
    room in a budget is not a verdict on the GPU); then the budget's name, muted, and
    what the probe counts in tensors."""
    c = theme.colors()
    pred = overlay.prediction
    figures = [Run("Budget ", bold=True), Run("predicted "),
               Run(format_bytes(pred.total_bytes, units), bold=True),
               Run(f" · measured {format_bytes(overlay.measured_bytes, units)}")]
    if capacity and pred.total_bytes > capacity:
        figures.append(Run(f" · more than this GPU's {format_bytes(capacity, units)}",
                           c.critical, bold=True))
    elif overlay.unexplained_bytes:
        figures.append(Run(f" · unexplained {format_bytes(overlay.unexplained_bytes, units)}",
                           bold=True))
    elif overlay.headroom_bytes:
        figures.append(Run(f" · {headroom_text(overlay.headroom_bytes, units)}"))
    name = f"pid {overlay.pid} · {pred.label}"
    if tensors_bytes is not None:
        name += f" · the probe counts {format_bytes(tensors_bytes, units)} in tensors"
    lines = [figures, [Run(name, c.muted)]]
    tooltip = "".join(r.text for r in figures) + "\n" + name
    return lines, tooltip
