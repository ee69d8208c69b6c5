"""Memory of the shown window over a long run: does it stay flat once warmed up?

Runs the real window (``gpuwatch gui``'s launch: sampler thread, bridge, recording
controller, tray, the window shown) on a simulated scenario (``churn`` by default: a
process starts every few seconds, so anything kept per process, per string or per pid
shows) at a time scale, for a wall-clock time, and prints once a minute:

- ``rss``: the resident set of the process (``VmRSS``), what a user's system monitor shows;
- ``heap``: bytes glibc's malloc has handed out and not had back (``mallinfo2``
  ``uordblks + hblkhd``): RSS less fragmentation, free lists and mapped libraries;
- ``free``: bytes malloc holds but has not handed out (``fordblks``): what fragmentation
  and freed-but-kept memory add to RSS;
- ``py``: bytes the Python allocator traced (``--tracemalloc`` only: it slows the
  window by a factor of two or more, so those runs are for finding, not for figures);
- ``hist``: the bytes of the window's history arrays (GPU rings preallocated for a day;
  the processes' rings grow with their rows, up to an hour each), and how many of them
  are resident (``mincore``): an array left unfilled takes its pages only as rows are
  written, so its bytes stay flat while the resident set under it grows;
- ``rows`` and ``texts``: the process table's rows and laid-out strings it keeps;
- with ``--maps``: the resident memory by kind of mapping, to tell malloc's main heap
  from the threads' arenas (``mallinfo2`` covers the main one only), Python's own
  arenas and mapped files;
- with ``--arenas``: malloc's main arena (size, bytes in use, chunks of their own
  ``mmap``), each thread arena's bytes in use and free (``malloc_info``: the sampler's,
  the session recorder's with SQLite's page cache) and Python's small-object arenas
  (``sys._debugmallocstats``);
- with ``--types``: the objects the cycle collector tracks (those made after start-up,
  which is frozen), and the types whose count grew most since the warm-up.

``--release`` adds, at the end, what clearing Qt's pixmap cache, a full collection and
``malloc_trim`` would give back: memory held by caches and free lists, not in use.

At the end: the growth from the end of ``--warmup`` to the last reading and the slope
over those readings (MB a minute), and with ``--tracemalloc`` the allocation sites whose
memory grew most between the two (tracebacks, newest frame last).

The window is offscreen unless ``QT_QPA_PLATFORM``/``DISPLAY`` say otherwise, sized
1280×800 as on a laptop, Processes tab in front. ``PYTHONPATH=OTHER_CHECKOUT`` measures
another commit with the same script.

Run (30 min at ×30; start it in the background, it prints as it goes):
    nice -n 5 .venv/bin/python benchmarks/window_memory.py --minutes 30 --time-scale 30
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import ctypes.util
import gc
import os
import re
import sys
import tempfile
import time
import tracemalloc

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY")
                      else "xcb")

MB = 1024 * 1024
SLACK = 0.1   # minutes: a reading due at the end of the warm-up may come a little early


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


class Readings:
    """The per-minute readings, printed as they come."""

    def __init__(self, traced: bool, warmup_min: float, maps: bool = False,
                 arenas: bool = False, types: bool = False) -> None:
        self.traced = traced
        self.maps = maps
        self.arenas = arenas
        self.types = types
        self.warm_types: collections.Counter[str] | None = None
        self.last_types: collections.Counter[str] | None = None
        self.warmup_min = warmup_min
        self.rows: list[dict[str, float]] = []
        self.t0 = time.monotonic()
        self.warm_snapshot: tracemalloc.Snapshot | None = None
        self.window = None
        self.top_types = 12

    def read(self) -> None:
        minute = (time.monotonic() - self.t0) / 60
        row = {"min": minute, "rss": rss_bytes() / MB}
        heap = malloc_bytes()
        if heap is not None:
            row["heap"], row["free"] = heap[0] / MB, heap[1] / MB
        if self.traced:
            row["py"] = tracemalloc.get_traced_memory()[0] / MB
        history = getattr(self.window, "history", None)
        if history is not None:
            nbytes = history.nbytes
            row["hist"] = (nbytes() if callable(nbytes) else nbytes) / MB
            resident = resident_bytes(history_arrays(history))
            if resident is not None:
                row["hist resident"] = resident / MB
        table = getattr(getattr(self.window, "processes", None), "table", None)
        if table is not None:
            row["rows"] = table.model().rowCount()
            row["texts"] = _laid_out_texts(table)
        self.rows.append(row)
        parts = [f"{minute:5.1f} min", f"rss {row['rss']:7.1f} MB"]
        if "heap" in row:
            parts.append(f"heap {row['heap']:7.1f} MB · free {row['free']:5.1f} MB")
        if "py" in row:
            parts.append(f"py {row['py']:7.2f} MB")
        if "hist" in row:
            parts.append(f"hist {row['hist']:6.1f} MB"
                         + (f" ({row['hist resident']:.1f} resident)"
                            if "hist resident" in row else ""))
        if "rows" in row:
            parts.append(f"rows {row['rows']:4.0f}, texts {row['texts']:5.0f}")
        if self.maps:
            kinds = rss_by_mapping()
            row.update(kinds)
            parts.append(", ".join(f"{k} {v:.1f}" for k, v in kinds.items()))
        info = mallinfo() if self.arenas else None
        if info is not None:
            row["main in use"], row["mmapped"] = info.uordblks / MB, info.hblkhd / MB
            parts.append(f"main arena {info.arena / MB:.1f} MB ({row['main in use']:.1f} in "
                         f"use), {info.hblks} mmapped chunks {row['mmapped']:.1f} MB")
        heaps = arenas_bytes() if self.arenas else None
        if heaps:
            row["arenas used"] = sum(u for u, _ in heaps[1:]) / MB
            row["arenas free"] = sum(f for _, f in heaps[1:]) / MB
            parts.append("arenas " + " ".join(
                f"{u / MB:.1f}+{f / MB:.1f}" for u, f in heaps[1:]) + " (used+free MB)")
        pools = pymalloc_bytes() if self.arenas else None
        if pools is not None:
            row["pymalloc"], row["pyblocks"] = pools[0] / MB, pools[1] / MB
            parts.append(f"pymalloc {row['pymalloc']:.1f} MB ({row['pyblocks']:.1f} in use)")
        if self.types:
            self.last_types = object_counts()
            row["objects"] = sum(self.last_types.values())
            parts.append(f"objects {row['objects']:.0f}")
            if self.warm_types is None and minute >= self.warmup_min - SLACK:
                self.warm_types = self.last_types
            elif self.warm_types is not None:
                grown = self.last_types.copy()
                grown.subtract(self.warm_types)
                parts.append("grew " + ", ".join(
                    f"{name} {n:+d}" for name, n in grown.most_common(4) if n > 0))
        print(" · ".join(parts), flush=True)
        if self.traced and self.warm_snapshot is None and minute >= self.warmup_min - SLACK:
            self.warm_snapshot = tracemalloc.take_snapshot()

    def summary(self, top: int) -> None:
        after = [r for r in self.rows if r["min"] >= self.warmup_min - SLACK]
        if len(after) < 2:
            print("too short a run for a growth figure (readings after the warm-up: "
                  f"{len(after)})")
            return
        first, last = after[0], after[-1]
        span = last["min"] - first["min"]
        for name in ("rss", "heap", "free", "py", "hist", "hist resident", "brk heap",
                     "thread arenas", "other anon", "files", "main in use", "mmapped",
                     "arenas used", "arenas free", "pymalloc", "pyblocks", "objects"):
            if name in first:
                slope = slope_per_minute([(r["min"], r[name]) for r in after])
                unit = "" if name == "objects" else " MB"
                print(f"{name:>4}: {first[name]:7.1f}{unit} at {first['min']:.1f} min, "
                      f"{last[name]:7.1f}{unit} at {last['min']:.1f} min: "
                      f"{last[name] - first[name]:+6.1f}{unit} over {span:.0f} min after "
                      f"the warm-up, slope {slope:+.3f}{unit}/min")
        if self.warm_types is not None and self.last_types is not None:
            grown = self.last_types.copy()
            grown.subtract(self.warm_types)
            print("object types whose count grew most since the warm-up: " + ", ".join(
                f"{name} {n:+d}" for name, n in grown.most_common(self.top_types)
                if n > 0))
        if self.traced and self.warm_snapshot is not None:
            ignore = [tracemalloc.Filter(False, tracemalloc.__file__),
                      tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
            now = tracemalloc.take_snapshot().filter_traces(ignore)
            then = self.warm_snapshot.filter_traces(ignore)
            print(f"largest growth by allocation site since {self.warmup_min:g} min:")
            for stat in now.compare_to(then, "traceback")[:top]:
                if stat.size_diff <= 0:
                    continue
                print(f"  {stat.size_diff / 1024:+9.1f} KiB ({stat.count_diff:+d} blocks), "
                      f"{stat.size / 1024:.1f} KiB now")
                for line in stat.traceback.format()[-8:]:
                    print(f"      {line.strip()}")


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


def _laid_out_texts(table: object) -> int:
    """The laid-out texts the table keeps (``cells``; ``_texts`` in older versions)."""
    cells = getattr(table, "cells", None)
    if cells is not None:
        return len(cells)
    return len(getattr(table, "_texts", ()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="churn")
    parser.add_argument("--time-scale", type=float, default=30.0)
    parser.add_argument("--minutes", type=float, default=30.0, help="wall-clock run time")
    parser.add_argument("--warmup", type=float, default=2.0,
                        help="minutes before the growth is counted")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between readings")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                        help="trace Python allocations with this many frames per traceback")
    parser.add_argument("--top", type=int, default=15, help="allocation sites listed")
    parser.add_argument("--maps", action="store_true",
                        help="also the resident MB by kind of mapping (malloc heap, thread "
                             "arenas, other anonymous memory, files)")
    parser.add_argument("--arenas", action="store_true",
                        help="also each thread arena's bytes in use and free (malloc_info) "
                             "and Python's small-object arenas (sys._debugmallocstats)")
    parser.add_argument("--release", action="store_true",
                        help="at the end, the resident set after clearing Qt's pixmap "
                             "cache, a full collection and malloc_trim")
    parser.add_argument("--types", action="store_true",
                        help="also the live objects by type, and at the end the types "
                             "whose count grew most since the warm-up")
    args = parser.parse_args()

    if args.tracemalloc:
        tracemalloc.start(args.tracemalloc)
    from PySide6.QtCore import QTimer

    import gpuwatch
    from gpuwatch.ui.app import LaunchOptions, application, launch
    from gpuwatch.ui.live.main_window import MainWindow

    print(f"gpuwatch from {os.path.dirname(gpuwatch.__file__)}, Python "
          f"{sys.version.split()[0]}, QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}; "
          f"{args.scenario} at ×{args.time_scale:g} for {args.minutes:g} min, warm-up "
          f"{args.warmup:g} min", flush=True)
    app = application()
    readings = Readings(bool(args.tracemalloc), args.warmup, args.maps, args.arenas,
                        args.types)

    def size_window() -> None:
        for widget in app.topLevelWidgets():
            if isinstance(widget, MainWindow):
                readings.window = widget
                widget.resize(1280, 800)
                widget.tabs.setCurrentIndex(0)

    QTimer.singleShot(0, size_window)
    timer = QTimer()
    timer.timeout.connect(readings.read)
    timer.start(int(args.every * 1000))
    if args.release:
        QTimer.singleShot(int(args.minutes * 60_000) + 200, release_probes)
    QTimer.singleShot(int(args.minutes * 60_000) + 500, app.quit)
    settings = os.path.join(tempfile.mkdtemp(prefix="gpuwatch-memory-"), "settings.ini")
    launch(LaunchOptions(demo=args.scenario, time_scale=args.time_scale,
                         settings_path=settings, single_instance=False))
    readings.summary(args.top)


if __name__ == "__main__":
    main()
