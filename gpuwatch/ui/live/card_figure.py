"""A card's big figure: "78 %" large with "used" small beside it, never cut.

The figures a user looks for first (% used, free) are the largest text on a card.
Rather than eliding, the figure steps its font down until it fits; its minimum width
is the text at the smallest step, so a layout never gives it less. Fonts and widths are
made when the text or the font changes, not when it paints. A painted part of the card
(:class:`~gpuwatch.ui.live.card_parts.Part`), not a widget.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QStaticText

from gpuwatch.ui.live.card_parts import MAX_SIZE, Part
from gpuwatch.ui.live.text_lines import known_text
from gpuwatch.ui.widgets import theme

if TYPE_CHECKING:
    from gpuwatch.ui.live.card_frame import CardFrame

# The big text's size as a multiple of the widget's font, largest first.
STEPS = (1.6, 1.45, 1.3, 1.2)
GAP = 4       # px between the big text and the small word


class BigFigure(Part):
    def __init__(self, card: CardFrame, align_right: bool = False):
        super().__init__(card)
        self._big = ""
        self._small = ""
        self._color: QColor | None = None      # the big text's; None: the theme's text
        self._small_color: QColor | None = None
        self._color_names: tuple[str | None, str | None] = (None, None)
        self._background: QColor | None = None
        self._align_right = align_right
        self._fonts: list[QFont] = []
        self._widths: list[float] = []         # natural width at each step
        self._small_width = 0.0
        self._static: tuple[str, QStaticText] | None = None   # the small word, laid out
        self.set_font(card.font())

    # content ------------------------------------------------------------------------
    def set_figure(self, big: str, small: str = "", color: str | None = None,
                   small_color: str | None = None) -> None:
        """Show ``big`` (in ``color``) and ``small`` after it; nothing shown changed,
        nothing happens."""
        if (big, small) != (self._big, self._small):
            self._big, self._small = big, small
            old_min = self.minimumSize().width()
            self._measure()
            if self.minimumSize().width() > old_min or \
                    self.sizeHint().width() > self.rect.width():
                self.relayout()
            self.update()
        if (color, small_color) != self._color_names:      # parsed only when changed
            self._color_names = (color, small_color)
            self._color = None if color is None else QColor(color)
            self._small_color = None if small_color is None else QColor(small_color)
            self.update()

    def set_colors(self, color: str | None, small_color: str | None = None) -> None:
        self.set_figure(self._big, self._small, color, small_color)

    def set_background(self, color: QColor | None) -> None:
        """The colour under the text."""
        if color != self._background:
            self._background = None if color is None else QColor(color)
            self.card.parts_moved()
            self.update()

    def text(self) -> str:
        return f"{self._big} {self._small}".strip()

    def text_width(self) -> float:
        """The width the text takes at the step it is drawn at (for tests)."""
        step = self._fit()
        return self._widths[step] if self._widths else 0.0

    def font_pixel_size(self) -> float:
        """The big text's pixel height at the step drawn (for tests)."""
        return self._ascents[self._fit()][1]

    # sizes ---------------------------------------------------------------------------
    def set_font(self, base: QFont) -> None:
        self._base = QFont(base)
        size = base.pointSizeF() if base.pointSizeF() > 0 else base.pixelSize() * 0.75
        self._fonts = []
        for k in STEPS:
            f = QFont(base)
            f.setPointSizeF(size * k)
            f.setBold(True)
            self._fonts.append(f)
        metrics = self._metrics = [QFontMetricsF(f) for f in self._fonts]
        self._keys = [f.key() for f in self._fonts]
        self._small_metrics = QFontMetricsF(base)
        self._measured: dict[tuple[str, str], tuple[float, list[float]]] = {}
        self._ascents = [(fm.ascent(), fm.height()) for fm in metrics]
        self._small_ascent = self._small_metrics.ascent()
        self._height = math.ceil(metrics[0].height())
        self._static = None
        self._measure()
        self.relayout()
        self.update()

    def _measure(self) -> None:
        """The text's width at each step; remembered per text, since a figure takes
        the same few hundred values again and again."""
        key = (self._big, self._small)
        known = self._measured.get(key)
        if known is None:
            small = self._small_metrics.horizontalAdvance(self._small) if self._small else 0
            small += GAP if self._small else 0
            known = (small, [m.horizontalAdvance(self._big) + small for m in self._metrics])
            if len(self._measured) > 512:
                self._measured.clear()
            self._measured[key] = known
        self._small_width, self._widths = known

    # as a widget with a Preferred width and a fixed height
    def sizeHint(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        return QSize(math.ceil(self._widths[0]) + 1, self._height)

    def minimumSize(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        return QSize(math.ceil(self._widths[-1]) + 1, self._height)

    def maximumSize(self) -> QSize:
        if self._hidden:
            return QSize(0, 0)
        return QSize(MAX_SIZE, self._height)

    def opaque(self) -> bool:
        return self._background is not None

    def _fit(self) -> int:
        w = self.rect.width()
        for i, natural in enumerate(self._widths):
            if natural <= w:
                return i
        return len(self._widths) - 1

    # painting ------------------------------------------------------------------------
    def paint(self, p: QPainter) -> None:
        r = self.rect
        p.setClipRect(r)
        if self._background is not None:
            p.fillRect(r, self._background)
        step = self._fit()
        # the figure changes with most samples, but comes back: drawn from a static text
        # from its second showing on; the word beside it is laid out once
        if self._static is None or self._static[0] != self._small:
            small = QStaticText(self._small)
            small.setTextFormat(Qt.TextFormat.PlainText)
            small.prepare(font=self._base)
            self._static = (self._small, small)
        x = max(0.0, r.width() - self._widths[step] - 1) if self._align_right else 0.0
        x += r.x()
        ascent, height = self._ascents[step]
        baseline = r.y() + ascent + (self._height - height) / 2
        p.setFont(self._fonts[step])
        p.setPen(self._color or _default(False))
        big = known_text(self._fonts[step], self._keys[step], self._metrics[step], self._big)[0]
        if big is None:
            p.drawText(QPointF(x, baseline), self._big)
        else:
            p.drawStaticText(QPointF(x, baseline - ascent), big)
        if self._small:
            p.setFont(self._base)
            p.setPen(self._small_color or _default(True))
            x += self._widths[step] - self._small_width + GAP
            p.drawStaticText(QPointF(x, baseline - self._small_ascent), self._static[1])


_DEFAULTS: dict[tuple[theme.Colors, bool], QColor] = {}


def _default(muted: bool) -> QColor:
    """The theme's text (or muted) colour, parsed once per theme."""
    c = theme.colors()
    color = _DEFAULTS.get((c, muted))
    if color is None:
        color = _DEFAULTS[(c, muted)] = QColor(c.muted if muted else c.text)
    return color
