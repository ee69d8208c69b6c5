"""Help → About: the version, the licence, and where gpuwatch keeps its files."""

from __future__ import annotations

import platform
from html import escape
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, QUrl, qVersion
from PySide6.QtWidgets import QMessageBox, QWidget

from gpuwatch import __version__
from gpuwatch.core import logs
from gpuwatch.ui import autostart
from gpuwatch.ui.app_icon import app_icon

PROJECT_URL = "https://github.com/gpuwatch/gpuwatch"


def _path_row(label: str, path: Path | str | None, note: str = "") -> str:
    if path is None:
        return f"<tr><td>{label}</td><td><i>{escape(note or 'none')}</i></td></tr>"
    folder = Path(path).parent.as_posix()
    link = QUrl.fromLocalFile(folder).toString()
    text = escape(str(path))
    suffix = f" <i>({escape(note)})</i>" if note else ""
    return f'<tr><td>{label}</td><td><a href="{link}">{text}</a>{suffix}</td></tr>'


def about_html(settings_path: str) -> str:
    from gpuwatch.sessions.paths import sessions_dir

    setup = logs.current()
    log_note = ("debug messages too (--verbose)" if setup.verbose else "") if setup.file \
        else (setup.problem or "not written in this run")
    start = autostart.autostart_path()
    rows = "".join((
        _path_row("Log file", setup.file, log_note),
        _path_row("Settings", settings_path),
        _path_row("Sessions", sessions_dir() / "…"),
        _path_row("Start at login", start if autostart.is_enabled() else None,
                  "" if autostart.is_enabled() else f"off (would be {start})"),
    ))
    return (f"<h3>gpuwatch {escape(__version__)}</h3>"
            "<p>GPU memory monitor and advisor for deep learning.</p>"
            f"<p>MIT licence · <a href='{PROJECT_URL}'>{PROJECT_URL}</a><br>"
            f"Qt {escape(qVersion())}, PySide6 {escape(pyside_version)}, "
            f"Python {escape(platform.python_version())}</p>"
            f"<table cellspacing='4'>{rows}</table>")


def show_about(parent: QWidget, settings_path: str) -> None:
    box = QMessageBox(parent)
    box.setWindowTitle("About gpuwatch")
    box.setIconPixmap(app_icon().pixmap(64, 64))
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setText(about_html(settings_path))
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
    box.setStandardButtons(QMessageBox.StandardButton.Close)
    box.setAccessibleName("About gpuwatch")
    box.exec()
