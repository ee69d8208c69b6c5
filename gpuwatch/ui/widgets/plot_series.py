"""Each GPU's line in a time plot, as data and a pen: what :class:`CurveCanvas` draws.

The canvas renders from the history's rings directly; a :class:`Series` says which
ring and column, with which pen, and is shown or not. Its decimated points over the
plot's window (what a curve item would hold) are worked out only when asked: to find
the line under the mouse, and in tests.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QBrush, QColor, QPen

from gpuwatch.core.history import Ring
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.curve_canvas import Layer
from gpuwatch.ui.widgets.decimate import band_decimate, minmax_decimate
from gpuwatch.ui.widgets.plot_items import HIGHLIGHT_WIDTH, LINE_WIDTH, gpu_pen
from gpuwatch.ui.widgets.plot_parts import ring_slice

BAND_ALPHA = 56     # a min/max band's fill, over 255


class Series:
    """GPU ``index``'s line in one plot: ring, column, scale, pen, and whether shown."""

    def __init__(self, index: int, column: str) -> None:
        self.index = index
        self.column = column
        self.ring: Ring | None = None
        self.scale = 1.0
        self.mean = False        # drawn as the mean per two columns (with a band, or not)
        self.band = False        # with its min/max band
        self.width = LINE_WIDTH
        self.opts: dict[str, QPen] = {"pen": gpu_pen(index)}
        self._visible = True
        self._pens: dict[float, QPen] = {}
        self._window: tuple | None = None
        self._data: tuple[np.ndarray, np.ndarray] | None = None

    # what a curve item answers, for the hover search and tests ------------------------
    def isVisible(self) -> bool:
        return self._visible

    def setVisible(self, visible: bool) -> None:
        self._visible = visible

    def set_width(self, width: float) -> None:
        if width != self.width:
            self.width = width
            self.opts["pen"] = gpu_pen(self.index, width)

    def show(self, ring: Ring, scale: float, x0: float, x1: float, pixels: int,
             mean: bool, band: bool) -> None:
        """Draw ``ring`` over [x0, x1] at ``pixels`` columns (``mean``: as the mean per
        two columns, ``band`` with the min/max band around it)."""
        self.ring, self.scale, self.mean, self.band = ring, scale, mean, band
        window = (id(ring), len(ring), ring.last("timestamp_s"), scale, x0, x1, pixels, mean)
        if window != self._window:
            self._window = window
            self._data = None

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        """The points drawn over the window (min/max per column, or the means)."""
        if self._data is None:
            if self.ring is None or self._window is None:
                return np.empty(0), np.empty(0)
            *_, x0, x1, pixels, mean = self._window
            t, y = ring_slice(self.ring, self.column, x0, x1, self.scale)
            if mean:
                mid, means, _, _ = band_decimate(t, y, max(1, pixels // 2))
                self._data = (mid, means)
            else:
                self._data = minmax_decimate(t, y, max(1, pixels))
        return self._data

    xData = property(lambda self: self.getData()[0])
    yData = property(lambda self: self.getData()[1])

    # what the canvas draws ------------------------------------------------------------
    def band_layer(self) -> Layer | None:
        if self.ring is None or not self.band:
            return None
        fill = QColor(theme.gpu_color(self.index))
        fill.setAlpha(BAND_ALPHA)
        return Layer(self.ring, self.column, self.scale, ("band", fill.rgba()),
                     brush=QBrush(fill))

    def line_layer(self, width: float) -> Layer | None:
        if self.ring is None:
            return None
        pen = self._pens.get(width)
        if pen is None:
            pen = self._pens[width] = gpu_pen(self.index, width)
        return Layer(self.ring, self.column, self.scale,
                     ("line", self.index, width, pen.color().rgba()), pen=pen, mean=self.mean)


def stacked_layers(series: list[Series], highlight: int | None
                   ) -> tuple[list[Layer], list[Layer], list[Layer]]:
    """The shown series' layers for the three canvases of a plot: the bands under
    everything, every line (thin), and the highlighted GPU's wide line on top. A new
    highlight redraws only the first and the last, each a layer or two."""
    shown = [s for s in series if s.isVisible()]
    for s in shown:
        s.set_width(HIGHLIGHT_WIDTH if s.index == highlight else LINE_WIDTH)
    bands = [s.band_layer() for s in shown]
    lines = [s.line_layer(LINE_WIDTH) for s in shown]
    top = [s.line_layer(HIGHLIGHT_WIDTH) for s in shown if s.index == highlight]
    return tuple([layer for layer in layers if layer is not None]    # type: ignore[return-value]
                 for layers in (bands, lines, top))


class RingLine:
    """A line through one column of a ring over a window (a process's memory), drawn by
    a :class:`CurveCanvas`; its decimated points are worked out only when asked."""

    def __init__(self, column: str, pen: QPen) -> None:
        self.column = column
        self.pen = pen
        self.ring: Ring | None = None
        self.scale = 1.0
        self._window: tuple | None = None
        self._data: tuple[np.ndarray, np.ndarray] | None = None

    def setPen(self, pen: QPen) -> None:
        self.pen = pen

    def show(self, ring: Ring, scale: float, x0: float, x1: float, pixels: int) -> None:
        self.ring, self.scale = ring, scale
        window = (id(ring), len(ring), ring.last("timestamp_s"), scale, x0, x1, pixels)
        if window != self._window:
            self._window = window
            self._data = None

    def clear(self) -> None:
        self.ring = self._window = self._data = None

    def high(self, x0: float) -> float:
        """The largest value from ``x0`` on (NaN: none), in the line's unit."""
        if self.ring is None or not len(self.ring):
            return float("nan")
        values = self.ring.since(x0, (self.column,))[self.column]
        return float(np.fmax.reduce(values)) / self.scale if len(values) else float("nan")

    def getData(self) -> tuple[np.ndarray, np.ndarray]:
        if self._data is None:
            if self.ring is None or self._window is None:
                return np.empty(0), np.empty(0)
            *_, x0, x1, pixels = self._window
            t, y = ring_slice(self.ring, self.column, x0, x1, self.scale)
            self._data = minmax_decimate(t, y, max(1, pixels))
        return self._data

    def layer(self, style: tuple) -> Layer | None:
        if self.ring is None:
            return None
        return Layer(self.ring, self.column, self.scale, style, pen=self.pen)
