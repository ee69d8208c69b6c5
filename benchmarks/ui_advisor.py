"""What the advisor adds to the window's per-sample update (offscreen, one sample per slot).

For a scenario, the window is shown on the Advisor tab and fed 1 Hz samples through
``MainWindow.on_snapshots`` one at a time, as the sampler does. Printed per scenario:
the whole slot, the advisor's ``update`` (rules + hysteresis + syncing linked budgets),
and showing the hints (panel rows, tab title, banner), as medians and p95 over the
samples where hints were open and over all samples.

Usage: ``python benchmarks/ui_advisor.py [--quick]``
(the cost over 24 h of history on 8 GPUs is ``benchmarks/advisor.py``'s figure).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuwatch.telemetry.source import SourceOptions, open_backend
from gpuwatch.ui import app as app_module
from gpuwatch.ui.live.main_window import MainWindow


def _p95(values: list[float]) -> float:
    return sorted(values)[int(0.95 * (len(values) - 1))] if values else float("nan")


def run(name: str, samples: int) -> str:
    app = app_module.application()
    window = MainWindow(app_module.scratch_settings())
    window.resize(1600, 1000)
    window.tabs.setCurrentWidget(window.advisor)
    window.show()
    backend = open_backend(SourceOptions(demo=name, time_scale="max"))
    slot: list[float] = []
    with_hints: list[int] = []
    source = window.hint_source
    try:
        for t in range(samples):
            backend.clock.set_elapsed(float(t))  # type: ignore[attr-defined]
            snap = backend.sample()
            start = time.perf_counter()
            window.on_snapshots([snap])
            slot.append((time.perf_counter() - start) * 1e3)
            app.processEvents()
            if source.active:
                with_hints.append(t)
    finally:
        backend.close()
    update, show = list(source.update_ms), list(source.show_ms)
    n = len(update)
    hinted = [i - (samples - n) for i in with_hints if i >= samples - n]

    def fig(values: list[float], idx: list[int] | None = None) -> str:
        vals = values if idx is None else [values[i] for i in idx]
        if not vals:
            return "n/a"
        return f"{statistics.median(vals):.2f}/{_p95(vals):.2f}"

    slot_tail = slot[-n:]
    share = 100 * statistics.median(update) / statistics.median(slot_tail)
    window.close()
    return (f"{name:<14} {len(window.cards.cards)} GPU  slot {fig(slot_tail)} ms · "
            f"advisor {fig(update)} ms (hints open: {fig(update, hinted)}) · "
            f"show {fig(show)} ms (hints open: {fig(show, hinted)}) · "
            f"advisor = {share:.1f} % of the slot · {len(hinted)}/{n} samples with hints")


def main() -> int:
    quick = "--quick" in sys.argv
    print("median/p95 over the last 600 samples of each run\n")
    for name, samples in (("oom-ramp", 600), ("multi-gpu-ddp", 300 if quick else 1200)):
        print(run(name, samples), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
