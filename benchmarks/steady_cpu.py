"""Steady CPU use of a running monitor on the real path, as % of one core.

Starts real ``sleep`` processes (8 GPUs x 8 by default), lists them through the fake
driver library (tests/fakenvml, built with gcc), and runs one after the other:

- ``bare``:   a bare pynvml + psutil loop at the same interval: the NVML readings gpuwatch
              makes, and psutil's name/cmdline/user/rss/cpu of every listed pid
- ``record``: ``gpuwatch record --interval 1 --no-save`` (output to a file)
- ``gui``:    ``gpuwatch gui --interval 1``, offscreen, window shown   (with --gui): the
              calm redraw pace of the default preferences
- ``every sample``: the same with the preference "redraw every sample" (with --every-sample)
- ``minimised``: ``gpuwatch gui --tray --interval 1``, offscreen: that platform has no
              tray, so the window starts minimised                    (with --minimised)
- ``tray``:   ``gpuwatch gui --tray --interval 1`` in a tray: Xvfb (xcb), a private
              session bus and a stand-in StatusNotifierWatcher (``desktop_session.py``);
              the window is hidden, its icon registered over D-Bus    (with --tray)

Each runs ``--warmup`` seconds (start-up is not steady state), then its CPU time
(utime + stime of every thread, from /proc/<pid>/stat) is read at the start and the
end of a ``--window`` of wall-clock seconds. ``--baseline`` runs each gpuwatch command
from a second checkout too (a `git worktree` of an older commit), interleaved with this
one, so both see the same machine; ``--repeat`` gives each run several rounds.

Run:  .venv/bin/python benchmarks/steady_cpu.py [--window 60] [--gui] [--every-sample]
          [--minimised] [--tray] [--repeat N] [--baseline OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

from desktop_session import Desktop, desktop_session
from desktop_support import stop_children

REPO = Path(__file__).resolve().parents[1]
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    fields = data[data.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def bare_loop(interval_s: float) -> None:
    """The child for ``bare``: sample at the interval until killed."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sampler import BareLoop

    loop = BareLoop()
    deadline = time.monotonic()
    while True:
        loop.sample()
        deadline += interval_s
        time.sleep(max(0.0, deadline - time.monotonic()))


def child_env(library: Path, gpus: int, pids: list[int], tmp: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAKENVML_")}
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(library), env.get("LD_LIBRARY_PATH")) if p)
    env["PYTHONPATH"] = env.get("PYTHONPATH") or str(REPO)
    env["FAKENVML_GPUS"] = str(gpus)
    env["FAKENVML_PIDS"] = ",".join(map(str, pids))
    env["GPUWATCH_PROBE_DIR"] = os.path.join(tmp, "probes")
    env["GPUWATCH_DATA_DIR"] = os.path.join(tmp, "data")
    env["QT_QPA_PLATFORM"] = "offscreen"
    # settings, state and the single-instance socket of the runs' own, not the user's
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        env[name] = os.path.join(tmp, name.lower())
        os.makedirs(env[name], mode=0o700, exist_ok=True)
    os.makedirs(env["GPUWATCH_PROBE_DIR"], mode=0o700, exist_ok=True)
    return env


def measure(name: str, argv: list[str], env: dict[str, str], tmp: str, warmup_s: float,
            window_s: float, desktop: Desktop | None = None) -> float:
    """% of one core that the command uses over the window. In a ``desktop``, the app
    must have registered its tray icon by the end of the warm-up; the D-Bus calls it
    makes during the window are printed."""
    out_path = os.path.join(tmp, f"{name}.out")
    registered_before = _registered(desktop) if desktop else 0
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        time.sleep(warmup_s)
        if proc.poll() is not None:
            raise SystemExit(f"{name} ended during the warm-up (exit {proc.returncode}):\n"
                             + Path(out_path).read_text(errors="replace")[-2000:])
        if desktop is not None and _registered(desktop) <= registered_before:
            raise SystemExit(f"{name} registered no tray icon during the warm-up:\n"
                             + Path(out_path).read_text(errors="replace")[-2000:])
        calls0 = desktop.calls_now() if desktop else None
        cpu0, wall0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window_s)
        cpu1, wall1 = cpu_seconds(proc.pid), time.monotonic()
        if desktop is not None and calls0 is not None:
            calls = desktop.calls_now() - calls0
            print(f"    {name}: D-Bus calls to the desktop during the window: "
                  f"{sum(calls.values())} {dict(calls) or ''}", file=sys.stderr, flush=True)
        if proc.poll() is not None:
            raise SystemExit(f"{name} ended during the window (exit {proc.returncode})")
    finally:
        stop_children([proc], wait_s=10)
    return (cpu1 - cpu0) / (wall1 - wall0) * 100.0


def _registered(desktop: Desktop) -> int:
    """Tray icons registered in ``desktop`` so far (one per app started there)."""
    return desktop.calls_now()["RegisterStatusNotifierItem"]


class Run(NamedTuple):
    label: str
    argv: list[str]
    pythonpath: str | None     # None: this checkout
    in_tray: bool = False      # runs in the desktop with a tray
    preferences: dict | None = None   # stored in a settings folder of the run's own


def with_preferences(env: dict[str, str], tmp: str, name: str,
                     preferences: dict) -> dict[str, str]:
    """``env`` with a settings folder of its own holding ``preferences``."""
    from PySide6.QtCore import QSettings

    home = os.path.join(tmp, f"config-{name}")
    os.makedirs(home, mode=0o700, exist_ok=True)
    stored = QSettings(os.path.join(home, "gpuwatch", "gpuwatch.ini"),
                       QSettings.Format.IniFormat)
    stored.setValue("preferences", json.dumps(preferences))
    stored.sync()
    return dict(env, XDG_CONFIG_HOME=home)


def planned_runs(args: argparse.Namespace) -> list[Run]:
    """Every run, in order."""
    interval = f"{args.interval:g}"
    gpuwatch = [sys.executable, "-m", "gpuwatch"]
    tray = [*gpuwatch, "gui", "--tray", "--interval", interval]
    commands: list[tuple[str, list[str], bool, dict | None]] = []
    if not args.no_record:
        commands.append(("record", [*gpuwatch, "record", "--interval", interval, "--no-save"],
                         False, None))
    shown = [*gpuwatch, "gui", "--interval", interval]
    if args.gui:
        commands.append(("gui, shown (offscreen)", shown, False, None))
    if args.every_sample:
        commands.append(("gui, shown, every sample drawn", shown, False,
                         {"redraw_every_sample": True}))
    if args.minimised:
        commands.append(("gui, minimised (offscreen)", tray, False, None))
    if args.tray:
        commands.append(("gui --tray, hidden (Xvfb, D-Bus)", tray, True, None))
    runs: list[Run] = []
    if not args.no_bare:
        runs.append(Run(BARE, [sys.executable, str(Path(__file__).resolve()), "--bare-loop",
                               "--interval", interval], None))
    for label, argv, in_tray, preferences in commands:
        if args.baseline:
            runs.append(Run(f"{label} [baseline]", argv, str(Path(args.baseline).resolve()),
                            in_tray, preferences))
        runs.append(Run(label, argv, None, in_tray, preferences))
    return runs


BARE = "bare pynvml + psutil loop"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=60.0, metavar="S",
                        help="seconds measured per run (default 60)")
    parser.add_argument("--warmup", type=float, default=5.0, metavar="S",
                        help="seconds before measuring (default 5)")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S",
                        help="the sampling interval (default 1)")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--per-gpu", type=int, default=8, help="processes per GPU")
    parser.add_argument("--gui", action="store_true", help="also the window (offscreen)")
    parser.add_argument("--every-sample", action="store_true",
                        help="also the window shown with every sample drawn (offscreen)")
    parser.add_argument("--minimised", action="store_true",
                        help="also the window minimised (gui --tray, offscreen: no tray)")
    parser.add_argument("--tray", action="store_true",
                        help="also the window hidden in a tray (needs Xvfb and dbus-daemon)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare loop")
    parser.add_argument("--no-record", action="store_true", help="skip gpuwatch record")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="rounds of every run, interleaved; the median is shown")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="also run gpuwatch from this checkout (e.g. a git worktree of "
                             "an older commit), interleaved with this one")
    parser.add_argument("--bare-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_loop:
        bare_loop(args.interval)
        return

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sampler import build_fake_driver, start_sleepers, stop

    library = build_fake_driver()
    runs = planned_runs(args)
    processes = args.gpus * args.per_gpu
    print(f"{args.gpus} GPUs x {processes} real processes, a sample every {args.interval:g} s;"
          f" CPU over {args.window:g} s after {args.warmup:g} s of warm-up, % of one core"
          + (f"; {args.repeat} rounds, interleaved: median (min-max)" if args.repeat > 1
             else ""))
    if args.baseline:
        print(f"[baseline]: gpuwatch from {Path(args.baseline).resolve()}")
    children = start_sleepers(processes)
    results: dict[str, list[float]] = {run.label: [] for run in runs}
    try:
        with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
            env = child_env(library, args.gpus, [c.pid for c in children], tmp)
            desktop = stack.enter_context(desktop_session(tmp)) \
                if any(run.in_tray for run in runs) else None
            for round_ in range(args.repeat):
                for k, run in enumerate(runs):
                    run_env = dict(env, PYTHONPATH=run.pythonpath) if run.pythonpath else env
                    if run.in_tray and desktop is not None:
                        run_env = dict(run_env, **desktop.env)
                    if run.preferences is not None:
                        run_env = with_preferences(run_env, tmp, f"{round_}-{k}",
                                                   run.preferences)
                    value = measure(f"run{round_}-{k}", run.argv, run_env, tmp, args.warmup,
                                    args.window, desktop if run.in_tray else None)
                    results[run.label].append(value)
                    if args.repeat > 1:
                        print(f"    round {round_ + 1}: {run.label:<40}{value:6.2f} %",
                              file=sys.stderr, flush=True)
    finally:
        stop(children)
    floor = statistics.median(results[BARE]) if results.get(BARE) else None
    for label, values in results.items():
        middle = statistics.median(values)
        spread = f" ({min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
        ratio = f"   {middle / floor:5.2f}x the bare loop" if floor and label != BARE else ""
        print(f"  {label:<40}{middle:6.2f} % of a core{spread}{ratio}")


if __name__ == "__main__":
    main()
