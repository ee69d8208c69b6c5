"""The desktop window (PySide6 + pyqtgraph). The only package that imports Qt."""

from __future__ import annotations

from gpuwatch.ui import qt_guard

qt_guard.install()

from gpuwatch.ui.app import LaunchOptions, launch  # noqa: E402 - after the guard

__all__ = ["LaunchOptions", "launch"]
