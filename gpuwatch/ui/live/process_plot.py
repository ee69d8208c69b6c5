"""The selected process's memory over time, under the process table.

A title line (name, pid, GPU, memory, the linked budget's predicted peak), the measured
curve, for a process that runs the probe what PyTorch has allocated (dashed, under the
measured line), and the linked budget's predicted peak as a dashed line.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gpuwatch.core.history import History
from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.live.exited_rows import Exited
from gpuwatch.ui.live.probe_view import ProbeHistory
from gpuwatch.ui.live.process_rows import Key
from gpuwatch.ui.live.text_lines import Run, TextLines
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.axes import fast_axes
from gpuwatch.ui.widgets.curve_canvas import CurveCanvas, aligned_range, plot_columns
from gpuwatch.ui.widgets.plot_lines import MarkLine
from gpuwatch.ui.widgets.plot_ranges import (
    StickyRange,
    label_px,
    top_with_room,
)
from gpuwatch.ui.widgets.plot_series import RingLine
from gpuwatch.ui.widgets.plots import (
    byte_unit,
    cache_text_items,
    quiet_hidden_axes,
    restyle_plot,
    settle,
)

NO_SELECTION = "Select a process to see its memory over time"


def peak_pen_color() -> str:
    """The predicted-peak line's colour: the plot's own text colour. A prediction is
    neither good nor bad news; red stays for danger."""
    return theme.colors().plot_fg


class ProcessPlot(QWidget):
    """The title and the plot; :meth:`show_process` and :meth:`show_none` redraw them."""

    def __init__(self, history: History, probe_history: ProbeHistory,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.probe_history = probe_history
        self.detail_title = TextLines()
        self.detail_title.set(NO_SELECTION)
        self.detail_plot = pg.PlotWidget(axisItems=fast_axes())
        self.detail_plot.setMenuEnabled(False)
        self.detail_plot.hideButtons()
        self.detail_plot.setMouseEnabled(x=False, y=False)
        self.detail_plot.setMinimumHeight(90)
        self.detail_plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.detail_plot.viewport().setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.detail_plot.setAccessibleName("Selected process's memory over time")
        self.detail_plot.setAccessibleDescription(
            "GPU memory held by the process selected in the table, against the time of "
            "day, with its budget's predicted peak when one is linked")
        quiet_hidden_axes(self.detail_plot)
        self.detail_plot.showGrid(x=True, y=True, alpha=theme.colors().grid_alpha)
        # the lines as data; the canvas draws them as image tiles that scroll with time
        self.alloc_curve = RingLine("allocated_bytes", pg.mkPen("#4e79a7", width=1))
        self.detail_curve = RingLine("used_bytes", pg.mkPen("#4e79a7", width=1))
        self.canvas = CurveCanvas()
        self.detail_plot.addItem(self.canvas, ignoreBounds=True)
        self._styled: tuple | None = None    # (unit name, pid, colour) the plot is set up for
        # from zero: a flat line reads as flat, not as noise zoomed to a few MiB
        self._y_range = StickyRange(floor=0.0, min_top=0.05)
        self._y_set: tuple[float, float] | None = None   # the y range the plot shows
        self._peak: float | None = None      # where the predicted-peak line is, if shown
        self.detail_plot.disableAutoRange(axis="y")
        self.detail_plot.getViewBox().sigResized.connect(lambda *_: self._fit_y())
        # placed in the view's pixels: moving in time does not lay it and its label out
        self.peak_line = MarkLine(self.detail_plot.getViewBox(), 0.0, "predicted peak",
                                  self._peak_pen(), peak_pen_color())
        self.peak_line.set_label_at(0.02)
        cache_text_items(self.detail_plot)
        self._show_peak(None)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.detail_title)
        layout.addWidget(self.detail_plot)

    @staticmethod
    def _peak_pen() -> QPen:
        return pg.mkPen(peak_pen_color(), width=1.2, style=Qt.PenStyle.DashDotLine)

    def restyle(self) -> None:
        restyle_plot(self.detail_plot)
        self.peak_line.set_style(self._peak_pen(), peak_pen_color())
        c = theme.colors()
        # opaque: a new figure in the title repaints the title alone, not the panels under it
        self.detail_title.set_colors(QColor(c.muted), QColor(c.window))
        self._styled = None

    def show_none(self, window_s: float, why: str | None = None) -> None:
        """No process selected: ``why`` (no process to show, waiting for a sample) or
        the hint to select one in the title, an empty plot."""
        self.detail_title.set(why or NO_SELECTION)
        self.detail_curve.clear()
        self.alloc_curve.clear()
        self.canvas.set_layers([])
        self._show_peak(None)
        if self.history.latest is not None:
            now = self.history.latest.timestamp_s
            self.detail_plot.setXRange(now - window_s, now, padding=0)

    def show_process(self, key: Key, p: ProcessSample, budget: int | None,
                     gone: Exited | None, report: ProbeReport | None, units: UnitSystem,
                     window_s: float) -> None:
        """Process ``key`` (its sample ``p``; ``gone`` when it exited), over the last
        ``window_s`` seconds."""
        name, scale = byte_unit(units)
        held = format_bytes(p.used_bytes, units)
        title = [Run(p.name or "?", bold=True),
                 Run(f" (pid {p.pid}, GPU {p.gpu_index}) · " + (
                     held if gone is None else
                     f"exited {gone.clock}, holding {held} when last seen"))]
        if budget is not None:
            title.append(Run(f" · predicted peak {format_bytes(budget, units)}"))
        alloc_ring = None if report is None else self.probe_history.ring(p.pid)
        if report is not None and report.allocator is not None:
            color = theme.process_color(p.pid).darker(140).name()
            title += [Run(" · "), Run("╌ allocated "
                      f"{format_bytes(report.allocator.allocated_bytes, units)}", color),
                      Run(" (probe)")]
        self.detail_title.set_runs(title)
        self._style_detail(name, p.pid)
        ring = self.history.process(*key)
        snap = self.history.latest
        high = float("nan")
        pixels = plot_columns(self.detail_plot)
        if snap is not None:     # whole columns: the canvas scrolls its tiles
            x0, x1 = aligned_range(snap.timestamp_s, window_s, pixels)
            self.detail_plot.setXRange(x0, x1, padding=0)
        if ring is not None and snap is not None:
            self.detail_curve.show(ring, scale, x0, x1, pixels)
            high = np.fmax(high, self.detail_curve.high(x0))
            if alloc_ring is not None:
                self.alloc_curve.show(alloc_ring, scale, x0, x1, pixels)
                high = np.fmax(high, self.alloc_curve.high(x0))
        else:
            self.detail_curve.clear()
        if alloc_ring is None or ring is None:
            self.alloc_curve.clear()
        style = self._styled or ()
        layers = [line.layer((name, *style)) for line, name in
                  ((self.alloc_curve, "allocated"), (self.detail_curve, "used"))]
        self.canvas.set_layers([layer for layer in layers if layer is not None])
        self._show_peak(None if budget is None else budget / scale)
        if budget is not None:
            high = np.fmax(high, budget / scale)
        if self._y_range.fit(0.0, high) is not None or budget is not None:
            self._fit_y()
        settle(self.detail_plot)

    def _fit_y(self) -> None:
        """The fitted range, raised where the predicted-peak line needs room above it for
        its label (the plot's edge would cut it)."""
        fitted = self._y_range.shown
        if fitted is None:
            return
        low, top = fitted
        peak = self._peak
        view_px = self.detail_plot.getViewBox().height()
        room, half = label_px()
        if low == 0:     # from zero: room under it for the "0" label, above the peak line
            view_px = view_px if view_px > 0 else 300.0
            if peak is not None:
                per_px = peak / max(view_px - half - room, view_px * 0.5)
                top = max(top, peak + room * per_px)
            low = -half * top / max(view_px - half, view_px * 0.5)
        elif peak is not None:
            top = top_with_room(low, peak, top, view_px, room)
        if (low, top) != self._y_set:
            self._y_set = (low, top)
            self.detail_plot.setYRange(low, top, padding=0)

    def _show_peak(self, value: float | None) -> None:
        """The predicted-peak line at ``value``, or out of the plot (a line left in the
        plot would follow every change of its value range, shown or not)."""
        self._peak = value
        line = self.peak_line
        if value is None:
            line.detach()
            line.hide()
            return
        line.set_value(value)
        line.attach()
        line.show()

    def _style_detail(self, unit_name: str, pid: int) -> None:
        """Axis label and pens, set only when they change: pyqtgraph re-lays out an axis
        label and invalidates the curve on every call, even with the same values."""
        color = theme.process_color(pid)
        style = (unit_name, pid, color.rgba())
        if style == self._styled:
            return
        if style[:2] != (self._styled or ())[:2]:
            self._y_range = StickyRange(floor=0.0, min_top=0.05)   # another process, or unit
        self._styled = style
        self.detail_plot.setLabel("left", unit_name)
        self.detail_curve.setPen(pg.mkPen(color, width=1))
        self.alloc_curve.setPen(pg.mkPen(color.darker(140), width=1,
                                         style=Qt.PenStyle.DashLine))
