"""Reading a small input file a user named: a scenario, a ``config.json``.

Such a path may name anything: a FIFO with no writer (a plain ``open`` blocks for
ever), ``/dev/zero`` (a plain ``read`` fills memory), a folder, a huge file. The file
is opened without blocking and checked with ``fstat`` before a byte is read; only a
regular file is read, and never more than ``limit`` + 1 bytes, even if it grows while
it is read. Failures are a :class:`SmallFileError` whose ``reason`` completes a
sentence that starts with the file's name ("is a folder, not a regular file").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuwatch.core.units import format_bytes, shown


class SmallFileError(ValueError):
    """Why the file was not read, as the end of a sentence naming it."""

    def __init__(self, reason: str, kind: str = "unreadable"):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind      # "missing", "folder", "special", "too-big" or "unreadable"


def path_text(path: str | os.PathLike[str], limit: int = 200) -> str:
    """A path as a message may show it: as given when printable and short, else quoted
    and cut (a name may hold newlines or escape sequences)."""
    text = os.fspath(path)
    return text if text.isprintable() and len(text) <= limit else shown(text, limit)


def read_small_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(Path(path), flags)
    except FileNotFoundError:
        raise SmallFileError("does not exist", "missing") from None
    except IsADirectoryError:
        raise SmallFileError("is a folder, not a regular file", "folder") from None
    except (OSError, ValueError) as exc:     # ValueError: a NUL in the name
        reason = getattr(exc, "strerror", None) or str(exc)
        raise SmallFileError(f"cannot be read ({reason})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SmallFileError("is a folder, not a regular file", "folder")
        if not stat.S_ISREG(info.st_mode):
            raise SmallFileError("is not a regular file (a pipe, socket or device)", "special")
        if info.st_size > limit:
            raise SmallFileError(_too_big(limit), "too-big")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SmallFileError(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if size > limit:      # it grew while it was read
        raise SmallFileError(_too_big(limit), "too-big")
    return b"".join(chunks)


def _too_big(limit: int) -> str:
    return f"is larger than {format_bytes(limit)}, the most such a file may hold"
