"""A home for the advisor's hints: severity, what was seen, what to do.

The advisor fills it through :meth:`AdvisorPanel.set_hints`; until then it shows its
empty state. :class:`HintView` is deliberately plain so any rule engine can feed it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from gpuwatch.ui import theme

Severity = Literal["info", "warning", "critical"]
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
SEVERITY_LABELS = {"critical": "Critical", "warning": "Warning", "info": "Info"}


@dataclass(frozen=True)
class HintView:
    severity: Severity
    title: str
    evidence: str = ""
    action: str = ""
    gpu: int | None = None
    pid: int | None = None


class AdvisorPanel(QWidget):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.hints: list[HintView] = []
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setSelectionMode(QListWidget.SelectionMode.NoSelection)
        self.empty = QLabel("No hints — nothing needs your attention.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setProperty("muted", True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.empty)
        layout.addWidget(self.list)
        self.set_hints([])

    def set_hints(self, hints: list[HintView]) -> None:
        self.hints = sorted(hints, key=lambda h: SEVERITY_ORDER.get(h.severity, 3))
        self.list.clear()
        c = theme.colors()
        colors = {"critical": c.critical, "warning": c.warning, "info": c.muted}
        for h in self.hints:
            where = " · ".join(x for x in (
                None if h.gpu is None else f"GPU {h.gpu}",
                None if h.pid is None else f"pid {h.pid}") if x)
            label = QLabel(
                f"<span style='color:{colors.get(h.severity, c.muted)}'><b>"
                f"{SEVERITY_LABELS.get(h.severity, h.severity)}</b></span> "
                f"<b>{html.escape(h.title)}</b>"
                + (f" <span style='color:{c.muted}'>({where})</span>" if where else "")
                + (f"<br>{html.escape(h.evidence)}" if h.evidence else "")
                + (f"<br><i>{html.escape(h.action)}</i>" if h.action else ""))
            label.setWordWrap(True)
            label.setContentsMargins(6, 4, 6, 4)
            item = QListWidgetItem()
            item.setSizeHint(label.sizeHint())
            self.list.addItem(item)
            self.list.setItemWidget(item, label)
        self.empty.setVisible(not self.hints)
        self.list.setVisible(bool(self.hints))
