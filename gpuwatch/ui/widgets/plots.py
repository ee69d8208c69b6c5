"""Time plots: memory used per GPU against its capacity, and estimated bandwidth per GPU.

Windows of 1 min to 24 h; live mode follows the newest sample, pause (or dragging the
plot) freezes the view so you can scroll back. Data goes through min/max decimation to
the plot's pixel width, and a live plot is only redrawn when the newest sample would
move it by at least one pixel column: a 24 h window is redrawn about once a minute.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QButtonGroup,
    QGraphicsItem,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.history import History, Ring
from gpuwatch.core.units import SIZE_UNITS, UnitSystem, format_bytes
from gpuwatch.ui.settings import PLOT_WINDOWS_S
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.axes import fast_axes
from gpuwatch.ui.widgets.decimate import minmax_decimate, window_slice
from gpuwatch.ui.widgets.plot_ranges import StickyRange, bounds, label_px, zero_based_range

WINDOW_LABELS = {60: "1 min", 600: "10 min", 3600: "1 h", 86400: "24 h"}


def byte_unit(units: UnitSystem) -> tuple[str, int]:
    return ("GB", SIZE_UNITS["GB"]) if units == "si" else ("GiB", SIZE_UNITS["GIB"])


def ring_curve(ring: Ring, column: str, x0: float, x1: float, pixels: int,
               scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, y/scale) of ``column`` over [x0, x1], min/max-decimated to ``pixels`` columns."""
    n = len(ring)
    if n == 0:
        return np.empty(0), np.empty(0)
    last_t = ring.last("timestamp_s") or x1
    if n >= 2:
        ts = ring.column("timestamp_s", last=2)
        dt = max(1e-3, float(ts[1] - ts[0]))
        need = min(n, int((last_t - x0) / dt * 1.25) + 4)
    else:
        need = n
    t = ring.column("timestamp_s", last=need)
    if need < n and len(t) and t[0] > x0:   # irregular sampling: fall back to everything
        t = ring.column("timestamp_s")
        need = n
    sl = window_slice(t, x0, x1)
    y = ring.column(column, last=need)[sl] / scale
    return minmax_decimate(t[sl], y, max(1, pixels))


def settle(plot: pg.PlotWidget) -> None:
    """Apply pending range and auto-range changes now rather than inside the next paint.

    pyqtgraph defers them to ``paintEvent``; changing the view there marks every item
    dirty again, which costs a second full paint of the plot in the next pass."""
    plot.scene().prepareForPaint()


def quiet_hidden_axes(plot: pg.PlotWidget) -> None:
    """Stop the hidden top and right axes from re-rendering their labels. They follow the
    view like the shown ones, and with pyqtgraph's automatic SI prefix every range change
    (each second on a live plot) sets their label's HTML again and asks for a layout.

    The value axis keeps its unit as given (GiB, GB/s) too: pyqtgraph's prefix turns a
    flat line at zero into "GB/s (x1e-06)" from -50 to 50."""
    item = plot.getPlotItem()
    for name in ("top", "right"):
        axis = item.getAxis(name)
        if not axis.isVisible():
            axis.enableAutoSIPrefix(False)
    item.getAxis("left").enableAutoSIPrefix(False)


def cache_text_items(plot: pg.PlotWidget) -> None:
    """Paint the plot's text (title, axis labels, legend entries, line labels) from
    pixmaps. They are text documents, laid out and drawn anew on every paint of the
    plot, which on a live plot is every second; their content changes rarely."""
    cache = QGraphicsItem.CacheMode.DeviceCoordinateCache
    item = plot.getPlotItem()
    texts = [item.titleLabel.item]
    texts += [item.getAxis(name).label for name in ("left", "bottom")]
    legend = item.legend
    if legend is not None:
        for sample, label in legend.items:
            sample.setCacheMode(cache)
            texts.append(label.item)
    for child in item.vb.addedItems:
        label = getattr(child, "label", None)    # an InfiniteLine made with a label
        if isinstance(child, pg.InfiniteLine) and label is not None:
            texts.append(label)
    for text in texts:
        text.setCacheMode(cache)


def restyle_plot(plot: pg.PlotWidget) -> None:
    c = theme.colors()
    plot.setBackground(c.plot_bg)
    item = plot.getPlotItem()
    for name in ("left", "bottom"):
        axis = item.getAxis(name)
        axis.setPen(c.plot_fg)
        axis.setTextPen(c.plot_fg)
        if hasattr(axis, "set_background"):
            axis.set_background(QColor(c.plot_bg))
    item.titleLabel.setText(item.titleLabel.text, color=c.plot_fg)
    plot.showGrid(x=True, y=True, alpha=c.grid_alpha)


class WindowCurve(pg.PlotCurveItem):
    """A curve that knows its data's extent. The scene asks a curve for its bounding
    rect dozens of times per paint, and every change of the view (each second, on a live
    plot) makes ``PlotCurveItem`` scan its arrays for their bounds again; the bounds are
    taken here once per ``setData``, where the data arrive sorted by time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._extent: tuple[float, float, float, float] | None = None
        super().__init__(*args, **kwargs)

    def setData(self, *args: Any, **kwargs: Any) -> None:
        self._extent = None
        if len(args) == 2:
            x, y = (np.asarray(a, dtype=float) for a in args)
            low, high = bounds(y)
            if len(x) and np.isfinite(low) and np.isfinite(x[0]) and np.isfinite(x[-1]):
                self._extent = (float(x[0]), float(x[-1]), low, high)
            args = (x, y)
        super().setData(*args, **kwargs)

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange: Any = None) -> Any:
        if self._extent is None or frac != 1.0 or orthoRange is not None:
            return super().dataBounds(ax, frac, orthoRange)
        x0, x1, low, high = self._extent
        return (x0, x1) if ax == 0 else (low, high)


class _Plot(pg.PlotWidget):
    MIN_HEIGHT = 96     # title, a few value labels, the time axis: the window fits 1024×640

    def __init__(self, title: str, y_label: str):
        super().__init__(axisItems=fast_axes())
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=True, y=False)
        self.hideButtons()
        self.setTitle(title, size="10pt")
        self.setLabel("left", y_label)
        self.getPlotItem().layout.setContentsMargins(4, 2, 8, 4)
        self.setMinimumHeight(self.MIN_HEIGHT)
        quiet_hidden_axes(self)


class TimePlots(QWidget):
    """The two linked plots, the window buttons and live/pause."""

    window_changed = Signal(int)

    def __init__(self, history: History, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.window_s = 600
        self.live = True
        self.units: UnitSystem = "iec"
        self._last_drawn_s = -np.inf
        self._setting_range = False
        self._mem_curves: dict[int, pg.PlotCurveItem] = {}
        self._bw_curves: dict[int, pg.PlotCurveItem] = {}
        self._capacity_lines: dict[float, pg.InfiniteLine] = {}

        self.memory = _Plot("Memory used per GPU", "GiB")
        self.bandwidth = _Plot("Estimated memory bandwidth per GPU (busy % × peak)", "GB/s")
        self.bandwidth.setXLink(self.memory)
        self.legend = self.memory.addLegend(offset=(-8, -4), colCount=4, labelTextSize="8pt")
        for plot in (self.memory, self.bandwidth):
            plot.showGrid(x=True, y=True, alpha=theme.colors().grid_alpha)
            plot.getViewBox().sigRangeChangedManually.connect(self._user_moved)
        self._bw_range = StickyRange(floor=0.0, min_top=1.0)   # GB/s, where no peak is known
        self._mem_range = StickyRange(floor=0.0, min_top=1.0)  # GiB, where no capacity is
        self._mem_top: float | None = None      # the largest capacity, in the plot's unit
        self._mem_data_top: float | None = None  # without a capacity: what the data need
        self._bw_top: float | None = None        # the peak bandwidth, or what the data need
        self._y_set: dict[int, tuple[float, float]] = {}   # id(plot) -> the range it shows
        self._new_items = True     # text items to cache as pixmaps (legend, labels)
        self.memory.getViewBox().sigResized.connect(lambda *_: self._fit_memory())
        self.bandwidth.getViewBox().sigResized.connect(lambda *_: self._fit_bandwidth())
        # Until the first sample: the last minutes of the clock, zero to one unit up.
        now = time.time()
        for plot in (self.memory, self.bandwidth):
            plot.setXRange(now - self.window_s, now, padding=0)
        self._mem_data_top = self._bw_top = 1.0
        self._fit_memory()
        self._fit_bandwidth()

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(QLabel("Window:"))
        self.window_buttons = QButtonGroup(self)
        for seconds in PLOT_WINDOWS_S:
            b = QPushButton(WINDOW_LABELS[seconds])
            b.setCheckable(True)
            b.setProperty("window_s", seconds)
            b.setToolTip(f"Show the last {WINDOW_LABELS[seconds]}")
            self.window_buttons.addButton(b, seconds)
            bar.addWidget(b)
        self.window_buttons.idClicked.connect(self.set_window)
        bar.addStretch(1)
        self.state_label = QLabel()
        self.state_label.setProperty("muted", True)
        bar.addWidget(self.state_label)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Freeze the plots to scroll back (Space); drag to pan")
        self.pause_button.toggled.connect(lambda on: self.set_live(not on))
        bar.addWidget(self.pause_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(bar)
        layout.addWidget(self.memory, 3)
        layout.addWidget(self.bandwidth, 2)
        self.set_window(self.window_s)

    # controls ------------------------------------------------------------------------
    def set_window(self, seconds: int) -> None:
        self.window_s = seconds
        button = self.window_buttons.button(seconds)
        if button is not None:
            button.setChecked(True)
        self.set_live(True)
        self.window_changed.emit(seconds)

    def set_live(self, live: bool) -> None:
        self.live = live
        if self.pause_button.isChecked() == live:
            self.pause_button.blockSignals(True)
            self.pause_button.setChecked(not live)
            self.pause_button.blockSignals(False)
        self.pause_button.setText("Pause" if live else "Live")
        self.state_label.setText("" if live else "Paused — drag to scroll back")
        self.refresh(force=True)

    def toggle_pause(self) -> None:
        self.set_live(not self.live)

    def set_units(self, units: UnitSystem) -> None:
        self.units = units
        name, _ = byte_unit(units)
        self.memory.setLabel("left", name)
        for line in self._capacity_lines.values():
            self.memory.removeItem(line)
        self._capacity_lines.clear()
        self.refresh(force=True)

    def restyle(self) -> None:
        """Follow a theme change (pyqtgraph's config only affects new plots)."""
        restyle_plot(self.memory)
        restyle_plot(self.bandwidth)
        for line in self._capacity_lines.values():
            self.memory.removeItem(line)
        self._capacity_lines.clear()
        self.refresh(force=True)

    def _user_moved(self, *_: object) -> None:
        if not self._setting_range and self.live:
            self.set_live(False)

    # drawing -------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        latest = self.history.latest
        if latest is None:
            return
        now = latest.timestamp_s
        pixels = max(200, int(self.memory.getViewBox().width()) or 800)
        if self.live:
            x0, x1 = now - self.window_s, now
        else:
            (x0, x1), _ = self.memory.getViewBox().viewRange()
        if not force and self.live and now - self._last_drawn_s < (x1 - x0) / pixels:
            return
        self._last_drawn_s = now
        _, mem_scale = byte_unit(self.units)
        bw_scale = 1e9   # bandwidth is quoted in GB/s like every data sheet, whatever the units
        capacities: dict[float, int] = {}
        used, bandwidths = [], []
        for index, ring in sorted(self.history.gpus.items()):
            mx, my = ring_curve(ring, "used_bytes", x0, x1, pixels, mem_scale)
            self._curve(self.memory, self._mem_curves, index).setData(mx, my, connect="finite")
            used.append(my)
            bx, by = ring_curve(ring, "estimated_bandwidth_bytes_per_s", x0, x1, pixels, bw_scale)
            self._curve(self.bandwidth, self._bw_curves, index).setData(bx, by,
                                                                         connect="finite")
            bandwidths.append(by)
            total = ring.last("total_bytes")
            if total:
                capacities[total] = capacities.get(total, 0) + 1
        self._update_capacities(capacities, mem_scale)
        self._fit_memory(bounds(*used)[1])
        peaks = [g.peak_bandwidth_bytes_per_s for g in latest.gpus
                 if g.peak_bandwidth_bytes_per_s]
        self._fit_bandwidth(bounds(*bandwidths)[1], max(peaks) / bw_scale if peaks else None)
        if self._new_items:
            self._new_items = False
            cache_text_items(self.memory)
            cache_text_items(self.bandwidth)
        if self.live:
            self._setting_range = True
            self.memory.setXRange(x0, x1, padding=0)
            self._setting_range = False
        settle(self.memory)
        settle(self.bandwidth)

    def _set_y(self, plot: pg.PlotWidget, low: float, high: float) -> None:
        """Set a y range unless it is the one shown: pyqtgraph redoes the axis and every
        item's view transform on each call, equal or not."""
        if self._y_set.get(id(plot)) != (low, high):
            self._y_set[id(plot)] = (low, high)
            plot.setYRange(low, high, padding=0)

    def _fit_bandwidth(self, high: float | None = None, peak: float | None = None) -> None:
        """From zero to the GPUs' peak bandwidth (the estimate is busy % × peak, so it
        stays under it); where no peak is known, to what the data need, at least 1 GB/s.
        Without arguments: fit the last figures again (the plot changed height)."""
        if high is not None:
            if peak is not None and not (np.isfinite(high) and high > peak):
                self._bw_top = peak * 1.04
            else:
                shown = self._bw_range.fit(0.0, high if np.isfinite(high) else 0.0)
                if shown is not None:
                    self._bw_top = shown[1]
        if self._bw_top is not None:
            _, half = label_px()
            view_px = self.bandwidth.getViewBox().height()
            self._set_y(self.bandwidth, *zero_based_range(self._bw_top, view_px, half, half))

    def _fit_memory(self, high: float | None = None) -> None:
        """From zero to the largest capacity, with room above its line for the line's
        label; without a capacity (every GPU lost), to what the data need. Without
        arguments: fit the last figures again (the plot changed height)."""
        top = self._mem_top
        if top is None and high is not None:
            shown = self._mem_range.fit(0.0, high if np.isfinite(high) else 0.0)
            top = self._mem_data_top = shown[1] if shown is not None else self._mem_data_top
        elif top is None:
            top = self._mem_data_top
        if top is not None:
            line, half = label_px()
            view_px = self.memory.getViewBox().height()
            above = line if self._mem_top is not None else half
            self._set_y(self.memory, *zero_based_range(top, view_px, above, half))

    def _curve(self, plot: pg.PlotWidget, curves: dict[int, pg.PlotCurveItem],
               index: int) -> pg.PlotCurveItem:
        """A bare curve item: the data arrive decimated to the plot's width and cut to
        its window, which is the work ``PlotDataItem`` would redo on every change."""
        curve = curves.get(index)
        if curve is None:
            pen = pg.mkPen(theme.gpu_color(index), width=1)
            name = f"GPU {index}" if plot is self.memory else None
            curve = curves[index] = WindowCurve(pen=pen, name=name)
            plot.addItem(curve)
            self._new_items = True      # a legend entry
        return curve

    def _update_capacities(self, capacities: dict[float, int], scale: int) -> None:
        for total in list(self._capacity_lines):
            if total not in capacities:
                self.memory.removeItem(self._capacity_lines.pop(total))
        for total in capacities:
            if total not in self._capacity_lines:
                line = pg.InfiniteLine(
                    pos=total / scale, angle=0,
                    pen=pg.mkPen(theme.colors().muted, width=1, style=Qt.PenStyle.DashLine),
                    label=f"capacity {format_bytes(total, self.units)}",
                    labelOpts={"position": 0.02, "color": theme.colors().muted,
                               "anchors": [(0, 1), (0, 1)]})
                self.memory.addItem(line)
                self._capacity_lines[total] = line
                self._new_items = True
        self._mem_top = max(capacities) / scale if capacities else None

    def clear(self) -> None:
        for plot, curves in ((self.memory, self._mem_curves), (self.bandwidth, self._bw_curves)):
            for curve in curves.values():
                plot.removeItem(curve)
            curves.clear()
        self.legend.clear()
        self._bw_range = StickyRange(floor=0.0, min_top=1.0)
        self._mem_range = StickyRange(floor=0.0, min_top=1.0)
        self._mem_data_top = self._bw_top = None
        self._last_drawn_s = -np.inf
