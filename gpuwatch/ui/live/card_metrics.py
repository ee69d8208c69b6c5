"""A GPU card's grid of figures: memory busy, bandwidth, GPU busy, PCIe and NVLink.

Each figure is in its long form ("Memory busy 64 % of time") where the long forms fit
their half of the card whole, else in its short one ("Mem busy 64 %"; the tooltips keep
the meaning). Once short, the card goes back to the long forms only with 8 % of room to
spare, so a figure that gains a digit does not flip it back and forth.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QGridLayout

from gpuwatch.core.snapshot import GpuSample
from gpuwatch.ui.live import card_texts
from gpuwatch.ui.live.card_frame import CardFrame
from gpuwatch.ui.live.card_parts import TextPart

COMPACT_BELOW = 360     # px wide: a card this narrow shows the short forms whatever fits
_SPARE = 0.92           # short forms give way to long ones only with 8 % to spare


class CardMetrics:
    """The figures' parts (painted by ``card``) and the grid that places them."""

    def __init__(self, card: CardFrame):
        self.busy = TextPart(card, fit_text=True)
        self.bandwidth = TextPart(card, fit_text=True)
        self.util = TextPart(card, fit_text=True)
        self.pcie = TextPart(card, fit_text=True)
        self.nvlink = TextPart(card, fit_text=True)
        self.nvlink.hide()
        self.parts = (self.busy, self.bandwidth, self.util, self.pcie, self.nvlink)
        self.compact = False
        self._fit_key: tuple | None = None     # what fits_long last measured
        self.grid = grid = QGridLayout()
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(0, 1)
        grid.setColumnStretch(1, 1)
        self.place(readable=True)

    def place(self, readable: bool) -> None:
        """Two columns of figures; on a narrow card the links take whole rows (their two
        directions need the width) and the bandwidth estimate is left to the memory busy
        figure's tooltip. ``readable``: the GPU answers (else no bandwidth at all)."""
        grid = self.grid
        for part in self.parts:
            grid.removeItem(part)
        if self.compact:
            places: tuple = ((self.util, 0, 0, 1), (self.busy, 0, 1, 1), (self.pcie, 1, 0, 2),
                             (self.nvlink, 2, 0, 2))
        else:
            places = ((self.busy, 0, 0, 1), (self.bandwidth, 0, 1, 1), (self.util, 1, 0, 1),
                      (self.pcie, 1, 1, 1), (self.nvlink, 2, 1, 1))
        for part, row, col, span in places:
            grid.addItem(part, row, col, 1, span)
        self.bandwidth.setVisible(not self.compact and readable)

    def set_compact(self, compact: bool, readable: bool) -> None:
        if compact != self.compact:
            self.compact = compact
            self.place(readable)

    def fits_long(self, texts: tuple[str, ...], width: int, inner_width: int,
                  font: QFont) -> bool:
        """Whether the long forms fit their half of a card ``width`` px wide (``inner_width``
        inside its margins) whole. Measured again only when the width, the font or a
        text's length changed (digits are as wide as each other in the fonts cards use)."""
        if width < COMPACT_BELOW:
            return False
        key = (width, self.compact, font.pointSizeF(), *map(len, texts))
        if key == self._fit_key:
            return not self.compact
        self._fit_key = key
        column = (inner_width - self.grid.horizontalSpacing()) / 2
        fm = QFontMetricsF(font)
        need = max(fm.horizontalAdvance(t) for t in texts)
        return need <= (column * _SPARE if self.compact else column)

    def show(self, g: GpuSample, width: int, inner_width: int, font: QFont) -> bool:
        """The figures of ``g``, long where they fit, else short; True when the NVLink
        row came or went (the card's height changed)."""
        texts = card_texts.metric_texts(g, False)
        self.set_compact(not self.fits_long(texts, width, inner_width, font), True)
        compact = self.compact
        if compact:
            texts = card_texts.metric_texts(g, True)
        busy, bandwidth, util, pcie, nvlink = texts
        none = card_texts.NO_READING

        def tip(text: str, base: str) -> str:
            return f"{base}\n\n{card_texts.missing_reason(g)}" if none in text else base

        self.busy.set(busy, tip(busy, card_texts.BUSY_TIP)
                      + (f"\n\n{bandwidth}" if compact else ""))
        self.bandwidth.set(bandwidth, tip(bandwidth, card_texts.BANDWIDTH_TIP))
        self.util.set(util, tip(util, card_texts.UTIL_TIP))
        self.pcie.set(pcie, tip(pcie, card_texts.PCIE_TIP))
        if nvlink:
            self.nvlink.set(nvlink, tip(nvlink, card_texts.NVLINK_TIP))
        if bool(nvlink) != self.nvlink.isHidden():
            return False
        self.nvlink.setVisible(bool(nvlink))
        return True

    def clear(self) -> None:
        """No figures (a GPU that cannot be read)."""
        for part in self.parts:
            part.set("")
        self.nvlink.hide()
