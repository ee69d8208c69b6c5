"""The lines under a GPU card's figures for a probed or linked process: the probe's
legend (its split, tensors and allocator figures) and the linked budget.

Both are painted parts of a fixed number of lines, so the card's height is known from
its line count alone: linking a budget adds exactly its lines and never leaves an empty
band under them (a word-wrapped label's height depends on its width, which the card's
size hint cannot know). The budget's key figures come first, whole; the budget's name
follows on its own line, cut where it must be, whole in the tooltip.
"""

from __future__ import annotations

from gpuwatch.core.probe_format import ProbeReport
from gpuwatch.core.snapshot import ProcessSample
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live import card_texts
from gpuwatch.ui.live.card_frame import CardFrame
from gpuwatch.ui.live.card_parts import TextPart
from gpuwatch.ui.live.memory_bar import Segment
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.live.probe_view import legend_lines
from gpuwatch.ui.widgets import theme


class CardBand:
    """The probe legend and the budget lines of one card (``card`` paints them)."""

    def __init__(self, card: CardFrame):
        self.probe = TextPart(card)     # as wide as the card, cut to fit
        self.probe.hide()
        self.budget = TextPart(card)
        self.budget.hide()
        self._probe_key: tuple | None = None    # what the probe legend shows now

    def show_probe(self, p: ProcessSample | None, split: list[Segment] | None,
                   report: ProbeReport | None, overlay: Overlay | None, units: UnitSystem,
                   probed: int) -> bool:
        """The legend of one probed process's split, its tensors and allocator figures
        (``probed``: how many processes of the GPU are split); True when it came or
        went."""
        if p is None or split is None or report is None:
            self._probe_key = None
            return self._set_shown(self.probe, False)
        mine = overlay if overlay is not None and overlay.pid == p.pid else None
        key = (p.pid, split, report.allocator, report.optimizer, report.alloc_conf, mine,
               units, probed, theme.colors().dark)
        if key != self._probe_key:
            self._probe_key = key
            lines, tooltip = legend_lines(p.pid, split, report, mine, units, probed)
            self.probe.set_lines(lines, tooltip)
        return self._set_shown(self.probe, True)

    def show_budget(self, overlay: Overlay | None, capacity: int | None,
                    tensors_bytes: float | None, units: UnitSystem) -> bool:
        """The linked budget against the measured bytes (none for a probe's own
        categories: its legend shows them); True when it came or went."""
        if overlay is None or overlay.from_probe:
            return self._set_shown(self.budget, False)
        lines, tooltip = card_texts.budget_lines(overlay, capacity, tensors_bytes, units)
        self.budget.set_lines(lines, tooltip)
        return self._set_shown(self.budget, True)

    def hide(self) -> bool:
        """Neither line (a GPU that cannot be read); True when one went."""
        self._probe_key = None
        went = self._set_shown(self.probe, False)
        return self._set_shown(self.budget, False) or went

    @staticmethod
    def _set_shown(part: TextPart, shown: bool) -> bool:
        if shown == part.isHidden():
            part.setVisible(shown)
            return True
        return False
