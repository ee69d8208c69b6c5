"""What each part of the shown window costs, by leaving it out.

``steady_cpu.py --gui`` gives one figure for the window shown (8 GPUs x 8 real processes
on the fake driver, a sample a second, every figure moving). This runs the same window
again with one part's redraw left out at a time, interleaved round by round with the
whole window, and prints what each removal saves, in % of one core:

- ``cards``:        the GPU cards are not updated (so not repainted)
- ``time-plots``:   the memory and bandwidth plots are not refreshed
- ``process-plot``: the selected process's plot under the table is not refreshed
- ``table``:        the process table and the plot under it are not refreshed
- ``redraw``:       nothing is redrawn: what is left is sampling, the history, the
                    advisor and the session recording, with the window shown

A part left out is replaced, in the child only, by a method that does nothing; the app
itself has no switch for it. The savings of two parts need not add up: a paint pass
shared by both is saved only when neither asks for it.

Run:  .venv/bin/python benchmarks/window_parts.py [--window 30] [--repeat 2]
          [--parts cards,time-plots,process-plot,table,redraw]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from sampler import build_fake_driver, start_sleepers, stop
from steady_cpu import child_env, measure

# part -> the (module, class, method) replaced by a method that does nothing
PARTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "cards": (("gpuwatch.ui.live.main_window", "MainWindow", "_update_cards"),),
    "time-plots": (("gpuwatch.ui.widgets.plots", "TimePlots", "refresh"),),
    "process-plot": (("gpuwatch.ui.live.process_panel", "ProcessPanel", "_refresh_detail"),),
    "table": (("gpuwatch.ui.live.process_panel", "ProcessPanel", "refresh"),
              ("gpuwatch.ui.live.process_panel", "ProcessPanel", "_refresh_detail")),
    "redraw": (("gpuwatch.ui.live.main_window", "MainWindow", "refresh"),),
}
WHOLE = "whole window"


def run_window_without(parts: list[str], interval: str) -> None:
    """The child: ``gpuwatch gui`` with ``parts`` left out."""
    import importlib

    for part in parts:
        for module, cls, method in PARTS[part]:
            owner = getattr(importlib.import_module(module), cls)
            # "cards" stands in for a method that answers "no relayout needed"
            setattr(owner, method, lambda *_args, **_kwargs: False)
    from gpuwatch.cli import main

    sys.argv = ["gpuwatch", "gui", "--interval", interval]
    main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=30.0, metavar="S",
                        help="seconds measured per run (default 30)")
    parser.add_argument("--warmup", type=float, default=8.0, metavar="S",
                        help="seconds before measuring (default 8)")
    parser.add_argument("--repeat", type=int, default=2, metavar="N",
                        help="rounds of every run, interleaved (default 2)")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--per-gpu", type=int, default=8, help="processes per GPU")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma list of parts to leave out, one run each "
                             f"(default: all of {', '.join(PARTS)})")
    parser.add_argument("--child", metavar="PARTS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    interval = f"{args.interval:g}"
    if args.child is not None:
        run_window_without([p for p in args.child.split(",") if p], interval)
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        parser.error(f"--parts: unknown part {', '.join(unknown)} "
                     f"(choose from {', '.join(PARTS)})")

    library = build_fake_driver()
    runs = [(WHOLE, "")] + [(f"without {p}", p) for p in parts]
    print(f"the window shown, {args.gpus} GPUs x {args.gpus * args.per_gpu} real processes, a "
          f"sample every {interval} s; CPU over {args.window:g} s after {args.warmup:g} s, % of "
          f"one core; {args.repeat} rounds, interleaved: median (min-max)")
    results: dict[str, list[float]] = {label: [] for label, _ in runs}
    children = start_sleepers(args.gpus * args.per_gpu)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            env = child_env(library, args.gpus, [c.pid for c in children], tmp)
            for round_ in range(args.repeat):
                for k, (label, left_out) in enumerate(runs):
                    argv = [sys.executable, str(Path(__file__).resolve()), "--child",
                            left_out, "--interval", interval]
                    value = measure(f"run{round_}-{k}", argv, env, tmp, args.warmup,
                                    args.window)
                    results[label].append(value)
                    print(f"    round {round_ + 1}: {label:<28}{value:6.2f} %",
                          file=sys.stderr, flush=True)
    finally:
        stop(children)
    whole = statistics.median(results[WHOLE])
    for label, values in results.items():
        middle = statistics.median(values)
        saved = "" if label == WHOLE else f"   saves {whole - middle:5.2f} % " \
                                          f"({(whole - middle) / whole:4.0%} of the window)"
        print(f"  {label:<28}{middle:6.2f} % ({min(values):.2f}-{max(values):.2f}){saved}")


if __name__ == "__main__":
    main()
