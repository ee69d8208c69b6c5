"""The desktop window (PySide6 + pyqtgraph). The only package that imports Qt."""

from __future__ import annotations

from gpuwatch.ui.app import LaunchOptions, launch

__all__ = ["LaunchOptions", "launch"]
