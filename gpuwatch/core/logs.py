"""The window's log: a rotated file in the user's state folder, stderr with --verbose.

``$XDG_STATE_HOME/gpuwatch/gpuwatch.log`` (``~/.local/state/gpuwatch``), at most
:data:`MAX_BYTES`, with :data:`BACKUPS` older files beside it (``gpuwatch.log.1`` …).
It records INFO and above (DEBUG with ``--verbose``); stderr gets warnings, or
everything the file gets with ``--verbose``. Help → About shows where it is.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path

LOGGER = "gpuwatch"
FILE_NAME = "gpuwatch.log"
MAX_BYTES = 1024 * 1024
BACKUPS = 3
FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


@dataclass(frozen=True)
class LogSetup:
    file: Path | None           # None: no file (not asked for, or it cannot be written)
    verbose: bool
    problem: str | None = None  # why there is no file, where one was asked for


_current = LogSetup(None, False)


def state_dir() -> Path:
    import platformdirs

    return platformdirs.user_state_path("gpuwatch", appauthor=False)


def current() -> LogSetup:
    """The setup in force (what Help → About shows)."""
    return _current


def setup_logging(verbose: bool = False, to_file: bool = True, folder: Path | None = None,
                  max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> LogSetup:
    """Route the ``gpuwatch`` loggers to stderr and, with ``to_file``, the rotated file.
    Calling it again replaces what an earlier call installed."""
    global _current
    logger = logging.getLogger(LOGGER)
    for handler in [h for h in logger.handlers if getattr(h, "_gpuwatch", False)]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    formatter = logging.Formatter(FORMAT)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(formatter)
    handlers: list[logging.Handler] = [console]
    path: Path | None = None
    problem = None
    if to_file:
        from logging.handlers import RotatingFileHandler  # ~10 ms: only runs with a file

        path = (folder or state_dir()) / FILE_NAME
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            file_handler = RotatingFileHandler(
                path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        except OSError as exc:
            problem = f"cannot write the log file {path}: {exc.strerror or exc}"
            path = None
        else:
            file_handler.setFormatter(formatter)
            handlers.append(file_handler)
    for handler in handlers:
        handler._gpuwatch = True              # type: ignore[attr-defined]
        logger.addHandler(handler)
    _current = LogSetup(path, verbose, problem)
    if problem:
        logger.warning("%s; logging to stderr only", problem)
    return _current
