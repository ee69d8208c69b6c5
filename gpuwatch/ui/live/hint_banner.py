"""A strip above the cards with the worst warning or critical hint.

It is the window's own alert: shown where no system tray can carry notifications, or
while they are off or paused, so a hint is never lost. "Show" opens the hint in the
Advisor tab. Info hints stay in the tab.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from gpuwatch.core.hints import Hint, Severity
from gpuwatch.ui.widgets import theme

HintKey = tuple[str, int | None, int | None]


class HintBanner(QFrame):
    open_requested = Signal(object)       # HintKey

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("hintBanner")
        self.enabled = True               # False while the tray shows notifications
        self.key: HintKey | None = None
        self._text = ""
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.linkActivated.connect(lambda _: self.open_requested.emit(self.key))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 12, 6)
        layout.addWidget(self.label, 1)
        self.hide()

    def set_enabled(self, enabled: bool, hints: list[Hint] | None = None) -> None:
        self.enabled = enabled
        self.set_hints(hints or [])

    def set_hints(self, hints: list[Hint]) -> None:
        """``hints`` worst first, as ``Advisor.active`` gives them."""
        alerts = [h for h in hints if h.severity >= Severity.WARNING]
        if not self.enabled or not alerts:
            self.key = None
            self.setVisible(False)
            return
        worst = alerts[0]
        self.key = (worst.code, worst.gpu_index, worst.pid)
        c = theme.colors()
        color = c.critical if worst.severity is Severity.CRITICAL else c.warning
        more = len(alerts) - 1
        where = f"GPU {worst.gpu_index}" + ("" if worst.pid is None else f" · pid {worst.pid}")
        evidence = html.escape(worst.evidence[0]) if worst.evidence else ""
        text = (f"<span style='color:{color}'><b>{worst.severity.value.capitalize()}</b></span>"
                f"&nbsp; <b>{html.escape(worst.title)}</b> ({where})"
                + (f" — {evidence}" if evidence else "")
                + (f" · {more} more" if more else "")
                + " &nbsp;<a href='open'>Show</a>")
        if text != self._text:
            self._text = text
            self.label.setText(text)
            self.setStyleSheet(
                f"QFrame#hintBanner {{ background: {c.banner_warn}; border-left: 4px solid "
                f"{color}; border-bottom: 1px solid {c.card_border}; }} "
                f"QFrame#hintBanner QLabel {{ color: {c.text}; }}")
        self.setVisible(True)
