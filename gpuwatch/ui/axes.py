"""Plot axes that paint their tick labels from cached static text.

pyqtgraph's ``AxisItem`` records its ticks, grid lines and labels into a ``QPicture``
and replays it on every paint. Replaying re-lays out every label's text, and a live
time axis is regenerated every second anyway (its range moves), measuring every label
again through the painter. Here the draw specs are still pyqtgraph's own (same tick
choice, same grid, same spacing), but label sizes are measured once per string and
font, and labels are drawn as ``QStaticText`` laid out once per string: the axis then
costs a handful of line and glyph blits per paint.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QStaticText

_CACHE_LIMIT = 512   # distinct label strings kept per axis before the cache starts over

_H_ALIGN = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignHCenter
_V_ALIGN = Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignVCenter


class _Measurer:
    """Stands in for the painter that ``AxisItem.generateDrawSpecs`` measures text with.

    pyqtgraph calls ``setFont``, ``fontMetrics`` and ``boundingRect(rect, flags, text)``
    on it; the rectangles depend on nothing but the font and the arguments, so they are
    remembered. Measuring is a real painter's, on a one-pixel image, opened for the
    duration of one ``generateDrawSpecs`` (``measuring()``)."""

    def __init__(self) -> None:
        self._image = QImage(1, 1, QImage.Format.Format_ARGB32_Premultiplied)
        self._painter: QPainter | None = None
        self._font = QFont()
        self._rects: dict[tuple, QRectF] = {}

    @contextmanager
    def measuring(self, font: QFont | None) -> Iterator[_Measurer]:
        if font is not None:
            self._font = QFont(font)
        self._painter = QPainter(self._image)
        self._painter.setFont(self._font)
        try:
            yield self
        finally:
            self._painter.end()
            self._painter = None

    def setFont(self, font: QFont) -> None:
        self._font = QFont(font)
        if self._painter is not None:
            self._painter.setFont(font)

    def fontMetrics(self) -> QFontMetrics:
        return QFontMetrics(self._font)

    def boundingRect(self, rect: QRectF, flags: Any, text: str) -> QRectF:
        key = (self._font.key(), rect.x(), rect.y(), rect.width(), rect.height(),
               int(flags), text)
        found = self._rects.get(key)
        if found is None:
            if len(self._rects) > _CACHE_LIMIT:
                self._rects.clear()
            assert self._painter is not None, "measure inside measuring()"
            found = self._rects[key] = self._painter.boundingRect(rect, flags, text)
        return QRectF(found)


class _StaticTextAxisMixin:
    """Replaces ``AxisItem.paint``: specs regenerated only when pyqtgraph invalidates
    them (it sets ``self.picture = None``), drawn directly with cached static text."""

    def _init_static(self) -> None:
        self._measurer = _Measurer()
        self._specs: tuple | None = None
        self._texts: dict[str, QStaticText] = {}
        self._background: QColor | None = None

    def paint(self, p: QPainter, opt: Any, widget: Any) -> None:
        if self.picture is None:
            with self._measurer.measuring(self.style["tickFont"]) as measurer:
                self._specs = self.generateDrawSpecs(measurer)
            self.picture = True      # pyqtgraph's "up to date" marker, reset on changes
        if self._specs is not None:
            self._draw(p, *self._specs)

    def _draw(self, p: QPainter, axis_spec: tuple, tick_specs: list, text_specs: list) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        for pen, p1, p2 in (axis_spec, *tick_specs):
            self._line(p, pen, p1, p2)
        font = self.style["tickFont"]
        if font is not None:
            p.setFont(font)
        p.setPen(self.textPen())
        p.setClipRect(self.boundingRect().toAlignedRect())
        for rect, flags, text in text_specs:
            static = self._static(text, p.font())
            size = static.size()
            flags = Qt.AlignmentFlag(int(flags))
            h, v = flags & _H_ALIGN, flags & _V_ALIGN
            x = rect.left() if h == Qt.AlignmentFlag.AlignLeft else \
                rect.right() - size.width() if h == Qt.AlignmentFlag.AlignRight else \
                rect.center().x() - size.width() / 2
            y = rect.top() if v == Qt.AlignmentFlag.AlignTop else \
                rect.bottom() - size.height() if v == Qt.AlignmentFlag.AlignBottom else \
                rect.center().y() - size.height() / 2
            p.drawStaticText(QPointF(round(x), round(y)), static)

    def _line(self, p: QPainter, pen: QPen, p1: QPointF, p2: QPointF) -> None:
        """A tick or grid line. Axis-aligned ones are filled as one-pixel rectangles:
        the raster engine strokes a long line 5-40x slower than it fills the same
        pixels, and a translucent grid line slower still, so a grid line is filled in
        its colour already blended over the plot's background when that is known (the
        axis is then stacked behind the curves, see ``set_background``)."""
        x1, y1, x2, y2 = p1.x(), p1.y(), p2.x(), p2.y()
        if x1 != x2 and y1 != y2:
            p.setPen(pen)
            p.drawLine(p1, p2)
            return
        color = pen.color()
        if self._background is not None and color.alpha() < 255:
            color = _over(color, self._background)
        w = max(1.0, pen.widthF())
        if x1 == x2:
            top, bottom = min(y1, y2), max(y1, y2)
            p.fillRect(QRectF(x1 - w / 2, top, w, max(1.0, bottom - top)), color)
        else:
            left, right = min(x1, x2), max(x1, x2)
            p.fillRect(QRectF(left, y1 - w / 2, max(1.0, right - left), w), color)

    def set_background(self, color: QColor | None) -> None:
        """The plot's background: grid lines are then drawn opaque in their blended
        colour, and the axis goes behind the plot's curves so none is cut by a line."""
        self._background = None if color is None else QColor(color)
        self.setZValue(-1 if color is not None else 0.5)
        self.picture = None
        self.update()

    def _static(self, text: str, font: QFont) -> QStaticText:
        key = text
        static = self._texts.get(key)
        if static is None:
            if len(self._texts) > _CACHE_LIMIT:
                self._texts.clear()
            static = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(font=font)
            self._texts[key] = static
        return static

    def setTickFont(self, font: QFont | None) -> None:
        if hasattr(self, "_texts"):
            self._texts.clear()
        super().setTickFont(font)   # type: ignore[misc]


class FastAxis(_StaticTextAxisMixin, pg.AxisItem):
    """A value axis (``left`` or ``right``, or a plain ``bottom``)."""

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self._init_static()


class FastDateAxis(_StaticTextAxisMixin, pg.DateAxisItem):
    """A time axis labelled with local clock times, as ``pg.DateAxisItem``."""

    def __init__(self, orientation: str = "bottom", **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self._init_static()


def _over(color: QColor, background: QColor) -> QColor:
    """``color`` (translucent) composited over an opaque ``background``."""
    a = color.alphaF()
    return QColor.fromRgbF(color.redF() * a + background.redF() * (1 - a),
                           color.greenF() * a + background.greenF() * (1 - a),
                           color.blueF() * a + background.blueF() * (1 - a))


def fast_axes() -> dict[str, pg.AxisItem]:
    """The ``axisItems`` for a time plot: clock times below, values on the left."""
    return {"bottom": FastDateAxis("bottom"), "left": FastAxis("left")}
