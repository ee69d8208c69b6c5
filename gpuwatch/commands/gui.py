"""`gpuwatch gui` (also plain `gpuwatch`): the desktop window.

Qt is imported only inside :func:`run_gui`, so the other subcommands start without it;
:func:`declare` declares the options when `gui` is the subcommand in use.
"""

from __future__ import annotations

import argparse
import os
import sys

from gpuwatch.commands import options
from gpuwatch.commands.parsing import describe


def declare(p: argparse.ArgumentParser) -> None:
    """The options of ``gpuwatch gui``."""
    describe(
        p,
        description="Open the window: live GPUs and processes, time plots, the memory "
                    "budget and its overlay. Without an NVIDIA driver it shows simulated "
                    "GPUs and says so.",
        example_lines=["gpuwatch                       # the window on this machine's GPUs",
                       "gpuwatch gui --demo oom-ramp   # on simulated GPUs heading for an OOM"],
        run="gpuwatch.commands.gui:run_gui")
    options.add_demo(p)
    options.add_prometheus(p)
    options.add_gpu_ids(p)
    options.add_sampling(p, None, "the saved setting, 1 at first")
    p.add_argument("--screenshot", metavar="PNG",
                   help="render the window to this PNG file and exit, without needing a "
                        "display (default: no screenshot; the window stays open)")
    p.add_argument("--screenshot-after", type=options.seconds, metavar="S",
                   help="sample for S seconds before the screenshot (default 3 on real GPUs; "
                        "on simulated GPUs, S virtual seconds of history, default 600)")
    p.add_argument("--theme", choices=("system", "light", "dark"),
                   help="the colour theme for this run: system, light or dark (default: "
                        "the saved setting, system at first)")
    p.add_argument("--tray", action="store_true",
                   help="start in the system tray, without the window (minimised where the "
                        "desktop has no tray)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log debug messages, to stderr and to the log file (default: the "
                        "log file gets information, stderr only warnings; Help → About "
                        "shows where the file is)")


def display_problem(screenshot: bool) -> str | None:
    """Why the window cannot open here, or None. Checked before Qt aborts the process."""
    if screenshot or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return ("No desktop display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window "
            "cannot open.\nIn a terminal, try `gpuwatch record --demo` or `gpuwatch snapshot "
            "--demo`; `gpuwatch gui --screenshot out.png` renders the window without a display.")


def run_gui(args: argparse.Namespace) -> int:
    from gpuwatch.core.output_paths import check_output_file

    if args.screenshot is not None:      # a bad path is refused before Qt starts
        check_output_file(args.screenshot, "screenshot")
    problem = display_problem(bool(args.screenshot))
    if problem is not None:
        print(f"gpuwatch: {problem}", file=sys.stderr)
        return 1
    from gpuwatch.core.logs import setup_logging

    # the window's own run keeps a log file; a screenshot run only talks to stderr
    setup_logging(verbose=args.verbose, to_file=args.screenshot is None)
    from gpuwatch.ui import LaunchOptions, launch

    remote = {}
    if args.prometheus is not None or args.match is not None or args.gpus is not None:
        source = options.source_options(args)   # refuses it with --demo, --match alone
        remote = {"prometheus": source.prometheus, "match": source.match}
    return launch(LaunchOptions(
        demo=args.demo, interval_s=args.interval, time_scale=args.time_scale,
        screenshot=args.screenshot, screenshot_after_s=args.screenshot_after,
        theme=args.theme, tray=args.tray, gpus=args.gpus, **remote))
