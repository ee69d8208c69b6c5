"""The row above the time plots: the window buttons (1 min … 24 h), what state the plots
are in, and Pause/Live."""

from __future__ import annotations

from PySide6.QtWidgets import QButtonGroup, QHBoxLayout, QLabel, QPushButton, QWidget

from gpuwatch.ui.settings import PLOT_WINDOWS_S

WINDOW_LABELS = {60: "1 min", 600: "10 min", 3600: "1 h", 86400: "24 h"}


class PlotControls:
    """The buttons and label of the bar, laid out in :attr:`layout`; ``owner`` parents
    the button group."""

    def __init__(self, owner: QWidget) -> None:
        self.layout = bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(QLabel("Window:"))
        self.window_buttons = QButtonGroup(owner)
        for i, seconds in enumerate(PLOT_WINDOWS_S, start=1):
            b = QPushButton(WINDOW_LABELS[seconds])
            b.setCheckable(True)
            b.setProperty("window_s", seconds)
            b.setToolTip(f"Show the last {WINDOW_LABELS[seconds]} ({i})")
            b.setAccessibleName(f"Plot window {WINDOW_LABELS[seconds]}")
            b.setAccessibleDescription(f"Show the last {WINDOW_LABELS[seconds]} in the time "
                                       f"plots (key {i})")
            self.window_buttons.addButton(b, seconds)
            bar.addWidget(b)
        bar.addStretch(1)
        self.state_label = QLabel()
        self.state_label.setProperty("muted", True)
        bar.addWidget(self.state_label)
        self.pause_button = QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.pause_button.setToolTip("Freeze the plots to scroll back (Space); sampling and "
                                     "recording go on. Drag a plot to pan.")
        self.pause_button.setAccessibleName("Pause the plots")
        self.pause_button.setAccessibleDescription(
            "Freeze the time plots to scroll back; sampling goes on (Space)")
        bar.addWidget(self.pause_button)

    def show_window(self, seconds: int) -> None:
        button = self.window_buttons.button(seconds)
        if button is not None:
            button.setChecked(True)

    def show_live(self, live: bool) -> None:
        """Pause reads Live while paused; the label says sampling goes on."""
        if self.pause_button.isChecked() == live:
            self.pause_button.blockSignals(True)
            self.pause_button.setChecked(not live)
            self.pause_button.blockSignals(False)
        self.pause_button.setText("Pause" if live else "Live")
        self.pause_button.setAccessibleName("Pause the plots" if live else
                                            "Follow the newest sample again")
        self.state_label.setText("" if live else "Paused (still sampling) — drag to scroll back")
