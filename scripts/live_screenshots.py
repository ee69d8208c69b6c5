"""Screenshots of the live window, as a user sees it: one Xvfb screen per shot.

For each scenario (built-in, or a scenario file), theme and screen size, starts an X
server of that size with a window manager (openbox, where installed: the window gets a
frame and the screen's work area, as on a desktop), runs `gpuwatch gui --demo SCENARIO`
on it, fast enough that a given share of the scenario (`--at`, 60 % by default) has
played when the screen is grabbed (`import -window root`, ImageMagick), and saves the
PNG as docs/screenshots/live/SCENARIO-THEME-WxH[SUFFIX].png. These are the real, running
window, not `--screenshot` renders (which lay out once and never see the live-only
paths). One X server at a time, ended after each shot.

Needs Xvfb and ImageMagick (`apt install xvfb imagemagick openbox`).
Run: .venv/bin/python scripts/live_screenshots.py [--scenarios a,b|path.toml] [--sizes 1280x800]
     [--themes light,dark] [--wait 20] [--at 0.6] [--suffix -after] [--out docs/screenshots/live]
     [--colors 256] [--fill]
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


def scenarios(extra: list[str] = ()) -> dict[str, float]:  # type: ignore[assignment]
    """Built-in scenario names (and the files in ``extra``) with their durations in
    seconds."""
    sys.path.insert(0, str(REPO))
    from gpuwatch.telemetry.sim.catalog import builtin_names, resolve_scenario

    names = [*builtin_names(), *(e for e in extra if e not in builtin_names())]
    return {name: resolve_scenario(name).duration_s for name in names}


def shot(scenario: str, duration_s: float, theme: str, size: str, wait_s: float,
         out: Path, display: int, at: float = 0.6, suffix: str = "",
         colors: int = 0, fill: bool = False) -> Path:
    width, height = size.split("x")
    path = out / f"{Path(scenario).stem}-{theme}-{size}{suffix}.png"
    scale = max(1.0, at * duration_s / wait_s)
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, DISPLAY=f":{display}", XDG_CONFIG_HOME=f"{home}/config",
                   XDG_STATE_HOME=f"{home}/state", XDG_RUNTIME_DIR=home,
                   GPUWATCH_DATA_DIR=f"{home}/data")
        env.pop("QT_QPA_PLATFORM", None)
        xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", f"{width}x{height}x24",
                                 "-nolisten", "tcp"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        app = wm = None
        try:
            time.sleep(1.0)
            if shutil.which("openbox"):
                wm = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
                time.sleep(0.5)
            app = subprocess.Popen([sys.executable, "-m", "gpuwatch", "gui", "--demo", scenario,
                                    "--theme", theme, "--time-scale", f"{scale:g}"],
                                   env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            if fill and shutil.which("xdotool"):     # as a user maximises it
                time.sleep(min(wait_s / 2, 8.0))
                subprocess.run(["xdotool", "search", "--sync", "--onlyvisible", "--name",
                                "^gpuwatch$", "windowmove", "0", "0", "windowsize", "100%",
                                "100%"], env=env, timeout=30, check=False,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(wait_s - min(wait_s / 2, 8.0))
            else:
                time.sleep(wait_s)
            if app.poll() is not None:
                raise SystemExit(f"{scenario}: the window ended early (exit {app.returncode})")
            reduce = ["-colors", str(colors)] if colors else []
            subprocess.run(["import", "-window", "root", *reduce, str(path)], env=env,
                           check=True, timeout=60)
        finally:
            if app is not None:
                app.terminate()
                app.wait(20)
            if wm is not None:
                wm.terminate()
                wm.wait(10)
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
    parser.add_argument("--at", type=float, default=0.6, metavar="SHARE",
                        help="share of the scenario played at the grab (default 0.6)")
    parser.add_argument("--suffix", default="", help="added to each file's name")
    parser.add_argument("--colors", type=int, default=0, metavar="N",
                        help="reduce each PNG to N colours (smaller files)")
    parser.add_argument("--fill", action="store_true",
                        help="resize the window to the whole screen before the grab "
                             "(xdotool), as a user maximises it")
    args = parser.parse_args()
    for tool in ("Xvfb", "import"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed: apt install xvfb imagemagick")
    known = scenarios([n for n in (args.scenarios or "").split(",") if n.endswith(".toml")])
    names = args.scenarios.split(",") if args.scenarios else sorted(known)
    args.out.mkdir(parents=True, exist_ok=True)
    plan = [(n, t, s) for n in names for t in args.themes.split(",")
            for s in args.sizes.split(",")]
    if not args.scenarios:
        plan += [(SMALL[0], t, SMALL[1]) for t in args.themes.split(",")]
    for i, (name, theme, size) in enumerate(plan, 1):
        path = shot(name, known[name], theme, size, args.wait, args.out, args.display,
                    args.at, args.suffix, args.colors, args.fill)
        print(f"[{i}/{len(plan)}] {path}", flush=True)


if __name__ == "__main__":
    main()
