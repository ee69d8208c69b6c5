"""GUI-thread CPU the live time plots cost per sample, at the size they have in the window.

The target workload of the shown window (8 GPUs × 8 processes, a sample a second,
every figure changing every second) seen from the plots alone: a ``TimePlots`` shown
offscreen at the size it gets in a 1500×950 window (501×566), fed one sample per tick
from a simulated backend (sawtooth memory, waves of busy %), then the event loop run
until it paints nothing more. Each sample's ``time.thread_time()`` (history append
excluded: the window does that for everyone) is one figure; a round reports the
median, mean and p95 over ``--samples`` samples, plus the paint passes per sample.

``--baseline OTHER_CHECKOUT`` runs the same harness against another checkout (a `git
worktree` of an older commit) in child processes, interleaved round by round with this
one, and prints the ratio: the machine this runs on is shared, and thread CPU time,
repeats and interleaving are what make two figures comparable.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/plots_cpu.py
         [--samples 300] [--rounds 3] [--window 600] [--baseline /tmp/before]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from h100_box import h100_box

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO = Path(__file__).resolve().parents[1]
GPUS, PER_GPU = 8, 8
SIZE = (501, 566)     # the plots' size in a 1500×950 window with eight GPU cards
WARMUP_S = 700        # samples of history before measuring (a 10 min window is full)


def scenario() -> dict:
    return h100_box(f"plots-{GPUS}x{PER_GPU}", GPUS, PER_GPU, memory_high="6GiB",
                    gpu_util=lambda k: {"generator": "wave", "mean": 6, "amplitude": 5,
                                        "period_s": 5 + k % 11},
                    memory_busy=lambda k: {"generator": "wave", "mean": 6, "amplitude": 5,
                                           "period_s": 4 + k % 13})


class PaintPasses:
    """Counts ``UpdateRequest`` events delivered to the plots' viewports."""

    def __init__(self, widgets) -> None:
        from PySide6.QtCore import QEvent, QObject

        kind = QEvent.Type.UpdateRequest
        paint = QEvent.Type.Paint

        class Filter(QObject):
            def eventFilter(inner, obj, event) -> bool:
                if event.type() == kind:
                    self.requests += 1
                elif event.type() == paint:
                    self.paints += 1
                return False

        self.requests = self.paints = 0
        self._filter = Filter()
        for w in widgets:
            w.installEventFilter(self._filter)


def child(samples: int, window_s: int, rounds: int) -> None:
    """Measure in this process; print one JSON line per round."""
    from PySide6.QtWidgets import QApplication

    import gpuwatch.ui  # noqa: F401 - as the app imports it
    from gpuwatch.core.history import History
    from gpuwatch.core.snapshot import BackendKind
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.nvml import NvmlBackend
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml
    from gpuwatch.telemetry.sim.scenario import parse_scenario
    from gpuwatch.ui.widgets import theme
    from gpuwatch.ui.widgets.plots import TimePlots

    app = QApplication.instance() or QApplication([])
    sc = parse_scenario(scenario(), "plots.toml")
    clock = SteppedClock()
    clock.epoch_s = 1_780_000_000.0      # the same sample times in every run
    lib = SimulatedNvml(sc, clock)
    backend = NvmlBackend(lib, host=ScenarioHost(lib, clock), clock=clock,
                          kind=BackendKind.SIMULATED, scenario=sc.name,
                          pcie_thread=False).open()
    history = History()
    theme.apply(app, "light")
    plots = TimePlots(history)
    plots.restyle()                      # as the window does when it applies its settings
    plots.set_units("iec")
    plots.resize(*SIZE)
    plots.set_window(window_s)
    elapsed = [0]

    def sample() -> None:
        elapsed[0] += 1
        clock.set_elapsed(elapsed[0])
        history.append(backend.sample())

    for _ in range(WARMUP_S):
        sample()
    plots.show()
    plots.refresh()
    for _ in range(5):
        app.processEvents()
    viewports = [plots.memory.viewport(), plots.bandwidth.viewport()]
    passes = PaintPasses([plots, *viewports])
    for _ in range(rounds):
        cpu = []
        requests0, paints0 = passes.requests, passes.paints
        for _ in range(samples):
            sample()
            c0 = time.thread_time()
            plots.refresh()
            for _ in range(10):          # until a pass paints nothing more
                before = passes.paints
                app.processEvents()
                if passes.paints == before:
                    break
            cpu.append((time.thread_time() - c0) * 1e3)
        cpu.sort()
        print(json.dumps({"median_ms": statistics.median(cpu), "mean_ms": statistics.mean(cpu),
                          "p95_ms": cpu[int(0.95 * len(cpu)) - 1],
                          "requests": (passes.requests - requests0) / samples,
                          "paints": (passes.paints - paints0) / samples}), flush=True)
    backend.close()


def run_child(checkout: Path, samples: int, window_s: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "QT_QPA_PLATFORM": "offscreen"}
    out = subprocess.run([sys.executable, __file__, "--child", "--samples", str(samples),
                          "--window", str(window_s), "--rounds", "1"],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=600, help="plot window, seconds")
    parser.add_argument("--baseline", type=Path, help="another checkout, run interleaved")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.samples, args.window, args.rounds)
        return
    checkouts = {"this": REPO}
    if args.baseline:
        checkouts = {"baseline": args.baseline.resolve(), "this": REPO}
    print(f"time plots alone, {GPUS} GPUs × {PER_GPU} processes, {SIZE[0]}×{SIZE[1]}, "
          f"{args.window} s window, {args.samples} samples a round; GUI-thread CPU per "
          "sample (refresh + paint)")
    results: dict[str, list[dict]] = {name: [] for name in checkouts}
    for r in range(args.rounds):
        for name, path in checkouts.items():
            got = run_child(path, args.samples, args.window)
            results[name].append(got)
            print(f"  round {r + 1} {name:<9} median {got['median_ms']:.3f} ms, mean "
                  f"{got['mean_ms']:.3f} ms, p95 {got['p95_ms']:.3f} ms, "
                  f"{got['requests']:.2f} update requests, {got['paints']:.2f} paints",
                  flush=True)
    medians = {name: statistics.median(g["mean_ms"] for g in got)
               for name, got in results.items()}
    for name, ms in medians.items():
        print(f"{name:<9} mean per sample, median of rounds: {ms:.3f} ms "
              f"({ms / 10:.3f} % of a core at a sample a second)")
    if "baseline" in medians:
        print(f"ratio this / baseline: {medians['this'] / medians['baseline']:.2f}")


if __name__ == "__main__":
    main()
