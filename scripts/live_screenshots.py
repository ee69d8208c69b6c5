"""Screenshots of the live window, as a user sees it: one Xvfb screen per shot.

For each built-in scenario, theme and screen size, starts an X server of that size,
runs `gpuwatch gui --demo SCENARIO` on it, fast enough that about 60 % of the scenario
has played when the screen is grabbed (`import -window root`, ImageMagick), and saves
the PNG as docs/screenshots/live/SCENARIO-THEME-WxH.png. These are the real, running
window, not `--screenshot` renders (which lay out once and never see the live-only
paths).

Needs Xvfb and ImageMagick (`apt install xvfb imagemagick`).
Run: .venv/bin/python scripts/live_screenshots.py [--scenarios a,b] [--sizes 1280x800]
     [--themes light,dark] [--wait 20] [--out docs/screenshots/live]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SIZES = ("1280x800", "1920x1080")
SMALL = ("multi-gpu-ddp", "1024x640")     # eight cards on a small screen


def scenarios() -> dict[str, float]:
    """Built-in scenario names and their durations in seconds."""
    sys.path.insert(0, str(REPO))
    from gpuwatch.telemetry.sim.catalog import builtin_names, resolve_scenario

    return {name: resolve_scenario(name).duration_s for name in builtin_names()}


def shot(scenario: str, duration_s: float, theme: str, size: str, wait_s: float,
         out: Path, display: int) -> Path:
    width, height = size.split("x")
    path = out / f"{scenario}-{theme}-{size}.png"
    scale = max(1.0, 0.6 * duration_s / wait_s)
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, DISPLAY=f":{display}", XDG_CONFIG_HOME=f"{home}/config",
                   XDG_STATE_HOME=f"{home}/state", XDG_RUNTIME_DIR=home,
                   GPUWATCH_DATA_DIR=f"{home}/data")
        env.pop("QT_QPA_PLATFORM", None)
        xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", f"{width}x{height}x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        app = None
        try:
            time.sleep(1.0)
            app = subprocess.Popen([sys.executable, "-m", "gpuwatch", "gui", "--demo", scenario,
                                    "--theme", theme, "--time-scale", f"{scale:g}"],
                                   env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(wait_s)
            if app.poll() is not None:
                raise SystemExit(f"{scenario}: the window ended early (exit {app.returncode})")
            subprocess.run(["import", "-window", "root", str(path)], env=env, check=True,
                           timeout=60)
        finally:
            if app is not None:
                app.terminate()
                app.wait(20)
            xvfb.terminate()
            xvfb.wait(10)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", help="comma list (default: every built-in)")
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--themes", default="light,dark")
    parser.add_argument("--wait", type=float, default=20.0, metavar="S",
                        help="seconds the window runs before the grab (default 20)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots" / "live")
    parser.add_argument("--display", type=int, default=87)
    args = parser.parse_args()
    for tool in ("Xvfb", "import"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed: apt install xvfb imagemagick")
    known = scenarios()
    names = args.scenarios.split(",") if args.scenarios else sorted(known)
    args.out.mkdir(parents=True, exist_ok=True)
    plan = [(n, t, s) for n in names for t in args.themes.split(",")
            for s in args.sizes.split(",")]
    if not args.scenarios:
        plan += [(SMALL[0], t, SMALL[1]) for t in args.themes.split(",")]
    for i, (name, theme, size) in enumerate(plan, 1):
        path = shot(name, known[name], theme, size, args.wait, args.out, args.display)
        print(f"[{i}/{len(plan)}] {path}", flush=True)


if __name__ == "__main__":
    main()
