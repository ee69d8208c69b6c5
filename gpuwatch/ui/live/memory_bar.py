"""A horizontal memory bar: one segment per process, then other, reserved and free.

When a process is linked to a budget, a second, thinner row under the measured bar
shows the predicted categories starting where that process's segment starts, with the
unexplained remainder (measured − predicted) as its own hatched segment. For a process
that runs the probe, the row shows the probe's categories instead (they add up to what
PyTorch has allocated), and its measured segment is drawn in three labelled parts:
allocated, cached but free, and outside PyTorch.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QPainter,
    QPainterPath,
    QPen,
)
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from gpuwatch.core.units import UnitSystem, format_bytes
from gpuwatch.ui.live.overlay import CATEGORY_LABELS, Overlay, budget_color
from gpuwatch.ui.widgets import theme


class Segment(NamedTuple):
    """A part of the bar. A tuple, not a dataclass: a card makes one per process per
    sample, and the tooltip's figure is formatted only when someone reads it."""

    bytes: float
    color: QColor
    what: str                # the tooltip, or its head when ``units`` is given
    pattern: Qt.BrushStyle = Qt.BrushStyle.SolidPattern
    label: str = ""          # drawn inside the segment where it fits
    hatch: QColor | None = None   # the pattern's colour (default: the fill, darker)
    units: UnitSystem | None = None   # given: the tooltip ends with ": <bytes in units>"

    @property
    def tooltip(self) -> str:
        if self.units is None:
            return self.what
        return f"{self.what}: {format_bytes(self.bytes, self.units)}"


class MemoryBar(QWidget):
    BAR_HEIGHT = 16
    PRED_HEIGHT = 10
    GAP = 3

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._total = 0.0
        self._segments: list[Segment] = []
        self._prediction: list[Segment] = []
        self._prediction_start = 0.0
        self._greyed = False
        self._frame: tuple[tuple, QImage] | None = None   # (size and colours, the frame)
        self._line: np.ndarray | None = None
        self._edges: np.ndarray | None = None  # the column each segment ends before
        self._background: QColor | None = None
        self._laid_out: tuple | None = None   # (width, measured row, predicted row)
        self._label_font: QFont | None = None
        self._label_metrics: QFontMetricsF | None = None
        self._ticks: tuple[tuple[float, QColor, str], ...] = ()
        self._drawn: tuple | None = None      # what was last asked to be painted
        # (width, data generation, colours, (segment ends, colours, free colour))
        self._columns_of: tuple | None = None
        self._generation = 0                   # counts the data set
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.BAR_HEIGHT)

    def sizeHint(self) -> QSize:
        return QSize(300, self.height())

    def set_background(self, color: QColor | None) -> None:
        """The colour around the bar's rounded ends (the card's). Given, the bar paints
        its whole rectangle, so a new sample repaints the bar and not the card under it."""
        if color != self._background:
            self._background = None if color is None else QColor(color)
            self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, color is not None)
            self.update()

    def set_data(self, total: float, segments: list[Segment], greyed: bool = False) -> None:
        """Show ``segments`` of ``total`` bytes. Repainted only when a pixel would change:
        a few MiB more or less for a process rarely moves a column of a 300-pixel bar,
        so most samples only swap the segments the tooltips read."""
        if (total, segments, greyed) == (self._total, self._segments, self._greyed):
            return
        before = self._drawn
        self._total, self._segments, self._greyed = total, segments, greyed
        self._generation += 1
        self._laid_out = None
        self._drawn = self._drawn_key(theme.colors())
        if self._drawn is None or self._drawn != before:
            self.update()

    def _drawn_key(self, c: theme.Colors) -> tuple | None:
        """What the measured row's pixels depend on: the runs of columns of one colour,
        and the columns and looks of the hatched or labelled segments (None: not worked
        out). Plain Python: a dozen segments cost less than numpy's calls."""
        return self._spans(c)[3]

    def set_ticks(self, ticks: tuple[tuple[float, str, str], ...]) -> None:
        """Marks across the measured row at fractions of the capacity: (fraction, colour,
        what it means), e.g. the warning and critical thresholds at 85 and 95 %."""
        made = tuple((min(1.0, max(0.0, f)), QColor(color), what) for f, color, what in ticks)
        if [(f, c.rgba(), w) for f, c, w in made] != \
                [(f, c.rgba(), w) for f, c, w in self._ticks]:
            self._ticks = made
            self.update()

    def tick_positions(self) -> list[float]:
        """The x of each tick's centre, px (for tests)."""
        return [self._tick_x(f) for f, _, _ in self._ticks]

    def _tick_x(self, fraction: float) -> float:
        return min(max(fraction * self.width(), 2.0), self.width() - 2.0)

    def set_overlay(self, start_bytes: float, overlay: Overlay | None, units: str) -> None:
        pred: list[Segment] = []
        if overlay is not None:
            prefix = "Probe · " if overlay.from_probe else "Predicted "
            for key, size in overlay.prediction.categories:
                color = QColor(budget_color(key))     # the budget's own muted palette
                pred.append(Segment(size, color, f"{prefix}{CATEGORY_LABELS.get(key, key)}: "
                                    f"{_fmt(size, units)}"))
            if overlay.unexplained_bytes and not overlay.from_probe:
                pred.append(Segment(overlay.unexplained_bytes, QColor(theme.UNEXPLAINED_COLOR),
                                    "Unexplained (measured − predicted): "
                                    f"{_fmt(overlay.unexplained_bytes, units)} — CUDA context, "
                                    "allocator cache, fragmentation",
                                    Qt.BrushStyle.BDiagPattern))
        height = self.BAR_HEIGHT + (self.GAP + self.PRED_HEIGHT if pred else 0)
        if height != self.height():
            self.setFixedHeight(height)
        if pred != self._prediction or start_bytes != self._prediction_start:
            self._prediction, self._prediction_start = pred, start_bytes
            self._laid_out = None
            self.update()

    # painting -----------------------------------------------------------------------
    def _rects(self) -> list[tuple[QRectF, Segment]]:
        measured, predicted = self._rows()
        return measured + predicted

    def _rows(self) -> tuple[list[tuple[QRectF, Segment]], list[tuple[QRectF, Segment]]]:
        """(measured row, predicted row) as (rect, segment), kept until the data or the
        width change (a paint and every hover of the mouse read them)."""
        w = self.width()
        if self._laid_out is not None and self._laid_out[0] == w:
            return self._laid_out[1], self._laid_out[2]
        measured: list[tuple[QRectF, Segment]] = []
        predicted: list[tuple[QRectF, Segment]] = []
        if self._total > 0:
            scale = w / self._total
            x, h = 0.0, float(self.BAR_HEIGHT)
            for seg in self._segments:
                width = max(0.0, seg.bytes * scale)
                measured.append((QRectF(x, 0.0, width, h), seg))
                x += width
            x = self._prediction_start * scale
            y = self.BAR_HEIGHT + self.GAP
            for seg in self._prediction:
                width = min(max(0.0, seg.bytes * scale), max(0.0, w - x))
                predicted.append((QRectF(x, y, width, self.PRED_HEIGHT), seg))
                x += width
        self._laid_out = (w, measured, predicted)
        return measured, predicted

    def _spans(self, c: theme.Colors) -> list:
        """(the column each segment ends before, the runs of columns of one colour as
        (colour, end), the pixel row or None until painted, the drawn key). Each pixel
        column takes the colour of the segment under its centre (as a fill of the
        segment's rectangle would): segment i covers the columns from where segment
        i − 1 ends to ``ceil(edge_i − 0.5)``, its right edge in pixels. Kept until the
        data, the width or the theme change."""
        w = max(1, self.width())
        kept = self._columns_of
        if kept is not None and kept[0] == w and kept[1] == self._generation and kept[2] is c:
            return kept[3]
        segments = self._segments
        cols: list[int] = []
        runs: list[list[int]] = []
        start = 0
        if self._total > 0 and segments:
            scale = w / self._total
            edge = 0.0
            lost = QColor(c.lost).rgba() if self._greyed else 0
            for seg in segments:
                size = float(seg.bytes)
                edge += size if size > 0.0 else 0.0
                col = math.ceil(edge * scale - 0.5)
                end = 0 if col < 0 else w if col > w else col
                cols.append(end)
                if end > start:
                    color = lost if self._greyed else seg.color.rgba()
                    if runs and runs[-1][0] == color:
                        runs[-1][1] = end
                    else:
                        runs.append([color, end])
                    start = end
        if start < w:
            runs.append([QColor(c.free).rgba(), w])
        solid = Qt.BrushStyle.SolidPattern
        marked = tuple((i, seg.pattern, seg.label, seg.color.rgba(),
                        None if seg.hatch is None else seg.hatch.rgba())
                       for i, seg in enumerate(segments)
                       if seg.pattern is not solid or seg.label)
        spans = tuple((cols[i - 1] if i else 0, cols[i]) for i, *_ in marked) if cols else ()
        made: list = [tuple(cols), runs, None,
                      (self.width(), tuple(map(tuple, runs)), marked, spans)]
        self._columns_of = (w, self._generation, c, made)
        return made

    def _columns(self, c: theme.Colors) -> tuple[np.ndarray, np.ndarray | None]:
        """The measured row one pixel high, and the column each segment ends before."""
        made = self._spans(c)
        if made[2] is None:
            line = np.empty(max(1, self.width()), dtype=np.uint32)
            start = 0
            for color, end in made[1]:
                line[start:end] = color
                start = end
            made[2] = (line, np.array(made[0], dtype=np.int64) if made[0] else None)
        return made[2]

    def _pixel_row(self, c: theme.Colors) -> QImage:
        line, cols = self._columns(c)
        self._edges = cols
        self._line = line           # the image below reads this buffer: keep it alive
        self._drawn = self._drawn_key(c)
        return QImage(line.data, len(line), 1, QImage.Format.Format_ARGB32)

    def paintEvent(self, event: object) -> None:
        c = theme.colors()
        w = self.width()
        full = QRectF(0, 0, w, self.BAR_HEIGHT)
        background = self._background or self.palette().color(self.backgroundRole())
        p = QPainter(self)
        if self.height() > self.BAR_HEIGHT:       # the predicted row's strip
            p.fillRect(QRectF(0, self.BAR_HEIGHT, w, self.height() - self.BAR_HEIGHT),
                       background)
        # The measured row: one pixel high, stretched over the bar, then the hatches and
        # labels, then the rounded frame on top (the corners in the card's colour and the
        # border, drawn once per size): blits where an anti-aliased fill of the rounded
        # shape and a stroke of its border were most of the bar's cost.
        p.drawImage(full, self._pixel_row(c))
        solid = Qt.BrushStyle.SolidPattern
        labelled = []
        for rect, seg in self._marked(solid):
            if seg.pattern != solid:
                color = QColor(c.lost) if self._greyed else seg.color
                hatch = seg.hatch if seg.hatch is not None and not self._greyed \
                    else color.darker(130)
                p.fillRect(rect, QBrush(hatch, seg.pattern))
            if seg.label:
                labelled.append((rect, seg))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(Qt.PenStyle.NoPen)
        if labelled and not self._greyed:
            p.setFont(self.font())
            self._draw_labels(p, labelled)
        p.drawImage(0, 0, self._frame_image(w, background, QColor(c.card_border)))
        for fraction, color, _ in self._ticks:     # a line on a halo of the card's colour
            x = self._tick_x(fraction)
            p.fillRect(QRectF(x - 2, 0, 4, self.BAR_HEIGHT), background)
            p.fillRect(QRectF(x - 1, 0, 2, self.BAR_HEIGHT), color)
        for rect, seg in self._rows()[1] if self._prediction else []:
            path = QPainterPath()
            path.addRoundedRect(rect, 2, 2)
            p.fillPath(path, seg.color)
            if seg.pattern != Qt.BrushStyle.SolidPattern:
                p.fillPath(path, QBrush(QColor(c.card), seg.pattern))
        p.end()

    def _frame_image(self, width: int, background: QColor, border: QColor) -> QImage:
        """The bar's rounded frame: ``background`` outside the rounded shape, clear inside,
        and the border; made again only when the width or a colour changes."""
        key = (width, background.rgba(), border.rgba())
        if self._frame is None or self._frame[0] != key:
            full = QRectF(0, 0, width, self.BAR_HEIGHT)
            image = QImage(max(1, width), self.BAR_HEIGHT,
                           QImage.Format.Format_ARGB32_Premultiplied)
            image.fill(background)
            q = QPainter(image)
            q.setRenderHint(QPainter.RenderHint.Antialiasing)
            q.setCompositionMode(QPainter.CompositionMode.CompositionMode_Clear)
            q.setPen(Qt.PenStyle.NoPen)
            q.setBrush(QColor(0, 0, 0))
            q.drawRoundedRect(full, 4, 4)
            q.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceOver)
            q.setBrush(Qt.BrushStyle.NoBrush)
            q.setPen(QPen(border, 1))
            q.drawRoundedRect(full.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
            q.end()
            self._frame = (key, image)
        return self._frame[1]

    def _marked(self, solid: Qt.BrushStyle) -> list[tuple[QRectF, Segment]]:
        """The hatched or labelled segments of the measured row with their rectangles, on
        the pixel row's columns: the others (a process each) need none."""
        if self._edges is None:
            return []
        made = self._spans(theme.colors())
        cols, marked = made[0], made[3][2]
        out = []
        for i, *_ in marked:
            left = float(cols[i - 1]) if i else 0.0
            out.append((QRectF(left, 0.0, float(cols[i]) - left, self.BAR_HEIGHT),
                        self._segments[i]))
        return out

    def _draw_labels(self, p: QPainter, labelled: list[tuple[QRectF, Segment]]) -> None:
        """Each label inside its segment, on a pill of the segment's colour, where it fits;
        the parts between labelled segments are marked by a thin line."""
        if self._label_font is None or self._label_metrics is None:
            self._label_font = QFont(self.font())
            self._label_font.setPixelSize(self.BAR_HEIGHT - 5)
            self._label_metrics = QFontMetricsF(self._label_font)
        p.setFont(self._label_font)
        fm = self._label_metrics
        edge = QColor(theme.colors().card)
        for i, (rect, seg) in enumerate(labelled):
            if i:
                p.fillRect(QRectF(rect.left() - 0.5, 0, 1.0, self.BAR_HEIGHT), edge)
            text = seg.label
            width = fm.horizontalAdvance(text) + 8
            if width > rect.width():
                text = " ".join(text.split()[-2:])   # the figure alone
                width = fm.horizontalAdvance(text) + 8
                if width > rect.width():
                    continue
            pill = QRectF(rect.left() + 2, 1.5, width, self.BAR_HEIGHT - 3)
            path = QPainterPath()
            path.addRoundedRect(pill, 3, 3)
            p.fillPath(path, seg.color)
            p.setPen(QColor("#ffffff" if seg.color.lightnessF() < 0.6 else "#1d2330"))
            p.drawText(pill, Qt.AlignmentFlag.AlignCenter, text)
            p.setPen(Qt.PenStyle.NoPen)

    def mouseMoveEvent(self, event: object) -> None:
        pos = event.position()  # type: ignore[attr-defined]
        for fraction, _, what in self._ticks:
            if abs(pos.x() - self._tick_x(fraction)) <= 3 and pos.y() <= self.BAR_HEIGHT:
                QToolTip.showText(event.globalPosition().toPoint(),  # type: ignore[attr-defined]
                                  what, self)
                return
        for rect, seg in self._rects():
            if rect.contains(pos):
                QToolTip.showText(event.globalPosition().toPoint(),  # type: ignore[attr-defined]
                                  seg.tooltip, self)
                return
        QToolTip.hideText()

    def measured_segments(self) -> list[Segment]:
        """The measured row's segments, in drawing order; for tests."""
        return list(self._segments)

    def segment_tooltips(self) -> list[str]:
        """The tooltips in drawing order (measured row, then predicted row); for tests."""
        return [s.tooltip for s in self._segments + self._prediction]


def _fmt(n: float, units: str) -> str:
    unit_system: UnitSystem = "si" if units == "si" else "iec"
    return format_bytes(n, unit_system)
