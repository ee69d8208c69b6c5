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
    def layers(self) -> list[Layer]:
        """The band (if any) and the line, bottom first."""
        if self.ring is None:
            return []
        out = []
        if self.band:
            fill = QColor(theme.gpu_color(self.index))
            fill.setAlpha(BAND_ALPHA)
            out.append(Layer(self.ring, self.column, self.scale, ("band", fill.rgba()),
                             brush=QBrush(fill)))
        color = self.opts["pen"].color().rgba()
        out.append(Layer(self.ring, self.column, self.scale,
                         ("line", self.index, self.width, color),
                         pen=self.opts["pen"], mean=self.mean))
        return out


def stacked_layers(series: list[Series], highlight: int | None) -> list[Layer]:
    """The shown series' layers, bottom first: every band, then the lines, the
    highlighted GPU's line on top."""
    shown = [s for s in series if s.isVisible()]
    for s in shown:
        s.set_width(HIGHLIGHT_WIDTH if s.index == highlight else LINE_WIDTH)
    layers = [layer for s in shown for layer in s.layers()]
    bands = [layer for layer in layers if layer.brush is not None]
    lines = [layer for layer in layers if layer.brush is None]
    lines.sort(key=lambda layer: layer.style[1] == highlight)
    return bands + lines
