"""Start-up cost of the command line: CPU seconds per command, against a bare interpreter.

Each command runs in a fresh interpreter (``python -m gpuwatch ...``), several times; the
CPU time (user + system) of each child comes from ``resource.getrusage``, and the median
is shown with its ratio to ``python -c pass`` measured in the same run. A second pass
with ``-X importtime`` counts the modules each command imports and names the costliest.

    .venv/bin/python benchmarks/startup.py                        # this checkout
    .venv/bin/python benchmarks/startup.py --before /tmp/old-tree # and another, side by side

``--before`` names another checkout of gpuwatch (e.g. ``git worktree add /tmp/old HEAD~1``);
both run with the same interpreter, their own tree first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

COMMANDS: list[tuple[str, list[str]]] = [
    ("python -c pass", ["-c", "pass"]),
    ("--version", ["-m", "gpuwatch", "--version"]),
    ("--help", ["-m", "gpuwatch", "--help"]),
    ("snapshot --demo --json", ["-m", "gpuwatch", "snapshot", "--demo", "--json"]),
    ("scenarios", ["-m", "gpuwatch", "scenarios"]),
    ("estimate --model gpt2", ["-m", "gpuwatch", "estimate", "--model", "gpt2"]),
    ("TAB: estimate --model l", ["-m", "gpuwatch"]),
]

# A shell's completion request (one TAB), answered into /dev/null as argcomplete's
# scripts would have it answered on file descriptor 8.
TAB_LINE = "gpuwatch estimate --model l"
ENV_OF = {"TAB: estimate --model l": {
    "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "bash", "COMP_LINE": TAB_LINE,
    "COMP_POINT": str(len(TAB_LINE)), "_ARGCOMPLETE_STDOUT_FILENAME": os.devnull}}

# modules worth naming when a command imports them
WATCHED = ("numpy", "PySide6", "pyqtgraph", "pynvml", "psutil", "sqlite3", "platformdirs",
           "tomllib", "zipfile", "gpuwatch.budget.estimator", "gpuwatch.advisor.engine",
           "gpuwatch.sessions.reader", "gpuwatch.telemetry.nvml",
           "gpuwatch.telemetry.sim.library")


def _env(tree: Path, data_dir: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ) | (extra or {})
    env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"]
                                     if env.get("PYTHONPATH") else "")
    env["GPUWATCH_DATA_DIR"] = data_dir
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    return env


def cpu_seconds(argv: list[str], tree: Path, data_dir: str,
                extra: dict[str, str] | None = None) -> float:
    """User + system CPU of one child interpreter running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *argv], cwd=tree, env=_env(tree, data_dir, extra),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_profile(argv: list[str], tree: Path, data_dir: str,
                   extra: dict[str, str] | None = None) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indented name) per imported module, from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=tree,
                          env=_env(tree, data_dir, extra), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=True)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        own, cumulative, name = line[len("import time:"):].split("|", 2)
        if own.strip().isdigit():
            rows.append((int(own), int(cumulative), name.rstrip()))
    return rows


def breakdown(rows: list[tuple[int, int, str]], baseline: set[str],
              top: int) -> tuple[int, float, str, str]:
    """Modules imported beyond a bare interpreter, their own import ms summed, the
    cumulative ms of each watched module that was imported, and the ``top`` modules
    whose own import took longest."""
    extra = [(own, cum, name.strip()) for own, cum, name in rows if name.strip() not in baseline]
    cumulative = {name: cum for _, cum, name in extra}
    watched = ", ".join(f"{m} {cumulative[m] / 1000:.1f}" for m in WATCHED if m in cumulative)
    costliest = ", ".join(f"{name} {own / 1000:.1f}" for own, _, name in sorted(extra)[::-1][:top])
    return len(extra), sum(own for own, _, _ in extra) / 1000, watched or "none", costliest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, metavar="TREE",
                    help="another gpuwatch checkout to measure beside this one (default: none)")
    ap.add_argument("--runs", type=int, default=7,
                    help="runs per command and tree; the median is shown (default 7)")
    ap.add_argument("--top", type=int, default=5,
                    help="modules named per command, costliest own import first (default 5)")
    args = ap.parse_args()
    trees = [("now", HERE)] if args.before is None else [("before", args.before.resolve()),
                                                          ("after", HERE)]
    with tempfile.TemporaryDirectory() as data_dir:
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.runs):          # interleaved, so drift hits every column alike
            for label, argv in COMMANDS:
                for tag, tree in trees:
                    times.setdefault((tag, label), []).append(
                        cpu_seconds(argv, tree, data_dir, ENV_OF.get(label)))
        median = {key: statistics.median(v) for key, v in times.items()}
        profiles = {(tag, label): import_profile(argv, tree, data_dir, ENV_OF.get(label))
                    for label, argv in COMMANDS for tag, tree in trees}

    print(f"CPU seconds (user+system), median of {args.runs} runs; × = ratio to python -c pass")
    head = f"{'command':<26}" + "".join(f"{tag + ' CPU s':>14}{'×':>7}{'modules':>9}"
                                        for tag, _ in trees)
    if len(trees) == 2:
        head += f"{'after/before':>14}"
    print(head)
    for label, _ in COMMANDS:
        line = f"{label:<26}"
        for tag, _ in trees:
            base = median[(tag, "python -c pass")]
            t = median[(tag, label)]
            line += (f"{t:>14.3f}{t / base if base else float('nan'):>7.1f}"
                     f"{len(profiles[(tag, label)]):>9}")
        if len(trees) == 2:
            line += f"{median[('after', label)] / median[('before', label)]:>14.2f}"
        print(line)

    for tag, _ in trees:
        baseline = {name.strip() for _, _, name in profiles[(tag, "python -c pass")]}
        print(f"\nImports ({tag}) beyond a bare interpreter: modules, their own import ms "
              "summed; heavy modules loaded (cumulative ms); the costliest own imports (ms)")
        for label, _ in COMMANDS[1:]:
            count, own_ms, watched, costliest = breakdown(profiles[(tag, label)], baseline,
                                                          args.top)
            print(f"  {label:<24}{count:>4} modules {own_ms:6.1f} ms")
            print(f"  {'':<24}heavy: {watched}")
            print(f"  {'':<24}costliest: {costliest}")

if __name__ == "__main__":
    main()
