"""gpuwatch on a real GPU: real training runs recorded, estimates against the real allocator.

    PYTHONPATH=. python3 benchmarks/real_gpu/run.py --out DIR      # on one H100/H200
    PYTHONPATH=. python3 benchmarks/real_gpu/run.py --dry-run      # here: CPU, fake driver

Each workload (benchmarks/real_gpu/workload.py) is its own process with the probe
attached, while ``gpuwatch record --interval 1`` samples the driver into a session file
of its phase (plan.py lists the phases and their sizes). Everything measured goes into
the one output folder: ``summary.json`` (with each session's expectation checked at
once), ``estimates.csv``/``.json``, ``sessions/``, ``reports/``, ``results/``, ``logs/``.

``--dry-run`` runs the same code on CPU torch with tiny models under the vendored fake
NVML driver (tests/fakenvml; needs a C compiler): the sessions' memory figures are the
fake driver's, and what only CUDA can tell (allocator peaks, a real out-of-memory
error) is null or labelled as a declared cap. ``import_results.py`` refuses such a run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO)]

import expectations  # noqa: E402
import figures  # noqa: E402
from plan import Job, Phase, phases  # noqa: E402
from processes import (  # noqa: E402
    Child,
    build_fake_driver,
    gpu_facts,
    preflight,
    report,
    session_start,
    start_record,
)

PY = sys.executable


class Run:
    def __init__(self, out: Path, dry: bool, scale: float):
        self.out, self.dry, self.scale = out, dry, scale
        for sub in ("sessions", "reports", "results", "logs", "configs"):
            (out / sub).mkdir(parents=True, exist_ok=True)
        self.configs = out / "configs"
        self.tmp = Path(tempfile.mkdtemp(prefix="gpuwatch-real-gpu-"))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
        env["GPUWATCH_PROBE_DIR"] = str(self.tmp / "probes")
        env["GPUWATCH_DATA_DIR"] = str(self.tmp / "data")
        for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
            env[name] = str(self.tmp / name.lower())
            os.makedirs(env[name], mode=0o700, exist_ok=True)
        os.makedirs(env["GPUWATCH_PROBE_DIR"], mode=0o700, exist_ok=True)
        if dry:
            env.update(LD_LIBRARY_PATH=str(build_fake_driver(self.tmp)), FAKENVML_GPUS="1",
                       FAKENVML_MEM_GIB="80", FAKENVML_PIDS="self", CUDA_VISIBLE_DEVICES="",
                       OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.env = env
        self.children: list[Child] = []             # every workload process, to end them
        self.records: list[subprocess.Popen] = []    # every recorder
        self.t0 = time.time()
        self.summary: dict[str, Any] = {
            "schema": "gpuwatch.real-gpu-run/1", "mode": "dry-run" if dry else "real",
            "started_at_s": self.t0, "scale": scale, "phases": {},
            "note": ("DRY RUN: CPU torch, tiny models, the fake NVML driver's memory figures; "
                     "nothing here is a measurement of a GPU") if dry else ""}

    def save(self) -> None:
        self.summary["wall_s"] = round(time.time() - self.t0, 1)
        tmp = self.out / "summary.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=1, default=str))
        os.replace(tmp, self.out / "summary.json")


def drive(run: Run, phase: Phase, children: list[Child]) -> str:
    """Give each process its go (timed, or pooled ``parallel`` at a time) and wait for
    them to end; those still running at ``max_s`` are stopped. Returns how it ended."""
    t0 = time.time()
    pool = [c for c in children if c.job.go_at_s is None]
    timed = sorted((c for c in children if c.job.go_at_s is not None),
                   key=lambda c: c.job.go_at_s or 0.0)
    while True:
        now = time.time() - t0
        for c in timed:
            if c.go_at is None and (c.job.go_at_s or 0.0) <= now:
                c.go()
        running = sum(1 for c in pool if c.go_at is not None and not c.poll())
        for c in pool:
            if running >= phase.parallel:
                break
            if c.go_at is None:
                c.go()
                running += 1
        if all(c.go_at is not None and c.poll() for c in children):
            return "ended"
        if now > phase.max_s:
            for c in children:
                c.stop()
            return f"cut at {phase.max_s:.0f} s"
        time.sleep(0.1)


def run_phase(run: Run, phase: Phase, children: list[Child]) -> dict[str, Any]:
    t0 = time.time()
    rec = session = log = None
    if phase.record:
        rec, session, log = start_record(run, phase.name,
                                         [c.pid for c in children if c.pid is not None])
    how = drive(run, phase, children)
    if rec is not None:
        time.sleep(phase.tail_s)        # the session sees the exits and the memory return
        rec.send_signal(signal.SIGTERM)
        try:
            rec.wait(30)
        except subprocess.TimeoutExpired:
            rec.kill()
        log.close()
    out: dict[str, Any] = {"wall_s": round(time.time() - t0, 1), "ended": how,
                           "children": [c.result() for c in children], "note": phase.note}
    if session is not None and session.exists():
        start = session_start(session)
        out.update(session=str(session.relative_to(run.out)), session_started_at_s=start,
                   expect=phase.expect)
        entry = expectation_entry(phase, out["children"], start)
        out["entry"] = entry
        rep = report(run, phase.name, session)
        duration = (rep or {}).get("session", {}).get("duration_s") or 0.0
        if entry is not None and entry["expect"] == "leak" and duration < leak_span_s():
            out["check_note"] = (f"not checked: {duration:.0f} s recorded, the leak rule "
                                 f"needs {leak_span_s():.0f} s by default")
        elif rep is not None and entry is not None:
            out["check"] = expectations.check(rep, entry)
            if run.dry:
                out["check_note"] = ("dry run: the session holds the fake driver's figures, "
                                     "so this outcome says nothing about the advisor")
    return out


def leak_span_s() -> float:
    """How long a session must be for the leak rule to find a leak (default settings)."""
    from gpuwatch.advisor.settings import AdvisorSettings

    st = AdvisorSettings()
    return st.leak_warmup_s + st.leak_min_span_s + 2 * st.leak_bucket_s


def expectation_entry(phase: Phase, children: list[dict], start: float | None) -> dict | None:
    if phase.expect is None:
        return None
    main = children[0]
    entry: dict[str, Any] = {"expect": phase.expect, "pid": main["pid"]}
    if phase.expect == "oom":
        died = (main["result"].get("died") or {})
        entry["died_of_out_of_memory"] = bool(died.get("out_of_memory"))
        entry["t_oom_s"] = (round(main["exited_at"] - start, 1)
                            if start and main["exited_at"] and main["returncode"] else None)
    if phase.expect in ("healthy", "arrival"):
        entry.pop("pid")
    return entry


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=os.environ.get("OUT") or None,
                    help="the output folder (default: $OUT where set)")
    ap.add_argument("--dry-run", action="store_true",
                    help="CPU torch, tiny models, the fake NVML driver")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="multiply every real duration by this (default 1)")
    ap.add_argument("--budget-s", type=float, default=450.0,
                    help="skip a phase that would start after this many seconds (default 450)")
    ap.add_argument("--only", default="", help="comma list of phases to run (default: all)")
    args = ap.parse_args()
    if args.out is None:
        ap.error("--out DIR is needed (or $OUT)")
    args.out.mkdir(parents=True, exist_ok=True)
    run = Run(args.out.resolve(), args.dry_run, args.scale)
    # a run stopped from outside (SIGTERM, SIGHUP) ends its processes and keeps its summary
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    try:
        return execute(run, args)
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)       # the clean-up is not interrupted
        run.save()
        for c in run.children:
            try:
                c.stop()
            except Exception as exc:
                print(f"real_gpu: could not stop {c.job.name}: {exc}", file=sys.stderr)
        for rec in run.records:
            if rec.poll() is None:
                rec.send_signal(signal.SIGTERM)      # the recorder closes its session
                try:
                    rec.wait(20)
                except subprocess.TimeoutExpired:
                    rec.kill()
        run.save()
        shutil.rmtree(run.tmp, ignore_errors=True)


def execute(run: Run, args: argparse.Namespace) -> int:
    problem = preflight(run)
    if problem:
        print(f"real_gpu: {problem}", file=sys.stderr)
        return 2
    import shapes

    for name in (*shapes.SPECS, "gpt2-tiny"):
        shapes.write_config(name, run.configs)
    facts = gpu_facts(run)
    run.summary["gpu"] = facts
    print(f"real_gpu: {run.summary['mode']} on {facts.get('name')} "
          f"(driver {facts.get('driver')}), out {run.out}", flush=True)
    wanted = {p for p in args.only.split(",") if p}
    plan = [p for p in phases(run.dry, args.scale, facts.get("total_bytes"))
            if not wanted or p.name in wanted]
    spawned: dict[str, list[Child]] = {}

    def prepare(phase: Phase) -> None:
        if phase.name not in spawned:
            spawned[phase.name] = [Child(run, phase.name, j, lazy=run.dry and j.go_at_s is None)
                                   for j in phase.jobs]

    for i, phase in enumerate(plan):
        elapsed = time.time() - run.t0
        if not run.dry and elapsed > args.budget_s:
            run.summary["phases"][phase.name] = {"skipped": f"{elapsed:.0f} s spent, budget "
                                                            f"{args.budget_s:.0f} s"}
            for c in spawned.pop(phase.name, []):
                c.stop()
            continue
        prepare(phase)
        if i + 1 < len(plan):
            prepare(plan[i + 1])        # the next phase imports torch meanwhile
        print(f"real_gpu: phase {phase.name} ({elapsed:.0f} s)", flush=True)
        result = run_phase(run, phase, spawned.pop(phase.name))
        run.summary["phases"][phase.name] = result
        if phase.name == "batch-tools":
            run.summary["phases"]["batch-verify"] = verify_batch(run, result)
        run.save()
    for leftover in spawned.values():
        for c in leftover:
            c.stop()
    figures.collect(run.summary, run.out, run.configs, run.env)
    run.save()
    print(json.dumps(figures.headline(run.summary), indent=1, default=str), flush=True)
    print(f"real_gpu: done in {time.time() - run.t0:.0f} s; {run.out / 'summary.json'}")
    return 0


def verify_batch(run: Run, batch_phase: dict[str, Any]) -> dict[str, Any]:
    """The largest batch the search found, and one more, each in a fresh process."""
    found = (((batch_phase["children"] or [{}])[0].get("result") or {}).get("from_one") or {})
    b = found.get("batch")
    if not b:
        return {"skipped": "the search found no batch"}
    job = Job("verify", "batch-verify", {**plan_batch_params(run), "batches": [b + 1, b]})
    phase = Phase("batch-verify", [job], record=False, max_s=90 if not run.dry else 30)
    return run_phase(run, phase, [Child(run, phase.name, job)])


def plan_batch_params(run: Run) -> dict[str, Any]:
    p = next(p for p in phases(run.dry, run.scale) if p.name == "batch-tools")
    keep = ("model", "precision", "seq", "dry_cap_tokens")
    return {k: v for k, v in p.jobs[0].params.items() if k in keep}


if __name__ == "__main__":
    sys.exit(main())
