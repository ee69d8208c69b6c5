"""The Advisor tab: the open hints, worst first — severity, title, evidence, actions.

The window fills it from the advisor (:mod:`gpuwatch.ui.live.advisor_bridge`) through
:meth:`AdvisorPanel.set_hints`. :class:`HintView` is deliberately plain so any rule
engine (or a test) can feed it; :func:`hint_view` makes one from a core ``Hint``.
Clicking a hint emits :attr:`AdvisorPanel.hint_activated`; the window then selects
the hint's GPU and process.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QScrollArea,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from gpuwatch.core.hints import Hint
from gpuwatch.ui.widgets import theme

Severity = Literal["info", "warning", "critical"]
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
SEVERITY_LABELS = {"critical": "Critical", "warning": "Warning", "info": "Info"}


NOTHING_TO_SAY = "No hints — nothing needs your attention."


@dataclass(frozen=True)
class HintView:
    severity: Severity
    title: str
    evidence: str = ""
    action: str = ""
    gpu: int | None = None
    pid: int | None = None
    code: str = ""
    actions: tuple[str, ...] = ()      # one line each; ``action`` is kept for plain feeds
    process_name: str | None = None

    @property
    def key(self) -> tuple[str, int | None, int | None]:
        """The advisor's hint key (code, GPU, pid): stable while the hint stays open."""
        return (self.code, self.gpu, self.pid)

    @property
    def where(self) -> str:
        """"GPU 0 · pid 71310 · python": flat, so it reads inside brackets too."""
        pid = None if self.pid is None else f"pid {self.pid}"
        return " · ".join(x for x in (None if self.gpu is None else f"GPU {self.gpu}", pid,
                                      self.process_name if self.pid is not None else None)
                          if x)


def hint_view(hint: Hint) -> HintView:
    """The panel's view of an advisor hint."""
    return HintView(
        severity=hint.severity.value,  # type: ignore[arg-type]
        title=hint.title,
        evidence="\n".join(hint.evidence),
        action="; ".join(a.summary for a in hint.actions),
        gpu=hint.gpu_index, pid=hint.pid, code=hint.code,
        actions=tuple(a.summary for a in hint.actions), process_name=hint.process_name)


def hint_words(h: HintView) -> str:
    """A hint as plain words, for screen readers (its row is painted rich text)."""
    parts = [f"{SEVERITY_LABELS.get(h.severity, h.severity)}: {h.title}", h.where]
    parts += [line for line in h.evidence.splitlines() if line]
    parts += list(h.actions or ((h.action,) if h.action else ()))
    return ". ".join(p for p in parts if p)


def hint_html(h: HintView) -> str:
    c = theme.colors()
    color = {"critical": c.critical, "warning": c.warning}.get(h.severity, c.muted)
    where = h.where
    actions = h.actions or ((h.action,) if h.action else ())
    evidence = "".join(f"<br>{html.escape(line)}" for line in h.evidence.splitlines() if line)
    todo = "".join(f"<br>→ <i>{html.escape(a)}</i>" for a in actions)
    return (f"<span style='color:{color}'><b>{SEVERITY_LABELS.get(h.severity, h.severity)}"
            f"</b></span>&nbsp; <b>{html.escape(h.title)}</b>"
            + (f" <span style='color:{c.muted}'>({html.escape(where)})</span>" if where else "")
            + (f"<span style='color:{c.muted}'>{evidence}</span>" if evidence else "")
            + todo)


ROW_LINE = 1    # px: the line under each row (the list's stylesheet), below its label


class _RowDelegate(QStyledItemDelegate):
    """Gives a row's label the whole row but its bottom line. Qt's own delegate gives an
    item widget the item's *text* rectangle (a few pixels narrower), so a label whose
    height was measured for the row's width wrapped once more and lost its last line."""

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,
                             index: QModelIndex | QPersistentModelIndex) -> None:
        editor.setGeometry(option.rect.adjusted(0, 0, 0, -ROW_LINE))


class AdvisorPanel(QWidget):
    hint_activated = Signal(object)      # HintView the user clicked

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.hints: list[HintView] = []
        self._shown: list[tuple[HintView, str]] = []
        self._colors: theme.Colors | None = None
        self._stale = False         # rows not yet brought up to date (the panel was hidden)
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setItemDelegate(_RowDelegate(self.list))
        # rows are as wide as the list (re-fitted when it changes width), never wider
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.viewport().installEventFilter(self)
        self.list.setSelectionMode(QListWidget.SelectionMode.SingleSelection)
        self.list.setVerticalScrollMode(QListWidget.ScrollMode.ScrollPerPixel)
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        self.list.setAccessibleName("Advisor hints")
        self.list.setAccessibleDescription("Open hints, worst first; Enter selects the "
                                           "hint's GPU and process")
        self.empty = QLabel(NOTHING_TO_SAY)
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setProperty("muted", True)
        self.empty.setContentsMargins(8, 8, 8, 8)
        # the checks not judged yet: a list from the top left, one line a check, that
        # scrolls rather than clip its first lines in a short tab
        self._empty_scroll = QScrollArea()
        self._empty_scroll.setWidget(self.empty)
        self._empty_scroll.setWidgetResizable(True)
        self._empty_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._empty_scroll.setAccessibleName("Advisor checks not judged yet")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._empty_scroll)
        layout.addWidget(self.list)
        self.set_hints([])

    def set_hints(self, hints: list[HintView]) -> None:
        """Show ``hints`` worst first; rows whose text is unchanged are kept as they are.

        While the panel is hidden behind another tab the rows wait for it to be shown:
        laying out a word-wrapped rich-text row costs ~0.5 ms, and evidence changes often."""
        self.hints = sorted(hints, key=lambda h: SEVERITY_ORDER.get(h.severity, 3))
        self._stale = self.window().isVisible() and not self.isVisible()
        if not self._stale:
            self._show_rows()

    def showEvent(self, event: object) -> None:
        super().showEvent(event)  # type: ignore[arg-type]
        if self._stale:
            self._stale = False
            self._show_rows()

    def _show_rows(self) -> None:
        if theme.colors() is not self._colors:
            self._restyle()
        rows = [(h, hint_html(h)) for h in self.hints]
        self._empty_scroll.setVisible(not self.hints)
        self.empty.setVisible(not self.hints)
        self.list.setVisible(bool(self.hints))
        if [t for _, t in rows] == [t for _, t in self._shown]:
            self._shown = rows
            return
        selected = self.selected_key()
        self.list.setUpdatesEnabled(False)
        for i, (h, text) in enumerate(rows):
            if i < len(self._shown) and self._shown[i][1] == text:
                continue
            if i < self.list.count():
                label = self.list.itemWidget(self.list.item(i))
                assert isinstance(label, QLabel)
                label.setText(text)
                item = self.list.item(i)
            else:
                label = QLabel(text)
                label.setWordWrap(True)
                label.setTextFormat(Qt.TextFormat.RichText)
                label.setContentsMargins(8, 6, 8, 6)
                item = QListWidgetItem()
                self.list.addItem(item)
                self.list.setItemWidget(item, label)
            item.setData(Qt.ItemDataRole.AccessibleTextRole, hint_words(h))
            self._fit(item)
        while self.list.count() > len(rows):
            self.list.takeItem(self.list.count() - 1)
        self._shown = rows
        self.list.setUpdatesEnabled(True)
        if selected is not None:
            self.select_key(selected, emit=False)

    def set_pending(self, pending: list[str]) -> None:
        """What the advisor cannot judge yet, shown while there are no hints: "nothing
        needs your attention" would claim more than it knows."""
        text = NOTHING_TO_SAY
        if pending:
            text = ("No hints yet. Not judged yet:\n" + "\n".join(f"• {line}" for line in pending))
        if self.empty.text() != text:
            self.empty.setText(text)
            # a short sentence centred; a list of checks left-aligned from the top, one
            # line a check (the tab scrolls sideways for a long one)
            self.empty.setWordWrap(not pending)
            self.empty.setAlignment(
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop if pending
                else Qt.AlignmentFlag.AlignCenter)

    def _restyle(self) -> None:
        # a light selection that keeps the labels' own colours readable
        c = self._colors = theme.colors()
        self.list.setStyleSheet(
            f"QListWidget::item {{ border-bottom: 1px solid {c.card_border}; }} "
            f"QListWidget::item:selected {{ background: {c.banner_info}; }}")
        self._shown = []                          # colours are in the rows' text

    def selected_key(self) -> tuple[str, int | None, int | None] | None:
        row = self.list.currentRow()
        items = self.list.selectedItems()
        if not items or not 0 <= row < len(self.hints):
            return None
        return self.hints[row].key

    def select_key(self, key: tuple[str, int | None, int | None], emit: bool = True) -> bool:
        """Select the hint with ``key``; False when no such hint is shown."""
        for row, h in enumerate(self.hints):
            if h.key == key:
                self.list.setCurrentRow(row)
                self.list.scrollToItem(self.list.item(row))
                if emit:
                    self.hint_activated.emit(h)
                return True
        return False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        # The list's viewport changed width (the panel, or a scroll bar came or went):
        # wrapped labels change height with width.
        if event.type() == QEvent.Type.Resize and watched is self.list.viewport():
            for row in range(self.list.count()):
                self._fit(self.list.item(row))
        return super().eventFilter(watched, event)

    def _fit(self, item: QListWidgetItem) -> None:
        label = self.list.itemWidget(item)
        if label is None:
            return
        width = self.list.viewport().width()
        if width > 50 and label.hasHeightForWidth():
            hint = QSize(width, label.heightForWidth(width) + ROW_LINE)
        else:
            hint = QSize(min(width, label.sizeHint().width()) if width > 0 else
                         label.sizeHint().width(), label.sizeHint().height() + ROW_LINE)
        if item.sizeHint() != hint:
            item.setSizeHint(hint)

    def _clicked(self, item: QListWidgetItem) -> None:
        row = self.list.row(item)
        if 0 <= row < len(self.hints):
            self.hint_activated.emit(self.hints[row])
