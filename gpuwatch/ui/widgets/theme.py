"""Light and dark palettes, the colours that carry meaning, and pyqtgraph's matching config.

Colours are chosen once here so cards, bars, plots and the table agree: a process has
the same colour in its bar segment, its table swatch and its history plot.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Literal

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

ThemeName = Literal["system", "light", "dark"]
THEMES: tuple[ThemeName, ...] = ("system", "light", "dark")

# Process segments, in the order a GPU's processes take them. Colour-blind safe: hues of
# the Okabe–Ito and Tol palettes (blue, sky, bluish green, green, olive, violet) tuned so
# that every pair stays apart under deuteranopia (CIEDE2000 >= 11 after Machado et al.'s
# simulation, >= 19 in normal vision). No red, orange, pink or amber: those mean danger
# here (``Colors.warning``/``critical``; >= 25 away from each), and a process holding
# memory is not one. Light and dark ones alternate, so neighbours differ in lightness too.
PROCESS_COLORS = (
    "#1266cd", "#9ead3e", "#66d8ea", "#0b6359", "#b076df",
    "#186809", "#029995", "#9cd4a6", "#179c4b", "#6a5986",
)
# One colour per GPU in the time plots: the same families, lines readable on white and
# on the dark plot (lightness 40-72), pairwise >= 13 apart under deuteranopia.
GPU_COLORS = (
    "#136bce", "#80880f", "#1ec2a9", "#046b70",
    "#46bbe6", "#8e6ea7", "#257e45", "#75c35c",
)
# Budget categories, in the order they are stacked.
CATEGORY_COLORS = {
    "parameters": "#4e79a7",
    "gradients": "#59a14f",
    "optimizer": "#f28e2b",
    "activations": "#b07aa1",
    "kv_cache": "#76b7b2",
    "overhead": "#9c755f",
    "other": "#bab0ac",
}
UNEXPLAINED_COLOR = "#e15759"


@dataclass(frozen=True)
class Colors:
    """Colours that depend on light or dark. Every colour text is drawn in (text, muted,
    warning, critical, ok, on_severity) keeps a WCAG contrast of at least 4.5:1 against
    every background it is drawn on (card, window, lost_card, banner_warn and the filled
    badges), checked by the tests."""

    dark: bool
    window: str
    card: str
    card_border: str
    text: str
    muted: str
    free: str          # the free part of a memory bar
    other: str         # memory used by no listed process (driver, unlisted processes)
    reserved: str      # driver-reserved memory
    lost: str
    warning: str
    critical: str
    ok: str
    banner_info: str
    banner_warn: str
    plot_bg: str
    plot_fg: str
    grid_alpha: float
    lost_card: str     # a lost GPU's card: shaded, behind its faded last known figures
    focus: str         # the keyboard focus ring and the chosen GPU's mark
    hover: str         # a card's outline under the mouse
    on_severity: str   # text on a filled warning or critical badge


LIGHT = Colors(
    dark=False, window="#f4f5f7", card="#ffffff", card_border="#d5d8dd", text="#1d2330",
    muted="#5c6573", free="#e6e9ee", other="#9aa3ae", reserved="#c3c9d1", lost="#b4b9c0",
    warning="#8f5600", critical="#c62828", ok="#2e7d32", banner_info="#dbe9fb",
    banner_warn="#fde7c3", plot_bg="#ffffff", plot_fg="#3c4452", grid_alpha=0.25,
    lost_card="#f9eeee", focus="#1d5fbf", hover="#7d8796", on_severity="#ffffff",
)
DARK = Colors(
    dark=True, window="#1b1e24", card="#252932", card_border="#363b46", text="#e6e8eb",
    muted="#9aa3b0", free="#323844", other="#6d7582", reserved="#4a515d", lost="#4b505a",
    warning="#ffb74d", critical="#ff6b6b", ok="#81c784", banner_info="#1f3550",
    banner_warn="#3d2d10", plot_bg="#20242b", plot_fg="#c5cad3", grid_alpha=0.18,
    lost_card="#2f2327", focus="#6ea8fe", hover="#8a93a0", on_severity="#1b1e24",
)

_current: Colors = LIGHT


def colors() -> Colors:
    return _current


class ProcessColors:
    """Which colour each process has: the same on every widget (bar, table, plot) for as
    long as the window runs.

    Colours are handed out per GPU, in the order of its bar: a process new to a GPU takes
    the first colour that no other process there has (when all are taken, the least used
    one that its neighbours in the bar don't have), and keeps it while it stays. Each GPU
    starts at its own place in the palette, so the ranks of a job on eight GPUs differ in
    the table too. A process that also runs on another GPU keeps the colour it has there."""

    LIMIT = 65536    # pids remembered before starting over

    def __init__(self, palette: tuple[str, ...] = PROCESS_COLORS) -> None:
        self.palette = tuple(QColor(c) for c in palette)
        self._index: dict[int, int] = {}        # pid -> palette index
        self._colors: dict[int, QColor] = {}    # pid -> its (shared) colour
        self._on_gpu: dict[int, tuple[int, ...]] = {}   # gpu -> its pids, in bar order

    def color(self, pid: int) -> QColor:
        """The pid's colour; one never placed on a GPU (a replayed process) gets one from
        its number."""
        color = self._colors.get(pid)
        if color is None:
            color = self._set(pid, zlib.crc32(str(pid).encode()) % len(self.palette))
        return color

    def place(self, gpu: int, pids: tuple[int, ...]) -> set[int]:
        """Colour the processes on ``gpu`` (``pids`` in bar order); returns the pids whose
        colour changed (only ever one that was away from this GPU and whose colour another
        process there has taken since)."""
        before = set(self._on_gpu.get(gpu, ()))
        self._on_gpu[gpu] = pids
        n = len(self.palette)
        used = [0] * n
        newcomers = []
        for pos, pid in enumerate(pids):
            if pid in before and pid in self._index:
                used[self._index[pid]] += 1
            else:
                newcomers.append(pos)
        changed = set()
        for pos in newcomers:
            pid = pids[pos]
            current = self._index.get(pid)
            if current is not None and (not used[current] or self._elsewhere(pid, gpu)):
                used[current] += 1
                continue
            around = {self._index.get(pids[pos - 1]) if pos else None,
                      self._index.get(pids[pos + 1]) if pos + 1 < len(pids) else None}
            choice = min(range(n), key=lambda i: (used[i], i in around, (i - gpu) % n))
            used[choice] += 1
            if current is not None and current != choice:
                changed.add(pid)
            self._set(pid, choice)
        return changed

    def _elsewhere(self, pid: int, gpu: int) -> bool:
        return any(pid in pids for g, pids in self._on_gpu.items() if g != gpu)

    def _set(self, pid: int, index: int) -> QColor:
        if len(self._colors) > self.LIMIT:
            shown = {p for pids in self._on_gpu.values() for p in pids}
            self._colors = {p: c for p, c in self._colors.items() if p in shown}
            self._index = {p: i for p, i in self._index.items() if p in shown}
        self._index[pid] = index
        color = self._colors[pid] = self.palette[index]
        return color


PROCESSES = ProcessColors()


def process_color(pid: int) -> QColor:
    """The pid's colour (see :class:`ProcessColors`). Shared: don't modify it
    (``lighter()``/``darker()`` return new colours)."""
    return PROCESSES.color(pid)


def place_processes(gpu: int, pids: tuple[int, ...]) -> set[int]:
    """Colour the processes on one GPU, in the order of its bar (see
    :meth:`ProcessColors.place`); returns the pids whose colour changed."""
    return PROCESSES.place(gpu, pids)


def gpu_color(index: int) -> QColor:
    return QColor(GPU_COLORS[index % len(GPU_COLORS)])


def system_prefers_dark() -> bool:
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def resolve(name: str) -> Colors:
    if name == "dark":
        return DARK
    if name == "light":
        return LIGHT
    return DARK if system_prefers_dark() else LIGHT


def _palette(c: Colors) -> QPalette:
    p = QPalette()
    roles = {
        QPalette.ColorRole.Window: c.window,
        QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.card,
        QPalette.ColorRole.AlternateBase: "#2b303a" if c.dark else "#f7f8fa",
        QPalette.ColorRole.Text: c.text,
        QPalette.ColorRole.Button: c.card,
        QPalette.ColorRole.ButtonText: c.text,
        QPalette.ColorRole.ToolTipBase: c.card,
        QPalette.ColorRole.ToolTipText: c.text,
        QPalette.ColorRole.PlaceholderText: c.muted,
        QPalette.ColorRole.Highlight: "#3d6fb6" if c.dark else "#2f6fd0",
        QPalette.ColorRole.HighlightedText: "#ffffff",
        QPalette.ColorRole.Mid: c.card_border,
        QPalette.ColorRole.Midlight: c.card_border,
        QPalette.ColorRole.Dark: c.card_border,
        QPalette.ColorRole.Link: "#6ea8fe" if c.dark else "#1d5fbf",
    }
    for role, value in roles.items():
        p.setColor(role, QColor(value))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText,
                 QPalette.ColorRole.ButtonText):
        p.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.muted))
    return p


def apply(app: QApplication, name: str) -> Colors:
    """Switch the whole application to a theme; returns the colours now in force."""
    global _current
    _current = resolve(name)
    # Set once: replacing the style deletes the old one while widgets with a style
    # sheet of their own (and windows awaiting deletion) may still be polished by it.
    # Once a style sheet is set, the application's style is Qt's style-sheet wrapper
    # (no name of its own) around the Fusion style set here before it.
    style = app.style()
    if (style.name().lower() != "fusion"
            and style.metaObject().className() != "QStyleSheetStyle"):
        app.setStyle("Fusion")
    app.setPalette(_palette(_current))
    pg.setConfigOptions(background=_current.plot_bg, foreground=_current.plot_fg,
                        antialias=True)
    return _current


def stylesheet(c: Colors) -> str:
    """Widget styling on top of the palette: cards, badges, the banner, muted text."""
    return f"""
QFrame#gpuCard {{ background: {c.card}; border: 1px solid {c.card_border}; border-radius: 8px; }}
QFrame#gpuCard[lost="true"] {{ background: {c.lost_card}; border: 1px solid {c.critical}; }}
QFrame#gpuCard[lost="true"] QLabel {{ color: {c.muted}; }}
QFrame#gpuCard QLabel {{ background: transparent; border: none; }}
QPushButton:checked {{ background: {"#3d6fb6" if c.dark else "#2f6fd0"}; color: #ffffff;
                      border: 1px solid {"#3d6fb6" if c.dark else "#2f6fd0"}; border-radius: 3px;
                      padding: 4px 10px; }}
QLabel[muted="true"] {{ color: {c.muted}; }}
QFrame#banner {{ background: {c.banner_info}; border-bottom: 1px solid {c.card_border}; }}
QFrame#banner[fallback="true"] {{ background: {c.banner_warn}; }}
QFrame#banner QLabel {{ color: {c.text}; }}
QTableView {{ gridline-color: {c.card_border}; }}
QHeaderView::section {{ padding: 3px 6px; }}
QStatusBar QLabel {{ padding: 0 6px; }}
"""
