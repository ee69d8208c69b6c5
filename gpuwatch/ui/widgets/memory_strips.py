"""Memory used per GPU as small multiples: one compact row per GPU, in place of the
memory plot when its lines would merge.

Eight ranks of a data-parallel job sit at the same level, so eight lines on one memory
axis are a single band in which the GPU about to run out is one dash among seven. Here
each GPU gets a row of its own, filled up to its share of its *own* capacity (the peak
of each pixel column, so a one-second spike stays), in its line colour below the
warning threshold, amber from it and red from the critical one: a climbing rank reads
as the one row that is full and red. The endangered GPU's row is outlined in the
critical (or warning) colour with its label in bold; rows keep GPU order so a GPU does not move.
Columns share the time axis of the bandwidth plot below (the window hands over the
view's time range and pixel span), and a row is a numpy-made image blitted once.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from gpuwatch.core.history import History, Ring
from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.widgets import theme
from gpuwatch.ui.widgets.plot_parts import ring_slice

TITLE = "Memory used per GPU · share of its capacity"
ROW_GAP = 3          # px between rows (1 where rows are short)
MIN_ROW = 10         # px: below this the rows would be lines again
FILL_SHARE = 0.45    # the fill's share of its colour over the plot background


def column_peaks(t: np.ndarray, share: np.ndarray, x0: float, x1: float,
                 columns: int) -> np.ndarray:
    """The largest ``share`` in each of ``columns`` equal time slices of [x0, x1) (``t``
    ascending, as a ring holds it), NaN where a slice has no known sample; a slice with
    no sample between two known ones (a window of more columns than samples) takes the
    value before it, as a step line would."""
    out = np.full(columns, np.nan)
    if columns <= 0 or not len(t) or x1 <= x0:
        return out
    col = np.floor((t - x0) * (columns / (x1 - x0))).astype(np.int64)
    inside = (col >= 0) & (col < columns)
    if not inside.any():
        return out
    cols, shares = col[inside], share[inside]      # in time order: columns ascend
    starts = np.flatnonzero(np.concatenate(([True], cols[1:] != cols[:-1])))
    out[cols[starts]] = np.fmax.reduceat(shares, starts)    # NaN only where all are
    # Step across empty columns from the last sample before them (known or not: after a
    # sample read as unknown the row stays empty), and from a sample just before x0.
    seen = np.zeros(columns, dtype=bool)
    seen[cols] = True
    idx = np.where(seen, np.arange(columns), -1)
    np.maximum.accumulate(idx, out=idx)
    before = share[col < 0]
    first = before[-1] if len(before) else np.nan
    filled = np.where(idx >= 0, out[np.maximum(idx, 0)], first)
    filled[int(np.flatnonzero(seen)[-1]) + 1:] = np.nan   # nothing after the newest sample
    return filled


def _argb(color: QColor) -> int:
    return color.rgba() & 0xFFFFFFFF


def _blend(a: QColor, b: QColor, share: float) -> QColor:
    return QColor.fromRgbF(a.redF() * share + b.redF() * (1 - share),
                           a.greenF() * share + b.greenF() * (1 - share),
                           a.blueF() * share + b.blueF() * (1 - share))


class MemoryStrips(QWidget):
    """One row per GPU: memory used as a share of its capacity over the plots' window."""

    hovered = Signal(int)     # the GPU under the mouse, -1 for none
    clicked = Signal(int)     # a row clicked: that GPU alone

    def __init__(self, history: History, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.history = history
        self.indices: tuple[int, ...] = ()
        self.alert: int | None = None
        self.alert_critical = True
        self.highlight: int | None = None
        self.thresholds = (85.0, 95.0)      # warning and critical, % used
        self.units: UnitSystem = "iec"
        self.x_range = (0.0, 1.0)
        self.span = (48, 8)                 # px left of the columns, px right of them
        self._images: dict[int, tuple[tuple, QImage, np.ndarray]] = {}
        self._latest: dict[int, float] = {}  # each GPU's newest share, for its label
        self.images_made = 0                 # a running count, for tests and benchmarks
        self.setMouseTracking(True)
        self.setMinimumHeight(96)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setAccessibleName("Memory used per GPU")
        self.setAccessibleDescription("One row per GPU: memory used as a share of its "
                                      "capacity against the time of day; click a row for "
                                      "that GPU alone")

    def sizeHint(self) -> QSize:
        return QSize(400, 200)

    # what to show ------------------------------------------------------------------
    def set_view(self, indices: tuple[int, ...], x0: float, x1: float,
                 left_px: int, right_px: int) -> None:
        """Show GPUs ``indices`` over [x0, x1], whose columns span the widget from
        ``left_px`` to ``right_px`` from its right edge (the bandwidth plot's view)."""
        if len(indices) != len(self.indices):
            self.setMinimumHeight(self.min_height(len(indices)))
        self.indices = indices
        self.x_range = (x0, x1)
        self.span = (left_px, right_px)
        self.update()

    def set_alert(self, index: int | None, critical: bool = True) -> None:
        """Outline GPU ``index``'s row (None: none) in the critical or warning colour."""
        if (index, critical) != (self.alert, self.alert_critical):
            self.alert, self.alert_critical = index, critical
            self.update()

    def set_highlight(self, index: int | None) -> None:
        if index != self.highlight:
            self.highlight = index
            self.update()

    def set_thresholds(self, warning: float, critical: float) -> None:
        if (warning, critical) != self.thresholds:
            self.thresholds = (warning, critical)
            self._images.clear()
            self.update()

    def restyle(self) -> None:
        self._images.clear()
        self.update()

    # geometry ----------------------------------------------------------------------
    def _title_height(self) -> int:
        return QFontMetrics(self.font()).height() + 4

    def min_height(self, rows: int) -> int:
        """Room for the title and ``rows`` rows of MIN_ROW (short rows: 1 px apart)."""
        return self._title_height() + rows * MIN_ROW + max(0, rows - 1)

    def _gap(self, rows: int) -> int:
        room = self.height() - self._title_height()
        return ROW_GAP if room >= rows * (MIN_ROW + 4) + (rows - 1) * ROW_GAP else 1

    def row_rect(self, index: int) -> QRect:
        """Where GPU ``index``'s columns are drawn (empty if it has no row)."""
        if index not in self.indices:
            return QRect()
        n = len(self.indices)
        top = self._title_height()
        left, right = self.span
        gap = self._gap(n)
        height = max(MIN_ROW, (self.height() - top - gap * (n - 1)) // n)
        y = top + self.indices.index(index) * (height + gap)
        return QRect(left, y, max(1, self.width() - left - right), height)

    def index_at(self, pos: QPoint) -> int | None:
        for index in self.indices:
            rect = self.row_rect(index)
            if rect.top() <= pos.y() <= rect.bottom() + self._gap(len(self.indices)):
                return index
        return None

    # drawing -----------------------------------------------------------------------
    def _row_image(self, index: int, ring: Ring, rect: QRect) -> QImage:
        """The row's pixels: made again only when its data, window or size changed."""
        x0, x1 = self.x_range
        w, h = rect.width(), rect.height()
        key = (id(ring), len(ring), ring.last("timestamp_s"), x0, x1, w, h)
        cached = self._images.get(index)
        if cached is not None and cached[0] == key:
            return cached[1]
        t, used = ring_slice(ring, "used_bytes", x0, x1, 1.0)
        _, total = ring_slice(ring, "total_bytes", x0, x1, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(total > 0, used / total, np.nan)
        peaks = column_peaks(t, share, x0, x1, w)
        last = share[np.isfinite(share)]
        if len(last):
            self._latest[index] = float(last[-1])
        else:
            self._latest.pop(index, None)
        c = theme.colors()
        bg = QColor(c.plot_bg)
        warn, crit = (x / 100 for x in self.thresholds)
        levels = np.where(np.nan_to_num(peaks) >= crit, 2,
                          np.where(np.nan_to_num(peaks) >= warn, 1, 0))
        lines = [theme.gpu_color(index), QColor(c.warning), QColor(c.critical)]
        edge = np.array([_argb(x) for x in lines], dtype=np.uint32)
        fill = np.array([_argb(_blend(x, bg, FILL_SHARE)) for x in lines], dtype=np.uint32)
        heights = np.where(np.isfinite(peaks), np.clip(np.ceil(np.nan_to_num(peaks) * h), 1, h),
                           0).astype(np.int32)
        rows = np.arange(h, dtype=np.int32)[:, None]
        top = (h - heights)[None, :]
        pixels = np.where(rows >= top, fill[levels][None, :], np.uint32(_argb(bg)))
        pixels = np.where((rows == top) | (rows == top + 1) & (heights[None, :] > 2),
                          edge[levels][None, :], pixels)
        pixels = np.where(heights[None, :] > 0, pixels, np.uint32(_argb(bg)))
        pixels = np.ascontiguousarray(pixels, dtype=np.uint32)
        image = QImage(pixels.data, w, h, 4 * w, QImage.Format.Format_RGB32)
        self._images[index] = (key, image, pixels)    # the array backs the image
        self.images_made += 1
        return image

    def paintEvent(self, event: object) -> None:
        c = theme.colors()
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(c.window))
        fm = QFontMetrics(self.font())
        p.setPen(QColor(c.plot_fg))
        bold = QFont(self.font())
        bold.setBold(True)
        title_rect = QRect(self.span[0], 0, self.width() - self.span[0], self._title_height())
        p.drawText(title_rect, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter,
                   fm.elidedText(TITLE, Qt.TextElideMode.ElideRight, title_rect.width()))
        for index in self.indices:
            ring = self.history.gpus.get(index)
            rect = self.row_rect(index)
            if ring is None or rect.bottom() > self.height():
                continue
            p.drawImage(rect.topLeft(), self._row_image(index, ring, rect))
            self._paint_label(p, index, rect, bold)
        p.end()

    def _paint_label(self, p: QPainter, index: int, rect: QRect, bold: QFont) -> None:
        c = theme.colors()
        alert, lit = index == self.alert, index == self.highlight
        share = self._latest.get(index)
        warn, crit = self.thresholds
        percent = None if share is None else share * 100
        color = QColor(c.plot_fg if percent is None or percent < warn else
                       c.warning if percent < crit else c.critical)
        p.setFont(bold if alert or lit else self.font())
        fm = p.fontMetrics()
        names = (f"GPU {index}", f"{index}")
        name = next((n for n in names if fm.horizontalAdvance(n) <= rect.left() - 6), names[1])
        danger = QColor(c.critical if self.alert_critical else c.warning)
        p.setPen(danger if alert else QColor(c.plot_fg))
        p.drawText(QRect(0, rect.top(), rect.left() - 4, rect.height()),
                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, name)
        if percent is not None and rect.height() >= fm.height() - 2:
            text = f"{percent:.0f} %"
            width = fm.horizontalAdvance(text) + 6
            box = QRect(rect.right() - width, rect.top() + max(0, (rect.height()
                        - fm.height()) // 2), width, min(rect.height(), fm.height()))
            p.fillRect(box, QColor(c.plot_bg))
            p.setPen(color)
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        if alert or lit:
            pen = QPen(danger if alert else QColor(c.plot_fg), 2)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(rect.adjusted(-1, -1, 0, 0))
        else:
            p.setPen(QPen(QColor(c.card_border), 1))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRect(rect.adjusted(0, 0, -1, -1))

    # the mouse ---------------------------------------------------------------------
    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position().toPoint())
        self.hovered.emit(-1 if index is None else index)
        if index is not None:
            QToolTip.showText(event.globalPosition().toPoint(), self._tooltip(index), self)

    def leaveEvent(self, event: object) -> None:
        self.hovered.emit(-1)
        super().leaveEvent(event)  # type: ignore[arg-type]

    def mousePressEvent(self, event: QMouseEvent) -> None:
        index = self.index_at(event.position().toPoint())
        if index is not None and event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(index)

    def _tooltip(self, index: int) -> str:
        ring = self.history.gpus.get(index)
        used = ring.last("used_bytes") if ring is not None else None
        total = ring.last("total_bytes") if ring is not None else None
        if used is None or not total or not math.isfinite(used):
            return f"GPU {index}: memory used unknown; click for this GPU alone"
        return (f"GPU {index}: {format_bytes(used, self.units)} of "
                f"{format_bytes(total, self.units)} ({used / total * 100:.0f} %); "
                f"click for this GPU alone")
