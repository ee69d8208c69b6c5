"""The row (or grid) of GPU cards: one per GPU seen, laid out by how many there are.

Above them, the snapshot's warnings, when it has any: with no GPU at all (NVML lists
none) the sentence saying what to check stands where the cards would be. Before the
first sample, a line says the window is waiting for it. A single GPU's card takes the
whole width. In a cluster view the cards of each host stand together under a line
naming the host (:mod:`~gpuwatch.ui.live.host_headers`), which says when it is
unreachable and why.

Each card's outline and badge follow the worst open advisor hint for its GPU: the
window hands the advisor's open hints to :meth:`CardsView.show_hints` (or levels to
:meth:`CardsView.set_hint_levels`). A click on a card (or Enter/Space on the focused
card) asks to focus the window on that GPU: :attr:`CardsView.focus_requested` carries
its index; clicking it again, or Esc, asks for all GPUs again (``ALL_GPUS``, -1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from gpuwatch.core.hints import Hint, Severity
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import Snapshot
from gpuwatch.core.units import UnitSystem
from gpuwatch.ui.live.card_reason import badge_text, card_reasons, hint_sentence
from gpuwatch.ui.live.gpu_card import GpuCard
from gpuwatch.ui.live.host_headers import HostHeader, HostState, host_states
from gpuwatch.ui.live.overlay import Overlay
from gpuwatch.ui.settings import Thresholds
from gpuwatch.ui.widgets import theme

ALL_GPUS = -1      # focus_requested's "no GPU in particular"
WAITING = "Waiting for the first sample…"


def columns_for(n: int) -> int:
    return n if n <= 2 else 3 if n in (3, 6, 9) else 4


class CardsView(QScrollArea):
    focus_requested = Signal(int)     # a GPU's index, or ALL_GPUS

    def __init__(self, parent: QWidget | None = None, history: History | None = None):
        super().__init__(parent)
        self.history = history            # the window's: each card's sparkline reads it
        self.cards: dict[int, GpuCard] = {}
        self.focused_gpu: int | None = None
        self._levels: dict[int, Severity] = {}
        self._hint_lines: dict[int, tuple[str, ...]] = {}
        self._reasons: dict[int, str] = {}     # GPU index -> its badge's words
        self._hints: list[Hint] = []
        self._worst_shown: tuple[int, Severity] | None = None   # the card last scrolled to
        self._units: UnitSystem = "iec"
        self._hosts: tuple[HostState, ...] = ()    # a cluster view's hosts, in order
        self._headers: dict[str, HostHeader] = {}
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self.notice = QLabel()            # the snapshot's warnings (no GPUs, hidden pids)
        self.notice.setObjectName("cardsNotice")
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.hide()
        self.waiting = QLabel(WAITING)    # the empty state, until the first snapshot
        self.waiting.setObjectName("cardsWaiting")
        self.waiting.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.waiting.setProperty("muted", True)
        self.waiting.setAccessibleName(WAITING)
        self._warnings: tuple[str, ...] = ()
        self._preferred = 0      # up to two rows of cards and the notice, without scrolling
        self._grid = QGridLayout()
        self._grid.setContentsMargins(8, 8, 8, 4)
        self._grid.setSpacing(8)
        self._top = top = QVBoxLayout()     # no room while the notice is hidden
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.notice)
        top.addWidget(self.waiting)
        outer = QVBoxLayout(self._inner)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addLayout(top)
        outer.addLayout(self._grid, 1)
        self.setWidget(self._inner)
        self.restyle()

    def set_warnings(self, warnings: tuple[str, ...]) -> bool:
        """Show the snapshot's warnings; True when the notice came, went or changed, so
        the window may re-fit the cards' height."""
        if warnings == self._warnings:
            return False
        self._warnings = warnings
        if not warnings:
            self.notice.hide()
            self._top.setContentsMargins(0, 0, 0, 0)
        else:
            self.notice.setText("\n".join(warnings))
            self.notice.show()
            self._top.setContentsMargins(8, 8, 8, 0)
        if self.cards:
            self._relayout()
        else:
            self._preferred = self.notice.heightForWidth(max(400, self.width() - 16)) \
                + 24 if warnings else 0
            self.setMinimumHeight(min(self._preferred, self.MIN_NOTICE))
        return True

    MIN_NOTICE = 120   # px of a long notice shown before it scrolls

    def preferred_height(self) -> int:
        """The height that shows up to two rows of cards (and the notice) whole; the
        minimum is one row, the rest scrolls, so the window fits a small screen."""
        return max(self._preferred, self.minimumHeight())

    def restyle(self) -> None:
        c = theme.colors()
        self.notice.setStyleSheet(
            f"QLabel#cardsNotice {{ background: {c.banner_warn}; color: {c.text}; "
            f"border-left: 4px solid {c.warning}; padding: 8px 12px; }}")
        for card in self.cards.values():
            card.restyle()

    def update_snapshot(self, snap: Snapshot, units: UnitSystem, thresholds: Thresholds,
                        overlays: dict[int, Overlay]) -> bool:
        """Update every card; True when the cards' layout (and height) changed."""
        if not self.waiting.isHidden():
            self.waiting.hide()
        if units != self._units:
            self._units = units
            self.show_hints(self._hints)
        new = [g.index for g in snap.gpus if g.index not in self.cards]
        gone = [i for i in self.cards if i not in {g.index for g in snap.gpus}] \
            if len(self.cards) + len(new) > len(snap.gpus) else []
        for index in gone:       # a cluster GPU gone for long is no longer listed
            card = self.cards.pop(index)
            self._grid.removeWidget(card)
            card.deleteLater()
        for index in new:
            card = self.cards[index] = GpuCard(index)
            card.set_level(self._levels.get(index), self._hint_lines.get(index, ()),
                           self._reasons.get(index))
            card.set_selected(index == self.focused_gpu)
            card.activated.connect(self._card_activated)
        if new or gone:
            self._relayout()
            self._worst_shown = None
            self.show_worst()
        hosts = host_states(snap.gpus)
        regroup = [h.gpus for h in hosts] != [h.gpus for h in self._hosts]
        self._hosts = hosts
        if regroup:
            self._relayout()
        for state in hosts:
            self._headers[state.host].show_state(state)
        history = self.history
        for g in snap.gpus:
            self.cards[g.index].update_sample(
                g, units, thresholds, overlays.get(g.index), snap.timestamp_s,
                None if history is None else history.gpu(g.index))
        if any(c.height_changed for c in self.cards.values()):
            for c in self.cards.values():
                c.height_changed = False
            self._relayout()
            return True
        return bool(new or gone or regroup)

    # hints and focus ----------------------------------------------------------------
    def show_hints(self, hints: Iterable[Hint]) -> None:
        """The advisor's open hints (``WindowAdvisor.hints_changed``): each card's outline
        is the worst warning or critical hint for its GPU, and its badge names that
        hint's reason ("OOM in ~2 min"), with the hints' sentences as its tooltip."""
        self._hints = list(hints)
        reasons = card_reasons(self._hints)
        self.set_hint_levels(
            {gpu: hs[0].severity for gpu, hs in reasons.items()},
            {gpu: tuple(hint_sentence(h) for h in hs) for gpu, hs in reasons.items()},
            {gpu: badge_text(hs[0]) for gpu, hs in reasons.items()})
        self.show_worst()

    def set_hint_levels(self, levels: Mapping[int, Severity],
                        lines: Mapping[int, tuple[str, ...]] | None = None,
                        reasons: Mapping[int, str] | None = None) -> None:
        """GPU index -> its worst open hint's severity (a GPU not given has none);
        ``lines``: the hints' sentences per GPU, for the badge's tooltip; ``reasons``:
        the badge's words per GPU (else the severity's)."""
        self._levels = dict(levels)
        self._hint_lines = dict(lines or {})
        self._reasons = dict(reasons or {})
        for index, card in self.cards.items():
            card.set_level(self._levels.get(index), self._hint_lines.get(index, ()),
                           self._reasons.get(index))

    def worst_gpu(self) -> int | None:
        """The GPU of the worst open hint (critical before warning, lowest index first);
        None when no card has one."""
        if not self._levels:
            return None
        return min(self._levels, key=lambda i: (-self._levels[i].rank, i))

    def show_worst(self) -> None:
        """Scroll the worst card into view, where the cards scroll: a critical GPU in
        the second row of eight is never hidden under the fold."""
        worst = self.worst_gpu()
        card = None if worst is None else self.cards.get(worst)
        if worst is None or card is None:
            self._worst_shown = None
            return
        shown = (worst, self._levels[worst])
        if shown != self._worst_shown:      # only when it changes: a user may scroll away
            self._worst_shown = shown
            # after the layout has placed a card that came with this sample
            QTimer.singleShot(0, lambda: self._scroll_to(worst))

    def _scroll_to(self, index: int) -> None:
        card = self.cards.get(index)
        if card is not None:
            self.ensureWidgetVisible(card, 0, 0)

    def set_focused_gpu(self, index: int | None) -> None:
        """Mark the GPU the window is focused on (None: all), without a signal."""
        self.focused_gpu = index
        for i, card in self.cards.items():
            card.set_selected(i == index)

    def _card_activated(self, index: int) -> None:
        """A click (or Enter/Space) on a card: focus that GPU, or all again if it was."""
        index = ALL_GPUS if index == self.focused_gpu else index
        self.set_focused_gpu(None if index == ALL_GPUS else index)
        self.focus_requested.emit(index)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and self.focused_gpu is not None:
            self.set_focused_gpu(None)
            self.focus_requested.emit(ALL_GPUS)
            return
        super().keyPressEvent(event)

    def _groups(self) -> list[tuple[HostHeader | None, list[int]]]:
        """The cards in the order shown: one group of all, or one per host with its
        header (headers of hosts no longer listed are dropped)."""
        groups = [(h.host, [i for i in h.gpus if i in self.cards]) for h in self._hosts]
        for host in set(self._headers) - {h.host for h in self._hosts}:
            header = self._headers.pop(host)
            self._grid.removeWidget(header)
            header.deleteLater()
        if not groups or sum(len(g) for _, g in groups) != len(self.cards):
            return [(None, sorted(self.cards))]
        return [(self._headers.setdefault(host, HostHeader()), gpus) for host, gpus in groups]

    def _relayout(self) -> None:
        for widget in (*self.cards.values(), *self._headers.values()):
            self._grid.removeWidget(widget)
        self._grid.setRowStretch(self._grid.rowCount() - 1, 0)
        cols = columns_for(len(self.cards))
        row = 0
        headers = 0
        for header, gpus in self._groups():
            if header is not None:
                self._grid.addWidget(header, row, 0, 1, cols)
                headers += 1
                row += 1
            for i, index in enumerate(gpus):
                self._grid.addWidget(self.cards[index], row + i // cols, i % cols)
            row += -(-len(gpus) // cols)
        for c in range(4):
            self._grid.setColumnStretch(c, 1 if c < cols else 0)
        rows = row - headers
        self._grid.setRowStretch(row, 1)
        notice = 0 if self.notice.isHidden() else \
            self.notice.heightForWidth(max(400, self.width() - 16)) + 8
        header = max((h.sizeHint().height() + self._grid.spacing()
                      for h in self._headers.values()), default=0)
        self._preferred = self.height_for_rows(min(rows, 2)) + notice + header * min(headers, 2)
        self.setMinimumHeight(self.height_for_rows(min(rows, 1)) + min(notice, self.MIN_NOTICE)
                              + header * min(headers, 1))

    def height_for_rows(self, rows: int) -> int:
        """Room for ``rows`` rows of cards (budget lines included) without scrolling."""
        for c in self.cards.values():
            # a sparkline grown since the last layout pass (a card just made wide enough)
            # marks only its own row's layout stale: the card's hint is old until laid out
            if (layout := c.layout()) is not None:
                layout.activate()
        card = max((c.sizeHint().height() for c in self.cards.values()), default=150)
        m = self._grid.contentsMargins()
        return rows * card + (rows - 1) * self._grid.spacing() + m.top() + m.bottom() + 2
