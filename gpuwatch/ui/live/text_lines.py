"""Lines of coloured text runs and swatches, laid out once and painted as static text.

A card's figures change every sample. A rich-text ``QLabel`` re-parses its HTML and lays
it out through a text document on each ``setText``, announces a new size hint (a layout
pass of the card) and, being transparent, has the styled card beneath it repaint too.
``TextLines`` takes plain runs instead (text, colour, bold, optional swatch), measures
only the runs whose text changed, asks for a layout pass only when its natural width
changes, and can paint its own background in the card's colour so the card under it is
left alone. A run shown for the second time running is laid out once as a
``QStaticText`` and drawn from it after; a new one is drawn as plain text: laying out a
static text costs three plain draws, a waste for a figure that changes every sample.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QStaticText
from PySide6.QtWidgets import QSizePolicy, QWidget

from gpuwatch.ui.live.memory_bar import Segment
from gpuwatch.ui.widgets import theme

_COLORS: dict[str, QColor] = {}


def _color(name: str) -> QColor:
    """A run's colour by name, parsed once (a card paints dozens of runs a second)."""
    color = _COLORS.get(name)
    if color is None:
        color = _COLORS[name] = QColor(name)
    return color


class Run(NamedTuple):
    """A piece of a line: text in a colour, optionally after a swatch of a segment."""

    text: str
    color: str | None = None      # None: the widget's text colour
    bold: bool = False
    swatch: Segment | None = None


class TextLines(QWidget):
    """A few lines of runs, painted in one go.

    ``fit_text``: the widget asks for its text's natural width (a label in a row of a
    layout); otherwise it takes whatever width it gets (``Ignored``), and a line wider
    than that is cut with an ellipsis. Either way its height follows its line count."""

    SWATCH = 10

    def __init__(self, fit_text: bool = False, align_right: bool = False, inset: int = 0,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._lines: list[list[Run]] = []
        self._placed: list[list[tuple[float, float, QStaticText, Run]]] = []
        self._fonts: dict[bool, QFont] = {}
        # (text, bold) -> (its laid-out static text, or None while it is new; its advance)
        self._static: dict[tuple[str, bool], tuple[QStaticText | None, float]] = {}
        self._ascent: dict[bool, float] = {}
        self._tooltip: str | None = None    # the last one set here
        self._step = 0
        self._natural = 0
        self._room = 0           # the widest text so far: the width this widget asks for
        self._fit_text = fit_text
        self._align_right = align_right
        self._inset = inset      # px left and right of the text
        self._color: QColor | None = None
        self._background: QColor | None = None
        self.setSizePolicy(QSizePolicy.Policy.Preferred if fit_text else QSizePolicy.Policy.Ignored,
                           QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height(1 if fit_text else 0))

    def _height(self, lines: int) -> int:
        """A label (``fit_text``) keeps at least one line's height, empty or not."""
        if self._fit_text:
            lines = max(1, lines)
        step = self._step or math.ceil(QFontMetricsF(self.font()).lineSpacing())
        return lines * step + (1 if lines else 0)

    def sizeHint(self) -> QSize:
        return QSize(self._room + 2 * self._inset if self._fit_text else 200, self.height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.height())

    # content ------------------------------------------------------------------------
    def set_lines(self, lines: list[list[Run]], tooltip: str | None = None) -> None:
        """Show ``lines`` (and ``tooltip``, when given); unchanged lines cost nothing."""
        if tooltip is not None and tooltip != self._tooltip:
            self._tooltip = tooltip
            self.setToolTip(tooltip)
        if lines == self._lines:
            return
        self._lines = lines
        self._place()
        height = self._height(len(lines))
        if height != self.height():
            self.setFixedHeight(height)
        if self._fit_text and self._natural > self._room:
            # Only when the text outgrows the room asked for so far: asking for a layout
            # pass whenever a figure's width changed relaid the card, and the window
            # around it, every sample. The room is kept when the text shrinks.
            self._room = self._natural
            self.updateGeometry()
        self.update()

    def set_runs(self, runs: list[Run], tooltip: str | None = None) -> None:
        """One line of runs."""
        self.set_lines([runs], tooltip)

    def set(self, text: str, tooltip: str | None = None) -> None:
        """One line of plain text in the widget's colour."""
        self.set_lines([[Run(text)]], tooltip)

    def text(self) -> str:
        """The lines as plain text (for tests and accessibility)."""
        return "\n".join("".join(r.text for r in line) for line in self._lines)

    def set_colors(self, text: QColor | None, background: QColor | None) -> None:
        """The colour of runs without one (default: the theme's text colour) and the
        colour under the text: with one, the widget paints its whole rectangle itself
        and the parent is not repainted beneath it."""
        if text != self._color or background != self._background:
            self._color = None if text is None else QColor(text)
            self._background = None if background is None else QColor(background)
            self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent, background is not None)
            self.update()

    # layout and painting ------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fonts = {}
            self._static = {}
            self._place()
            self._room = self._natural
            self.setFixedHeight(self._height(len(self._lines)))
            self.updateGeometry()

    def _place(self) -> None:
        if not self._fonts:
            bold = QFont(self.font())
            bold.setBold(True)
            self._fonts = {False: QFont(self.font()), True: bold}
            self._ascent = {b: QFontMetricsF(f).ascent() for b, f in self._fonts.items()}
            self._step = math.ceil(QFontMetricsF(self.font()).lineSpacing())
        metrics: dict[bool, QFontMetricsF] = {}
        cache, fresh = self._static, {}
        self._placed = []
        widest = 0.0
        for line in self._lines:
            x, placed = 0.0, []
            for run in line:
                if run.swatch is not None:
                    x += self.SWATCH + 4
                key = (run.text, run.bold)
                made = fresh.get(key) or cache.get(key)
                if made is None:   # new text: measured, drawn as plain text
                    fm = metrics.get(run.bold) or metrics.setdefault(
                        run.bold, QFontMetricsF(self._fonts[run.bold]))
                    made = (None, fm.horizontalAdvance(run.text))
                elif made[0] is None:   # shown twice running: laid out once, kept
                    static = QStaticText(run.text)
                    static.setTextFormat(Qt.TextFormat.PlainText)
                    static.prepare(font=self._fonts[run.bold])
                    made = (static, made[1])
                fresh[key] = made
                placed.append((x, made[1], made[0], run))
                x += made[1]
            widest = max(widest, x)
            self._placed.append(placed)
        self._static = fresh     # keeps what this change shows, drops the rest
        self._natural = math.ceil(widest)

    def paintEvent(self, event: object) -> None:
        p = QPainter(self)
        if self._background is not None:
            p.fillRect(self.rect(), self._background)
        default = self._color or QColor(theme.colors().text)
        width = float(self.width() - self._inset)
        shift = max(0.0, width - self._inset - self._natural) if self._align_right else 0.0
        shift += self._inset
        font_bold: bool | None = None     # set the font and pen only when they change
        pen: QColor | None = None
        for i, line in enumerate(self._placed):
            y = float(i * self._step)
            for x, advance, static, run in line:
                x += shift
                if run.swatch is not None:
                    left = x - self.SWATCH - 4
                    if left + self.SWATCH >= width:
                        break
                    box = QRectF(left, y + (self._step - self.SWATCH) / 2, self.SWATCH,
                                 self.SWATCH)
                    seg = run.swatch
                    p.fillRect(box, seg.color)
                    if seg.pattern != Qt.BrushStyle.SolidPattern:
                        p.fillRect(box, QBrush(seg.hatch or seg.color.darker(130), seg.pattern))
                if run.bold != font_bold:
                    font_bold = run.bold
                    p.setFont(self._fonts[run.bold])
                color = _color(run.color) if run.color else default
                if color is not pen:
                    pen = color
                    p.setPen(color)
                if x + advance <= width:
                    if static is not None:
                        p.drawStaticText(QPointF(x, y), static)
                    else:
                        p.drawText(QPointF(x, y + self._ascent[run.bold]), run.text)
                    continue
                fm = QFontMetricsF(self._fonts[run.bold])
                text = fm.elidedText(run.text, Qt.TextElideMode.ElideRight, max(0.0, width - x))
                p.drawText(QPointF(x, y + fm.ascent()), text)
                break
        p.end()

