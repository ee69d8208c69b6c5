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
  the processes' rings grow with their rows, up to an hour each);
- ``rows`` and ``texts``: the process table's rows and laid-out strings it keeps;
- with ``--maps``: the resident memory by kind of mapping, to tell malloc's main heap
  from the threads' arenas (``mallinfo2`` covers the main one only), Python's own
  arenas and mapped files.

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
import ctypes
import ctypes.util
import os
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


def malloc_bytes() -> tuple[int, int] | None:
    """(handed out, held free) by malloc (glibc's ``mallinfo2``); None elsewhere."""
    fn = getattr(LIBC, "mallinfo2", None)
    if fn is None:
        return None
    fn.restype = _Mallinfo2
    info = fn()
    return info.uordblks + info.hblkhd, info.fordblks


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

    def __init__(self, traced: bool, warmup_min: float, maps: bool = False) -> None:
        self.traced = traced
        self.maps = maps
        self.warmup_min = warmup_min
        self.rows: list[dict[str, float]] = []
        self.t0 = time.monotonic()
        self.warm_snapshot: tracemalloc.Snapshot | None = None
        self.window = None

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
            parts.append(f"hist {row['hist']:6.1f} MB")
        if "rows" in row:
            parts.append(f"rows {row['rows']:4.0f}, texts {row['texts']:5.0f}")
        if self.maps:
            kinds = rss_by_mapping()
            row.update(kinds)
            parts.append(", ".join(f"{k} {v:.1f}" for k, v in kinds.items()))
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
        for name in ("rss", "heap", "free", "py", "hist", "brk heap", "thread arenas",
                     "other anon", "files"):
            if name in first:
                slope = slope_per_minute([(r["min"], r[name]) for r in after])
                print(f"{name:>4}: {first[name]:7.1f} MB at {first['min']:.1f} min, "
                      f"{last[name]:7.1f} MB at {last['min']:.1f} min: "
                      f"{last[name] - first[name]:+6.1f} MB over {span:.0f} min after the "
                      f"warm-up, slope {slope:+.3f} MB/min")
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
    readings = Readings(bool(args.tracemalloc), args.warmup, args.maps)

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
    QTimer.singleShot(int(args.minutes * 60_000) + 500, app.quit)
    settings = os.path.join(tempfile.mkdtemp(prefix="gpuwatch-memory-"), "settings.ini")
    launch(LaunchOptions(demo=args.scenario, time_scale=args.time_scale,
                         settings_path=settings, single_instance=False))
    readings.summary(args.top)


if __name__ == "__main__":
    main()
