"""Session files: bytes per hour, recording cost, and the time to open a long session.

Records the 8-GPU `multi-gpu-ddp` scenario at 1 Hz on a stepped virtual clock (so a
day takes minutes, not a day), then opens it the way the session browser and a report
do. Run: .venv/bin/python benchmarks/sessions.py [--hours 24]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gpuwatch.core.units import format_bytes
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.sessions.report_model import build_report
from gpuwatch.telemetry.source import SourceOptions, open_backend


def record(path: Path, hours: float) -> tuple[float, int]:
    backend = open_backend(SourceOptions(demo="multi-gpu-ddp", time_scale="max", loop=True))
    recorder = Recorder(path, 1.0)
    samples = int(hours * 3600)
    start = time.perf_counter()
    for t in range(samples):
        backend.clock.set_elapsed(float(t))
        recorder.add_snapshot(backend.sample())
    recorder.close(backend.clock.now_s())
    backend.close()
    return time.perf_counter() - start, samples


def open_like_the_browser(path: Path) -> dict[str, float]:
    timings = {}
    start = time.perf_counter()
    with SessionReader(path) as r:
        info = r.info()
        gpus = r.gpus()
        peak = r.peak_used_bytes()
        hints = len(r.hints())
        timings["list entry (info, GPUs, peak, hints)"] = time.perf_counter() - start
        start = time.perf_counter()
        for g in gpus:
            r.gpu_series(g.index)
        timings["all GPU timelines into the plots"] = time.perf_counter() - start
        start = time.perf_counter()
        build_report(r)
        timings["full report model"] = time.perf_counter() - start
    assert info.samples and peak and hints >= 0
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hours", type=float, default=24.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "day.gpuwatch.sqlite"
        seconds, samples = record(path, args.hours)
        size = path.stat().st_size
        print(f"recorded {samples} samples of 8 GPUs x 1 process each in {seconds:.1f} s "
              f"({seconds / samples * 1e3:.2f} ms per sample incl. simulation)")
        print(f"file size {format_bytes(size)} for {args.hours:g} h: "
              f"{format_bytes(size / args.hours)} per hour at 1 Hz")
        for name, value in open_like_the_browser(path).items():
            print(f"open: {name:<40} {value:7.3f} s")


if __name__ == "__main__":
    main()
