"""A one-line label that lays its text out once and paints it as static text.

A card's figures change every sample. ``QLabel`` re-parses and lays out rich text
through a text document on each ``setText``, announces a new size hint (a layout pass
of the card), and, being transparent, has its parent card (styled, with rounded
borders) repaint beneath it. This label lays the text out once per distinct string
(``QStaticText``), asks for a new layout only when its width changes, and paints its own
background in the card's colour so the card under it is left alone.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QEvent, QPointF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QStaticText, QTextDocument
from PySide6.QtWidgets import QSizePolicy, QWidget


class StaticLabel(QWidget):
    def __init__(self, rich: bool = False, align_right: bool = False,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._text = ""
        self._static = QStaticText()
        self._static.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
        self._rich = rich
        self._measure = QTextDocument()
        self._measure.setDocumentMargin(0)
        self._align_right = align_right
        self._width = 0
        self._color = QColor()
        self._background: QColor | None = None
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)

    def text(self) -> str:
        return self._text

    def set(self, text: str, tooltip: str | None = None) -> None:
        """Show ``text`` (and ``tooltip``); nothing happens when both are unchanged."""
        if text != self._text:
            self._text = text
            self._static.setText(text)
            if self._rich:
                self._static.setTextWidth(self._natural_width(text))
            self._static.prepare(font=self.font())
            width = round(self._static.size().width())
            if width != self._width:
                self._width = width
                self.updateGeometry()
            self.update()
        if tooltip is not None and tooltip != self.toolTip():
            self.setToolTip(tooltip)

    def _natural_width(self, html: str) -> float:
        """The width of rich text on one line. Without a width, static rich text is
        wrapped to a pleasing shape (``QTextDocument.adjustSize``), not to one line."""
        self._measure.setDefaultFont(self.font())
        self._measure.setHtml(html)
        return math.ceil(self._measure.idealWidth()) + 1

    def set_colors(self, text: QColor, background: QColor | None) -> None:
        """The default text colour (spans may set their own) and the colour under the
        text; with a background the label paints it itself and covers its whole rect."""
        if text != self._color or background != self._background:
            self._color = QColor(text)
            self._background = None if background is None else QColor(background)
            self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, background is not None)
            self.update()

    def sizeHint(self) -> QSize:
        return QSize(self._width, self.fontMetrics().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.fontMetrics().height())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            if self._rich:
                self._static.setTextWidth(self._natural_width(self._text))
            self._static.prepare(font=self.font())
            self._width = round(self._static.size().width())
            self.updateGeometry()

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        if self._background is not None:
            p.fillRect(self.rect(), self._background)
        if self._text:
            p.setFont(self.font())
            p.setPen(self._color if self._color.isValid() else self.palette().windowText().color())
            size = self._static.size()
            x = self.width() - size.width() if self._align_right else 0.0
            y = (self.height() - size.height()) / 2
            p.drawStaticText(QPointF(round(x), round(y)), self._static)
        p.end()
