"""Focusing the window on one GPU: its lines alone in the plots, its processes alone in
the table, and a bar that says so, with a button back to every GPU.

A click on a GPU's card (``CardsView.focus_requested``) or on its entry in the plots'
legend asks for it; a second click on the same, the bar's button or Esc (while the bar
shows) brings every GPU back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from gpuwatch.ui.widgets import theme

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow


class FocusBar(QFrame):
    """"GPU 3 only — plots and processes · [Show all GPUs]", shown while focused."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("focusBar")
        self.label = QLabel()
        self.label.setAccessibleName("GPU focus")
        self.show_all = QPushButton("Show all GPUs")
        self.show_all.setToolTip("Plots and process table for every GPU again (Esc)")
        self.show_all.setAccessibleName("Show all GPUs")
        self.show_all.setAccessibleDescription("Leave the one-GPU view: the plots and the "
                                               "process table show every GPU again")
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 3, 8, 3)
        row.addWidget(self.label, 1)
        row.addWidget(self.show_all)
        self.restyle()
        self.hide()

    def show_gpu(self, index: int | None) -> None:
        if index is None:
            self.hide()
            return
        self.label.setText(f"<b>GPU {index} only</b> — the plots and the process table show "
                           f"GPU {index} alone")
        self.setAccessibleName(f"Showing GPU {index} only")
        self.show()

    def restyle(self) -> None:
        c = theme.colors()
        self.setStyleSheet(f"QFrame#focusBar {{ background: {c.banner_info}; "
                           f"border-bottom: 1px solid {c.card_border}; }} "
                           f"QFrame#focusBar QLabel {{ color: {c.text}; }}")


class GpuFocus:
    """The window's one-GPU view: who asks for it, and what follows it."""

    def __init__(self, window: MainWindow) -> None:
        self.window = window
        self.index: int | None = None
        self.bar = FocusBar()
        self.bar.show_all.clicked.connect(lambda: self.set(None))
        window.plots.focus_requested.connect(self.toggle)
        cards_signal = getattr(window.cards, "focus_requested", None)
        if cards_signal is not None:
            cards_signal.connect(self.set)
        self._escape = QShortcut(QKeySequence(Qt.Key.Key_Escape), window)
        self._escape.setContext(Qt.ShortcutContext.WindowShortcut)
        self._escape.activated.connect(lambda: self.set(None))
        self._escape.setEnabled(False)

    def toggle(self, index: int) -> None:
        """A second request for the GPU shown alone brings all back."""
        self.set(None if index == self.index else index)

    def set(self, index: int | None) -> None:
        """Show GPU ``index`` alone (None, or a negative index: every GPU)."""
        if index is not None and index < 0:
            index = None
        if index == self.index:
            return
        self.index = index
        w = self.window
        w.plots.set_focus(index)
        w.processes.set_gpu_filter(index)
        marker = getattr(w.cards, "set_focused_gpu", None)
        if marker is not None:
            marker(index)
        self.bar.show_gpu(index)
        self._escape.setEnabled(index is not None)
