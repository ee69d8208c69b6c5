"""The session browser on a long session: a 24 h recording of 8 GPUs at 1 Hz.

Records the `multi-gpu-ddp` scenario on a stepped virtual clock (86,400 samples, about a
minute) into a cache folder that later runs reuse, then times, offscreen:
- listing it in the browser (the model filled from a worker thread), and
- opening it into the replay window until its first paint.
Target: under 2 s each. Run: .venv/bin/python benchmarks/session_browser.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from gpuwatch.core.units import format_bytes
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend

HOURS = 24
TARGET_S = 2.0


def cached_session(folder: Path, hours: float) -> Path:
    path = folder / "sessions" / f"ddp-{hours:g}h-8gpu.gpuwatch.sqlite"
    if path.exists() and not Path(f"{path}-wal").exists():
        return path
    for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        p.unlink(missing_ok=True)
    backend = open_backend(SourceOptions(demo="multi-gpu-ddp", time_scale="max", loop=True))
    recorder = Recorder(path, 1.0)
    start = time.perf_counter()
    samples = int(hours * 3600)
    for t in range(samples):
        backend.clock.set_elapsed(float(t))     # type: ignore[attr-defined]
        recorder.add_snapshot(backend.sample())
    recorder.close(backend.clock.now_s())
    backend.close()
    print(f"recorded {samples} samples in {time.perf_counter() - start:.1f} s -> {path} "
          f"({format_bytes(path.stat().st_size)})")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=float, default=HOURS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "gpuwatch-bench-sessions")
    args = parser.parse_args()
    os.environ["GPUWATCH_DATA_DIR"] = str(args.cache)
    path = cached_session(args.cache, args.hours)

    from gpuwatch.ui import qt_guard

    qt_guard.install()
    from PySide6.QtWidgets import QApplication

    from gpuwatch.ui.sessions.session_browser import SessionBrowser
    from gpuwatch.ui.sessions.session_replay import ReplayWindow
    from gpuwatch.ui.widgets import theme

    app = QApplication([])
    colors = theme.apply(app, "light")
    app.setStyleSheet(theme.stylesheet(colors))

    def wait(done) -> None:
        while not done():
            app.processEvents()
            time.sleep(0.001)

    listing, opening, painting, full = [], [], [], []
    for _ in range(args.runs):
        browser = SessionBrowser()
        browser.show()
        start = time.perf_counter()
        browser.reload()
        wait(lambda b=browser: not b.lister.loading)
        app.processEvents()
        listing.append(time.perf_counter() - start)
        assert [e.path for e in browser.model.entries] == [path]
        assert browser.model.entries[0].gpus == 8
        browser.close()
        browser.deleteLater()

        start = time.perf_counter()
        window = ReplayWindow(path)
        window.resize(1300, 850)
        window.show()
        window.start()
        wait(lambda w=window: w.data is not None or w.error is not None)
        assert window.error is None, window.error
        mid = time.perf_counter()
        window.repaint()            # the first paint with the data, synchronously
        app.processEvents()
        end = time.perf_counter()
        opening.append(end - start)
        painting.append(end - mid)
        wait(lambda w=window: w.data is not None and not w.data.overview)
        window.repaint()
        full.append(time.perf_counter() - start)
        window.close()
        app.processEvents()

    size = path.stat().st_size
    print(f"session: {path.name}, {args.hours:g} h × 8 GPUs at 1 Hz, {format_bytes(size)} "
          f"({format_bytes(size / args.hours)} per hour)")

    def line(name: str, values: list[float]) -> str:
        med = statistics.median(values)
        verdict = "ok" if med < TARGET_S else "OVER"
        return (f"{name:<44} median {med:6.3f} s  max {max(values):6.3f} s  "
                f"(target < {TARGET_S:g} s: {verdict})")

    print(line("list in the browser (model filled)", listing))
    print(line("open into the replay window, to first paint", opening))
    print(f"{'  of which: the paint itself':<44} median {statistics.median(painting):6.3f} s")
    print(f"{'every sample loaded and painted (after that)':<44} median "
          f"{statistics.median(full):6.3f} s")
    print(f"({args.runs} runs, offscreen)")


if __name__ == "__main__":
    main()
