"""The badge in a card's title row: an icon and a word on the state's colour.

A triangle for a warning, an octagon (a stop sign) for a critical hint, a slashed
circle for a lost GPU or failed reads: shape and word carry the state, so it reads
without telling amber from red. The word is the hint's reason ("OOM in ~2 min"); on a
narrow card the badge gives way down to its first word and an ellipsis (the tooltip
keeps the whole). Painted, with its font, metrics and path made once.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

ICON_WARNING, ICON_CRITICAL, ICON_LOST = "warning", "critical", "lost"


class SeverityBadge(QWidget):
    fitted = Signal()       # its words changed width: the card fits it again
    PAD = 6
    ICON = 10

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._word = ""
        self._icon = ""
        self._fill = QColor()
        self._ink = QColor()
        self._font: QFont | None = None
        self._text_width = 0.0
        self._ascent = 0.0
        self._min_width = 0
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("State")
        self.hide()

    def text(self) -> str:
        return self._word

    def set_state(self, word: str | None, icon: str = "", fill: str = "", ink: str = "",
                  tooltip: str = "") -> None:
        """Show ``word`` with ``icon`` on ``fill`` in ``ink``; hide for None. Repaints
        and asks for room only when something shown changed."""
        if tooltip != self.toolTip():
            self.setToolTip(tooltip)
        if word is None:
            if not self.isHidden():
                self.hide()
            return
        changed_size = word != self._word
        if (word, icon, fill, ink) != (self._word, self._icon, self._fill.name(),
                                       self._ink.name()):
            self._word, self._icon = word, icon
            self._fill, self._ink = QColor(fill), QColor(ink)
            self.setAccessibleName(word.capitalize() if word.isupper() else word)
            self.setAccessibleDescription(tooltip)
            if changed_size:
                self._measure()
            self.update()
        if self.isHidden():
            self.show()

    def _measure(self) -> None:
        if self._font is None:
            self._font = QFont(self.font())
            self._font.setBold(True)
        fm = QFontMetricsF(self._font)
        self._text_width = fm.horizontalAdvance(self._word)
        self._ascent = fm.ascent()
        hint = self.sizeHint()
        first = self._word.split(" ", 1)[0] + ("…" if " " in self._word else "")
        self._min_width = min(hint.width(), math.ceil(
            self.PAD * 2 + self.ICON + 4 + fm.horizontalAdvance(first)))
        self.setFixedHeight(hint.height())
        self.setMinimumWidth(self._min_width)
        self.fitted.emit()
        self.setMaximumWidth(hint.width())
        self.updateGeometry()

    def minimumSizeHint(self) -> QSize:
        return QSize(self._min_width, self.sizeHint().height())

    def fit(self, room: float) -> None:
        """Keep the whole word where ``room`` px allow it (the vitals beside it give way
        first), else give way down to the first word."""
        full = self.sizeHint().width()
        least = min(full, max(self._min_width, math.floor(room)))
        if least != self.minimumWidth():
            self.setMinimumWidth(least)

    def sizeHint(self) -> QSize:
        fm = QFontMetricsF(self._font or self.font())
        w = self.PAD * 2 + self.ICON + 4 + self._text_width
        return QSize(math.ceil(w), math.ceil(fm.height()) + 2)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._font = None
            self._measure()

    def paintEvent(self, event: object) -> None:
        if not self._word:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect())
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self._fill)
        p.drawRoundedRect(r, 4, 4)
        icon = QRectF(self.PAD, (r.height() - self.ICON) / 2, self.ICON, self.ICON)
        _draw_icon(p, self._icon, icon, self._ink, self._fill)
        p.setFont(self._font or self.font())
        p.setPen(self._ink)
        fm = QFontMetricsF(p.font())
        baseline = (r.height() - fm.height()) / 2 + self._ascent
        room = r.width() - icon.right() - 4 - self.PAD
        word = self._word if room + 0.5 >= self._text_width else \
            fm.elidedText(self._word, Qt.TextElideMode.ElideRight, room)
        p.drawText(QPointF(icon.right() + 4, baseline), word)
        p.end()


def _draw_icon(p: QPainter, kind: str, box: QRectF, ink: QColor, fill: QColor) -> None:
    """The state's shape in ``ink``, with its mark cut out in ``fill``."""
    path = QPainterPath()
    cx, cy, r = box.center().x(), box.center().y(), box.width() / 2
    if kind == ICON_WARNING:
        path.moveTo(cx, box.top())
        path.lineTo(box.right(), box.bottom())
        path.lineTo(box.left(), box.bottom())
        path.closeSubpath()
    elif kind == ICON_CRITICAL:
        for k in range(8):
            a = math.pi / 8 + k * math.pi / 4
            point = QPointF(cx + r * math.cos(a), cy + r * math.sin(a))
            path.moveTo(point) if k == 0 else path.lineTo(point)
        path.closeSubpath()
    else:
        path.addEllipse(box)
    p.fillPath(path, ink)
    pen = QPen(fill, 1.6)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    p.setPen(pen)
    if kind == ICON_LOST:
        d = r * 0.5
        p.drawLine(QPointF(cx - d, cy + d), QPointF(cx + d, cy - d))
    else:       # an exclamation mark
        top = cy - r * 0.45 if kind == ICON_CRITICAL else cy - r * 0.2
        p.drawLine(QPointF(cx, top), QPointF(cx, cy + r * 0.2))
        p.drawPoint(QPointF(cx, cy + r * 0.55))
    p.setPen(Qt.PenStyle.NoPen)
