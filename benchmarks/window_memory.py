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
import os
import sys
import tempfile
import time
import tracemalloc

from memory_readings import (
    MB,
    arenas_bytes,
    history_arrays,
    mallinfo,
    malloc_bytes,
    object_counts,
    pymalloc_bytes,
    release_probes,
    resident_bytes,
    rss_by_mapping,
    rss_bytes,
    slope_per_minute,
)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen" if not os.environ.get("DISPLAY")
                      else "xcb")

SLACK = 0.1   # minutes: a reading due at the end of the warm-up may come a little early


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
        # no reading after it: the growth figures are of the window as it ran
        QTimer.singleShot(int(args.minutes * 60_000) + 200,
                          lambda: (timer.stop(), release_probes()))
    QTimer.singleShot(int(args.minutes * 60_000) + 500, app.quit)
    settings = os.path.join(tempfile.mkdtemp(prefix="gpuwatch-memory-"), "settings.ini")
    launch(LaunchOptions(demo=args.scenario, time_scale=args.time_scale,
                         settings_path=settings, single_instance=False))
    readings.summary(args.top)


if __name__ == "__main__":
    main()
