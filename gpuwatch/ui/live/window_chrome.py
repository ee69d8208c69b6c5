"""The window's chrome: the notice banner, the toolbar (how often it samples, changeable
there), the status line's wording of the pace and of "paused", the keyboard focus ring,
and accessible names for the widgets the window owns directly.

"Paused" means one thing in the window: the time plots stop following the newest
sample (to scroll back). Sampling, recording and the advisor go on; the status bar says
"plots paused" beside "Sampling", and the plots' own bar says "Paused (still sampling)".
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QWidget

from gpuwatch.core.snapshot import BackendInfo, BackendKind
from gpuwatch.core.wording import plural
from gpuwatch.ui.widgets import theme

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow

INTERVALS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)


def interval_text(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:g} ms"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def build_banner(text: str | None, fallback: bool) -> tuple[QFrame, QLabel]:
    """The notice above the cards (hidden without ``text``): what the window runs on when
    it is not this machine's GPUs; ``fallback``: simulated because no driver was found."""
    banner = QFrame()
    banner.setObjectName("banner")
    banner.setProperty("fallback", fallback)
    label = QLabel(text or "")
    label.setWordWrap(True)
    row = QHBoxLayout(banner)
    row.setContentsMargins(12, 6, 12, 6)
    row.addWidget(label)
    banner.setVisible(bool(text))
    return banner, label


class IntervalBox(QComboBox):
    """The sampling interval, one of :data:`INTERVALS_S` (or the one given on the command
    line, kept as an entry of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.setAccessibleName("Sampling interval")
        self.setAccessibleDescription("How often the GPUs are sampled; the plots, the table "
                                      "and the recording follow it")
        self.setToolTip("How often the GPUs are sampled")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for seconds in INTERVALS_S:
            self.addItem(interval_text(seconds), seconds)

    def set_seconds(self, seconds: float) -> None:
        i = self.findData(seconds)
        if i < 0:
            self.addItem(interval_text(seconds), seconds)
            i = self.count() - 1
        if i != self.currentIndex():
            self.blockSignals(True)
            self.setCurrentIndex(i)
            self.blockSignals(False)

    def seconds(self) -> float:
        return float(self.currentData())


def build_toolbar(window: MainWindow) -> IntervalBox:
    """The toolbar, at the right end of the menu bar (a row of its own would cost a small
    screen 30 px of plots): "Sample every [1 s]"; a choice there is saved like one made
    in Settings."""
    bar = QWidget(window.menuBar())      # owned by the menu bar, whatever Qt does with it
    bar.setObjectName("samplingToolbar")
    bar.setAccessibleName("Sampling toolbar")
    label = QLabel("Sample every")
    label.setProperty("muted", True)
    box = IntervalBox()
    label.setBuddy(box)
    row = QHBoxLayout(bar)
    row.setContentsMargins(8, 0, 6, 0)
    row.setSpacing(6)
    row.addWidget(label)
    row.addWidget(box)
    box.set_seconds(window.prefs.interval_s)

    def chosen(_: int) -> None:
        seconds = box.seconds()
        if abs(seconds - window.prefs.interval_s) > 1e-9:
            window.apply_preferences(replace(window.prefs, interval_s=seconds))

    box.currentIndexChanged.connect(chosen)
    window.menuBar().setCornerWidget(bar, Qt.Corner.TopRightCorner)
    return box


def source_text(info: BackendInfo | None) -> str:
    """Where the samples come from, for the status bar."""
    if info is None:
        return "Waiting for the first sample"
    if info.kind is BackendKind.SIMULATED:
        return f"Simulated GPUs · scenario {info.scenario}"
    if info.kind is BackendKind.PROMETHEUS:
        return f"Prometheus · {info.hostname}"
    return f"NVML · driver {info.driver_version or '?'}"


def pace_text(interval_s: float, calm_s: float | None) -> str:
    """The status bar's pace: "every 1 s", and how often a calm window redraws."""
    sampled = f"every {interval_text(interval_s)}"
    if calm_s is None or calm_s <= interval_s:
        return sampled
    return f"{sampled} · drawn every {interval_text(calm_s)} while steady"


def state_text(sampling: str, samples: int, plots_live: bool) -> str:
    """The status bar's state: "● Sampling · plots paused · 1,234 samples"."""
    paused = "" if plots_live else " · plots paused"
    return f"{sampling}{paused} · {plural(samples, 'sample')}"


def focus_ring_color(c: theme.Colors) -> str:
    return "#6ea8fe" if c.dark else "#1d5fbf"


def focus_ring_css(c: theme.Colors) -> str:
    """A 2-px ring in the link colour on whatever has the keyboard focus. Not for the
    process table, which paints its own: a stylesheet border on it makes every new
    sample repaint the table's frame and every panel around it."""
    ring = focus_ring_color(c)
    return f"""
QPushButton:focus {{ border: 2px solid {ring}; border-radius: 3px; padding: 3px 9px; }}
QPushButton:checked:focus {{ border: 2px solid {c.text}; }}
QListWidget:focus, QTreeWidget:focus {{ border: 2px solid {ring}; }}
QCheckBox:focus {{ border: 1px dotted {ring}; }}
QTabBar::tab:focus {{ border: 2px solid {ring}; }}
"""


def name_widgets(window: MainWindow) -> None:
    """Accessible names and descriptions for what the window itself holds."""
    names = (
        (window.tabs, "Processes, budget, advisor and plan",
         "Tabs: the processes on the GPUs, the memory budget form, the advisor's hints, "
         "the hardware plan (Ctrl+1, Ctrl+2, Ctrl+3, Ctrl+4)"),
        (window.status_backend, "Data source", "Where the GPU figures come from"),
        (window.status_interval, "Sampling interval", "How often the GPUs are sampled, "
         "and how often the window redraws while nothing moves"),
        (window.status_state, "Sampling state", "Whether sampling runs, whether the plots "
         "are paused, and how many samples were taken"),
        (window.banner_label, "Notice", "What the window runs on when it is not this "
         "machine's GPUs"),
        (window.main, "Cards above, plots and tabs below", ""),
        (window.bottom, "Plots on the left, tabs on the right", ""),
    )
    for widget, name, description in names:
        widget.setAccessibleName(name)
        if description:
            widget.setAccessibleDescription(description)
