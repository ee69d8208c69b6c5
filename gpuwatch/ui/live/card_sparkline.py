"""A card's sparkline: its GPU's memory used over the last minutes, from the window's history.

One pixel column per time bucket (the buckets are aligned to multiples of their width,
so columns do not jitter as time moves), each the peak of the used fraction in its
bucket: at most a few hundred points, whatever the sampling rate. The bucketed curve is
compared with the one drawn; the sparkline repaints only when a pixel would change.
The line is in the GPU's colour in the time plots, with the card's thresholds as faint
guides, so a glance at eight cards shows which GPU climbs.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuwatch.core.history import Ring
from gpuwatch.core.units import format_duration
from gpuwatch.ui.widgets import theme

SPAN_S = 600.0      # the time a sparkline covers
MAX_WIDTH = 280     # px: a glance, not a plot (the time plots are below)
NO_ROW, UNKNOWN = -1, -2   # a column without a sample (the line spans it), or read as unknown
_NAMES = ("timestamp_s", "used_bytes")


class Sparkline(QWidget):
    HEIGHT = 18

    def __init__(self, gpu_index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.gpu_index = gpu_index
        self.span_s = SPAN_S
        self._ys: np.ndarray | None = None     # the y pixel of each column (-1: no data)
        self._key: tuple | None = None
        self._polylines: list[QPolygonF] = []
        self._guides: tuple[float, ...] = ()
        self._pens: tuple | None = None         # (theme, line pen, guide pen, background)
        self._faded = False
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.HEIGHT)
        self.setMaximumWidth(MAX_WIDTH)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setToolTip(f"Memory used on GPU {gpu_index}, the last "
                        f"{format_duration(self.span_s)} (the peak of each pixel's time)")

    def sizeHint(self) -> QSize:
        return QSize(80, self.HEIGHT)

    def minimumSizeHint(self) -> QSize:
        return QSize(24, self.HEIGHT)

    def set_guides(self, fractions: tuple[float, ...]) -> None:
        if fractions != self._guides:
            self._guides = fractions
            self._key = None
            self.update()

    def set_faded(self, faded: bool) -> None:
        if faded != self._faded:
            self._faded = faded
            self.update()

    def update_from(self, ring: Ring | None, now_s: float) -> None:
        """Take the newest ``span_s`` of ``ring`` up to ``now_s``; repaints only when a
        column's pixel changed (or the width did)."""
        w = max(0, self.width() - 2)
        h = self.HEIGHT - 3
        if ring is None or w < 4 or not len(ring):
            ys = np.empty(0, dtype=np.int16)
        else:
            dt = self.span_s / w
            last = math.floor(now_s / dt)
            first = last - w + 1
            rows = ring.since(first * dt, _NAMES)
            total = ring.last("total_bytes")
            t, used = rows["timestamp_s"], rows["used_bytes"]
            ys = np.full(w, NO_ROW, dtype=np.int16)
            if total and t.size:
                cols = np.clip((t // dt).astype(np.int64) - first, 0, w - 1)
                starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
                peaks = np.fmax.reduceat(used, starts) / total
                known = ~np.isnan(peaks)
                ys[cols[starts][~known]] = UNKNOWN
                ys[cols[starts][known]] = np.round(
                    (1.0 - np.clip(peaks[known], 0.0, 1.0)) * h).astype(np.int16) + 1
        key = (ys.tobytes(), self.width())
        if key != self._key:
            self._key = key
            self._ys = ys
            self._polylines = _polylines(ys)
            self.update()

    def columns(self) -> np.ndarray:
        """The y pixel of each column; NO_ROW or UNKNOWN where there is none (for tests)."""
        return np.empty(0, dtype=np.int16) if self._ys is None else self._ys.copy()

    def _pens_for(self, c: theme.Colors) -> tuple:
        if self._pens is None or self._pens[0] != (c, self._faded):
            line = QColor(c.muted) if self._faded else theme.gpu_color(self.gpu_index)
            guide = QColor(c.card_border)
            self._pens = ((c, self._faded), QPen(line, 1.5), QPen(guide, 1),
                          QColor(c.lost_card if self._faded else c.card))
        return self._pens

    def paintEvent(self, event: object) -> None:
        c = theme.colors()
        _, line, guide, background = self._pens_for(c)
        p = QPainter(self)
        p.fillRect(self.rect(), background)
        h = self.HEIGHT - 3
        p.setPen(guide)
        for f in self._guides:
            y = round((1.0 - f) * h) + 1.5
            p.drawLine(QPointF(1, y), QPointF(self.width() - 1, y))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(line)
        for poly in self._polylines:
            if poly.size() == 1:
                p.drawPoint(poly.at(0))
            else:
                p.drawPolyline(poly)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.setPen(guide)
        p.drawRect(QRectF(0.5, 0.5, self.width() - 1, self.HEIGHT - 1))
        p.end()


def _polylines(ys: np.ndarray) -> list[QPolygonF]:
    """The runs of known columns as polylines: a column without a sample is spanned (the
    sampling interval is longer than a column), one read as unknown (a lost GPU) breaks
    the line."""
    out: list[QPolygonF] = []
    current: QPolygonF | None = None
    for x, y in enumerate(ys.tolist()):
        if y == NO_ROW:
            continue
        if y == UNKNOWN:
            current = None
            continue
        if current is None:
            current = QPolygonF()
            out.append(current)
        current.append(QPointF(x + 1.5, y + 0.5))
    return out
