"""Reading in-process probe reports (``gpuwatch.probe/1``) for the processes NVML lists.

Only files that belong to the user running gpuwatch are read, in a folder that
belongs to the user and is closed to others; symlinks, oversized files and malformed
documents are ignored (each is remembered so a bad file costs one look, not one a tick).
A report older than its process (a recycled pid) is ignored too.

A tick costs one listing of the folder, not one look per pid: the folder is opened once
(never through a symlink), its owner and mode are checked on that open folder, its
names are listed, and only the ``<pid>.json`` of a listed pid is looked at, relative to
the open folder. An unchanged file (same inode, time and size) is not read again.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from gpuwatch.core.probe_format import (
    MAX_PROBE_BYTES,
    ProbeFormatError,
    ProbeReport,
    default_probe_dir,
    parse_probe_report,
)

_SUFFIX = ".json"
_OPEN_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
# never through a symlink, and never waiting on a FIFO put where a file was
_OPEN_FILE = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class ProbeSource(Protocol):
    def read(self, pids: Iterable[int]) -> dict[int, ProbeReport]:
        """Reports for those of ``pids`` that publish one."""
        ...


class ProbeDirectory:
    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path or default_probe_dir())
        self._uid = os.getuid()
        # pid -> ((inode, mtime ns, size), the report or None when the file was refused)
        self._cache: dict[int, tuple[tuple[int, int, int], ProbeReport | None]] = {}
        self.rejected: dict[int, str] = {}       # pid -> why its file is ignored

    def _folder_ok(self, info: os.stat_result) -> bool:
        return (stat.S_ISDIR(info.st_mode) and info.st_uid == self._uid
                and not info.st_mode & 0o022)

    def read(self, pids: Iterable[int]) -> dict[int, ProbeReport]:
        wanted = pids if isinstance(pids, (set, frozenset, dict)) else set(pids)
        try:
            folder = os.open(self.path, _OPEN_FOLDER)   # a symlink or a file: refused
        except OSError:
            return {}
        out: dict[int, ProbeReport] = {}
        present: set[int] = set()
        try:
            if not self._folder_ok(os.fstat(folder)):
                return {}
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if not name.endswith(_SUFFIX):
                        continue
                    stem = name[:-len(_SUFFIX)]
                    if not (stem.isascii() and stem.isdigit()):
                        continue
                    pid = int(stem)
                    if pid not in wanted or str(pid) != stem:   # "0100.json" is not 100's
                        continue
                    present.add(pid)
                    report = self._read_one(folder, entry, pid)
                    if report is not None:
                        out[pid] = report
        except OSError:
            return {}
        finally:
            os.close(folder)
        for pid in [p for p in self._cache if p not in present]:
            del self._cache[pid]
        for pid in [p for p in self.rejected if p not in present]:
            del self.rejected[pid]
        return out

    def _read_one(self, folder: int, entry: os.DirEntry, pid: int) -> ProbeReport | None:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            self._cache.pop(pid, None)
            return None
        key = (info.st_ino, info.st_mtime_ns, info.st_size)
        cached = self._cache.get(pid)
        if cached is not None and cached[0] == key:
            return cached[1]
        report = None
        why = self._check(info)
        if why is None:
            try:
                report = self._parse(folder, entry.name, pid)
            except (OSError, ValueError, ProbeFormatError) as exc:
                why = f"unreadable: {exc}"
            except RecursionError:         # nesting 50,000 deep fits under the size cap
                why = "unreadable: nested too deeply to be a probe document"
        if why is not None:
            self.rejected[pid] = why
        else:
            self.rejected.pop(pid, None)
        self._cache[pid] = (key, report)
        return report

    def _check(self, info: os.stat_result) -> str | None:
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_uid != self._uid:
            return "belongs to another user"
        if info.st_size > MAX_PROBE_BYTES:
            return f"larger than {MAX_PROBE_BYTES} bytes"
        return None

    def _parse(self, folder: int, name: str, pid: int) -> ProbeReport:
        fd = os.open(name, _OPEN_FILE, dir_fd=folder)
        with os.fdopen(fd, "rb") as f:
            why = self._check(os.fstat(fd))     # the file opened, not the one listed
            if why is not None:
                raise ValueError(why)
            data = f.read(MAX_PROBE_BYTES + 1)
        if len(data) > MAX_PROBE_BYTES:
            raise ValueError("too large")
        report = parse_probe_report(json.loads(data))
        if report.pid != pid:
            raise ProbeFormatError(f"names pid {report.pid}, not {pid}")
        return report
