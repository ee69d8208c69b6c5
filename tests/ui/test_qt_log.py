"""Qt's own messages reach the log file through the ``gpuwatch.qt`` logger."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import qDebug, qWarning

from gpuwatch.core import logs
from gpuwatch.ui.qt_log import restore_qt_messages, route_qt_messages


def test_qt_warnings_land_in_the_log_file(qapp, tmp_path: Path, capsys) -> None:
    logger = logging.getLogger(logs.LOGGER)
    before = list(logger.handlers), logger.level
    setup = logs.setup_logging(folder=tmp_path)
    route_qt_messages()
    try:
        qWarning("QXcbConnection: a warning from a platform plugin")
        qDebug("a Qt debug line")
        qWarning("This plugin does not support propagateSizeHints()")
    finally:
        restore_qt_messages()
        for handler in [h for h in logger.handlers if h not in before[0]]:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(before[1])
    text = setup.file.read_text()
    assert "WARNING gpuwatch.qt: QXcbConnection: a warning from a platform plugin" in text
    assert "a Qt debug line" not in text                 # debug only with --verbose
    assert "propagateSizeHints" not in text              # offscreen noise: debug too
    assert "a warning from a platform plugin" in capsys.readouterr().err
