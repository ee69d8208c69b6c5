"""Errors about session files, each naming the file and the problem."""

from __future__ import annotations


class SessionFileError(Exception):
    """A session file that cannot be read or written; the CLI exits with code 2."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class SessionExistsError(SessionFileError):
    """A new session's path is already taken (a session file is never written over)."""
