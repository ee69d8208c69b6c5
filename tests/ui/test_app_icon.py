"""The application icon on the window (through the application), the tray's menu and
the About box."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gpuwatch.ui.about import about_html
from gpuwatch.ui.app_icon import app_icon
from gpuwatch.ui.tray import TrayController

ROOT = Path(__file__).resolve().parents[2]


def _same(a, b) -> bool:
    return a.pixmap(32, 32).toImage() == b.pixmap(32, 32).toImage()


def test_the_tray_menu_shows_the_app_icon(make_window) -> None:
    window = make_window()
    tray = TrayController(window, available=True)
    assert not tray.show_action.icon().isNull()
    assert _same(tray.show_action.icon(), app_icon())


def test_the_application_sets_the_window_icon_and_desktop_file() -> None:
    """A fresh process, as the app starts: the icon every window gets, and the desktop
    file the desktop matches the windows with."""
    probe = ("from gpuwatch.ui.app import application\n"
             "app = application()\n"
             "icon = app.windowIcon()\n"
             "print(icon.isNull(), app.desktopFileName(),"
             " *sorted({s.width() for s in icon.availableSizes()}))\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, check=True)
    null, desktop, *sizes = run.stdout.split()
    assert (null, desktop) == ("False", "gpuwatch")
    assert {16, 32, 48, 256, 512} <= {int(s) for s in sizes}


def test_about_names_the_log_settings_and_sessions(tmp_path, monkeypatch) -> None:
    from gpuwatch.core import logs

    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(logs, "_current", logs.LogSetup(tmp_path / "state" / "gpuwatch.log",
                                                         True))
    html = about_html(str(tmp_path / "gpuwatch.ini"))
    assert str(tmp_path / "state" / "gpuwatch.log") in html
    assert "debug messages too (--verbose)" in html
    assert str(tmp_path / "gpuwatch.ini") in html
    assert str(tmp_path / "data" / "sessions") in html
    assert "off (would be " + str(tmp_path / "config" / "autostart" / "gpuwatch.desktop") in html
    assert "MIT licence" in html
