"""How long the window takes to take in one snapshot, and to open.

Update: 8 simulated GPUs × 64 processes each (512 rows), 24 h of 1 Hz GPU history
loaded, offscreen. Each tick is one *frame* as a user gets it: the window's slot
(history append, cards, table, plots) and then the event loop run until it is idle
again, which is every paint the update causes, plus the layout passes and the second
paints that some widgets schedule while painting (pyqtgraph updates its view matrix
and auto-range from inside ``paintEvent``). That is measured by processing events
until a pass delivers no ``UpdateRequest`` to the window; one ``processEvents()``
call is not enough, because paints scheduled during a paint land in the next pass.

Why not ``widget.grab()`` or ``repaint()`` of the window: both repaint every widget
once, whether it changed or not, and skip the dirty-region bookkeeping and the
layout and re-paint passes that a real frame goes through, so they measure something
else (too much where little changed, too little where a paint schedules another).
The "measures" block prints them beside the frame for comparison.

Reported for the default 10 min plot window and for the 24 h window, both as it runs
(the 24 h plot is redrawn when a new sample moves it by a pixel) and forced to redraw
every tick (the worst case, e.g. right after switching windows). Target: a frame under
16 ms. Beside wall time each line gives the GUI thread's CPU time for the frame, which
other processes on a shared machine disturb less, and the advisor's share of the slot
(it runs its rules on every sample). ``--breakdown`` adds the time plots' own cost
(slot and paint, away from the rest of the frame, and a hover) and where the paint time
goes, per area of the window; ``--without-advisor`` leaves the advisor's rules out, to see
the window's own cost.

Start-up: a fresh interpreter, from launch to the first painted window with simulated
GPUs (imports, QApplication, backend, first sample, show). Target: under 1.5 s.

Baseline: shared machines change speed by a factor of two within minutes, so each run
also times a fixed reference workload in the same process (``reference_ms``: a
1600×1000 raster paint of 300 static texts, 500 small fills and 8 curves of 1,200
points, plus 20,000 formatted strings: roughly what one frame of this window draws) and
prints every frame figure as a ratio of it too. Compare ratios across runs and
machines; compare milliseconds only within one run.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/ui.py [--ticks N] [--breakdown]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from h100_box import h100_box

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

GPUS, PER_GPU, DAY = 8, 64, 86400


def scenario(gpus: int, per_gpu: int) -> dict:
    return h100_box(f"bench-{gpus}x{per_gpu}", gpus, per_gpu)


def prefill_gpus(window, snap, seconds: int, rng) -> None:
    """``seconds`` of 1 Hz rows per GPU, ending at ``snap``, loaded straight into the
    window's rings (sampling a day of 512 processes would take many minutes): a slow
    sine of memory with noise, and noisy bandwidth."""
    import numpy as np

    from gpuwatch.core.history import GPU_COLUMNS, Ring

    t = snap.timestamp_s - seconds + np.arange(seconds, dtype=np.float64)
    for g in snap.gpus:
        cols = {name: np.full(seconds, np.nan) for name in GPU_COLUMNS}
        cols["timestamp_s"] = t
        cols["total_bytes"][:] = g.memory.total_bytes
        cols["used_bytes"] = 40e9 + 20e9 * np.sin(t / 900) + rng.normal(0, 1e9, seconds)
        cols["estimated_bandwidth_bytes_per_s"] = 1e12 + rng.normal(0, 1e11, seconds)
        ring = Ring(DAY, GPU_COLUMNS)
        ring.load_columns(cols)
        window.history.gpus[g.index] = ring


def prefill_day(window, snap) -> None:
    """24 h of 1 Hz rows per GPU, plus a day for the selected process."""
    import numpy as np

    from gpuwatch.core.history import PROCESS_COLUMNS, Ring

    rng = np.random.default_rng(0)
    prefill_gpus(window, snap, DAY, rng)
    t = snap.timestamp_s - DAY + np.arange(DAY, dtype=np.float64)
    p = snap.processes[0]
    ring = Ring(DAY, PROCESS_COLUMNS)
    ring.load_columns({"timestamp_s": t, "used_bytes": 5e8 + rng.normal(0, 1e8, DAY)})
    window.history.processes[(p.gpu_index, p.pid)] = ring


class FrameCounter:
    """Counts the window's ``UpdateRequest`` events: each is one pass of painting."""

    def __init__(self, window) -> None:
        from PySide6.QtCore import QEvent, QObject

        kind = QEvent.Type.UpdateRequest

        class Filter(QObject):
            def eventFilter(inner, obj, event) -> bool:
                if event.type() == kind:
                    self.passes += 1
                return False

        self.passes = 0
        self._filter = Filter()
        window.installEventFilter(self._filter)


def drain(app, counter: FrameCounter, limit: int = 10) -> int:
    """Process events until a pass paints nothing; the number of painting passes."""
    painted = 0
    for _ in range(limit):
        before = counter.passes
        app.processEvents()
        if counter.passes == before:
            break
        painted += 1
    return painted


class PaintBreakdown:
    """Paint time per area of the window (cards, plots, table, ...), for ``--breakdown``.

    It delivers each paint event itself to time it, which costs a little; the figures
    attribute the time, the frame figures above are measured without it."""

    def __init__(self, app, window) -> None:
        from PySide6.QtCore import QEvent, QObject
        from PySide6.QtWidgets import QAbstractScrollArea, QWidget

        areas = ((window.cards, "cards"), (window.plots, "time plots"),
                 (window.processes.table, "process table"),
                 (window.processes.detail_plot, "process plot"))
        self.ms: dict[str, float] = {}
        self.count: dict[str, int] = {}

        def area(w) -> str:
            while w is not None:
                for widget, name in areas:
                    if w is widget:
                        return name
                w = w.parentWidget()
            return "rest of the window"

        paint = QEvent.Type.Paint

        class Filter(QObject):
            def eventFilter(inner, obj, event) -> bool:
                if event.type() != paint or not isinstance(obj, QWidget):
                    return False
                parent = obj.parentWidget()
                t0 = time.perf_counter()
                if isinstance(parent, QAbstractScrollArea) and parent.viewport() is obj:
                    parent.viewportEvent(event)
                else:
                    obj.event(event)
                name = area(obj)
                self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t0) * 1e3
                self.count[name] = self.count.get(name, 0) + 1
                return True

        self._filter = Filter()
        self._app = app

    def __enter__(self) -> PaintBreakdown:
        self._app.installEventFilter(self._filter)
        return self

    def __exit__(self, *_: object) -> None:
        self._app.removeEventFilter(self._filter)

    def report(self, ticks: int) -> str:
        parts = [f"{name} {ms / ticks:.2f} ms ({self.count[name] / ticks:.1f} paints)"
                 for name, ms in sorted(self.ms.items(), key=lambda kv: -kv[1])]
        return "  paint per tick: " + ", ".join(parts)


def stats(values: list[float]) -> str:
    p95 = sorted(values)[max(0, int(0.95 * len(values)) - 1)]
    return (f"median {statistics.median(values):6.2f} ms, p95 {p95:6.2f} ms, "
            f"max {max(values):6.2f} ms")


def full_collection_ms() -> float:
    """Wall milliseconds of one full (generation 2) garbage collection."""
    import gc

    t0 = time.perf_counter()
    gc.collect()
    return (time.perf_counter() - t0) * 1e3


def reference_ms(reps: int = 15) -> float:
    """GUI-thread CPU milliseconds of a fixed frame-like workload (median of ``reps``)."""
    import numpy as np
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QPen, QStaticText

    image = QImage(1600, 1000, QImage.Format.Format_ARGB32_Premultiplied)
    texts = [QStaticText(f"{k * 1.7:.1f} GiB") for k in range(300)]
    for text in texts:
        text.prepare()
    xs = np.linspace(0, 1500, 1200)
    ys = 500 + 200 * np.sin(xs / 30)
    path = QPainterPath(QPointF(xs[0], ys[0]))
    for x, y in zip(xs[1:].tolist(), ys[1:].tolist(), strict=True):
        path.lineTo(x, y)
    times = []
    for _ in range(reps):
        c0 = time.thread_time()
        p = QPainter(image)
        p.fillRect(image.rect(), QColor("#ffffff"))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        for k, text in enumerate(texts):
            p.drawStaticText(QPointF(10 + (k % 12) * 130, 10 + (k // 12) * 30), text)
        for k in range(500):
            p.fillRect(QRectF(k * 3.1, 900, 3, 16), QColor(k * 7 % 255, 90, 160))
        p.setPen(QPen(QColor("#4e79a7"), 1))
        for _ in range(8):
            p.drawPath(path)
        p.end()
        chars = 0
        for k in range(20000):
            chars += len(f"{k / 3:.1f} GiB")
        times.append((time.thread_time() - c0) * 1e3)
    return statistics.median(times)


def bench_update(ticks: int, breakdown: bool, advisor: bool = True, freeze: bool = True) -> None:
    from PySide6.QtWidgets import QApplication

    import gpuwatch.ui  # noqa: F401 - installs the refcount guard
    from gpuwatch.core.snapshot import BackendKind
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.nvml import NvmlBackend
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml
    from gpuwatch.telemetry.sim.scenario import parse_scenario
    from gpuwatch.ui.app import freeze_startup_heap
    from gpuwatch.ui.live.main_window import MainWindow
    from gpuwatch.ui.settings import Settings

    app = QApplication.instance() or QApplication([])
    sc = parse_scenario(scenario(GPUS, PER_GPU), "bench.toml")
    clock = SteppedClock(DAY)
    lib = SimulatedNvml(sc, clock)
    backend = NvmlBackend(lib, host=ScenarioHost(lib, clock), clock=clock,
                          kind=BackendKind.SIMULATED, scenario=sc.name, pcie_thread=False).open()
    path = os.path.join(tempfile.mkdtemp(), "bench.ini")
    window = MainWindow(Settings(path))
    window.resize(1600, 1000)
    if not advisor and hasattr(window, "hint_source"):
        window.hint_source.observe = lambda: None
    first = backend.sample()
    prefill_day(window, first)
    window.on_snapshot(first)
    window.show()
    window.processes.select((first.processes[0].gpu_index, first.processes[0].pid))
    counter = FrameCounter(window)
    drain(app, counter)
    if freeze:
        full = full_collection_ms()
        freeze_startup_heap()        # as the app does once its window is up
        print(f"a full garbage collection on the GUI thread: {full:.1f} ms before the "
              f"start-up heap is frozen, {full_collection_ms():.2f} ms after")
    rows = window.processes.model.rowCount()
    print(f"window: {len(window.cards.cards)} GPU cards, {rows} table rows, "
          f"{len(window.history.gpus[0])} rows of history per GPU; {ticks} ticks each")
    reference = reference_ms()
    print(f"reference workload (baseline, same run): {reference:.2f} ms CPU")

    elapsed = [DAY]

    def next_snapshot():
        elapsed[0] += 1
        clock.set_elapsed(elapsed[0])
        return backend.sample()

    def run(label: str, window_s: int, force: bool, mode: str = "frame") -> list[float]:
        window.plots.set_window(window_s)
        drain(app, counter)
        slot, total, cpu, passes = [], [], [], []
        advisor = getattr(window, "hint_source", None)
        advisor_ms = getattr(advisor, "update_ms", None)
        if advisor_ms is not None:
            advisor_ms.clear()
        snaps = [next_snapshot() for _ in range(ticks)]
        for snap in snaps:
            c0 = time.thread_time()
            t0 = time.perf_counter()
            window.on_snapshot(snap)
            if force:
                window.plots.refresh(force=True)
            t1 = time.perf_counter()
            if mode == "frame":
                passes.append(drain(app, counter))
            elif mode == "one pass":
                app.processEvents()
            elif mode == "grab":
                window.grab()
            t2 = time.perf_counter()
            cpu.append((time.thread_time() - c0) * 1e3)
            if mode != "frame":
                drain(app, counter)      # not timed: leave nothing for the next tick
            slot.append((t1 - t0) * 1e3)
            total.append((t2 - t0) * 1e3)
        extra = f" ({statistics.median(cpu) / reference:.2f}× reference)"
        extra += f", {statistics.mean(passes):.1f} paint passes" if passes else ""
        if advisor_ms:
            extra += f", advisor {statistics.median(advisor_ms):.2f} ms"
        print(f"{label:<34} slot median {statistics.median(slot):6.2f} ms · "
              f"slot+paint {stats(total)} · CPU median {statistics.median(cpu):6.2f} ms"
              f"{extra}")
        return total

    run("plot window 10 min", 600, False)
    run("plot window 24 h (as it runs)", 86400, False)
    run("plot window 24 h (forced redraw)", 86400, True)
    print("measures (10 min window), slot + ...:")
    run("  events until idle (the frame)", 600, False)
    run("  one processEvents() pass", 600, False, "one pass")
    run("  window.grab() (full repaint)", 600, False, "grab")
    if breakdown:
        plots_alone(app, window, next_snapshot, reference, ticks)
        window.plots.set_window(600)
        drain(app, counter)
        with PaintBreakdown(app, window) as spy:
            for _ in range(ticks):
                window.on_snapshot(next_snapshot())
                drain(app, counter)
        print(spy.report(ticks))
    print(f"reference workload again, after the runs: {reference_ms():.2f} ms CPU")
    window.close()
    backend.close()


def plots_alone(app, window, next_snapshot, reference: float, ticks: int) -> None:
    """The time plots' own cost, away from the rest of the frame (GUI-thread CPU): their
    slot (``refresh``) and a paint of both plots per sample, and a hover."""
    plots, real_refresh = window.plots, window.plots.refresh

    def timed(action) -> float:
        c0 = time.thread_time()
        action()
        plots.memory.viewport().repaint()
        plots.bandwidth.viewport().repaint()
        return (time.thread_time() - c0) * 1e3

    def tick(force: bool) -> float:
        plots.refresh = lambda force=False: None        # the window's own call, skipped
        window.on_snapshot(next_snapshot())
        plots.refresh = real_refresh
        app.processEvents()
        return timed(lambda: real_refresh(force=force))

    print("time plots alone (slot + a paint of both plots, CPU):")
    for label, window_s, force in (("10 min", 600, False), ("24 h, painted each tick", 86400,
                                   False), ("24 h forced redraw", 86400, True)):
        plots.set_window(window_s)
        app.processEvents()
        ms = [tick(force) for _ in range(max(10, ticks // 2))]
        print(f"  {label:<26} {stats(ms)} ({statistics.median(ms) / reference:.2f}× reference)")
    plots.set_window(600)
    hover = [timed(lambda k=k: plots.set_highlight(k % 8 if k % 2 == 0 else None))
             for k in range(20)]
    print(f"  {'hover (highlight a line)':<26} {stats(hover)} "
          f"({statistics.median(hover) / reference:.2f}× reference)")


CHILD = r"""
import time
t0 = time.perf_counter()
import os, tempfile
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from gpuwatch.ui.app import application
from gpuwatch.ui.live.main_window import MainWindow
from gpuwatch.ui.settings import Settings
from gpuwatch.telemetry.source import SourceOptions, open_backend
app = application()
backend = open_backend(SourceOptions(demo="workstation", loop=True))
window = MainWindow(Settings(os.path.join(tempfile.mkdtemp(), "s.ini")))
window.on_snapshot(backend.sample())
painted = []
from PySide6.QtCore import QEvent, QObject
class Spy(QObject):
    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and not painted:
            painted.append(time.perf_counter())
        return False
spy = Spy(); app.installEventFilter(spy)
window.show()
while not painted:
    app.processEvents()
print(f"{painted[0] - t0:.4f}", flush=True)
backend.close()
os._exit(0)
"""


def bench_startup(runs: int = 5) -> None:
    walls, inside = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                             check=True, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
        walls.append(time.perf_counter() - t0)
        inside.append(float(out.stdout.strip().splitlines()[-1]))
    print(f"start-up to first painted window: median {statistics.median(walls):.2f} s wall "
          f"(process launch to exit after the first paint), "
          f"{statistics.median(inside):.2f} s from the first import ({runs} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=100)
    parser.add_argument("--breakdown", action="store_true",
                        help="also print the paint time per area of the window")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave the start-up heap unfrozen (as before gc.freeze)")
    parser.add_argument("--without-advisor", action="store_true",
                        help="leave the advisor's rules out of the update")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}")
    bench_update(args.ticks, args.breakdown, not args.without_advisor, not args.no_freeze)
    bench_startup()


if __name__ == "__main__":
    main()
