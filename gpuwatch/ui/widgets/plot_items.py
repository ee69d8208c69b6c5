"""What the time plots draw besides curves: per-GPU pens, lost-GPU spans, the line near the
mouse.

Eight 1-px lines in eight colours are hard to tell apart (and under colour blindness
some pairs look alike), so each GPU's line also has its own dash pattern, the same in
the plots and in the legend. A highlighted line (hovered, or the one GPU in focus) is
drawn wider and on top.

:class:`SpanItem` shades spans of time from the top of the view to its bottom, with a
short label, for the minutes a GPU was lost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen

from gpuwatch.ui.widgets import theme

# Dash patterns per GPU, in pen widths (dash, gap, dash, gap, ...); None: a solid line.
# Each differs from the others in its first dash or in its rhythm, so two lines stay
# apart where their colours look alike.
DASHES: tuple[tuple[float, ...] | None, ...] = (
    None,
    (6.0, 3.0),
    (1.5, 2.5),
    (9.0, 3.0, 1.5, 3.0),
    (3.0, 3.0),
    (12.0, 4.0),
    (6.0, 2.5, 1.5, 2.5, 1.5, 2.5),
    (2.5, 5.0),
)
LINE_WIDTH = 1.0
HIGHLIGHT_WIDTH = 2.5


def dash_of(index: int) -> tuple[float, ...] | None:
    return DASHES[index % len(DASHES)]


def gpu_pen(index: int, width: float = LINE_WIDTH, color: QColor | None = None) -> QPen:
    """GPU ``index``'s line: its colour and its dash pattern (a cosmetic pen)."""
    pen = pg.mkPen(color if color is not None else theme.gpu_color(index), width=width)
    dash = dash_of(index)
    if dash is not None:
        # Qt scales a pattern by the pen's width: keep the dashes as long on a wide line
        pen.setDashPattern([d / max(1.0, width) for d in dash])
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    return pen


def finite_runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index ranges where ``mask`` is True."""
    if not len(mask):
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return [(int(a), int(b)) for a, b in zip(edges[0::2], edges[1::2], strict=True)]


class SpanItem(pg.GraphicsObject):
    """Spans of time shaded over the whole height of the view, each with a label at its
    top (drawn where it fits). Added with ``ignoreBounds``: it never sizes the view."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[float, float, str]] = []
        self._font = QFont()
        self._font.setPointSizeF(max(6.0, self._font.pointSizeF() * 0.85))
        self.setZValue(-50)

    def set_spans(self, spans: list[tuple[float, float, str]]) -> None:
        if spans != self.spans:
            self.prepareGeometryChange()
            self.spans = spans
            self.update()

    def viewRangeChanged(self) -> None:
        if self.spans:
            self.prepareGeometryChange()

    def boundingRect(self) -> QRectF:
        if not self.spans:
            return QRectF()
        vb = self.getViewBox()
        view = vb.viewRect() if vb is not None else QRectF(0, 0, 1, 1)
        x0 = min(s[0] for s in self.spans)
        x1 = max(s[1] for s in self.spans)
        return QRectF(x0, view.top(), x1 - x0, view.height())

    def paint(self, p: QPainter, *_: Any) -> None:
        if not self.spans:
            return
        c = theme.colors()
        fill = QColor(c.lost)
        fill.setAlpha(90 if c.dark else 110)
        vb = self.getViewBox()
        if vb is None:
            return
        view = vb.viewRect()
        rects = [(QRectF(x0, view.top(), x1 - x0, view.height()), text)
                 for x0, x1, text in self.spans]
        for rect, _ in rects:
            p.fillRect(rect, fill)
        # the labels in device pixels, so they are not stretched with the data
        to_device = p.transform()
        p.save()
        p.resetTransform()
        p.setFont(self._font)
        p.setPen(QColor(c.text))
        metrics = QFontMetricsF(self._font)
        for rect, text in rects:
            box = to_device.mapRect(rect).normalized()
            room = box.adjusted(3, 2, -3, -2)
            if text and metrics.horizontalAdvance(text) <= room.width() \
                    and metrics.height() <= room.height():
                p.drawText(room, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop),
                           text)
        p.restore()


def lost_spans(t: np.ndarray, total: np.ndarray, bandwidth: np.ndarray,
               used: np.ndarray) -> list[tuple[float, float]]:
    """(start, end) times of the runs of samples where a GPU answered nothing: no memory
    total, no usage and no bandwidth (a GPU lost from the bus; a read error still has some
    of them). A span ends at the next sample's time (or at its own, for the newest)."""
    if not len(t):
        return []
    lost = np.isnan(total)
    if not lost.any():
        return []
    lost &= np.isnan(used) & np.isnan(bandwidth)
    out = []
    for a, b in finite_runs(lost):
        end = t[b] if b < len(t) else t[b - 1]
        out.append((float(t[a]), float(end)))
    return out


def nearest_line(vb: pg.ViewBox, curves: dict[int, pg.PlotCurveItem], at: QPointF,
                 within_px: float) -> int | None:
    """The GPU whose shown line passes within ``within_px`` of ``at`` (view
    coordinates), the nearest if several."""
    (_, _), (y0, y1) = vb.viewRange()
    px_per_unit = vb.height() / max(1e-12, y1 - y0)
    best, best_px = None, float(within_px)
    for index, curve in curves.items():
        x, y = curve.xData, curve.yData
        if not curve.isVisible() or x is None or len(x) == 0:
            continue
        i = int(np.searchsorted(x, at.x()))
        near = y[max(0, i - 2):i + 2]
        near = near[np.isfinite(near)]
        if not len(near):
            continue
        low, high = float(near.min()), float(near.max())
        gap = 0.0 if low <= at.y() <= high else min(abs(low - at.y()), abs(high - at.y()))
        if gap * px_per_unit < best_px:
            best, best_px = index, gap * px_per_unit
    return best
