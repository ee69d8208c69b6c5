"""The "system" theme follows the desktop's light/dark switch while the window runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.system_theme import SystemThemeFollower
from gpuwatch.ui.widgets import theme


def _window_colour() -> str:
    return QApplication.instance().palette().color(QPalette.ColorRole.Window).name()


def _alive(obj) -> bool:
    from shiboken6 import isValid

    return isValid(obj)


def _switch(monkeypatch, dark: bool) -> None:
    """The desktop switches: Qt's hints now answer ``dark`` and announce the change."""
    monkeypatch.setattr(theme, "system_prefers_dark", lambda: dark)
    scheme = Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light
    QGuiApplication.styleHints().colorSchemeChanged.emit(scheme)


def test_a_system_switch_restyles_a_window_on_the_system_theme(make_window, monkeypatch,
                                                               qtbot):
    monkeypatch.setattr(theme, "system_prefers_dark", lambda: False)
    window = make_window()
    window.apply_preferences(window.prefs, initial=True)     # "system", light now
    follower = SystemThemeFollower(window)
    assert follower.available                                # Qt >= 6.5
    assert not theme.colors().dark
    light = _window_colour()
    _switch(monkeypatch, dark=True)
    assert theme.colors().dark
    assert _window_colour() != light
    assert QApplication.instance().styleSheet() == theme.stylesheet(theme.colors())
    _switch(monkeypatch, dark=False)
    assert not theme.colors().dark and _window_colour() == light
    follower.deleteLater()                   # gone with its window, as in the app
    qtbot.waitUntil(lambda: not _alive(follower))


def test_a_chosen_theme_stays_whatever_the_system_does(make_window, monkeypatch):
    monkeypatch.setattr(theme, "system_prefers_dark", lambda: False)
    window = make_window()
    window.prefs.theme = "light"
    window.apply_preferences(window.prefs, initial=True)
    SystemThemeFollower(window)
    light = _window_colour()
    _switch(monkeypatch, dark=True)
    assert not theme.colors().dark and _window_colour() == light
