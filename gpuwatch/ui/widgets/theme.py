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

# Process segments: distinct, colour-blind-friendly-ish hues, readable on both themes.
PROCESS_COLORS = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948",
    "#76b7b2", "#ff9da7", "#9c755f", "#e15759", "#86bcb6",
)
# One colour per GPU in the time plots.
GPU_COLORS = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
    "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
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
    """Colours that depend on light or dark."""

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


LIGHT = Colors(
    dark=False, window="#f4f5f7", card="#ffffff", card_border="#d5d8dd", text="#1d2330",
    muted="#5c6573", free="#e6e9ee", other="#9aa3ae", reserved="#c3c9d1", lost="#b4b9c0",
    warning="#b36b00", critical="#c62828", ok="#2e7d32", banner_info="#dbe9fb",
    banner_warn="#fde7c3", plot_bg="#ffffff", plot_fg="#3c4452", grid_alpha=0.25,
)
DARK = Colors(
    dark=True, window="#1b1e24", card="#252932", card_border="#363b46", text="#e6e8eb",
    muted="#9aa3b0", free="#323844", other="#6d7582", reserved="#4a515d", lost="#4b505a",
    warning="#ffb74d", critical="#ff6b6b", ok="#81c784", banner_info="#1f3550",
    banner_warn="#4a3714", plot_bg="#20242b", plot_fg="#c5cad3", grid_alpha=0.18,
)

_current: Colors = LIGHT


def colors() -> Colors:
    return _current


_PROCESS_COLORS: dict[int, QColor] = {}


def process_color(pid: int) -> QColor:
    """A stable colour per pid (the same in every run, on every widget). Shared: don't
    modify it (``lighter()``/``darker()`` return new colours)."""
    color = _PROCESS_COLORS.get(pid)
    if color is None:
        if len(_PROCESS_COLORS) > 65536:
            _PROCESS_COLORS.clear()
        color = _PROCESS_COLORS[pid] = QColor(
            PROCESS_COLORS[zlib.crc32(str(pid).encode()) % len(PROCESS_COLORS)])
    return color


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
    app.setStyle("Fusion")
    app.setPalette(_palette(_current))
    pg.setConfigOptions(background=_current.plot_bg, foreground=_current.plot_fg,
                        antialias=True)
    return _current


def stylesheet(c: Colors) -> str:
    """Widget styling on top of the palette: cards, badges, the banner, muted text."""
    return f"""
QFrame#gpuCard {{ background: {c.card}; border: 1px solid {c.card_border}; border-radius: 8px; }}
QFrame#gpuCard[lost="true"] {{ background: {c.window}; border: 1px dashed {c.lost}; }}
QFrame#gpuCard[lost="true"] QLabel {{ color: {c.muted}; }}
QFrame#gpuCard QLabel {{ background: transparent; border: none; }}
QLabel#badge {{ background: {c.critical}; color: #ffffff; border-radius: 4px;
               padding: 1px 6px; font-weight: bold; }}
QFrame#gpuCard QLabel#badge, QFrame#gpuCard[lost="true"] QLabel#badge {{
    background: {c.critical}; color: #ffffff; }}
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
