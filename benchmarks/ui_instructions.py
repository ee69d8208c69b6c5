"""Instructions per window update, counted by valgrind: a figure a busy machine cannot move.

``benchmarks/ui.py`` times frames in milliseconds, and on a shared machine those drift
by 2x within minutes. This counts the CPU instructions of the same work instead
(callgrind's ``Ir``): the same code and inputs give the same count to within a fraction
of a percent, whatever else the machine is doing, so two versions can be compared
exactly. ``--against REV`` measures a git revision too, in the same run, and prints the
ratio.

The window is the benchmark's: 8 simulated GPUs x 64 processes (512 table rows), every
process changing every second, the 10 min plot window, the advisor on, offscreen, the
start-up heap frozen where the code does that. To keep valgrind's run short the GPUs
carry 2 h of history instead of 24 h (the 10 min window reads only its last minutes).
After 15 warm-up updates, N updates are counted, each the snapshot slot plus the event
loop until no paint is pending: the frame of ``benchmarks/ui.py``.

Run: .venv/bin/python benchmarks/ui_instructions.py [--frames N] [--against REV]
(needs valgrind: ``apt-get install valgrind``; ~1 min per version)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HISTORY_S = 7200
WARM_UP = 15

# Run inside valgrind with PYTHONPATH at the tree being measured. The frames run inside
# itertools.starmap so that callgrind counts only them (--toggle-collect=starmap_next;
# nothing else in the window uses starmap).
CHILD = r"""
import itertools, os, sys, tempfile
os.environ["QT_QPA_PLATFORM"] = "offscreen"
sys.path.insert(0, sys.argv[1])                  # this tree's benchmarks/ui.py helpers
import numpy as np
import ui as bench
from PySide6.QtWidgets import QApplication
import gpuwatch.ui  # noqa: F401 - the refcount guard
from gpuwatch.core.snapshot import BackendKind
from gpuwatch.telemetry.clock import SteppedClock
from gpuwatch.telemetry.nvml import NvmlBackend
from gpuwatch.telemetry.sim.host import ScenarioHost
from gpuwatch.telemetry.sim.library import SimulatedNvml
from gpuwatch.telemetry.sim.scenario import parse_scenario
from gpuwatch.ui.live.main_window import MainWindow
from gpuwatch.ui.settings import Settings

history_s, warm_up, frames = (int(a) for a in sys.argv[2:5])
app = QApplication([])
scenario = parse_scenario(bench.scenario(bench.GPUS, bench.PER_GPU), "bench.toml")
clock = SteppedClock(history_s)
lib = SimulatedNvml(scenario, clock)
backend = NvmlBackend(lib, host=ScenarioHost(lib, clock), clock=clock,
                      kind=BackendKind.SIMULATED, scenario=scenario.name,
                      pcie_thread=False).open()
window = MainWindow(Settings(os.path.join(tempfile.mkdtemp(), "bench.ini")))
window.resize(1600, 1000)
first = backend.sample()
bench.prefill_gpus(window, first, history_s, np.random.default_rng(0))
window.on_snapshot(first)
window.show()
window.processes.select((first.processes[0].gpu_index, first.processes[0].pid))
counter = bench.FrameCounter(window)
bench.drain(app, counter)
try:
    from gpuwatch.ui.app import freeze_startup_heap
except ImportError:                             # a version from before it
    pass
else:
    freeze_startup_heap()
elapsed = [history_s]

def snapshot():
    elapsed[0] += 1
    clock.set_elapsed(elapsed[0])
    return backend.sample()

def frame(snap):
    window.on_snapshot(snap)
    bench.drain(app, counter)

for _ in range(warm_up):
    frame(snapshot())
snaps = [snapshot() for _ in range(frames)]
list(itertools.starmap(frame, [(s,) for s in snaps]))
print("frames", frames, flush=True)
"""


def count(tree: Path, frames: int) -> int:
    """Instructions callgrind counted over ``frames`` updates of ``tree``'s window."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        env = {**os.environ, "PYTHONPATH": str(tree), "QT_QPA_PLATFORM": "offscreen"}
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--collect-atstart=no",
             "--toggle-collect=starmap_next", f"--callgrind-out-file={out}",
             sys.executable, "-c", CHILD, str(ROOT / "benchmarks"), str(HISTORY_S),
             str(WARM_UP), str(frames)],
            env=env, capture_output=True, text=True, cwd=tmp)
        found = re.search(r"Collected : (\d+)", run.stderr)
        if run.returncode != 0 or found is None or f"frames {frames}" not in run.stdout:
            raise SystemExit(f"valgrind run of {tree} failed:\n{run.stderr[-2000:]}")
        return int(found.group(1))


def worktree(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f",
                    str(where), rev], check=True, capture_output=True)
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--against", metavar="REV",
                        help="also count a git revision (a temporary worktree), for the ratio")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print(f"8 GPUs x 64 processes, 10 min plot window, {HISTORY_S // 3600} h of history, "
          f"{args.frames} frames after {WARM_UP} warm-up frames")
    mine = count(ROOT, args.frames) / args.frames
    print(f"this tree:       {mine / 1e6:8.1f} M instructions per frame")
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            tree = worktree(args.against, Path(tmp) / "baseline")
            try:
                theirs = count(tree, args.frames) / args.frames
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], capture_output=True)
        print(f"{args.against[:12]:<16} {theirs / 1e6:8.1f} M instructions per frame")
        print(f"ratio: {mine / theirs:.3f} (this tree / {args.against[:12]})")


if __name__ == "__main__":
    main()
