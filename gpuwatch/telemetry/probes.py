"""Reading in-process probe reports (``gpuwatch.probe/1``) for the processes NVML lists.

Only files that belong to the user running gpuwatch are read, in a folder that
belongs to the user and is closed to others; symlinks, oversized files and malformed
documents are ignored (each is remembered so a bad file costs one look, not one a tick).
A report older than its process (a recycled pid) is ignored too.
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


class ProbeSource(Protocol):
    def read(self, pids: Iterable[int]) -> dict[int, ProbeReport]:
        """Reports for those of ``pids`` that publish one."""
        ...


class ProbeDirectory:
    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path or default_probe_dir())
        self._uid = os.getuid()
        self._cache: dict[int, tuple[tuple[int, int], ProbeReport | None]] = {}
        self.rejected: dict[int, str] = {}       # pid -> why its file was ignored

    def _folder_ok(self) -> bool:
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        return (stat.S_ISDIR(info.st_mode) and info.st_uid == self._uid
                and not info.st_mode & 0o022)

    def read(self, pids: Iterable[int]) -> dict[int, ProbeReport]:
        if not self._folder_ok():
            return {}
        out: dict[int, ProbeReport] = {}
        for pid in pids:
            report = self._read_one(pid)
            if report is not None:
                out[pid] = report
        return out

    def _read_one(self, pid: int) -> ProbeReport | None:
        path = self.path / f"{pid}.json"
        try:
            info = os.lstat(path)
        except OSError:
            self._cache.pop(pid, None)
            return None
        key = (info.st_mtime_ns, info.st_size)
        cached = self._cache.get(pid)
        if cached is not None and cached[0] == key:
            return cached[1]
        report = None
        why = self._check(info)
        if why is None:
            try:
                report = self._parse(path, pid)
            except (OSError, ValueError, ProbeFormatError) as exc:
                why = f"unreadable: {exc}"
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

    def _parse(self, path: Path, pid: int) -> ProbeReport:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_PROBE_BYTES + 1)
        if len(data) > MAX_PROBE_BYTES:
            raise ValueError("too large")
        report = parse_probe_report(json.loads(data))
        if report.pid != pid:
            raise ProbeFormatError(f"names pid {report.pid}, not {pid}")
        return report
