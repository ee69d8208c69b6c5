"""How the process table draws a cell's text: laid out once and kept while it is shown,
or shaped as it is drawn.

A ``QStaticText`` is laid out once (shaping, elision, glyph positions: ~15 µs and an
allocation of a kilobyte or two) and then drawn as glyph blits (~1.5 µs). That pays
for a text that stays on screen: a pid, a name, a command line, a memory figure that
holds, a CPU % that comes back. It does not for a figure that shows once: the running
time of a process younger than an hour is a new string every second for every row.
Laid out as static texts, such strings were each used for a second and left behind in
a cache that grew to thousands of entries before starting over.

So a text is laid out the second time it is drawn (in the same place, width and
style); the first time it is shaped as it is drawn (``drawText``, ~5 µs with the width
it needs for right alignment) and only its string is remembered.

What is kept is what the table drew lately: every :data:`KEEP_PAINTS` full paints the
texts drawn since the last such turn become the old generation, and the old generation
that was not drawn again is dropped. A text that scrolled out of view, or that a row no
longer shows, goes within twice that many full paints, so the cache holds a few
screenfuls of cells however many strings have been shown; a table repainted only in
parts for a long time (cells changing, no full paint) turns once it holds :data:`LIMIT`
texts. The table looks up :attr:`CellTexts.kept` itself (one dictionary look-up per
cell, no call) and calls :meth:`CellTexts.draw` for the rest.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF, QPainter, QStaticText

NORMAL, BOLD, ITALIC = 0, 1, 2   # text styles
KEEP_PAINTS = 30                 # full paints between two turns of the generations
LIMIT = 1024                     # texts laid out (or seen) before a turn in any case

Laid = tuple[QStaticText, int, int]   # (static text, width, height) in whole pixels


class CellTexts:
    """The table's laid-out texts, and the plain drawing of volatile ones."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, int, int], Laid] = {}      # drawn since the last turn
        self._before: dict[tuple[str, int, int], Laid] = {}   # drawn before that
        self._seen: dict[tuple[str, int, int], None] = {}     # drawn once, not laid out
        self._seen_before: dict[tuple[str, int, int], None] = {}
        self._font_key = ""
        self._full_paints = 0
        self.fonts: tuple[QFont, QFont, QFont] = (QFont(), QFont(), QFont())
        self._metrics: tuple[QFontMetrics, ...] = ()        # for elision, as static texts
        self._widths: tuple[QFontMetricsF, ...] = ()        # widths, as static texts report
        self._ascent: tuple[float, ...] = ()
        self._height: tuple[int, ...] = ()
        self._overhang: tuple[dict[str, float], ...] = ()   # by last character, per style

    def __len__(self) -> int:
        """The laid-out texts kept."""
        return len(self.kept) + len(self._before)

    def begin(self, font: QFont, full: bool) -> tuple[QFont, QFont, QFont]:
        """Start a paint in ``font``; ``full``: it covers every visible cell (what is not
        drawn again is no longer shown). The three fonts by style; :attr:`kept` is the
        generation to look up for this paint."""
        self.use_font(font)
        self._full_paints += full
        if self._full_paints >= KEEP_PAINTS or len(self.kept) > LIMIT \
                or len(self._seen) > LIMIT:
            self._full_paints = 0
            self._before, self.kept = self.kept, {}
            self._seen_before, self._seen = self._seen, {}
        return self.fonts

    def use_font(self, font: QFont) -> bool:
        """Measure and draw in ``font`` (and its bold and italic) from now on; True when
        it differs from the font before (what was laid out is dropped)."""
        key = font.key()
        if key != self._font_key:
            self._font_key = key
            self.kept, self._before, self._seen, self._seen_before = {}, {}, {}, {}
            bold, italic = QFont(font), QFont(font)
            bold.setBold(True)
            italic.setItalic(True)
            self.fonts = (QFont(font), bold, italic)
            self._metrics = tuple(QFontMetrics(f) for f in self.fonts)
            floats = self._widths = tuple(QFontMetricsF(f) for f in self.fonts)
            self._ascent = tuple(m.ascent() for m in floats)
            # the height a static text of one line reports (see ``static``)
            self._height = tuple(math.ceil(m.height()) for m in floats)
            self._overhang = ({}, {}, {})
            return True
        return False

    def static(self, text: str, room: int, style: int) -> Laid:
        """``text`` laid out in the font of ``style``, elided with "…" to ``room``
        pixels when it is wider: (static text, width, height) in whole pixels."""
        key = (text, room, style)
        laid = self.kept.get(key)
        if laid is None:
            laid = self._before.pop(key, None)
            if laid is None:
                laid = self._lay_out(text, room, style)
            self.kept[key] = laid
        return laid

    def draw(self, p: QPainter, text: str, left: int, room: int, top: int, height: int,
             right: bool, style: int) -> None:
        """Draw ``text`` in the font of ``style`` (set on ``p``), elided to ``room``,
        vertically centred in ``height`` from ``top``, right-aligned in ``room`` with
        ``right``: as a static text if it was drawn lately, shaped on the spot if not."""
        key = (text, room, style)
        laid = self.kept.get(key)
        if laid is None:
            laid = self._before.pop(key, None)
            if laid is None:
                if key not in self._seen and key not in self._seen_before:
                    self._seen[key] = None
                    self.draw_plain(p, text, left, room, top, height, right, style)
                    return
                laid = self._lay_out(text, room, style)
            self.kept[key] = laid
        static, width, text_height = laid
        p.drawStaticText(left + room - width if right else left,
                         top + (height - text_height) // 2, static)

    def _lay_out(self, text: str, room: int, style: int) -> Laid:
        # elided as ``draw_plain`` does it: when the width it reports passes the room
        shown = text if self.width(text, style) <= room else \
            self._metrics[style].elidedText(text, Qt.TextElideMode.ElideRight, room)
        static = QStaticText(shown)
        static.setTextFormat(Qt.TextFormat.PlainText)
        static.prepare(font=self.fonts[style])
        size = static.size()
        return static, math.ceil(size.width()), math.ceil(size.height())

    def draw_plain(self, p: QPainter, text: str, left: int, room: int, top: int,
                   height: int, right: bool, style: int) -> None:
        """Draw ``text`` where a static text of it would go, pixel for pixel, shaped on
        the spot and kept nowhere."""
        width = self.width(text, style)
        if width > room:
            text = self._metrics[style].elidedText(text, Qt.TextElideMode.ElideRight, room)
            width = self.width(text, style)
        x = left + room - width if right else left
        y = top + (height - self._height[style]) // 2 + self._ascent[style]
        p.drawText(QPointF(x, y), text)

    def width(self, text: str, style: int) -> int:
        """The width a static text of ``text`` in the font of ``style`` reports (what a
        cell needs to show it whole): its advance, and the overhang of its last glyph past
        it (an italic "y")."""
        if not text:
            return 0
        metrics = self._widths[style]
        overhang = self._overhang[style].get(text[-1])
        if overhang is None:
            overhang = self._overhang[style][text[-1]] = max(0.0, -metrics.rightBearing(text[-1]))
        return math.ceil(metrics.horizontalAdvance(text) + overhang)
