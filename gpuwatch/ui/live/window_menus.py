"""The main window's menu bar: File, View, Process and Help, with their shortcuts."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from gpuwatch.ui.about import show_about
from gpuwatch.ui.settings import PLOT_WINDOWS_S
from gpuwatch.ui.shortcuts import SHORTCUTS, shortcuts_html
from gpuwatch.ui.widgets.plots import WINDOW_LABELS

if TYPE_CHECKING:
    from gpuwatch.ui.live.main_window import MainWindow


def add_action(menu: QMenu, window: MainWindow, text: str, slot: Callable,
               shortcut: str | None = None) -> QAction:
    action = QAction(text, window)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
    action.triggered.connect(slot)
    menu.addAction(action)
    return action


def build_menus(w: MainWindow, tabs: Sequence[str]) -> None:
    bar = w.menuBar()
    file = bar.addMenu("&File")
    add_action(file, w, "Save screenshot…", lambda: save_screenshot(w), SHORTCUTS["screenshot"])
    add_action(file, w, "Settings…", w.open_settings, SHORTCUTS["settings"])
    file.addSeparator()
    add_action(file, w, "Quit", w.quit, SHORTCUTS["quit"])
    view = bar.addMenu("&View")
    add_action(view, w, "Pause / live", w.plots.toggle_pause, SHORTCUTS["pause"])
    for i, seconds in enumerate(PLOT_WINDOWS_S, start=1):
        add_action(view, w, f"Last {WINDOW_LABELS[seconds]}",
                   lambda _=False, s=seconds: w.plots.set_window(s), str(i))
    view.addSeparator()
    for i, name in enumerate(tabs):
        add_action(view, w, name, lambda _=False, i=i: w.tabs.setCurrentIndex(i),
                   f"Ctrl+{i + 1}")
    add_action(view, w, "Filter processes", lambda: focus_filter(w), SHORTCUTS["filter"])
    proc = bar.addMenu("&Process")
    for action in (w.processes.copy_action, w.processes.link_action,
                   w.processes.unlink_action, w.processes.terminate_action):
        proc.addAction(action)
    help_ = bar.addMenu("&Help")
    add_action(help_, w, "Keyboard shortcuts",
               lambda: QMessageBox.information(w, "Keyboard shortcuts", shortcuts_html()),
               SHORTCUTS["help"])
    help_.addSeparator()
    about = add_action(help_, w, "About gpuwatch", lambda: show_about(w, w.settings.path))
    about.setMenuRole(QAction.MenuRole.AboutRole)


def focus_filter(w: MainWindow) -> None:
    w.tabs.setCurrentIndex(0)
    w.processes.filter.setFocus()
    w.processes.filter.selectAll()


def save_screenshot(w: MainWindow) -> None:
    path, _ = QFileDialog.getSaveFileName(
        w, "Save screenshot", f"gpuwatch-{time.strftime('%Y%m%d-%H%M%S')}.png",
        "PNG image (*.png)")
    if path:
        w.grab().save(path)
