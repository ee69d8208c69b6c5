"""The pieces the time plots and the process plot share: curves cut to a window and
decimated to the plot's width, a curve that knows its extent, and plot set-up that keeps
a live plot cheap to repaint (no SI prefixes, cached text, settled ranges)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsItem

from gpuwatch.core.history import Ring
from gpuwatch.core.units import SIZE_UNITS, UnitSystem
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.axes import fast_axes
from gpuwatch.ui.widgets.decimate import minmax_decimate, window_slice
from gpuwatch.ui.widgets.plot_items import lost_spans
from gpuwatch.ui.widgets.plot_ranges import bounds


def byte_unit(units: UnitSystem) -> tuple[str, int]:
    return ("GB", SIZE_UNITS["GB"]) if units == "si" else ("GiB", SIZE_UNITS["GIB"])


def window_rows(ring: Ring, x0: float, x1: float, names: tuple[str, ...]
                ) -> dict[str, np.ndarray]:
    """The ring's rows from ``x0`` to ``x1`` (views, no copy where they lie in one piece:
    a 24 h window is 86,400 rows per GPU)."""
    rows = ring.since(x0, ("timestamp_s", *names))
    end = int(np.searchsorted(rows["timestamp_s"], x1, side="right"))
    return {name: rows[name][:end] for name in names}


def ring_slice(ring: Ring, column: str, x0: float, x1: float,
               scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(t, y/scale) of ``column`` over [x0, x1] (one sample either side), reading only the
    tail of the ring that can reach back to ``x0``."""
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
    return t[sl], ring.column(column, last=need)[sl] / scale


def ring_lost(ring: Ring, x0: float, x1: float) -> list[tuple[float, float]]:
    """The spans of [x0, x1] in which the GPU of ``ring`` was lost (every figure unknown)."""
    t, total = ring_slice(ring, "total_bytes", x0, x1, 1.0)
    _, used = ring_slice(ring, "used_bytes", x0, x1, 1.0)
    _, bandwidth = ring_slice(ring, "estimated_bandwidth_bytes_per_s", x0, x1, 1.0)
    return lost_spans(t, total, bandwidth, used)


def ring_curve(ring: Ring, column: str, x0: float, x1: float, pixels: int,
               scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(x, y/scale) of ``column`` over [x0, x1], min/max-decimated to ``pixels`` columns."""
    t, y = ring_slice(ring, column, x0, x1, scale)
    return minmax_decimate(t, y, max(1, pixels))


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


class TimePlot(pg.PlotWidget):
    """One of the time plots: fast axes, no menu, pans in time only, and says when the
    mouse leaves it (to end a hover highlight). It takes no keyboard focus: it has no
    keys, and Tab should go to the controls around it."""

    left_plot = Signal()
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
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.viewport().setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName(title)
        self.setAccessibleDescription(f"{title}, in {y_label} against the time of day")

    def leaveEvent(self, event: Any) -> None:
        self.left_plot.emit()
        super().leaveEvent(event)


MEMORY_TITLE = "Memory used per GPU"
BANDWIDTH_TITLE = "Estimated memory bandwidth per GPU (busy % × peak)"
MEASURED_TITLE = "Measured memory bandwidth per GPU (GPM)"


def plot_titles(focus: int | None, bandwidth_unknown: bool, measured: tuple[int, ...] = (),
                shown: int = 0) -> tuple[str, str]:
    """The memory and bandwidth plots' titles: which GPUs they show, whether bandwidth is
    measured (by the GPU's performance monitor, GPM; ``measured`` lists those GPUs
    among the ``shown``) or estimated, and (an empty state) a bandwidth that cannot be
    estimated because NVML gives no bus width or clock for its peak."""
    memory = MEMORY_TITLE if focus is None else f"Memory used · GPU {focus} only"
    every = bool(measured) and (focus is not None or len(measured) >= shown)
    if bandwidth_unknown:
        bandwidth = ("Memory bandwidth unknown: NVML gives no peak" if focus is None else
                     f"Memory bandwidth unknown for GPU {focus}: no peak")
    elif focus is not None:
        kind = "Measured" if focus in measured else "Estimated"
        bandwidth = f"{kind} memory bandwidth · GPU {focus} only"
    elif every:
        bandwidth = MEASURED_TITLE
    elif measured:
        gpus = ", ".join(str(i) for i in measured)
        bandwidth = f"Memory bandwidth per GPU: measured on GPU {gpus}, else estimated"
    else:
        bandwidth = BANDWIDTH_TITLE
    return memory, bandwidth
