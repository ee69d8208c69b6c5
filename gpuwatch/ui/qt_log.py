"""Qt's own messages (a platform plugin's warning, a failed D-Bus call) into the log
file with gpuwatch's, as the ``gpuwatch.qt`` logger; stderr still shows the warnings."""

from __future__ import annotations

import logging

from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler

log = logging.getLogger("gpuwatch.qt")

# Qt's offscreen platform says this whenever a window's minimum size changes: noise about
# a feature it lacks (the screenshot run drops it too), kept for --verbose only.
NOISE = frozenset({"This plugin does not support propagateSizeHints()"})

_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def _handler(kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
    category = context.category if context is not None and context.category else ""
    prefix = f"{category}: " if category and category != "default" else ""
    level = logging.DEBUG if message in NOISE else _LEVELS.get(kind, logging.WARNING)
    log.log(level, "%s%s", prefix, message)


def route_qt_messages() -> None:
    """From now on Qt's messages go through :mod:`logging`."""
    qInstallMessageHandler(_handler)


def restore_qt_messages() -> None:
    qInstallMessageHandler(None)
