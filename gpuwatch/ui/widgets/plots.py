"""Time plots: memory used per GPU against its capacity, and memory bandwidth per GPU.

Windows of 1 min to 24 h; live mode follows the newest sample, pause (or dragging the
plot) freezes the view so you can scroll back. Memory goes through min/max decimation
to the plot's pixel width, so every peak survives; bandwidth, which ripples faster than
a plot can show, is drawn at windows of 10 min and more as its mean per pixel pair with
the min/max band around it. A live plot is only redrawn when the newest sample would
move it by at least one pixel column: a 24 h window is redrawn about once a minute.

Each GPU's line has its colour and its dash pattern (:mod:`plot_items`), named in a
legend above the plots; hovering a line or its legend entry highlights it, clicking an
entry asks for that GPU alone (:attr:`TimePlots.focus_requested`; the window answers with
:meth:`TimePlots.set_focus`). The minutes a GPU was lost are shaded. From
:data:`STRIPS_FROM` GPUs shown, memory is drawn as one row per GPU
(:mod:`memory_strips`) instead of lines that would merge. Bandwidth is the GPU's own
measurement (GPM) where it makes one, the estimate elsewhere, and the title says which.
"""

from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gpuwatch.core.history import History
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.curve_canvas import PlotCanvases, aligned_range, plot_columns
from gpuwatch.ui.widgets.gpu_legend import GpuLegend
from gpuwatch.ui.widgets.memory_strips import MemoryStrips
from gpuwatch.ui.widgets.plot_controls import WINDOW_LABELS, PlotControls  # noqa: F401
from gpuwatch.ui.widgets.plot_items import SpanItem, nearest_line
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
    ring_lost,
    ring_slice,
    settle,
    window_rows,
)
from gpuwatch.ui.widgets.plot_ranges import bounds
from gpuwatch.ui.widgets.plot_scales import PlotScales, one_per_label  # noqa: F401
from gpuwatch.ui.widgets.plot_series import Series, stacked_layers

BAND_FROM_S = 600      # bandwidth as mean and min/max band from this much time shown
HOVER_PX = 8           # a line this close to the mouse is highlighted
STRIPS_FROM = 3        # GPUs shown from which memory is a row per GPU, not lines
WAITING = "Waiting for the first sample…"
BW_COLUMN = "estimated_bandwidth_bytes_per_s"
MEASURED_COLUMN = "measured_bandwidth_bytes_per_s"


class TimePlots(QWidget):
    """The two linked plots (or the memory rows and the bandwidth plot), their legend,
    the window buttons and live/pause."""

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
        self.strips_shown = False           # memory as a row per GPU (many GPUs)
        self.measured: tuple[int, ...] = ()  # GPUs whose bandwidth shown is measured
        self._last_drawn_s = -np.inf        # the newest sample's time when last drawn
        self._setting_range = False
        self._mem_curves: dict[int, Series] = {}
        self._bw_curves: dict[int, Series] = {}

        self.memory = TimePlot(MEMORY_TITLE, "GiB")
        self.bandwidth = TimePlot(BANDWIDTH_TITLE, "GB/s")
        self.bandwidth.setXLink(self.memory)
        self.scales = PlotScales(self.memory, self.bandwidth)
        self.capacity_marks = self.scales.capacity_marks
        self.peak_marks = self.scales.peak_marks
        self.legend = GpuLegend()
        self.legend.hovered.connect(lambda i: self.set_highlight(None if i < 0 else i))
        self.legend.clicked.connect(self.focus_requested)
        self.strips = MemoryStrips(history)
        self.strips.hide()
        self.strips.hovered.connect(lambda i: self.set_highlight(None if i < 0 else i))
        self.strips.clicked.connect(self.focus_requested)
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
        self._new_items = True     # text items to cache as pixmaps (line labels)
        self.memory.getViewBox().sigResized.connect(lambda *_: self.scales.fit_memory())
        bw_view = self.bandwidth.getViewBox()
        bw_view.sigResized.connect(lambda *_: self.scales.fit_bandwidth())
        bw_view.sigResized.connect(lambda *_: self._follow_strips())
        bw_view.sigXRangeChanged.connect(lambda *_: self._follow_strips())
        self.memory.getViewBox().sigXRangeChanged.connect(lambda *_: self._follow_memory())
        # Until the first sample: the last minutes of the clock, zero to one unit up.
        now = time.time()
        for plot in (self.memory, self.bandwidth):
            plot.setXRange(now - self.window_s, now, padding=0)
        self.bandwidth_unknown = False      # no GPU shown has a known peak or estimate
        self.scales.start()
        self.waiting = pg.TextItem(WAITING, color=theme.colors().muted, anchor=(0.5, 0.5))
        self.waiting.setPos(now - self.window_s / 2, 0.5)
        self.memory.addItem(self.waiting, ignoreBounds=True)

        self.controls = PlotControls(self)
        self.window_buttons = self.controls.window_buttons
        self.state_label = self.controls.state_label
        self.pause_button = self.controls.pause_button
        self.window_buttons.idClicked.connect(self.set_window)
        self.pause_button.toggled.connect(lambda on: self.set_live(not on))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(self.controls.layout)
        layout.addWidget(self.legend)
        layout.addWidget(self.memory, 3)
        layout.addWidget(self.strips, 3)
        layout.addWidget(self.bandwidth, 2)
        self.set_window(self.window_s)

    # controls ------------------------------------------------------------------------
    def set_window(self, seconds: int) -> None:
        self.window_s = seconds
        self.controls.show_window(seconds)
        self.set_live(True)
        self.window_changed.emit(seconds)

    def set_live(self, live: bool) -> None:
        changed = live != self.live
        self.live = live
        self.controls.show_live(live)
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
        memory, bandwidth = plot_titles(self.focus, self.bandwidth_unknown, self.measured,
                                        len(self._bw_curves))
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
        self.strips.set_highlight(index)
        many = len(self.history.gpus) > 2
        for series in self._bw_curves.values():   # with many GPUs the band follows it
            series.band = series.mean and (series.index in (index, self.focus) or not many)
        self._set_layers()

    def set_alert(self, index: int | None, critical: bool = True) -> None:
        """The GPU in the worst danger (None: none): with several GPUs its lines are
        drawn wide and on top while no other is hovered, and its memory row outlined
        (red if ``critical``, else amber), so an endangered GPU never hides in a bundle
        of eight lines at the same level."""
        self.strips.set_alert(index, critical)
        if index != self.alert:
            self.alert = index
            self._set_layers()

    def set_thresholds(self, warning_percent: float, critical_percent: float) -> None:
        """Where the memory rows turn amber and red (the cards' thresholds)."""
        self.strips.set_thresholds(warning_percent, critical_percent)

    def _set_layers(self) -> None:
        """Tell the canvases what to draw (only when that changed: they notice new
        samples themselves)."""
        for canvas, curves in zip(self.canvases, (self._mem_curves, self._bw_curves),
                                  strict=True):
            series = [curves[i] for i in sorted(curves)]
            top = self.highlight
            if top is None and len(series) > 1:
                top = self.alert
            signature = (top, *((s.index, s.isVisible(), s.mean, s.band, s.column,
                                 id(s.ring), s.scale) for s in series))
            if signature != canvas.signature:
                canvas.signature = signature
                canvas.set_layers(stacked_layers(series, top))
            else:
                canvas.update()

    def set_units(self, units: UnitSystem) -> None:
        self.units = self.scales.units = self.strips.units = units
        name, _ = byte_unit(units)
        self.memory.setLabel("left", name)
        self.scales.drop_lines()
        self.refresh(force=True)

    def restyle(self) -> None:
        """Follow a theme change (pyqtgraph's config only affects new plots)."""
        restyle_plot(self.memory)
        restyle_plot(self.bandwidth)
        self.strips.restyle()
        self.waiting.setColor(theme.colors().muted)
        self.scales.drop_lines()
        self.refresh(force=True)

    _capacity_lines = property(lambda self: self.capacity_marks.lines)  # for tests
    _peak_lines = property(lambda self: self.peak_marks.lines)

    def _user_moved(self, *_: object) -> None:
        if not self._setting_range and self.live:
            self.set_live(False)

    # memory as rows ------------------------------------------------------------------
    @property
    def time_plot(self) -> TimePlot:
        """The plot the others follow in time: bandwidth's while memory is rows."""
        return self.bandwidth if self.strips_shown else self.memory

    def _show_strips(self, on: bool) -> None:
        """Memory as a row per GPU (``on``; the bandwidth plot leads) or as lines."""
        (x0, x1), _ = self.time_plot.getViewBox().viewRange()
        self.strips_shown = on
        self.memory.setVisible(not on)
        self.strips.setVisible(on)
        self.bandwidth.setXLink(None if on else self.memory)
        self._setting_range = True
        self.time_plot.setXRange(x0, x1, padding=0)
        self._setting_range = False

    def _follow_memory(self) -> None:
        """While memory is rows, a time range set on the hidden memory plot (a replay's
        cursor) moves the bandwidth plot, as the link would."""
        if self.strips_shown and not self._setting_range:
            (x0, x1), _ = self.memory.getViewBox().viewRange()
            self._setting_range = True
            self.bandwidth.setXRange(x0, x1, padding=0)
            self._setting_range = False

    def _follow_strips(self) -> None:
        """The rows take the bandwidth view's time range and pixel span."""
        if not self.strips_shown:
            return
        view = self.bandwidth.getViewBox()
        rect = view.sceneBoundingRect()
        (x0, x1), _ = view.viewRange()
        right = self.bandwidth.width() - round(rect.right())
        self.strips.set_view(tuple(i for i in sorted(self.history.gpus)), x0, x1,
                             round(rect.left()), max(0, right))

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
        strips = self.focus is None and len(self.history.gpus) >= STRIPS_FROM
        if strips != self.strips_shown:
            self._show_strips(strips)
            force = True
        now = latest.timestamp_s
        pixels = plot_columns(self.time_plot)
        if self.live:
            x0, x1 = aligned_range(now, self.window_s, pixels)
        else:
            (x0, x1), _ = self.time_plot.getViewBox().viewRange()
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
        spans, shown_rings, measured = [], [], []
        bw_high = -np.inf       # the highest bandwidth shown, bytes/s (-inf: none known)
        for index, ring in sorted(self.history.gpus.items()):
            mem = self._series(self._mem_curves, index, "used_bytes")
            bw = self._series(self._bw_curves, index, BW_COLUMN)
            shown = self.focus is None or index == self.focus
            mem.setVisible(shown and not strips)
            bw.setVisible(shown)
            if not shown:
                continue
            shown_rings.append(ring)
            rows = window_rows(ring, x0, x1, (BW_COLUMN, MEASURED_COLUMN, "total_bytes"))
            if np.isfinite(rows[MEASURED_COLUMN]).any():    # the GPU measures it (GPM)
                bw.column = MEASURED_COLUMN
                measured.append(index)
            else:
                bw.column = BW_COLUMN
            values = rows[bw.column]
            mean = self.band_mode and len(values) > pixels // 2
            if not strips:
                mem.show(ring, mem_scale, x0, x1, pixels, False, False)
            bw.show(ring, bw_scale, x0, x1, pixels, mean,
                    mean and (index in (self.highlight, self.focus) or not many))
            if len(values):
                bw_high = np.fmax(bw_high, np.fmax.reduce(values))
            if np.isnan(np.add.reduce(rows["total_bytes"])):     # lost for a while
                spans += [(a, b, f"GPU {index} lost") for a, b in ring_lost(ring, x0, x1)]
            total = ring.last("total_bytes")
            if total:
                capacities[total] = capacities.get(total, 0) + 1
        self._set_layers()
        self.legend.set_indices(tuple(sorted(self.history.gpus)))
        for item in self._spans:
            item.set_spans(spans)
        self.scales.update_capacities(capacities, mem_scale)
        used = [] if capacities else [ring_slice(ring, "used_bytes", x0, x1, mem_scale)[1]
                                      for ring in shown_rings]
        self.scales.fit_memory(bounds(*used)[1])
        peaks = {g.peak_bandwidth_bytes_per_s for g in latest.gpus
                 if g.peak_bandwidth_bytes_per_s and (self.focus is None or
                                                      g.index == self.focus)}
        self.scales.update_peaks(peaks, bw_scale)
        high = float(bw_high) / bw_scale       # the same as the highest of the scaled values
        unknown = not peaks and not np.isfinite(high)
        if unknown != self.bandwidth_unknown or tuple(measured) != self.measured:
            self.bandwidth_unknown = unknown
            self.measured = tuple(measured)
            self._set_titles()
        self.scales.fit_bandwidth(high, max(peaks) / bw_scale if peaks else None)
        if self._new_items or self.capacity_marks.added or self.peak_marks.added:
            self._new_items = self.capacity_marks.added = self.peak_marks.added = False
            cache_text_items(self.memory)
            cache_text_items(self.bandwidth)
        if self.live:
            self._setting_range = True
            self.time_plot.setXRange(x0, x1, padding=0)
            self._setting_range = False
        self._follow_strips()
        settle(self.memory)
        settle(self.bandwidth)

    @staticmethod
    def _series(series: dict[int, Series], index: int, column: str) -> Series:
        found = series.get(index)
        if found is None:
            found = series[index] = Series(index, column)
        return found

    def clear(self) -> None:
        self._mem_curves.clear()
        self._bw_curves.clear()
        self._set_layers()
        for spans in self._spans:
            spans.set_spans([])
        self.scales.drop_lines()
        self.legend.set_indices(())
        self.highlight = None
        self.scales.reset()
        self._last_drawn_s = -np.inf
