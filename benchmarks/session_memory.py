"""Peak memory (RSS) of the long paths over one long session: recording it, exporting it
in every format, and loading it for replay.

Records WIDE (8 GPUs × 64 processes by default, as in record_headless.py) for HOURS of
virtual time with the real `gpuwatch record --time-scale max` (the sampler runs as fast
as it can, so the recorder's queue is at its fullest), then runs each reader in a fresh
process and reads its peak resident set (``ru_maxrss``). The baseline, measured in the
same run, is a process that imports the same modules and reads the session's summary
(`SessionReader.info()`): the figures above it are what each path holds for the session.
``--baseline-checkout DIR`` runs the same paths from an older checkout too (e.g.
``git archive OLD gpuwatch resources | tar -x -C DIR``), interleaved, for before/after
figures.

Run: .venv/bin/python benchmarks/session_memory.py [--hours 24] [--session FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# each reader, run in a child: (name, code) with SESSION and OUT bound
READERS = {
    "summary only (baseline)": "from gpuwatch.sessions.reader import SessionReader\n"
                               "from gpuwatch.sessions import export, replay\n"
                               "with SessionReader(SESSION) as r: r.info()",
    "report CSV zip": "from gpuwatch.sessions.export import export\n"
                      "export(SESSION, 'csv', OUT + '.zip')",
    "report plain CSV (GPU samples)": "from gpuwatch.sessions.export import export\n"
                                      "export(SESSION, 'csv', OUT + '.csv')",
    "report JSON": "from gpuwatch.sessions.export import export\n"
                   "export(SESSION, 'json', OUT + '.json')",
    "report HTML": "from gpuwatch.sessions.export import export\n"
                   "export(SESSION, 'html', OUT + '.html')",
    "replay: overview": "from gpuwatch.sessions.replay import load_overview\n"
                        "load_overview(SESSION)",
    "replay: full load": "from gpuwatch.sessions.replay import load_replay\n"
                         "load_replay(SESSION)",
}

_CHILD = """
import json, resource, sys, time
SESSION, OUT = sys.argv[1], sys.argv[2]
start = time.perf_counter()
exec(sys.argv[3])
print(json.dumps({"rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "seconds": time.perf_counter() - start}))
"""


def _env(root: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(root), QT_QPA_PLATFORM="offscreen")


def record(session: Path, hours: float, gpus: int, procs: int) -> dict:
    """`gpuwatch record` of the wide scenario at full speed; its peak RSS and time."""
    sys.path.insert(0, str(HERE))
    from record_headless import write_scenario

    scenario = write_scenario(session.with_suffix(".toml"), gpus, procs)
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run([sys.executable, "-m", "gpuwatch", "record", "--demo", str(scenario),
                           "--time-scale", "max", "--duration", str(int(hours * 3600)),
                           "--out", str(session)], env=_env(ROOT), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"record failed: {done.stderr[-2000:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"rss_kib": max(rss, before), "seconds": time.perf_counter() - start,
            "bytes": session.stat().st_size}


def read(root: Path, session: Path, code: str, out: Path) -> dict:
    # run from ``root``: `python -c` puts the working folder first on the path
    done = subprocess.run([sys.executable, "-c", _CHILD, str(session), str(out), code],
                          env=_env(root), capture_output=True, text=True, cwd=root)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1][:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--procs", type=int, default=64)
    parser.add_argument("--session", type=Path, help="use this session instead of "
                        "recording one (it is only read)")
    parser.add_argument("--baseline-checkout", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        session = args.session
        if session is None:
            session = Path(tmp) / "wide.gpuwatch.sqlite"
            rec = record(session, args.hours, args.gpus, args.procs)
            print(f"record --time-scale max, {args.hours:g} h of {args.gpus} GPUs × "
                  f"{args.procs} processes: peak RSS {rec['rss_kib'] / 1024:.0f} MiB, "
                  f"{rec['seconds']:.0f} s, file {rec['bytes'] / 2**20:.0f} MiB")
        print(f"session {session} ({session.stat().st_size / 2**20:.0f} MiB)")
        roots = [("this checkout", ROOT)]
        if args.baseline_checkout:
            roots.append(("baseline", args.baseline_checkout.resolve()))
        base: dict[str, float] = {}
        for name, code in READERS.items():
            for label, root in roots:
                out = Path(tmp) / f"out-{len(label)}"
                got = read(root, session, code, out)
                for suffix in (".zip", ".csv", ".json", ".html"):
                    Path(f"{out}{suffix}").unlink(missing_ok=True)
                if "error" in got:
                    print(f"  {name:<32} {label:<22} failed: {got['error']}")
                    continue
                rss = got["rss_kib"] / 1024
                base.setdefault(label, rss)
                print(f"  {name:<32} {label:<22} peak RSS {rss:7.0f} MiB "
                      f"(+{rss - base[label]:.0f} over the baseline), {got['seconds']:.1f} s")


if __name__ == "__main__":
    main()
