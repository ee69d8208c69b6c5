"""Render the window with the advisor at work: ``oom-ramp`` while its ``oom-risk`` is open.

    python scripts/advisor_screenshot.py [PNG] [--at S] [--theme light|dark]

Steps the scenario's virtual clock at 1 Hz up to ``--at`` (default 360 s: memory is
climbing towards the card's 40 GiB and the hint is critical), opens the Advisor tab with
the hint selected, and saves the window (no display needed: it runs offscreen).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuwatch.telemetry.source import SourceOptions, open_backend
from gpuwatch.ui import app as app_module
from gpuwatch.ui.live.main_window import MainWindow


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("png", nargs="?", default="docs/screenshots/advisor.png")
    parser.add_argument("--scenario", default="oom-ramp")
    parser.add_argument("--at", type=float, default=360.0, help="virtual second to show")
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    args = parser.parse_args()

    app = app_module.application()
    settings = app_module.scratch_settings()
    prefs = settings.preferences()
    prefs.theme = args.theme
    settings.set_preferences(prefs)
    window = MainWindow(settings, f"<b>Simulated GPUs</b> — scenario '{args.scenario}' "
                                  "(demo mode), not real hardware.")
    window.resize(1600, 1000)
    backend = open_backend(SourceOptions(demo=args.scenario, time_scale="max"))
    snaps = []
    try:
        for t in range(int(args.at) + 1):
            backend.clock.set_elapsed(float(t))  # type: ignore[attr-defined]
            snaps.append(backend.sample())
    finally:
        backend.close()
    window.on_snapshots(snaps)
    window.set_sampling_state("● Sampling")
    window.show()
    active = window.hint_source.active
    if active:
        window.hint_source.open_hint(active[0].key)
    for _ in range(3):
        app.processEvents()
    window.fit_cards()
    app.processEvents()
    window.plots.refresh(force=True)
    app.processEvents()
    out = Path(args.png)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not window.grab().save(str(out)):
        print(f"could not write {out}", file=sys.stderr)
        return 1
    print(f"{out}: {len(active)} hint(s): " + "; ".join(f"{h.severity.value} {h.code}"
                                                       for h in active))
    print(window.hint_source.cost_summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
