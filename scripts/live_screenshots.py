"""Screenshots of the live window, as a user sees it: one Xvfb screen per shot.

For each scenario (built-in, or a scenario file), theme and screen size, starts an X
server of that size with a window manager (openbox, where installed: the window gets a
frame and the screen's work area, as on a desktop), runs `gpuwatch gui --demo SCENARIO`
on it, fast enough that a given share of the scenario (`--at`, 60 % by default) has
played when the screen is grabbed (`import -window root`, ImageMagick), and saves the
PNG as docs/screenshots/live/SCENARIO-THEME-WxH[SUFFIX].png. These are the real, running
window, not `--screenshot` renders (which lay out once and never see the live-only
paths). One X server at a time, ended after each shot.

`--fill` maximises the window first: its frame resized to the screen's edges, and the
grab waits until the window has that size (see :mod:`window_fill`).
`--keys` types keys into the window before the grab, as a user would (xdotool: `ctrl+3`
opens the Advisor tab, `ctrl+l` links the selected process to the budget, `ctrl+o Return`
replays the session being recorded); `--cluster` shows the Prometheus cluster view
instead (see :mod:`cluster_view`).

Needs Xvfb and ImageMagick (`apt install xvfb imagemagick openbox xdotool x11-utils`).
Run: .venv/bin/python scripts/live_screenshots.py [--scenarios a,b|path.toml] [--sizes 1280x800]
     [--themes light,dark] [--wait 20] [--at 0.6] [--suffix -after] [--out docs/screenshots/live]
     [--colors 256] [--keys "ctrl+3"] [--name advisor] [--cluster] [--fill]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from window_fill import fill_screen, wait_filled  # beside this script

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


KEY_PAUSE_S = 2.0       # between typed keys, and after the last one before the grab

# a source for the window: its `gpuwatch gui` arguments, and what to do halfway through
Source = Callable[[], AbstractContextManager[tuple[list[str], Callable[[], None]]]]


def demo(scenario: str, duration_s: float, wait_s: float, at: float) -> Source:
    """A simulated scenario, played fast enough that ``at`` of it has run at the grab."""
    scale = max(1.0, at * duration_s / wait_s)
    args = ["--demo", scenario, "--time-scale", f"{scale:g}"]
    return lambda: nullcontext((args, lambda: None))


def shot(source: Source, name: str, theme: str, size: str, wait_s: float,
         out: Path, display: int, suffix: str = "", colors: int = 0,
         keys: tuple[str, ...] = (), fill: bool = False) -> Path:
    width, height = size.split("x")
    path = out / f"{name}-{theme}-{size}{suffix}.png"
    with tempfile.TemporaryDirectory() as home:
        # run from the throwaway folder: the gpuwatch imported is the one on PYTHONPATH
        # (a "before" tree), not this checkout's by way of the working directory
        env = dict(os.environ, DISPLAY=f":{display}",
                   PYTHONPATH=os.environ.get("PYTHONPATH") or str(REPO),
                   XDG_CONFIG_HOME=f"{home}/config",
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
            with source() as (args, halfway), open(f"{home}/gui.log", "wb") as log:
                app = subprocess.Popen([sys.executable, "-m", "gpuwatch", "gui", *args,
                                        "--theme", theme], env=env, cwd=home,
                                       stdout=subprocess.DEVNULL, stderr=log)
                time.sleep(wait_s / 2)
                halfway()
                screen = (int(width), int(height))
                # as a user maximises it; checked, not assumed (see window_fill)
                try:
                    window = fill_screen(env, screen) if fill else None
                except TimeoutError as e:
                    raise SystemExit(f"{name}: {e}") from None
                time.sleep(wait_s / 2)
                for key in keys:
                    subprocess.run(["xdotool", "key", "--clearmodifiers", key], env=env,
                                   check=True, timeout=10)
                    time.sleep(KEY_PAUSE_S)
                if app.poll() is not None:
                    raise SystemExit(f"{name}: the window ended early (exit {app.returncode}): "
                                     f"{Path(log.name).read_text()[-2000:]}")
                if window is not None:       # still the screen's size at the grab
                    try:
                        wait_filled(env, window, screen, settle_s=KEY_PAUSE_S)
                    except TimeoutError as e:
                        raise SystemExit(f"{name}: {e}") from None
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
    parser.add_argument("--keys", default="", metavar="KEYS",
                        help="xdotool keys typed before the grab, e.g. 'ctrl+o Return'")
    parser.add_argument("--name", default="", help="added to each file's scenario name "
                        "(advisor: oom-ramp-advisor-light-1280x800.png)")
    parser.add_argument("--cluster", action="store_true",
                        help="the Prometheus cluster view of two demo hosts, one of which "
                             "goes down halfway (needs prometheus)")
    parser.add_argument("--fill", action="store_true",
                        help="resize the window to the whole screen before the grab "
                             "(xdotool), as a user maximises it")
    args = parser.parse_args()
    keys = tuple(args.keys.split())
    for tool in ("Xvfb", "import", *(("xdotool",) if keys or args.fill else ()),
                 *(("xprop", "xwininfo") if args.fill else ())):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed: apt install xvfb imagemagick xdotool "
                             "x11-utils")
    args.out.mkdir(parents=True, exist_ok=True)
    sources: dict[str, Source]
    if args.cluster:
        from cluster_view import two_hosts  # beside this script

        sources = {"cluster": two_hosts}
    else:
        known = scenarios([n for n in (args.scenarios or "").split(",")
                           if n.endswith(".toml")])
        names = args.scenarios.split(",") if args.scenarios else sorted(known)
        sources = {Path(n).stem: demo(n, known[n], args.wait, args.at) for n in names}
    plan = [(n, t, s) for n in sources for t in args.themes.split(",")
            for s in args.sizes.split(",")]
    if not args.scenarios and not args.cluster:
        known = scenarios()
        sources[SMALL[0]] = demo(SMALL[0], known[SMALL[0]], args.wait, args.at)
        plan += [(SMALL[0], t, SMALL[1]) for t in args.themes.split(",")]
    for i, (name, theme, size) in enumerate(plan, 1):
        label = f"{name}-{args.name}" if args.name else name
        path = shot(sources[name], label, theme, size, args.wait, args.out, args.display,
                    args.suffix, args.colors, keys, args.fill)
        print(f"[{i}/{len(plan)}] {path}", flush=True)


if __name__ == "__main__":
    main()
