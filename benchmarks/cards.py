"""GUI-thread CPU of the GPU cards per sample: 8 GPUs x 8 processes, every figure moving.

A bare cards view (no rest of the window) 1280 px wide, offscreen, fed simulated
snapshots in which every figure changes every second (memory as sawtooths, each
process's GPU and memory busy as sawtooths, so utilization, bandwidth, PCIe, heat and
power move too). Per sample it times, in thread CPU time (a shared machine disturbs it
less than wall time): the cards' update (``CardsView.update_snapshot``) and then the
paints it causes (two ``processEvents`` passes). The window's history is appended to
outside the timed part (it is the window's cost, not the cards').

``--baseline OTHER_CHECKOUT`` runs the same measurement against another checkout (a
``git worktree`` of an older commit) in a fresh interpreter, interleaved with this one
for ``--repeat`` rounds, and prints the ratio; ``--breakdown`` adds the paint time per
kind of widget.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/cards.py [--samples N]
         [--repeat N] [--baseline OTHER_CHECKOUT] [--breakdown]
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

GPUS, WIDTH, HEIGHT = 8, 1280, 420
PER_GPU = 8          # processes per GPU (--per-gpu)


def scenario(per_gpu: int = PER_GPU) -> dict:
    """The UI benchmark's H100 box, with busy figures that move every second."""
    return h100_box(f"cards-{GPUS}x{per_gpu}", GPUS, per_gpu,
                    gpu_util=lambda k: {"generator": "sawtooth", "low": 1, "high": 12,
                                        "period_s": 7 + k % 5},
                    memory_busy=lambda k: {"generator": "sawtooth", "low": 1, "high": 11,
                                           "period_s": 5 + k % 3})


def measure(samples: int, breakdown: bool, per_gpu: int = PER_GPU) -> dict:
    """{"update": [ms], "paint": [ms], "widgets": {kind: ms per sample}} of this checkout."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication, QWidget

    import gpuwatch.ui  # noqa: F401 - installs the refcount guard
    from gpuwatch.core.history import History
    from gpuwatch.core.snapshot import BackendKind
    from gpuwatch.telemetry.clock import SteppedClock
    from gpuwatch.telemetry.nvml import NvmlBackend
    from gpuwatch.telemetry.sim.host import ScenarioHost
    from gpuwatch.telemetry.sim.library import SimulatedNvml
    from gpuwatch.telemetry.sim.scenario import parse_scenario
    from gpuwatch.ui.live.cards_view import CardsView
    from gpuwatch.ui.settings import Thresholds
    from gpuwatch.ui.widgets import theme

    app = QApplication.instance() or QApplication([])
    app.setStyleSheet(theme.stylesheet(theme.apply(app, "light")))
    sc = parse_scenario(scenario(per_gpu), "cards.toml")
    clock = SteppedClock(1000)
    lib = SimulatedNvml(sc, clock)
    backend = NvmlBackend(lib, host=ScenarioHost(lib, clock), clock=clock,
                          kind=BackendKind.SIMULATED, scenario=sc.name,
                          pcie_thread=False).open()
    history = History()
    view = CardsView(history=history)
    view.resize(WIDTH, HEIGHT)
    thresholds = Thresholds()
    elapsed = [1000]

    def snapshot():
        elapsed[0] += 1
        clock.set_elapsed(elapsed[0])
        return backend.sample()

    for k in range(50):                     # a history for the sparklines; laid out
        snap = snapshot()
        history.append(snap)
        view.update_snapshot(snap, "iec", thresholds, {})
        if k == 30:
            view.show()
        app.processEvents()
    snaps = [snapshot() for _ in range(samples)]     # sampling is not the cards' cost
    widgets: dict[str, float] = {}

    class Filter(QObject):
        def eventFilter(self, obj, event) -> bool:
            if event.type() != QEvent.Type.Paint or not isinstance(obj, QWidget):
                return False
            c0 = time.thread_time()
            obj.event(event)
            name = type(obj).__name__
            widgets[name] = widgets.get(name, 0.0) + (time.thread_time() - c0) * 1e3
            return True

    spy = Filter()
    if breakdown:
        app.installEventFilter(spy)
    update, paint = [], []
    for snap in snaps:
        history.append(snap)
        c0 = time.thread_time()
        view.update_snapshot(snap, "iec", thresholds, {})
        c1 = time.thread_time()
        app.processEvents()
        app.processEvents()
        c2 = time.thread_time()
        update.append((c1 - c0) * 1e3)
        paint.append((c2 - c1) * 1e3)
    return {"update": update, "paint": paint,
            "widgets": {k: v / samples for k, v in widgets.items()}}


def summary(result: dict) -> dict[str, float]:
    total = [u + p for u, p in zip(result["update"], result["paint"], strict=True)]
    return {"total": statistics.median(total), "update": statistics.median(result["update"]),
            "paint": statistics.median(result["paint"])}


def run_in(checkout: str, samples: int, breakdown: bool, per_gpu: int) -> dict:
    """The measurement in a fresh interpreter with ``checkout``'s gpuwatch first."""
    env = {**os.environ, "PYTHONPATH": checkout}
    out = subprocess.run([sys.executable, __file__, "--samples", str(samples), "--child",
                          "--per-gpu", str(per_gpu), *(["--breakdown"] if breakdown else [])],
                         env=env, capture_output=True, text=True, check=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def line(label: str, s: dict[str, float]) -> str:
    return (f"{label:<10} total {s['total']:6.3f} ms  (update {s['update']:6.3f} ms, "
            f"paint {s['paint']:6.3f} ms) CPU a sample, median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--per-gpu", type=int, default=PER_GPU, help="processes per GPU")
    parser.add_argument("--baseline", help="another checkout to compare with")
    parser.add_argument("--breakdown", action="store_true", help="paint time per widget kind")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.samples, args.breakdown, args.per_gpu)))
        return
    here = str(Path(__file__).resolve().parent.parent)
    print(f"{GPUS} GPU cards x {args.per_gpu} processes, {WIDTH} px wide, every figure moving; "
          f"{args.samples} samples a run")
    rounds: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for _ in range(args.repeat):
        for label, checkout in (("this", here), ("baseline", args.baseline)):
            if checkout is None:
                continue
            result = run_in(checkout, args.samples, args.breakdown, args.per_gpu)
            s = summary(result)
            rounds[label].append(s)
            print(line(label, s))
            for kind, ms in sorted(result["widgets"].items(), key=lambda kv: -kv[1]):
                print(f"    paint of {kind}: {ms:.3f} ms a sample")
    if rounds["baseline"]:
        mine = statistics.median(s["total"] for s in rounds["this"])
        base = statistics.median(s["total"] for s in rounds["baseline"])
        print(f"median of rounds: this {mine:.3f} ms, baseline {base:.3f} ms, "
              f"ratio {mine / base:.2f}")


if __name__ == "__main__":
    main()
