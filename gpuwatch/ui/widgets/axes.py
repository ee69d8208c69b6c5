"""Plot axes that replay a compiled list of fills and static texts.

pyqtgraph's ``AxisItem`` records its ticks, grid lines and labels into a ``QPicture``
and replays it on every paint. Replaying re-lays out every label's text and strokes
every grid line, and a live time axis is regenerated every second anyway (its range
moves), measuring every label again through the painter. Here a value axis keeps
pyqtgraph's own draw specs (same ticks, grid and spacing) and a horizontal time axis
builds them from ``time_ticks``; either way they are compiled once per change into
rectangle fills and ``QStaticText`` (label sizes measured once per string and font),
so a paint is a handful of fills and glyph blits.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QStaticText

from gpuwatch.ui.widgets.time_ticks import SAMPLE_LABELS, tick_label, time_ticks

log = logging.getLogger(__name__)

_CACHE_LIMIT = 512   # distinct label strings kept per axis before the cache starts over

# Alignment flags as plain ints: a Python ``enum.Flag`` operation costs microseconds, and a
# live time axis aligns ~20 labels every second.
_H_ALIGN = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignRight
               | Qt.AlignmentFlag.AlignHCenter)
_V_ALIGN = int(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignBottom
               | Qt.AlignmentFlag.AlignVCenter)
_LEFT, _RIGHT = int(Qt.AlignmentFlag.AlignLeft), int(Qt.AlignmentFlag.AlignRight)
_TOP, _BOTTOM = int(Qt.AlignmentFlag.AlignTop), int(Qt.AlignmentFlag.AlignBottom)
_FILL, _TEXT, _PEN, _CLIP, _LINE = "fill", "text", "pen", "clip", "line"   # compiled draw ops


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
        self._font_key = self._font.key()
        self._rects: dict[tuple, QRectF] = {}

    @contextmanager
    def measuring(self, font: QFont | None) -> Iterator[_Measurer]:
        if font is not None:
            self._font = QFont(font)
            self._font_key = self._font.key()
        self._painter = QPainter(self._image)
        self._painter.setFont(self._font)
        try:
            yield self
        finally:
            self._painter.end()
            self._painter = None

    def setFont(self, font: QFont) -> None:
        self._font = QFont(font)
        self._font_key = self._font.key()
        if self._painter is not None:
            self._painter.setFont(font)

    def font(self) -> QFont:
        return QFont(self._font)

    def fontMetrics(self) -> QFontMetrics:
        return QFontMetrics(self._font)

    def boundingRect(self, rect: QRectF, flags: Any, text: str) -> QRectF:
        key = (self._font_key, rect.x(), rect.y(), rect.width(), rect.height(),
               int(flags), text)
        found = self._rects.get(key)
        if found is None:
            if len(self._rects) > _CACHE_LIMIT:
                self._rects.clear()
            assert self._painter is not None, "measure inside measuring()"
            found = self._rects[key] = self._painter.boundingRect(rect, flags, text)
        return QRectF(found)

    def width_of(self, text: str) -> float:
        """The width of a one-off text, not kept (a time label is kept by its axis
        while its tick is shown, and a moving window shows new ones for ever)."""
        assert self._painter is not None, "measure inside measuring()"
        return self._painter.boundingRect(QRectF(0, 0, 100, 100),
                                          Qt.AlignmentFlag.AlignCenter, text).width()


class _StaticTextAxisMixin:
    """Replaces ``AxisItem.paint``: the specs are regenerated only when pyqtgraph
    invalidates them (it sets ``self.picture = None``) and compiled into a list of
    rectangle fills and static texts, so a paint only replays that list."""

    def _init_static(self) -> None:
        self._measurer = _Measurer()
        self._ops: list[tuple] = []
        self._texts: dict[str, QStaticText] = {}
        self._background: QColor | None = None
        self._blended: dict[tuple[int, int], QColor] = {}

    def paint(self, p: QPainter, opt: Any, widget: Any) -> None:
        if self.picture is None:
            try:
                with self._measurer.measuring(self.style["tickFont"]) as measurer:
                    self._ops = self._build_ops(measurer)
            except Exception:   # an exception escaping a paint takes the process down
                log.exception("could not lay out the %s axis", self.orientation)
                self._ops = []
            self.picture = True      # pyqtgraph's "up to date" marker, reset on changes
        if not self._ops:
            return
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        font = self.style["tickFont"]
        if font is not None:
            p.setFont(font)
        for op in self._ops:
            kind = op[0]
            if kind is _FILL:
                p.fillRect(op[1], op[2])
            elif kind is _TEXT:
                p.drawStaticText(op[1], op[2])
            elif kind is _PEN:
                p.setPen(op[1])
            elif kind is _CLIP:
                p.setClipRect(op[1])
            else:
                p.drawLine(op[1], op[2])

    def label_texts(self) -> list[str]:
        """The tick labels the last layout drew (for tests and diagnostics)."""
        return [op[2].text() for op in self._ops if op[0] is _TEXT]

    def _build_ops(self, measurer: _Measurer) -> list[tuple]:
        specs = self.generateDrawSpecs(measurer)
        return [] if specs is None else self._compile(*specs)

    def _compile(self, axis_spec: tuple, tick_specs: list, text_specs: list) -> list[tuple]:
        ops: list[tuple] = []
        for pen, p1, p2 in (axis_spec, *tick_specs):
            ops.extend(self._line(pen, p1, p2))
        ops.append((_PEN, self.textPen()))
        ops.append((_CLIP, self.boundingRect().toAlignedRect()))
        font = self.style["tickFont"] or self._measurer.font()
        for rect, flags, text in text_specs:
            static = self._static(text, font)
            size = static.size()
            bits = int(flags)
            h, v = bits & _H_ALIGN, bits & _V_ALIGN
            x = rect.left() if h == _LEFT else \
                rect.right() - size.width() if h == _RIGHT else \
                rect.center().x() - size.width() / 2
            y = rect.top() if v == _TOP else \
                rect.bottom() - size.height() if v == _BOTTOM else \
                rect.center().y() - size.height() / 2
            ops.append((_TEXT, QPointF(round(x), round(y)), static))
        return ops

    def _line(self, pen: QPen, p1: QPointF, p2: QPointF) -> list[tuple]:
        """A tick or grid line. Axis-aligned ones are filled as one-pixel rectangles:
        the raster engine strokes a long line 5-40x slower than it fills the same
        pixels, and a translucent grid line slower still, so a grid line is filled in
        its colour already blended over the plot's background when that is known (the
        axis is then stacked behind the curves, see ``set_background``)."""
        x1, y1, x2, y2 = p1.x(), p1.y(), p2.x(), p2.y()
        if x1 != x2 and y1 != y2:
            return [(_PEN, QPen(pen)), (_LINE, QPointF(p1), QPointF(p2))]
        color = self._opaque(pen.color())
        w = max(1.0, pen.widthF())
        if x1 == x2:
            top, bottom = min(y1, y2), max(y1, y2)
            return [(_FILL, QRectF(x1 - w / 2, top, w, max(1.0, bottom - top)), color)]
        left, right = min(x1, x2), max(x1, x2)
        return [(_FILL, QRectF(left, y1 - w / 2, max(1.0, right - left), w), color)]

    def _opaque(self, color: QColor) -> QColor:
        """A translucent line colour blended over the known background (remembered:
        a live axis asks for the same few colours every second)."""
        if self._background is None or color.alpha() == 255:
            return color
        key = (color.rgba(), self._background.rgba())
        blended = self._blended.get(key)
        if blended is None:
            blended = self._blended[key] = _over(color, self._background)
        return blended

    def set_background(self, color: QColor | None) -> None:
        """The plot's background: grid lines are then drawn opaque in their blended
        colour, and the axis goes behind the plot's curves so none is cut by a line."""
        self._background = None if color is None else QColor(color)
        self.setZValue(-1 if color is not None else 0.5)
        self.picture = None
        self.update()

    def _static(self, text: str, font: QFont) -> QStaticText:
        static = self._texts.get(text)
        if static is None:
            if len(self._texts) > _CACHE_LIMIT:
                self._texts.clear()
            static = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(font=font)
            self._texts[text] = static
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
    """A time axis labelled with local clock times. Horizontal ones place their ticks
    with ``time_ticks`` (plain arithmetic) instead of ``DateAxisItem``'s zoom levels;
    the geometry, tick lengths and grid shading follow ``AxisItem.generateDrawSpecs``."""

    def __init__(self, orientation: str = "bottom", **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self._init_static()
        self._font_key: str | None = None
        self._room: dict[str, float] = {}       # strftime format -> room a label needs
        self._labels: dict[tuple[float, float], tuple[QStaticText, float]] = {}

    def _build_ops(self, measurer: _Measurer) -> list[tuple]:
        """The ops of a horizontal time axis, made directly (no draw specs to compile:
        this runs every second on a live plot): tick and grid lines as fills, then the
        labels that fit, as ``AxisItem.generateDrawSpecs`` would place them. A label's
        text, layout and width are kept per tick while it is shown (the ticks of a
        moving window are mostly the ones it had a second before); a tick that left the
        window is forgotten, so a window moving all day keeps a dozen labels."""
        if self.orientation != "bottom" or self._tickLevels is not None:
            return super()._build_ops(measurer)
        font = self.style["tickFont"] or measurer.font()
        font_key = font.key()
        if font_key != self._font_key:
            self._font_key = font_key
            self._room.clear()
            self._labels.clear()
        # The room for labels comes from the font, never from the labels that fit: those
        # depend on the axis's height, and a height taken from them shrinks to nothing
        # the first time none fits (a view with no data yet, a layout pass at 0 px).
        label_h = self._label_room("", measurer)
        self._updateMaxTextSize(math.ceil(label_h))
        bounds = self.mapRectFromParent(self.geometry())
        view = self.linkedView()
        tick_bounds = bounds if view is None or self.grid is False else \
            view.mapRectToItem(self, view.boundingRect())
        x0, x1 = (float(v) for v in self.range)
        width = bounds.width()
        if not (x1 > x0 and width > 0):
            return []
        scale = width / (x1 - x0)
        levels = time_ticks(x0, x1, width, lambda fmt: self._label_room(fmt, measurer))
        top, left, right = bounds.top(), bounds.left(), bounds.right()
        ops = self._line(self.pen(), QPointF(left - 1, top + 1), QPointF(right + 1, top + 1))
        labels: list[tuple] = []
        shown: dict[tuple[float, float], tuple[QStaticText, float]] = {}
        text_top = top + self.style["tickTextOffset"][1]
        line_top = tick_bounds.top()
        pen = self.tickPen()
        w = max(1.0, pen.widthF())
        for level, (step, values) in enumerate(levels):
            tick_length = max(0.0, self.style["tickLength"] / (level * 0.5 + 1.0))
            alpha = 255 / (level + 2)   # as DateAxisItem: its coarser (day) level is first
            if self.grid is not False:
                alpha *= self.grid / 255.0 * min(1.0, max(0.0, 0.05 * width / (len(values) + 1)))
            color = QColor(pen.color())
            color.setAlpha(int(alpha))
            color = self._opaque(color)
            stop = top + tick_length
            height = max(1.0, abs(stop - line_top))
            y = min(line_top, stop)
            label_y = round(text_top + tick_length)
            show = not level and text_top + tick_length + label_h <= bounds.bottom()
            for v in values:
                x = (v - x0) * scale + left
                ops.append((_FILL, QRectF(x - w / 2, y, w, height), color))
                if not show:
                    continue
                static, half = shown[(v, step)] = self._label(v, step, font, measurer)
                if left <= x - half and x + half <= right:
                    labels.append((_TEXT, QPointF(round(x - static.size().width() / 2),
                                                  label_y), static))
        self._labels = shown
        ops.append((_PEN, self.textPen()))
        ops.append((_CLIP, self.boundingRect().toAlignedRect()))
        return ops + labels

    def _label_room(self, fmt: str, measurer: _Measurer) -> float:
        """For a format, the room its labels need with a gap either side; for "", the
        height kept for labels (both from the font alone)."""
        room = self._room.get(fmt)
        if room is None:
            center = Qt.AlignmentFlag.AlignCenter
            if fmt:
                sample = SAMPLE_LABELS.get(fmt, "00:00:00")
                room = measurer.boundingRect(QRectF(0, 0, 200, 100), center,
                                             sample).width() * 1.6 + 8
            else:
                room = measurer.boundingRect(QRectF(0, 0, 100, 100), center,
                                             SAMPLE_LABELS["%H:%M:%S"]).height() * 0.8
            self._room[fmt] = room
        return room

    def _label(self, value: float, step: float, font: QFont, measurer: _Measurer
               ) -> tuple[QStaticText, float]:
        """The label of the tick at ``value`` on a level of ``step`` seconds, and half
        its measured width."""
        found = self._labels.get((value, step))
        if found is None:
            text = tick_label(value, step)
            static = QStaticText(text)
            static.setTextFormat(Qt.TextFormat.PlainText)
            static.prepare(font=font)
            found = (static, measurer.width_of(text) / 2)
        return found


def _over(color: QColor, background: QColor) -> QColor:
    """``color`` (translucent) composited over an opaque ``background``."""
    a = color.alphaF()
    return QColor.fromRgbF(color.redF() * a + background.redF() * (1 - a),
                           color.greenF() * a + background.greenF() * (1 - a),
                           color.blueF() * a + background.blueF() * (1 - a))


def fast_axes() -> dict[str, pg.AxisItem]:
    """The ``axisItems`` for a time plot: clock times below, values on the left."""
    return {"bottom": FastDateAxis("bottom"), "left": FastAxis("left")}
