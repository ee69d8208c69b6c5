"""Lines of coloured text runs and swatches, laid out once and painted as static text.

A card's figures change every sample. A rich-text ``QLabel`` re-parses its HTML and lays
it out through a text document on each ``setText``, announces a new size hint (a layout
pass of the card) and, being transparent, has the styled card beneath it repaint too.
``TextLines`` takes plain runs instead (text, colour, bold, optional swatch), measures
only the runs whose text changed, asks for a layout pass only when its natural width
changes, and can paint its own background in the card's colour so the card under it is
left alone. A run's text is measured once and, from its second showing on, laid out
once as a ``QStaticText`` and drawn from it (a quarter of a plain draw; laying it out
costs about one): figures come back again and again ("GPU busy 47 %" on any card, any
second), so the texts are remembered across samples and widgets, up to a bound, not
just while shown. A text shown once is drawn as plain text.
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
# (font key, text) -> (its laid-out static text, or None while seen once; its advance)
_KNOWN: dict[tuple[str, str], tuple[QStaticText | None, float]] = {}
# remembered at most, all forgotten at once past that: a laid-out text takes ~1.5 KB, so
# the texts of eight cards (~1,300 distinct in a sawtooth hour) stay under ~3 MB
KNOWN_TEXTS = 2048


def known_text(font: QFont, font_key: str, metrics: QFontMetricsF,
               text: str) -> tuple[QStaticText | None, float]:
    """(``text`` laid out in ``font``, None the first time it is seen; its advance)."""
    key = (font_key, text)
    made = _KNOWN.get(key)
    if made is None:
        if len(_KNOWN) >= KNOWN_TEXTS:
            _KNOWN.clear()
        made = _KNOWN[key] = (None, metrics.horizontalAdvance(text))
    elif made[0] is None:      # seen before: laid out once, kept
        static = QStaticText(text)
        static.setTextFormat(Qt.TextFormat.PlainText)
        static.prepare(font=font)
        made = _KNOWN[key] = (static, made[1])
    return made


_ELIDED: dict[tuple[str, str, float], str] = {}   # (font key, text, room) -> cut text


def elided_text(metrics: QFontMetricsF, font_key: str, text: str, room: float) -> str:
    """``text`` cut with an ellipsis to ``room`` px (remembered: a legend too long for its
    card is cut at the same place sample after sample)."""
    key = (font_key, text, room)
    cut = _ELIDED.get(key)
    if cut is None:
        if len(_ELIDED) >= KNOWN_TEXTS:
            _ELIDED.clear()
        cut = _ELIDED[key] = metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
    return cut


def forget_texts() -> None:
    """Drop the remembered texts (tests start from none)."""
    _KNOWN.clear()
    _ELIDED.clear()


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


class RunLines:
    """Lines of runs laid out for one font: what :class:`TextLines` and the painted parts
    of a GPU card share. Measures only the runs whose text changed; paints at an offset."""

    SWATCH = 10

    def __init__(self, font: QFont):
        self.lines: list[list[Run]] = []
        self._placed: list[list[tuple[float, float, QStaticText | None, Run]]] = []
        self.natural = 0           # the widest line, px
        self.set_font(font)

    def set_font(self, font: QFont) -> None:
        bold = QFont(font)
        bold.setBold(True)
        self._fonts = {False: QFont(font), True: bold}
        self._metrics = {b: QFontMetricsF(f) for b, f in self._fonts.items()}
        self._keys = {b: f.key() for b, f in self._fonts.items()}
        self._ascent = {b: m.ascent() for b, m in self._metrics.items()}
        self.step = math.ceil(self._metrics[False].lineSpacing())
        self._place()

    def set_lines(self, lines: list[list[Run]]) -> bool:
        """Take ``lines``; False when they are the ones shown."""
        if lines == self.lines:
            return False
        self.lines = lines
        self._place()
        return True

    def text(self) -> str:
        return "\n".join("".join(r.text for r in line) for line in self.lines)

    def _place(self) -> None:
        fonts, keys, metrics = self._fonts, self._keys, self._metrics
        self._placed = placed_lines = []
        widest = 0.0
        for line in self.lines:
            x, placed = 0.0, []
            for run in line:
                if run.swatch is not None:
                    x += self.SWATCH + 4
                bold = run.bold
                static, advance = known_text(fonts[bold], keys[bold], metrics[bold], run.text)
                placed.append((x, advance, static, run))
                x += advance
            widest = max(widest, x)
            placed_lines.append(placed)
        self.natural = math.ceil(widest)

    def paint(self, p: QPainter, left: float, top: float, width: float, default: QColor,
              align_right: bool = False, inset: int = 0) -> None:
        """Draw the lines in the box from (``left``, ``top``), ``width`` wide: runs
        without a colour in ``default``; a line wider than the box cut with an ellipsis."""
        right = width - inset
        shift = max(0.0, right - inset - self.natural) if align_right else 0.0
        shift += inset
        font_bold: bool | None = None     # set the font and pen only when they change
        pen: QColor | None = None
        step, swatch = self.step, self.SWATCH
        for i, line in enumerate(self._placed):
            y = float(i * step)
            for x, advance, static, run in line:
                x += shift
                if run.swatch is not None:
                    box_left = x - swatch - 4
                    if box_left + swatch >= right:
                        break
                    box = QRectF(left + box_left, top + y + (step - swatch) / 2, swatch, swatch)
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
                if x + advance <= right:
                    if static is not None:
                        p.drawStaticText(QPointF(left + x, top + y), static)
                    else:
                        p.drawText(QPointF(left + x, top + y + self._ascent[run.bold]),
                                   run.text)
                    continue
                bold = run.bold
                text = elided_text(self._metrics[bold], self._keys[bold], run.text,
                                   max(0.0, right - x))
                cut = known_text(self._fonts[bold], self._keys[bold], self._metrics[bold],
                                 text)[0]
                if cut is None:
                    p.drawText(QPointF(left + x, top + y + self._ascent[bold]), text)
                else:
                    p.drawStaticText(QPointF(left + x, top + y), cut)
                break


class TextLines(QWidget):
    """A few lines of runs, painted in one go.

    ``fit_text``: the widget asks for its text's natural width (a label in a row of a
    layout); otherwise it takes whatever width it gets (``Ignored``), and a line wider
    than that is cut with an ellipsis. Either way its height follows its line count."""

    SWATCH = RunLines.SWATCH

    def __init__(self, fit_text: bool = False, align_right: bool = False, inset: int = 0,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._runs = RunLines(self.font())
        self._tooltip: str | None = None    # the last one set here
        self._room = 0           # the widest text so far: the width this widget asks for
        self._fit_text = fit_text
        self._align_right = align_right
        self._inset = inset      # px left and right of the text
        self._color: QColor | None = None
        self._background: QColor | None = None
        self.setSizePolicy(QSizePolicy.Policy.Preferred if fit_text else QSizePolicy.Policy.Ignored,
                           QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height(1 if fit_text else 0))

    @property
    def _lines(self) -> list[list[Run]]:
        return self._runs.lines

    @property
    def _step(self) -> int:
        return self._runs.step

    @property
    def _placed(self) -> list:
        return self._runs._placed

    def _height(self, lines: int) -> int:
        """A label (``fit_text``) keeps at least one line's height, empty or not."""
        return lines_height(self._runs.step, lines, self._fit_text)

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
        if not self._runs.set_lines(lines):
            return
        height = self._height(len(lines))
        if height != self.height():
            self.setFixedHeight(height)
        if self._fit_text and self._runs.natural > self._room:
            # Only when the text outgrows the room asked for so far: asking for a layout
            # pass whenever a figure's width changed relaid the card, and the window
            # around it, every sample. The room is kept when the text shrinks.
            self._room = self._runs.natural
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
        return self._runs.text()

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
            self._runs.set_font(self.font())
            self._room = self._runs.natural
            self.setFixedHeight(self._height(len(self._runs.lines)))
            self.updateGeometry()

    def paintEvent(self, event: object) -> None:
        p = QPainter(self)
        if self._background is not None:
            p.fillRect(self.rect(), self._background)
        default = self._color or QColor(theme.colors().text)
        self._runs.paint(p, 0.0, 0.0, float(self.width()), default, self._align_right,
                         self._inset)
        p.end()


def lines_height(step: int, lines: int, fit_text: bool) -> int:
    """The height of ``lines`` lines; a label (``fit_text``) keeps one line's, empty or not."""
    if fit_text:
        lines = max(1, lines)
    return lines * step + (1 if lines else 0)
