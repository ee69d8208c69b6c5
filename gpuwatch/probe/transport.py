"""Publishing probe documents: one JSON file per process, private to the user, atomic.

The folder is created 0700 and must belong to the user (a folder someone else made in
/tmp is refused, not used); each file is written 0600 to a temporary name and renamed,
so the monitor never reads half a document.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any


class ProbeDirectoryError(OSError):
    """The probe folder is unusable (owned by someone else, or open to others)."""


def private_dir(path: str | os.PathLike[str]) -> Path:
    folder = Path(path)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise ProbeDirectoryError(f"{folder} is not a folder")
    if info.st_uid != os.getuid():
        raise ProbeDirectoryError(f"{folder} belongs to another user; refusing to use it")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def publish(doc: dict[str, Any], folder: Path) -> Path:
    target = folder / f"{doc['pid']}.json"
    tmp = folder / f".{doc['pid']}.json.tmp"
    data = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, target)
    return target


def withdraw(pid: int, folder: Path) -> None:
    for name in (f"{pid}.json", f".{pid}.json.tmp"):
        (folder / name).unlink(missing_ok=True)
