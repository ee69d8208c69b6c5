"""A card's sparkline: its GPU's memory used over the last minutes, from the window's history.

One pixel column per time bucket (the buckets are aligned to multiples of their width,
so columns do not jitter as time moves), each the peak of the used fraction in its
bucket: at most a few hundred points, whatever the sampling rate. The buckets are kept
between samples and only the new rows are folded in (a binary search and a few
elements a sample); the picture is made with numpy, a pixel array blitted in one
``drawImage``, and only when a pixel would change. The line is in the GPU's colour in
the time plots, filled lightly beneath, with the card's thresholds as faint guides, so
a glance at eight cards shows which GPU climbs and how close it is to full.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuwatch.core.history import Ring
from gpuwatch.core.units import format_duration
from gpuwatch.ui.widgets import theme

SPAN_S = 600.0      # the time a sparkline covers
MAX_WIDTH = 280     # px: a glance, not a plot (the time plots are below)
# On a wide card (one or two GPUs on a wide window) a thin line would be a hair across
# empty space: from ROOMY_CARD px of card it is ROOMY_HEIGHT tall and up to ROOMY_WIDTH wide.
ROOMY_CARD = 900
ROOMY_HEIGHT = 40
ROOMY_WIDTH = 560
NO_ROW, UNKNOWN = -1, -2   # a column without a sample (the line spans it), or read as unknown
_NAMES = ("timestamp_s", "used_bytes")


class Sparkline(QWidget):
    HEIGHT = 18

    def __init__(self, gpu_index: int, parent: QWidget | None = None):
        super().__init__(parent)
        self.gpu_index = gpu_index
        self.span_s = SPAN_S
        self._ys = np.empty(0, dtype=np.int16)   # the y pixel of each column
        self._ys_key = b""
        # the buckets so far: (width, first bucket, peaks, seen, ring, rows, newest time)
        self._buckets: tuple | None = None
        self._guides: tuple[float, ...] = ()
        self._source: tuple[Ring | None, float] = (None, 0.0)
        self._base_pixels: tuple[tuple, tuple[np.ndarray, int, int]] | None = None
        self._faded = False
        self._total: float | None = None     # the capacity the columns were drawn for
        self._image: tuple[tuple, QImage, np.ndarray] | None = None   # (key, image, pixels)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.HEIGHT)
        self.setMaximumWidth(MAX_WIDTH)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)
        self.setToolTip(f"Memory used on GPU {gpu_index}, the last "
                        f"{format_duration(self.span_s)} (the peak of each pixel's time)")

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ParentChange and self.parentWidget() is not None:
            self.parentWidget().installEventFilter(self)     # the card's width sets our size
        return super().event(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and watched is self.parentWidget():
            self.fit_card(self.parentWidget().width())
        return False

    def fit_card(self, card_px: int) -> None:
        """Thin on a narrow card, ROOMY_HEIGHT tall and wider on a wide one."""
        roomy = card_px >= ROOMY_CARD
        height = ROOMY_HEIGHT if roomy else type(self).HEIGHT
        self.setMaximumWidth(ROOMY_WIDTH if roomy else MAX_WIDTH)
        if height != self.HEIGHT:
            self.HEIGHT = height
            self._total = None                 # every column again, at the new height
            self.setFixedHeight(height)
            self.updateGeometry()
            ring, now_s = self._source
            if ring is not None:
                self.update_from(ring, now_s)

    def sizeHint(self) -> QSize:
        return QSize(80, self.HEIGHT)

    def minimumSizeHint(self) -> QSize:
        return QSize(24, self.HEIGHT)

    def resizeEvent(self, event: object) -> None:
        """New columns for the new width, from the last data (not the next sample)."""
        ring, now_s = self._source
        if ring is not None:
            self.update_from(ring, now_s)

    def set_guides(self, fractions: tuple[float, ...]) -> None:
        if fractions != self._guides:
            self._guides = fractions
            self.update()

    def set_faded(self, faded: bool) -> None:
        if faded != self._faded:
            self._faded = faded
            self.update()

    # data -----------------------------------------------------------------------------
    def update_from(self, ring: Ring | None, now_s: float) -> None:
        """Take the newest ``span_s`` of ``ring`` up to ``now_s``; repaints only when a
        column's pixel changed (or the width did)."""
        self._source = (ring, now_s)
        w = max(0, self.width() - 2)
        total = None if ring is None else ring.last("total_bytes")
        if self._one_more_row(ring, w, now_s, total):
            return
        if ring is None or w < 4 or not len(ring) or not total:
            ys = np.empty(0, dtype=np.int16)
        else:
            peaks, seen = self._fold(ring, w, now_s)
            h = self.HEIGHT - 3
            ys = np.full(w, NO_ROW, dtype=np.int16)
            known = ~np.isnan(peaks)
            ys[seen & ~known] = UNKNOWN
            ys[known] = np.rint((1.0 - np.minimum(peaks[known] / total, 1.0)) * h) + 1
        key = ys.tobytes()
        self._total = total
        if key != self._ys_key or ys.size != self._ys.size:
            self._ys_key, self._ys = key, ys
            self.update()

    def _one_more_row(self, ring: Ring | None, w: int, now_s: float,
                      total: float | None) -> bool:
        """The common sample, folded in without a full fold: one new row, in the newest
        column, at the same capacity and width; the columns move left by the buckets the
        clock moved on since (an empty column each). False: the full fold is needed."""
        kept = self._buckets
        if kept is None or ring is None or kept[4] is not ring or kept[0] != w or \
                kept[6] is None or not total or total != self._total or self._ys.size != w:
            return False
        dt = self.span_s / w
        first = math.floor(now_s / dt) - w + 1
        shift = first - kept[1]
        newest = ring.column("timestamp_s", last=2).tolist()   # one row past the kept newest?
        if not 0 <= shift < w or len(newest) != 2 or newest[0] != kept[6] or \
                not newest[1] > kept[6] or math.floor(newest[1] / dt) - first != w - 1:
            return False
        t, used = newest[1], ring.last("used_bytes")
        peaks, seen, ys = kept[2], kept[3], self._ys       # peaks and seen: ours, in place
        if shift:
            peaks = np.concatenate((peaks[shift:], np.full(shift, np.nan)))
            seen = np.concatenate((seen[shift:], np.zeros(shift, dtype=bool)))
            ys = np.concatenate((ys[shift:], np.full(shift, NO_ROW, dtype=np.int16)))
        self._buckets = (w, first, peaks, seen, ring, len(ring), t)
        seen[-1] = True
        peak = float(peaks[-1])
        y = None
        if used is None or math.isnan(used):
            if math.isnan(peak):
                y = UNKNOWN
        elif used > peak or math.isnan(peak):
            peaks[-1] = used
            y = round((1.0 - min(used / total, 1.0)) * (self.HEIGHT - 3)) + 1
        if y is not None and y != ys[-1]:
            if not shift:
                ys = ys.copy()
            ys[-1] = y
        elif not shift:
            return True                        # no pixel moved
        self._ys_key, self._ys = ys.tobytes(), ys
        self.update()
        return True

    def _fold(self, ring: Ring, w: int, now_s: float) -> tuple[np.ndarray, np.ndarray]:
        """The peak of each column (NaN: none known) and whether it had a row, the new
        rows folded into the buckets kept from the last call."""
        dt = self.span_s / w
        first = math.floor(now_s / dt) - w + 1
        kept = self._buckets
        n, newest = len(ring), ring.last("timestamp_s")
        if kept is not None and kept[0] == w and kept[4] is ring and kept[5] <= n and \
                kept[6] is not None and newest is not None and newest >= kept[6] and \
                0 <= first - kept[1] < w:
            shift = first - kept[1]
            peaks, seen = kept[2], kept[3]       # ours: updated in place
            if shift:
                peaks = np.concatenate((peaks[shift:], np.full(shift, np.nan)))
                seen = np.concatenate((seen[shift:], np.zeros(shift, dtype=bool)))
            since = max(kept[6], first * dt)       # the newest kept row again: harmless
        else:
            peaks, seen = np.full(w, np.nan), np.zeros(w, dtype=bool)
            since = first * dt
        rows = ring.since(since, _NAMES)
        t = rows["timestamp_s"]
        if t.size:
            cols = (t // dt).astype(np.int64) - first
            inside = (cols >= 0) & (cols < w)
            cols, used = cols[inside], rows["used_bytes"][inside]
            np.fmax.at(peaks, cols, used)
            seen[cols] = True
        self._buckets = (w, first, peaks, seen, ring, n, newest)
        return peaks, seen

    def columns(self) -> np.ndarray:
        """The y pixel of each column; NO_ROW or UNKNOWN where there is none (for tests)."""
        return self._ys.copy()

    # painting -------------------------------------------------------------------------
    def _picture(self) -> QImage:
        """The sparkline as pixels: background, guides, a light fill under the line and
        the line, from the columns; made again only when they, the size or a colour
        change."""
        c = theme.colors()
        w, h = max(1, self.width()), self.HEIGHT
        key = (self._ys_key, w, h, c, self._faded, self._guides)
        if self._image is not None and self._image[0] == key:
            return self._image[1]
        base, line, fill = self._base(key[1:])
        pixels = base.copy()
        ys = self._ys[:max(0, w - 2)]      # resized since: the next sample fits it again
        if ys.size:
            drawn = _bridged(ys)                    # NO_ROW spanned, UNKNOWN a gap
            known = drawn >= 0
            prev = np.concatenate(([-1], drawn[:-1]))
            lo = np.where(known & (prev >= 0), np.minimum(prev, drawn), drawn)
            hi = np.where(known & (prev >= 0), np.maximum(prev, drawn), drawn)
            rows = np.arange(h)[:, None]
            under = known[None, :] & (rows > hi[None, :]) & (rows < h - 1)
            on = known[None, :] & (rows >= lo[None, :]) & (rows <= hi[None, :])
            target = pixels[:, 1:ys.size + 1]       # a view: drawn into in place
            target[under] = fill
            target[on] = line
        image = QImage(pixels.data, w, h, QImage.Format.Format_RGB32)   # opaque: a plain blit
        self._image = (key, image, pixels)          # the image reads the array: keep it
        return image

    def _base(self, key: tuple) -> tuple[np.ndarray, int, int]:
        """(background, guides and frame as pixels, line colour, fill colour), made once
        per size, theme and thresholds."""
        if self._base_pixels is not None and self._base_pixels[0] == key:
            return self._base_pixels[1]
        w, h, c, faded, guides = key
        background = QColor(c.lost_card if faded else c.card)
        line = QColor(c.muted) if faded else theme.gpu_color(self.gpu_index)
        border = QColor(c.card_border).rgba()
        pixels = np.full((h, w), background.rgba(), dtype=np.uint32)
        for f in guides:
            pixels[round((1.0 - f) * (h - 3)) + 1, 1:w - 1] = border
        pixels[0, :] = pixels[-1, :] = border
        pixels[:, 0] = pixels[:, -1] = border
        made = (pixels, line.rgba(), _blend(line, background, 0.22).rgba())
        self._base_pixels = (key, made)
        return made

    def paintEvent(self, event: object) -> None:
        p = QPainter(self)
        p.drawImage(0, 0, self._picture())
        p.end()


def _bridged(ys: np.ndarray) -> np.ndarray:
    """The columns with each NO_ROW run between known ones given the last known value
    (samples sparser than columns still draw a line); UNKNOWN and leading NO_ROWs stay
    negative."""
    idx = np.where(ys != NO_ROW, np.arange(ys.size), -1)
    np.maximum.accumulate(idx, out=idx)
    out = np.where(idx >= 0, ys[np.maximum(idx, 0)], NO_ROW).astype(np.int16)
    # after the newest sample, nothing: a NO_ROW tail is not the future
    last = np.flatnonzero(ys != NO_ROW)
    if last.size:
        out[last[-1] + 1:] = NO_ROW
    return out


def _blend(a: QColor, b: QColor, share: float) -> QColor:
    """``share`` of ``a`` over ``b``."""
    return QColor.fromRgbF(a.redF() * share + b.redF() * (1 - share),
                           a.greenF() * share + b.greenF() * (1 - share),
                           a.blueF() * share + b.blueF() * (1 - share))
