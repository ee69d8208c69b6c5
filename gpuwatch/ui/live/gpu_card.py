"""One GPU at a glance: memory bar by process, used/free, busy vs bandwidth, PCIe, heat, power.

Labels are only touched when their text changes, so a card whose numbers are steady
costs almost nothing per sample. A lost GPU keeps its last known name and greys out
with the reason, and comes back to life by itself when the GPU does. A process that runs
the probe (``probes``, set by the window before each update) has its bar segment split
into allocated / cached free / outside PyTorch, with a legend line under the bar.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QFrame, QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import (
    EXITED_PROCESS_LABEL,
    GpuSample,
    GpuState,
    HostStatus,
    ProcessSample,
)
from gpuwatch.core.units import SIZE_UNITS, UnitSystem, format_bytes, format_percent, format_rate
from gpuwatch.ui.live.memory_bar import MemoryBar, Segment
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.probe_view import largest, legend_lines, probe_split, split_segments
from gpuwatch.ui.live.text_lines import Run, TextLines
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme

LEGEND_PROCESSES = 3


class _Label(QLabel):
    """A label that ignores setting the text it already shows."""

    def set(self, text: str, tooltip: str | None = None) -> None:
        if text != self.text():
            self.setText(text)
        if tooltip is not None and tooltip != self.toolTip():
            self.setToolTip(tooltip)


class GpuCard(QFrame):
    def __init__(self, index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.index = index
        self.setObjectName("gpuCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._name = f"GPU {index}"
        self._order: dict[int, int] = {}      # pid -> first-seen rank, so segments don't jump
        self._placed: tuple[int, ...] = ()    # the pids the bar's colours were handed out for
        # pid -> (name, tooltip head, colour) of its bar segment
        self._segment_names: dict[int, tuple[str | None, str, QColor]] = {}
        self.state = GpuState.OK
        self.height_changed = False   # the budget line came or went: the view may re-fit
        self._total_bytes: int | None = None
        self.probes: dict[int, ProbeReport] = {}   # pid -> this sample's report, on this GPU
        self._splits: dict[int, list[Segment]] = {}   # pid -> its split's segments
        self._probe_key: tuple | None = None          # what the probe legend shows now

        self.title = TextLines(fit_text=True)
        self.badge = _Label()
        self.badge.setObjectName("badge")
        self.vitals = TextLines(fit_text=True, align_right=True)
        self.bar = MemoryBar()
        self.used = TextLines(fit_text=True)
        self.free = TextLines(fit_text=True, align_right=True)
        self.legend = TextLines(fit_text=True)
        self.busy = TextLines(fit_text=True)
        self.bandwidth = TextLines(fit_text=True)
        self.util = TextLines(fit_text=True)
        self.pcie = TextLines(fit_text=True)
        self.budget = _Label()
        self.budget.setTextFormat(Qt.TextFormat.RichText)
        self.budget.setWordWrap(True)
        self.budget.hide()
        self.probe = TextLines()     # the probe's legend: as wide as the card, cut to fit
        self.probe.hide()
        self._muted = (self.busy, self.bandwidth, self.util, self.pcie, self.legend, self.free)
        self._plain = (self.title, self.vitals, self.used)
        self._colors_key: tuple | None = None

        top = QHBoxLayout()
        top.setSpacing(8)
        top.addWidget(self.title, 1)
        top.addWidget(self.badge)
        top.addWidget(self.vitals)
        usage = QHBoxLayout()
        usage.addWidget(self.used, 1)
        usage.addWidget(self.free)
        metrics = QGridLayout()
        metrics.setHorizontalSpacing(16)
        metrics.setVerticalSpacing(2)
        metrics.addWidget(self.busy, 0, 0)
        metrics.addWidget(self.bandwidth, 0, 1)
        metrics.addWidget(self.util, 1, 0)
        metrics.addWidget(self.pcie, 1, 1)
        metrics.setColumnStretch(0, 1)
        metrics.setColumnStretch(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        layout.setSpacing(5)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addLayout(usage)
        layout.addWidget(self.probe)
        layout.addWidget(self.legend)
        layout.addLayout(metrics)
        layout.addWidget(self.budget)
        layout.addStretch(1)
        self.badge.hide()

    # ------------------------------------------------------------------------------
    def update_sample(self, g: GpuSample, units: UnitSystem, thresholds: Thresholds,
                      overlay: Overlay | None = None) -> None:
        if g.name:
            self._name = g.name.removeprefix("NVIDIA ")
        self.title.set_runs([Run(f"GPU {g.index}", bold=True), Run(f"  {self._name}")],
                            g.uuid or None)
        self._set_state(g)
        self._apply_colors()
        if g.state is not GpuState.OK and g.memory.total_bytes is None:
            self._show_lost(g)
            return
        self._show_memory(g, units, thresholds, overlay)
        self._show_metrics(g, thresholds)

    def _apply_colors(self) -> None:
        """Text and background colours of the painted labels: the theme's, muted on a
        lost card (as the stylesheet does for the card itself)."""
        c = theme.colors()
        lost = self.state is not GpuState.OK
        key = (c, lost)
        if key == self._colors_key:
            return
        self._colors_key = key
        background = QColor(c.window if lost else c.card)
        muted, text = QColor(c.muted), QColor(c.muted if lost else c.text)
        for label in self._muted:
            label.set_colors(muted, background)
        for label in self._plain:
            label.set_colors(text, background)
        self.bar.set_background(background)

    def _set_state(self, g: GpuSample) -> None:
        greyed = g.state is not GpuState.OK
        if greyed != (self.state is not GpuState.OK):
            self.setProperty("lost", greyed)
            self.style().unpolish(self)
            self.style().polish(self)
        self.state = g.state
        if greyed:
            word = "LOST" if g.state is GpuState.LOST else "ERROR"
            self.badge.set(word, g.error or "")
            self.badge.show()
        else:
            self.badge.hide()

    def _show_lost(self, g: GpuSample) -> None:
        reason = g.error or "no reason given by the driver"
        self.bar.set_data(1.0, [], greyed=True)
        self.bar.set_overlay(0, None, "iec")
        self.used.set("No data — " + ("GPU lost" if g.state is GpuState.LOST else "read failed"))
        self.free.set("")
        self.legend.set(reason)
        for label in (self.busy, self.bandwidth, self.util, self.pcie):
            label.set("")
        self.vitals.set("")
        self.budget.hide()
        self._show_probe(None, None, "iec")

    def _show_memory(self, g: GpuSample, units: UnitSystem, thresholds: Thresholds,
                     overlay: Overlay | None) -> None:
        c = theme.colors()
        m = g.memory
        total = float(m.total_bytes or 0)
        self._total_bytes = m.total_bytes
        order = self._order
        if len(order) > 1024 + 4 * len(g.processes):   # processes come and go: forget the gone
            live = {p.pid for p in g.processes}
            self._order = order = {pid: r for pid, r in order.items() if pid in live}
            self._segment_names = {k: v for k, v in self._segment_names.items() if k in live}
        procs = sorted(g.processes, key=lambda p: order.setdefault(p.pid, len(order)))
        pids = tuple(p.pid for p in procs)
        if pids != self._placed:    # someone came or went: colours by place in the bar
            self._placed = pids
            for pid in theme.place_processes(self.index, pids):
                self._segment_names.pop(pid, None)
        self._splits = {}
        overlay_pid = None if overlay is None else overlay.pid
        if self.probes:
            segments, listed, overlay_start = self._probed_segments(procs, overlay_pid, units)
        else:
            segments, listed, overlay_start = self._process_segments(procs, overlay_pid, units)
        other = max(0, (m.used_bytes or 0) - listed)
        if other:
            segments.append(Segment(other, QColor(c.other),
                                    "Other (driver, context and unlisted processes)",
                                    units=units))
        if m.reserved_bytes:
            segments.append(Segment(m.reserved_bytes, QColor(c.reserved),
                                    "Reserved by the driver", Qt.BrushStyle.Dense4Pattern,
                                    units=units))
        self.bar.set_data(total, segments)
        self.bar.set_overlay(overlay_start, overlay, units)

        frac = m.used_fraction
        pct = None if frac is None else 100 * frac
        color = c.text
        if pct is not None and pct >= thresholds.memory_critical_percent:
            color = c.critical
        elif pct is not None and pct >= thresholds.memory_warning_percent:
            color = c.warning
        used = _in_unit_of(m.used_bytes, m.total_bytes, units)
        self.used.set_runs([Run(used, color, bold=True),
                            Run(f" / {format_bytes(m.total_bytes, units)} used", color),
                            Run(f"  {format_percent(pct)}", c.muted)])
        self.free.set(f"{format_bytes(m.free_bytes, units)} free")

        runs: list[Run] = []
        for p in sorted(procs, key=lambda p: -(p.used_bytes or 0))[:LEGEND_PROCESSES]:
            runs += [Run("■ ", theme.process_color(p.pid).name()), Run(f"{_proc_name(p)} "),
                     Run(f"{format_bytes(p.used_bytes, units)}   ", c.muted)]
        more = len(procs) - LEGEND_PROCESSES
        if more > 0:
            runs.append(Run(f"+{more} more", c.muted))
        if g.processes_error is not None:
            state = "incomplete" if procs else "unavailable"
            runs.append(Run(f"Process list {state}: {g.processes_error}", c.warning))
        elif not procs:
            runs.append(Run("No processes", c.muted))
        self.legend.set_runs(runs)
        shown = largest(procs, self.probes, overlay.pid if overlay else None) \
            if self._splits else None
        self._show_probe(shown, overlay, units)
        self._show_budget(overlay, units)

    def _process_segments(self, procs: list[ProcessSample], overlay_pid: int | None,
                          units: UnitSystem) -> tuple[list[Segment], float, float]:
        """(a segment per process, bytes they hold, where the overlaid one starts), for a
        card with no probed process: the common case, every sample, up to 64 a card, so
        each segment is a tuple made from its pid's remembered colour and name."""
        known = self._segment_names
        make, solid = tuple.__new__, Qt.BrushStyle.SolidPattern
        segments = []
        listed = 0
        overlay_start = 0.0
        for p in procs:
            size = p.used_bytes or 0
            if p.pid == overlay_pid:
                overlay_start = float(listed)
            listed += size
            named = known.get(p.pid)
            if named is None or named[0] != p.name:
                named = known[p.pid] = (p.name, f"{_proc_name(p)} (pid {p.pid})",
                                        theme.process_color(p.pid))
            segments.append(make(Segment, (size, named[2], named[1], solid, "", None, units)))
        return segments, listed, overlay_start

    def _probed_segments(self, procs: list[ProcessSample], overlay_pid: int | None,
                         units: UnitSystem) -> tuple[list[Segment], float, float]:
        """As ``_process_segments``, with a probed process split into its three parts."""
        segments: list[Segment] = []
        listed = 0
        overlay_start = 0.0
        for p in procs:
            if p.pid == overlay_pid:
                overlay_start = float(listed)
            listed += p.used_bytes or 0
            report = self.probes.get(p.pid)
            split = None if report is None else probe_split(p.used_bytes, report)
            if split is None:
                segments += self._process_segments([p], None, units)[0]
            else:
                parts = self._splits[p.pid] = split_segments(_proc_name(p), p.pid, split,
                                                             units)
                segments += parts
        return segments, listed, overlay_start

    def _show_probe(self, p: ProcessSample | None, overlay: Overlay | None,
                    units: UnitSystem) -> None:
        """The legend of one probed process's split, its tensors and allocator figures."""
        split = None if p is None else self._splits.get(p.pid)
        if p is None or split is None:
            if not self.probe.isHidden():
                self.probe.hide()
                self.height_changed = True
            self._probe_key = None
            return
        report = self.probes[p.pid]
        mine = overlay if overlay is not None and overlay.pid == p.pid else None
        key = (p.pid, split, report.allocator, report.optimizer, report.alloc_conf, mine,
               units, len(self._splits), theme.colors().dark)
        if key != self._probe_key:
            self._probe_key = key
            lines, tooltip = legend_lines(p.pid, split, report, mine, units, len(self._splits))
            self.probe.set_lines(lines, tooltip)
        if self.probe.isHidden():
            self.probe.show()
            self.height_changed = True

    def _show_budget(self, overlay: Overlay | None, units: UnitSystem) -> None:
        if overlay is not None and overlay.from_probe:
            overlay = None          # the probe legend shows its categories
        if (overlay is None) != self.budget.isHidden():
            self.height_changed = True
        if overlay is None:
            self.budget.hide()
            return
        c = theme.colors()
        pred = overlay.prediction
        text = (f"<b>Budget</b> pid {overlay.pid} · {html.escape(pred.label)}: predicted "
                f"<b>{format_bytes(pred.total_bytes, units)}</b>, measured "
                f"{format_bytes(overlay.measured_bytes, units)}")
        capacity = self._total_bytes
        if capacity and pred.total_bytes > capacity:
            text += (f", <span style='color:{c.critical}'><b>more than this GPU's "
                     f"{format_bytes(capacity, units)}</b></span>")
        elif overlay.unexplained_bytes:
            text += (f", <span style='color:{theme.UNEXPLAINED_COLOR}'><b>unexplained "
                     f"{format_bytes(overlay.unexplained_bytes, units)}</b></span>")
        elif overlay.headroom_bytes:
            text += f", <span style='color:{c.ok}'>below its peak by " \
                    f"{format_bytes(overlay.headroom_bytes, units)}</span>"
        split = self._splits.get(overlay.pid)
        if split is not None:
            text += (f"; the probe counts <b>{format_bytes(split[0].bytes, units)}"
                     "</b> in tensors")
        self.budget.set(text)
        self.budget.show()

    def _show_metrics(self, g: GpuSample, thresholds: Thresholds) -> None:
        c = theme.colors()
        self.busy.set(f"Memory busy {format_percent(g.memory_busy_percent)} of time",
                      "Share of the last sample period in which device memory was being read "
                      "or written (NVML utilization.memory). It is not how full memory is.")
        peak = format_rate(g.peak_bandwidth_bytes_per_s)
        self.bandwidth.set(f"≈ {format_rate(g.estimated_bandwidth_bytes_per_s)} est. "
                           f"of {peak}",
                           "Estimated DRAM bandwidth: memory busy % × the peak bandwidth from "
                           "bus width and memory clock. An estimate, not a counter.")
        self.util.set(f"GPU busy {format_percent(g.gpu_util_percent)}",
                      "Share of time a kernel was running (NVML utilization.gpu)")
        self.pcie.set(f"PCIe ↓ {format_rate(g.pcie_rx_bytes_per_s)}  "
                      f"↑ {format_rate(g.pcie_tx_bytes_per_s)}",
                      "PCIe receive (↓ host to GPU) and transmit (↑ GPU to host)")
        temp = "n/a °C" if g.temperature_c is None else f"{g.temperature_c:.0f} °C"
        hot = g.temperature_c is not None and g.temperature_c >= thresholds.temperature_warning_c
        if g.power_w is None:
            power = "n/a W"
        elif g.power_limit_w:
            power = f"{g.power_w:.0f} / {g.power_limit_w:.0f} W"
        else:
            power = f"{g.power_w:.0f} W"
        self.vitals.set_runs([Run(temp, c.warning if hot else None), Run(f" · {power}")])


def _proc_name(p: ProcessSample) -> str:
    if p.name or p.cmdline:
        return p.name or p.cmdline[0]
    if p.host_status is HostStatus.EXITED:
        return EXITED_PROCESS_LABEL
    return f"pid {p.pid}"


def _in_unit_of(n: int | None, total: int | None, units: UnitSystem) -> str:
    """The used figure in the unit of the total, so '17.7 / 24.0 GiB' reads at a glance."""
    if n is None:
        return "n/a"
    unit = format_bytes(total or n, units).rsplit(" ", 1)[-1]
    factor = SIZE_UNITS.get(unit.upper(), 1)
    return f"{n / factor:.1f}"
