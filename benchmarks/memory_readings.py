"""Readings of a process's own memory for ``window_memory.py``: the resident set by kind
of mapping, glibc malloc's arenas, Python's small-object arenas, the pages under numpy
arrays that are resident, live objects by type, and what clearing caches gives back."""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import os
import re
import sys
import tempfile

MB = 1024 * 1024


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


LIBC = _libc()


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def mallinfo() -> _Mallinfo2 | None:
    fn = getattr(LIBC, "mallinfo2", None)
    if fn is None:
        return None
    fn.restype = _Mallinfo2
    return fn()


def malloc_bytes() -> tuple[int, int] | None:
    """(handed out, held free) by malloc (glibc's ``mallinfo2``); None elsewhere."""
    info = mallinfo()
    if info is None:
        return None
    return info.uordblks + info.hblkhd, info.fordblks


def arenas_bytes() -> list[tuple[int, int]] | None:
    """(handed out, held free) bytes of each of malloc's arenas, main one first, from
    glibc's ``malloc_info`` (``mallinfo2`` covers the main arena only); None elsewhere.
    Handed out counts the arena's chunks in use, not its ``mmap``-ed large blocks."""
    fn = getattr(LIBC, "malloc_info", None)
    if fn is None:
        return None
    fd, path = tempfile.mkstemp(prefix="gpuwatch-malloc-info-")
    os.close(fd)
    try:
        LIBC.fopen.restype = ctypes.c_void_p
        LIBC.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        LIBC.fclose.argtypes = [ctypes.c_void_p]
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p]
        stream = LIBC.fopen(path.encode(), b"w")
        if not stream:
            return None
        fn(0, stream)
        LIBC.fclose(stream)
        with open(path) as f:
            xml = f.read()
    finally:
        os.unlink(path)
    heaps = []
    for body in re.findall(r'<heap nr="\d+">(.*?)</heap>', xml, re.S):
        free = sum(int(v) for v in re.findall(
            r'<total type="(?:fast|rest)" count="\d+" size="(\d+)"/>', body))
        current = re.search(r'<system type="current" size="(\d+)"/>', body)
        held = int(current.group(1)) if current else 0
        heaps.append((held - free, free))
    return heaps


def pymalloc_bytes() -> tuple[int, int] | None:
    """(arenas held, bytes in allocated blocks) of Python's small-object allocator, from
    ``sys._debugmallocstats`` (written to the C stderr, so read through a file); None
    where the interpreter has no such report."""
    report = getattr(sys, "_debugmallocstats", None)
    if report is None or LIBC is None:
        return None
    sys.stderr.flush()
    LIBC.fflush(None)
    saved = os.dup(2)
    with tempfile.TemporaryFile("w+") as out:
        os.dup2(out.fileno(), 2)
        try:
            report()
            LIBC.fflush(None)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    arenas = re.search(r"(\d+) arenas \* (\d+) bytes/arena", text)
    blocks = re.search(r"# bytes in allocated blocks\s*=\s*([\d,]+)", text)
    if arenas is None or blocks is None:
        return None
    return int(arenas.group(1)) * int(arenas.group(2)), int(blocks.group(1).replace(",", ""))


PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes(arrays: list) -> int | None:
    """Bytes of the pages under ``arrays`` (numpy arrays) that are resident (``mincore``):
    a buffer left as it comes takes memory only as it is written, so its ``nbytes`` can
    stay flat while the resident set under it grows. Pages shared by two arrays count
    once. None where ``mincore`` is missing."""
    fn = getattr(LIBC, "mincore", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    pages: set[int] = set()
    for arr in arrays:
        if not arr.nbytes:
            continue
        address = arr.__array_interface__["data"][0]
        first = address - address % PAGE
        count = (address + arr.nbytes - first + PAGE - 1) // PAGE
        vec = ctypes.create_string_buffer(count)
        if fn(first, count * PAGE, vec) != 0:
            return None
        pages.update(first + i * PAGE for i, flag in enumerate(vec.raw) if flag & 1)
    return len(pages) * PAGE


def history_arrays(history: object) -> list:
    """The numpy arrays of the window's history: the GPUs' rings, the process table and
    the separate rings of processes that left it."""
    import numpy as np

    arrays = []
    for ring in getattr(history, "gpus", {}).values():
        arrays += getattr(ring, "_arrays", [])
    processes = getattr(history, "processes", None)
    table = getattr(processes, "table", None)
    if table is not None:
        arrays += [v for v in vars(table).values() if isinstance(v, np.ndarray)]
    for ring in getattr(processes, "others", {}).values():
        arrays += getattr(ring, "_arrays", [])
    return arrays


def object_counts() -> collections.Counter[str]:
    """Live objects the cycle collector tracks, by type name."""
    return collections.Counter(type(o).__name__ for o in gc.get_objects())


def rss_by_mapping() -> dict[str, float]:
    """Resident MB by kind of mapping (``/proc/self/smaps``): the main malloc heap, the
    threads' malloc arenas (64 MiB reservations, aligned to 64 MiB), other anonymous
    memory (Python's arenas, large arrays, Qt's images), and files (libraries, fonts)."""
    kinds = {"brk heap": 0.0, "thread arenas": 0.0, "other anon": 0.0, "files": 0.0}
    kind = "files"
    with open("/proc/self/smaps") as f:
        for line in f:
            first = line.split(maxsplit=6)
            if "-" in first[0] and len(first) >= 5 and ":" in first[3]:   # a mapping
                start = int(first[0].split("-")[0], 16)
                name = first[5].strip() if len(first) > 5 else ""
                if name == "[heap]":
                    kind = "brk heap"
                elif name.startswith("/"):
                    kind = "files"
                elif start % (64 * MB) == 0:       # an arena's used part starts aligned
                    kind = "thread arenas"
                else:
                    kind = "other anon"
            elif line.startswith("Rss:"):
                kinds[kind] += int(line.split()[1]) / 1024
    return kinds


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minute, MB) points."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def release_probes() -> None:
    """What the caches and malloc would give back: the resident set after clearing Qt's
    pixmap cache, after a full collection, and after ``malloc_trim`` (each step on top
    of the one before). Run at the end only: clearing changes what comes after."""
    from PySide6.QtGui import QPixmapCache

    def line(step: str) -> None:
        heap = malloc_bytes()
        kinds = rss_by_mapping()
        print(f"  {step:<28} rss {rss_bytes() / MB:7.1f} MB"
              + (f" · heap {heap[0] / MB:6.1f} MB · free {heap[1] / MB:5.1f} MB" if heap
                 else "") + " · " + ", ".join(f"{k} {v:.1f}" for k, v in kinds.items()),
              flush=True)

    print("what clearing gives back:", flush=True)
    line("as it ran")
    QPixmapCache.clear()
    line("QPixmapCache cleared")
    gc.collect()
    line("full collection")
    trim = getattr(LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)
        line("malloc_trim(0)")
