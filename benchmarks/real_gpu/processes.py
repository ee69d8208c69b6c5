"""The processes of the real-GPU run: the workloads (each started at once, importing
torch, and run on its go), the recorders, the reports, and the checks before a run."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plan import Job

if TYPE_CHECKING:
    from run import Run

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PY = sys.executable


class Child:
    """One workload process: started at once (it imports torch and waits), run on go.
    A lazy one (a pooled job of the dry run, on a machine of few cores) starts at go."""

    def __init__(self, run: Run, phase: str, job: Job, lazy: bool = False):
        self.job, self.phase, self.run = job, phase, run
        folder = run.out / "results" / phase
        folder.mkdir(parents=True, exist_ok=True)
        self.result_path = folder / f"{job.name}.json"
        self.go_path = run.tmp / f"go-{phase}-{job.name}"
        params = {**job.params, "name": job.name, "dry": run.dry,
                  "result": str(self.result_path), "go": str(self.go_path)}
        if job.kind == "batch":
            params["estimator"] = str(run.configs / f"{job.params['model']}.config.json")
        self.argv = [PY, str(HERE / "workload.py"), job.kind, json.dumps(params)]
        self.log = (run.out / "logs" / f"{phase}-{job.name}.log").open("w")
        self.proc: subprocess.Popen | None = None
        self.exited_at: float | None = None
        self.rc: int | None = None
        self.go_at: float | None = None
        run.children.append(self)
        if not lazy:
            self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**self.run.env, **self.job.env})

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def go(self) -> None:
        if self.proc is None:
            self.start()
        self.go_path.touch()
        self.go_at = time.time()

    def poll(self) -> bool:
        """True once the process has ended (its end time noted when first seen)."""
        if self.proc is None:
            return False
        if self.rc is None and self.proc.poll() is not None:
            self.rc, self.exited_at = self.proc.returncode, time.time()
        return self.rc is not None

    def stop(self) -> None:
        if self.proc is None or self.poll():
            return
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.poll()

    def result(self) -> dict[str, Any]:
        self.log.close()
        try:
            doc = json.loads(self.result_path.read_text())
        except (OSError, ValueError):
            doc = {}
        return {"job": self.job.name, "kind": self.job.kind, "pid": self.pid,
                "returncode": self.rc, "go_at": self.go_at, "exited_at": self.exited_at,
                "result": doc}


def build_fake_driver(tmp: Path) -> Path:
    folder = tmp / "fakenvml"
    done = subprocess.run([PY, str(REPO / "tests" / "fakenvml" / "build.py"), str(folder)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"real_gpu: the dry run needs the fake driver, which did not build:"
                         f"\n{done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


def gpu_facts(run: Run) -> dict[str, Any]:
    done = subprocess.run([PY, "-m", "gpuwatch", "snapshot", "--json"], capture_output=True,
                          text=True, env=run.env, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-400:]}
    doc = json.loads(done.stdout)
    gpus = doc.get("gpus") or [{}]
    g = gpus[0]
    return {"backend": doc.get("backend"), "name": g.get("name"),
            "total_bytes": (g.get("memory") or {}).get("total_bytes", g.get("total_bytes")),
            "gpus": len(gpus), "driver": (doc.get("backend") or {}).get("driver_version")}


def start_record(run: Run, phase: str, pids: list[int]) -> tuple[subprocess.Popen, Path, Any]:
    session = run.out / "sessions" / f"{phase}.gpuwatch.sqlite"
    session.unlink(missing_ok=True)
    env = dict(run.env)
    if run.dry:
        env["FAKENVML_PIDS"] = ",".join(map(str, pids))
    log = (run.out / "logs" / f"{phase}-record.log").open("w")
    proc = subprocess.Popen([PY, "-m", "gpuwatch", "record", "--interval", "1", "--out",
                             str(session)], stdout=log, stderr=subprocess.STDOUT, env=env)
    run.records.append(proc)
    path = run.out / "logs" / f"{phase}-record.log"
    end = time.monotonic() + 30
    while time.monotonic() < end and "Recording" not in path.read_text():
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    return proc, session, log


def session_start(session: Path) -> float | None:
    try:
        with sqlite3.connect(f"file:{session}?mode=ro", uri=True) as db:
            return float(db.execute("SELECT started_at_s FROM session").fetchone()[0])
    except (sqlite3.Error, TypeError):
        return None


def report(run: Run, phase: str, session: Path) -> dict[str, Any] | None:
    target = run.out / "reports" / f"{phase}.json"
    done = subprocess.run([PY, "-m", "gpuwatch", "report", str(session), "--format", "json",
                           "-o", str(target)], capture_output=True, text=True, env=run.env,
                          check=False)
    if done.returncode != 0:
        return None
    return json.loads(target.read_text())


PREFLIGHT = """
import importlib, json
missing = []
for name in ("torch", "pynvml", "numpy", "psutil"):
    try:
        importlib.import_module(name)
    except ImportError:
        missing.append(name)
cuda = None
if "torch" not in missing:
    import torch
    cuda = torch.cuda.is_available()
print(json.dumps({"missing": missing, "cuda": cuda}))
"""


def preflight(run: Run) -> str | None:
    """What stops this run before it starts (in a child: no CUDA context here)."""
    done = subprocess.run([PY, "-c", PREFLIGHT], capture_output=True, text=True,
                          env=run.env, check=False)
    if done.returncode != 0:
        return f"{PY} cannot run the preflight check: {done.stderr.strip()[-300:]}"
    found = json.loads(done.stdout.splitlines()[-1])
    if found["missing"]:
        return (f"{PY} lacks {', '.join(found['missing'])} (the run needs torch, "
                "nvidia-ml-py, numpy and psutil; set PYTHON= to another interpreter)")
    if not run.dry and not found["cuda"]:
        return "PyTorch sees no CUDA GPU here; --dry-run runs on CPU with the fake driver"
    return None
