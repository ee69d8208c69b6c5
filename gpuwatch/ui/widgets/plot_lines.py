"""Dashed reference lines across a time plot (a GPU's capacity, its peak bandwidth), each
with its label above it at the left, and the same words in its tooltip.

A plot too short for a label over its line (three label heights) keeps the dashed line
and hides the label rather than spend a third of its height on it. The label sits on
the plot's background colour, above the curves: a data line running at the peak (a
memory-bound GPU) passes behind it rather than striking its words through.

A line lives in its view box's own pixels, not in the plotted data's coordinates: a
live plot's view moves in time every second or two, which leaves a horizontal line and
its label where they are. (pyqtgraph's ``InfiniteLine`` works out its extent and lays
out its label again on every change of the view: a tenth of a live plot's cost.) It is
placed again when the view's value range or size changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from gpuwatch.ui.widgets import theme

LABEL_AT = (0.02, 0.36, 0.70)    # where along its line each label sits, by the line's rank
LABEL_Z = 20                     # above the view's curves, whatever their canvases' order


def label_fill() -> Any:
    """The plot's background, nearly opaque: the label reads over any curve."""
    color = pg.mkColor(theme.colors().plot_bg)
    color.setAlpha(230)
    return pg.mkBrush(color)


class MarkLine(pg.GraphicsObject):
    """A dashed line across ``vb`` at ``value`` (in the plot's unit), its ``label`` (a
    text item) above its left end, and the same words as its tooltip."""

    HALF_PX = 3.0      # the hover band either side of the line (its tooltip)

    def __init__(self, vb: pg.ViewBox, value: float, text: str, pen: QPen, color: Any) -> None:
        super().__init__(vb)
        self._vb = vb
        self._value = value
        self._pen = pen
        self._at = LABEL_AT[0]
        self._placed: tuple[float, float] | None = None     # (view width, line's y)
        self.setZValue(LABEL_Z)         # over the curves (and their highlighted line)
        self.label = pg.TextItem(text, color=color, anchor=(0, 1),
                                 fill=label_fill())
        self.label.setParentItem(self)
        self.label.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setToolTip(text)
        vb.sigYRangeChanged.connect(self._place)
        vb.sigResized.connect(self._place)
        self._place()

    def value(self) -> float:
        return self._value

    def set_value(self, value: float) -> None:
        """Move the line to ``value`` (in the plot's unit)."""
        if value != self._value:
            self._value = value
            self._place()

    def set_label_at(self, at: float) -> None:
        """Put the label ``at`` this fraction of the way along the line."""
        if at != self._at:
            self._at = at
            self._placed = None
            self._place()

    def set_style(self, pen: QPen, color: Any) -> None:
        """A new pen and label colour (the theme changed)."""
        self._pen = pen
        self.label.setColor(color)
        self.label.fill = label_fill()
        self.label.update()
        self.update()

    def detach(self) -> None:
        """Out of the plot: off its scene, no longer following the view."""
        if self.scene() is None:
            return
        self._vb.sigYRangeChanged.disconnect(self._place)
        self._vb.sigResized.disconnect(self._place)
        self.scene().removeItem(self)

    def attach(self) -> None:
        """Back into the plot after :meth:`detach`."""
        if self.scene() is not None:
            return
        self.setParentItem(self._vb)
        self._vb.sigYRangeChanged.connect(self._place)
        self._vb.sigResized.connect(self._place)
        self._placed = None
        self._place()

    def _place(self, *_: object) -> None:
        vb = self._vb
        _, (y0, y1) = vb.viewRange()
        width, height = vb.width(), vb.height()
        y = (y1 - self._value) * height / (y1 - y0) if y1 != y0 else -self.HALF_PX
        if (width, y) == self._placed:
            return
        self.prepareGeometryChange()
        self._placed = (width, y)
        self.label.setPos(self._at * width, y)
        self.update()

    def boundingRect(self) -> QRectF:
        if self._placed is None:
            return QRectF()
        width, y = self._placed
        return QRectF(0, y - self.HALF_PX, width, 2 * self.HALF_PX)

    def paint(self, p: QPainter, *_: Any) -> None:
        if self._placed is None:
            return
        width, y = self._placed
        p.setPen(self._pen)
        p.drawLine(QPointF(0, y), QPointF(width, y))


class MarkLines:
    """The reference lines of one plot, keyed by what they mark (e.g. bytes of capacity)."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.lines: dict[float, MarkLine] = {}
        self.added = False       # a line came since the caller last looked (cache its text)

    def update(self, wanted: Mapping[float, float], label: Callable[[float], str]) -> None:
        """Lines for ``wanted``: key -> position in the plot's unit, labelled
        ``label(key)`` (asked only for a new line); others go."""
        for key in list(self.lines):
            if key not in wanted:
                self.lines.pop(key).detach()
        for key, position in wanted.items():
            if key not in self.lines:
                self.lines[key] = self._line(position, label(key))
                self.added = True
        # lines close in value (two GPUs' peaks of 1,008 and 936 GB/s) would print their
        # labels over each other at the left: each next line's label starts further right
        for rank, key in enumerate(sorted(self.lines)):
            self.lines[key].set_label_at(LABEL_AT[rank % len(LABEL_AT)])

    def drop(self) -> None:
        """Remove every line (units or theme changed: they are made again)."""
        for line in self.lines.values():
            line.detach()
        self.lines.clear()

    def fit_labels(self, view_px: float, line_px: float) -> bool:
        """Show the labels where the plot has room for them; True where it has."""
        roomy = view_px <= 0 or view_px >= 3 * line_px
        for item in self.lines.values():
            if item.label.isVisible() != roomy:
                item.label.setVisible(roomy)
        return roomy

    def _line(self, position: float, label: str) -> MarkLine:
        muted = theme.colors().muted
        return MarkLine(self.plot.getViewBox(), position, label,
                        pg.mkPen(muted, width=1, style=Qt.PenStyle.DashLine), muted)
