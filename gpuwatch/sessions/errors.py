"""Errors about session files, each naming the file and the problem."""

from __future__ import annotations


class SessionFileError(Exception):
    """A session file that cannot be read or written; the CLI exits with code 2."""

    def __init__(self, path: str, reason: str):
        # the message reaches a terminal: a file name or a reason quoting a damaged file
        # may hold escape sequences, shown as visible escapes instead
        from gpuwatch.core.safe_text import visible
        from gpuwatch.core.small_files import path_text

        shown = reason if reason.isprintable() else visible(reason)
        super().__init__(f"{path_text(path)}: {shown}")
        self.path = path
        self.reason = reason


class SessionExistsError(SessionFileError):
    """A new session's path is already taken (a session file is never written over)."""
