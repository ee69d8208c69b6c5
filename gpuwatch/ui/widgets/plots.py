"""Time plots: memory used per GPU against its capacity, and estimated bandwidth per GPU.

Windows of 1 min to 24 h; live mode follows the newest sample, pause (or dragging the
plot) freezes the view so you can scroll back. Memory goes through min/max decimation
to the plot's pixel width, so every peak survives; bandwidth, which ripples faster than
a plot can show, is drawn at windows of 10 min and more as its mean per pixel pair with
the min/max band around it. A live plot is only redrawn when the newest sample would
move it by at least one pixel column: a 24 h window is redrawn about once a minute.

Each GPU's line has its colour and its dash pattern (:mod:`plot_items`), named in a
legend above the plots; hovering a line or its legend entry highlights it, clicking an
entry asks for that GPU alone (:attr:`TimePlots.focus_requested`; the window answers with
:meth:`TimePlots.set_focus`). The minutes a GPU was lost are shaded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from gpuwatch.core.history import History, Ring
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.settings import PLOT_WINDOWS_S
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.bandwidth_units import format_bandwidth
from gpuwatch.ui.widgets.curve_canvas import PlotCanvases, aligned_range, plot_columns
from gpuwatch.ui.widgets.gpu_legend import GpuLegend
from gpuwatch.ui.widgets.plot_items import SpanItem, lost_spans, nearest_line
from gpuwatch.ui.widgets.plot_lines import MarkLines
from gpuwatch.ui.widgets.plot_parts import (  # noqa: F401 - re-exported for the plots' users
    BANDWIDTH_TITLE,
    MEMORY_TITLE,
    TimePlot,
    WindowCurve,
    byte_unit,
    cache_text_items,
    plot_titles,
    quiet_hidden_axes,
    restyle_plot,
    ring_curve,
    ring_slice,
    settle,
)
from gpuwatch.ui.widgets.plot_ranges import StickyRange, bounds, label_px, zero_based_range
from gpuwatch.ui.widgets.plot_series import Series, stacked_layers

WINDOW_LABELS = {60: "1 min", 600: "10 min", 3600: "1 h", 86400: "24 h"}
BAND_FROM_S = 600      # bandwidth as mean and min/max band from this much time shown
HOVER_PX = 8           # a line this close to the mouse is highlighted
WAITING = "Waiting for the first sample…"
BW_COLUMN = "estimated_bandwidth_bytes_per_s"


def window_rows(ring: Ring, x0: float, x1: float, names: tuple[str, ...]
                ) -> dict[str, np.ndarray]:
    """The ring's rows from ``x0`` to ``x1`` (views, no copy where they lie in one piece:
    a 24 h window is 86,400 rows per GPU)."""
    rows = ring.since(x0, ("timestamp_s", *names))
    end = int(np.searchsorted(rows["timestamp_s"], x1, side="right"))
    return {name: rows[name][:end] for name in names}


def one_per_label(values: Iterable[float], label: Callable[[float], str]) -> list[float]:
    """The largest of the values that read the same, one for each distinct label."""
    largest: dict[str, float] = {}
    for value in values:
        text = label(value)
        if value > largest.get(text, -math.inf):
            largest[text] = value
    return list(largest.values())


class TimePlots(QWidget):
    """The two linked plots, their legend, the window buttons and live/pause."""

    window_changed = Signal(int)
    live_changed = Signal(bool)
    focus_requested = Signal(int)      # a legend entry was clicked: this GPU alone

    def __init__(self, history: History, parent: QWidget | None = None):
        super().__init__(parent)
        self.history = history
        self.window_s = 600
        self.live = True
        self.units: UnitSystem = "iec"
        self.focus: int | None = None       # the one GPU shown, or None for all
        self.highlight: int | None = None   # the GPU whose lines are drawn wide
        self.alert: int | None = None       # the endangered GPU: wide and on top, unhovered
        self.band_mode = False              # bandwidth as mean and band (long windows)
        self._last_drawn_s = -np.inf        # the newest sample's time when last drawn
        self._setting_range = False
        self._mem_curves: dict[int, Series] = {}
        self._bw_curves: dict[int, Series] = {}

        self.memory = TimePlot(MEMORY_TITLE, "GiB")
        self.bandwidth = TimePlot(BANDWIDTH_TITLE, "GB/s")
        self.bandwidth.setXLink(self.memory)
        self.capacity_marks = MarkLines(self.memory)
        self.peak_marks = MarkLines(self.bandwidth)
        self.legend = GpuLegend()
        self.legend.hovered.connect(lambda i: self.set_highlight(None if i < 0 else i))
        self.legend.clicked.connect(self.focus_requested)
        self._spans = (SpanItem(), SpanItem())
        for plot, spans in zip((self.memory, self.bandwidth), self._spans, strict=True):
            plot.showGrid(x=True, y=True, alpha=theme.colors().grid_alpha)
            plot.getViewBox().sigRangeChangedManually.connect(self._user_moved)
            plot.addItem(spans, ignoreBounds=True)
            plot.scene().sigMouseMoved.connect(
                lambda pos, plot=plot: self._hover(plot, pos))
            plot.left_plot.connect(lambda: self.set_highlight(None))
        # the curves, as image tiles that scroll (memory's, bandwidth's)
        self.canvases = (PlotCanvases(self.memory), PlotCanvases(self.bandwidth))
        self._bw_range = StickyRange(floor=0.0, min_top=1.0)   # GB/s, where no peak is known
        self._mem_range = StickyRange(floor=0.0, min_top=1.0)  # GiB, where no capacity is
        self._mem_top: float | None = None      # the largest capacity, in the plot's unit
        self._mem_data_top: float | None = None  # without a capacity: what the data need
        self._bw_top: float | None = None        # the peak bandwidth, or what the data need
        self._bw_line = False                    # a peak line at _bw_top needs room above
        self._y_set: dict[int, tuple[float, float]] = {}   # id(plot) -> the range it shows
        self._new_items = True     # text items to cache as pixmaps (line labels)
        self.memory.getViewBox().sigResized.connect(lambda *_: self._fit_memory())
        self.bandwidth.getViewBox().sigResized.connect(lambda *_: self._fit_bandwidth())
        # Until the first sample: the last minutes of the clock, zero to one unit up.
        now = time.time()
        for plot in (self.memory, self.bandwidth):
            plot.setXRange(now - self.window_s, now, padding=0)
        self._mem_data_top = self._bw_top = 1.0
        self.bandwidth_unknown = False      # no GPU shown has a known peak or estimate
        self._fit_memory()
        self._fit_bandwidth()
        self.waiting = pg.TextItem(WAITING, color=theme.colors().muted, anchor=(0.5, 0.5))
        self.waiting.setPos(now - self.window_s / 2, 0.5)
        self.memory.addItem(self.waiting, ignoreBounds=True)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(QLabel("Window:"))
        self.window_buttons = QButtonGroup(self)
        for i, seconds in enumerate(PLOT_WINDOWS_S, start=1):
            b = QPushButton(WINDOW_LABELS[seconds])
            b.setCheckable(True)
            b.setProperty("window_s", seconds)
            b.setToolTip(f"Show the last {WINDOW_LABELS[seconds]} ({i})")
            b.setAccessibleName(f"Plot window {WINDOW_LABELS[seconds]}")
            b.setAccessibleDescription(f"Show the last {WINDOW_LABELS[seconds]} in the time "
                                       f"plots (key {i})")
            self.window_buttons.addButton(b, seconds)
            bar.addWidget(b)
        self.window_buttons.idClicked.connect(self.set_window)
        bar.addStretch(1)
        self.state_label = QLabel()
        self.state_label.setProperty("muted", True)
        bar.addWidget(self.state_label)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Freeze the plots to scroll back (Space); sampling and "
                                     "recording go on. Drag a plot to pan.")
        self.pause_button.setAccessibleName("Pause the plots")
        self.pause_button.setAccessibleDescription(
            "Freeze the time plots to scroll back; sampling goes on (Space)")
        self.pause_button.toggled.connect(lambda on: self.set_live(not on))
        bar.addWidget(self.pause_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(bar)
        layout.addWidget(self.legend)
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
        changed = live != self.live
        self.live = live
        if self.pause_button.isChecked() == live:
            self.pause_button.blockSignals(True)
            self.pause_button.setChecked(not live)
            self.pause_button.blockSignals(False)
        self.pause_button.setText("Pause" if live else "Live")
        self.pause_button.setAccessibleName("Pause the plots" if live else
                                            "Follow the newest sample again")
        self.state_label.setText("" if live else "Paused (still sampling) — drag to scroll back")
        self.refresh(force=True)
        if changed:
            self.live_changed.emit(live)

    def toggle_pause(self) -> None:
        self.set_live(not self.live)

    def set_focus(self, index: int | None) -> None:
        """Show GPU ``index`` alone (its capacity and peak lines too), or all GPUs."""
        if index == self.focus:
            return
        self.focus = index
        self.legend.set_focus(index)
        self._set_titles()
        self.refresh(force=True)

    def _set_titles(self) -> None:
        memory, bandwidth = plot_titles(self.focus, self.bandwidth_unknown)
        self.memory.setTitle(memory, size="10pt")
        self.bandwidth.setTitle(bandwidth, size="10pt")
        self._new_items = True

    def set_highlight(self, index: int | None) -> None:
        """Draw GPU ``index``'s lines wide and on top (None: all alike); in band mode
        with many GPUs, its band alone."""
        if index == self.highlight:
            return
        self.highlight = index
        self.legend.set_highlight(index)
        many = len(self.history.gpus) > 2
        for series in self._bw_curves.values():   # with many GPUs the band follows it
            series.band = series.mean and (series.index in (index, self.focus) or not many)
        self._set_layers()

    def set_alert(self, index: int | None) -> None:
        """The GPU in the worst danger (None: none): with several GPUs its lines are
        drawn wide and on top while no other is hovered, so a critical GPU never hides
        in a bundle of eight lines at the same level."""
        if index == self.alert:
            return
        self.alert = index
        self._set_layers()

    def _set_layers(self) -> None:
        """Tell the canvases what to draw (only when that changed: they notice new
        samples themselves)."""
        for canvas, curves in zip(self.canvases, (self._mem_curves, self._bw_curves),
                                  strict=True):
            series = [curves[i] for i in sorted(curves)]
            top = self.highlight
            if top is None and len(series) > 1:
                top = self.alert
            signature = (top, *((s.index, s.isVisible(), s.mean, s.band,
                                 id(s.ring), s.scale) for s in series))
            if signature != canvas.signature:
                canvas.signature = signature
                canvas.set_layers(stacked_layers(series, top))
            else:
                canvas.update()

    def set_units(self, units: UnitSystem) -> None:
        self.units = units
        name, _ = byte_unit(units)
        self.memory.setLabel("left", name)
        self._drop_lines()
        self.refresh(force=True)

    def restyle(self) -> None:
        """Follow a theme change (pyqtgraph's config only affects new plots)."""
        restyle_plot(self.memory)
        restyle_plot(self.bandwidth)
        self.waiting.setColor(theme.colors().muted)
        self._drop_lines()
        self.refresh(force=True)

    _capacity_lines = property(lambda self: self.capacity_marks.lines)
    _peak_lines = property(lambda self: self.peak_marks.lines)

    def _drop_lines(self) -> None:
        self.capacity_marks.drop()
        self.peak_marks.drop()

    def _user_moved(self, *_: object) -> None:
        if not self._setting_range and self.live:
            self.set_live(False)

    # hovering ------------------------------------------------------------------------
    def _hover(self, plot: pg.PlotWidget, pos: QPointF) -> None:
        curves = self._mem_curves if plot is self.memory else self._bw_curves
        vb = plot.getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.set_highlight(None)
            return
        self.set_highlight(nearest_line(vb, curves, vb.mapSceneToView(pos), HOVER_PX))

    # drawing -------------------------------------------------------------------------
    def refresh(self, force: bool = False) -> None:
        """Follow the newest sample: in live mode the window moves when the newest
        sample is a pixel column newer than at the last move (a 24 h window about once
        a minute), by whole columns, and the canvases draw only the columns that
        changed; ``force``: draw everything again."""
        latest = self.history.latest
        if latest is None:
            return
        if self.waiting.scene() is not None:
            self.memory.removeItem(self.waiting)
        now = latest.timestamp_s
        pixels = plot_columns(self.memory)
        if self.live:
            x0, x1 = aligned_range(now, self.window_s, pixels)
        else:
            (x0, x1), _ = self.memory.getViewBox().viewRange()
        if not force and self.live and now - self._last_drawn_s < (x1 - x0) / pixels:
            return                   # the newest sample would not move it by a column
        self._last_drawn_s = now
        if force:
            for canvas in self.canvases:
                canvas.invalidate()
        _, mem_scale = byte_unit(self.units)
        bw_scale = 1e9   # bandwidth is quoted in GB/s like every data sheet, whatever the units
        self.band_mode = x1 - x0 >= BAND_FROM_S
        many = len(self.history.gpus) > 2
        for curves in (self._mem_curves, self._bw_curves):   # GPUs no longer listed: a
            for index in [i for i in curves if i not in self.history.gpus]:  # line holds
                del curves[index]                                            # its rows
        capacities: dict[float, int] = {}
        spans, shown_rings = [], []
        bw_high = -np.inf       # the highest bandwidth shown, bytes/s (-inf: none known)
        for index, ring in sorted(self.history.gpus.items()):
            mem = self._series(self._mem_curves, index, "used_bytes")
            bw = self._series(self._bw_curves, index, BW_COLUMN)
            shown = self.focus is None or index == self.focus
            mem.setVisible(shown)
            bw.setVisible(shown)
            if not shown:
                continue
            shown_rings.append(ring)
            rows = window_rows(ring, x0, x1, (BW_COLUMN, "total_bytes"))
            values = rows[BW_COLUMN]
            mean = self.band_mode and len(values) > pixels // 2
            mem.show(ring, mem_scale, x0, x1, pixels, False, False)
            bw.show(ring, bw_scale, x0, x1, pixels, mean,
                    mean and (index in (self.highlight, self.focus) or not many))
            if len(values):
                bw_high = np.fmax(bw_high, np.fmax.reduce(values))
            if np.isnan(np.add.reduce(rows["total_bytes"])):     # lost for a while
                spans += [(a, b, f"GPU {index} lost") for a, b in self._lost(ring, x0, x1)]
            total = ring.last("total_bytes")
            if total:
                capacities[total] = capacities.get(total, 0) + 1
        self._set_layers()
        self.legend.set_indices(tuple(sorted(self.history.gpus)))
        for item in self._spans:
            item.set_spans(spans)
        self._update_capacities(capacities, mem_scale)
        used = [] if capacities else [ring_slice(ring, "used_bytes", x0, x1, mem_scale)[1]
                                      for ring in shown_rings]
        self._fit_memory(bounds(*used)[1])
        peaks = {g.peak_bandwidth_bytes_per_s for g in latest.gpus
                 if g.peak_bandwidth_bytes_per_s and (self.focus is None or
                                                      g.index == self.focus)}
        self._update_peaks(peaks, bw_scale)
        high = float(bw_high) / bw_scale       # the same as the highest of the scaled values
        unknown = not peaks and not np.isfinite(high)
        if unknown != self.bandwidth_unknown:
            self.bandwidth_unknown = unknown
            self._set_titles()
        self._fit_bandwidth(high, max(peaks) / bw_scale if peaks else None)
        if self._new_items or self.capacity_marks.added or self.peak_marks.added:
            self._new_items = self.capacity_marks.added = self.peak_marks.added = False
            cache_text_items(self.memory)
            cache_text_items(self.bandwidth)
        if self.live:
            self._setting_range = True
            self.memory.setXRange(x0, x1, padding=0)
            self._setting_range = False
        settle(self.memory)
        settle(self.bandwidth)

    def _lost(self, ring: Ring, x0: float, x1: float) -> list[tuple[float, float]]:
        t, total = ring_slice(ring, "total_bytes", x0, x1, 1.0)
        _, used = ring_slice(ring, "used_bytes", x0, x1, 1.0)
        _, bandwidth = ring_slice(ring, BW_COLUMN, x0, x1, 1.0)
        return lost_spans(t, total, bandwidth, used)

    def _set_y(self, plot: pg.PlotWidget, low: float, high: float) -> None:
        """Set a y range unless it is the one shown: pyqtgraph redoes the axis and every
        item's view transform on each call, equal or not."""
        if self._y_set.get(id(plot)) != (low, high):
            self._y_set[id(plot)] = (low, high)
            plot.setYRange(low, high, padding=0)

    def _fit_bandwidth(self, high: float | None = None, peak: float | None = None) -> None:
        """From zero to the GPUs' peak bandwidth (the estimate is busy % × peak, so it
        stays under it), with room above its line for the line's label; where no peak is
        known, to what the data need, at least 1 GB/s. Without arguments: fit the last
        figures again (the plot changed height)."""
        if high is not None:
            self._bw_line = peak is not None and not (np.isfinite(high) and high > peak)
            if self._bw_line:
                self._bw_top = peak
            else:
                shown = self._bw_range.fit(0.0, high if np.isfinite(high) else 0.0)
                if shown is not None:
                    self._bw_top = shown[1]
        if self._bw_top is not None:
            line, half = label_px()
            view_px = self.bandwidth.getViewBox().height()
            roomy = self.peak_marks.fit_labels(view_px, line)
            above = line if self._bw_line and roomy else half
            self._set_y(self.bandwidth, *zero_based_range(self._bw_top, view_px, above, half))

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
            roomy = self.capacity_marks.fit_labels(view_px, line)
            above = line if self._mem_top is not None and roomy else half
            self._set_y(self.memory, *zero_based_range(top, view_px, above, half))

    @staticmethod
    def _series(series: dict[int, Series], index: int, column: str) -> Series:
        found = series.get(index)
        if found is None:
            found = series[index] = Series(index, column)
        return found

    def _update_capacities(self, capacities: dict[float, int], scale: int) -> None:
        """A dashed line at each capacity that reads differently: two GPUs a few MiB
        apart (an RTX 4090 and a 3090, both "24.0 GiB") share one line."""
        label = lambda total: f"capacity {format_bytes(total, self.units)}"  # noqa: E731
        self.capacity_marks.update({total: total / scale
                                    for total in one_per_label(capacities, label)}, label)
        self._mem_top = max(capacities) / scale if capacities else None

    def _update_peaks(self, peaks: set[float], scale: float) -> None:
        """A dashed line at each distinct peak bandwidth shown, like the capacity line."""
        label = lambda peak: f"peak {format_bandwidth(peak)}"  # noqa: E731
        self.peak_marks.update({peak: peak / scale for peak in one_per_label(peaks, label)},
                               label)

    def clear(self) -> None:
        self._mem_curves.clear()
        self._bw_curves.clear()
        self._set_layers()
        for spans in self._spans:
            spans.set_spans([])
        self._drop_lines()
        self.legend.set_indices(())
        self.highlight = None
        self._bw_range = StickyRange(floor=0.0, min_top=1.0)
        self._mem_range = StickyRange(floor=0.0, min_top=1.0)
        self._mem_data_top = self._bw_top = None
        self._last_drawn_s = -np.inf
