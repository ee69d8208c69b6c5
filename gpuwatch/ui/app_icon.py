"""The application icon: the desktop's themed ``gpuwatch`` icon where one is installed
(packaging/install.sh puts it in the user's hicolor theme), else the shipped files."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon

from gpuwatch.core.resources import resource_path

ICON_NAME = "gpuwatch"          # the icon's name in the theme, as the desktop file says
PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)


@cache
def bundled_icon() -> QIcon:
    """The icon from resources/icons/hicolor: every PNG size, and the SVG for the rest."""
    hicolor = resource_path("icons", "hicolor")
    icon = QIcon()
    for size in PNG_SIZES:
        path = hicolor / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"
        if path.is_file():
            icon.addFile(str(path))
    svg = hicolor / "scalable" / "apps" / f"{ICON_NAME}.svg"
    if svg.is_file():
        icon.addFile(str(svg))
    return icon


def app_icon() -> QIcon:
    """The icon for the window, the tray's menu and the About box."""
    return QIcon.fromTheme(ICON_NAME, bundled_icon())
