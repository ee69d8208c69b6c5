"""The "system" theme follows the desktop's light/dark switch while the window runs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from gpuwatch.ui.live.text_lines import TextLines
from gpuwatch.ui.live.window_chrome import focus_ring_css
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
    sheet = QApplication.instance().styleSheet()
    assert sheet == theme.stylesheet(theme.colors()) + focus_ring_css(theme.colors())
    window_bg = QColor(theme.colors().window)
    assert all(text._background == window_bg            # the status texts take the new colours
               for text in window.statusBar().findChildren(TextLines))
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


def test_a_theme_switch_keeps_the_applications_style(make_window, monkeypatch):
    """The style is set once: replacing it deletes the old one while widgets with a
    style sheet of their own, and windows awaiting deletion, are still polished by it."""
    from shiboken6 import getCppPointer

    window = make_window()
    style = getCppPointer(QApplication.instance().style())
    for name in ("dark", "light", "dark"):
        window.prefs.theme = name
        window.restyle()
    assert getCppPointer(QApplication.instance().style()) == style


def test_a_new_window_in_the_same_theme_leaves_the_others_unpolished(make_window, qtbot):
    """Setting the application's style sheet repolishes every widget it has, windows
    awaiting deletion too: a window opened in the theme already in force sets none."""
    from conftest import count_events
    from PySide6.QtCore import QEvent

    first = make_window()
    css = QApplication.instance().styleSheet()
    restyled = count_events(QEvent.Type.StyleChange, first)
    make_window()
    assert QApplication.instance().styleSheet() == css
    assert restyled.counts[first] == 0
