"""The planner against published runs: tests/plan/data/published.toml.

Each run is planned at the defaults (no --efficiency: the planner's own figure for the
model's kind) with the options that describe it, and the planned figure is compared with
the published one. A run counts as within 1.5× when planned / published lies in
[1/1.5, 1.5]; a run the planner cannot express (an option it lacks, a GPU count it does
not plan, nothing fits) is "unpredicted".

"Before" runs the same rows through another revision of gpuwatch (``--baseline REF``, by
default the planner before FP8, multi-node layouts and overlap), extracted with
``git archive`` into a temporary directory and run as a subprocess; options that revision
does not know are left out (``--gpus``), so a count above one node is unpredicted there.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "plan" / "data" / "published.toml"
WITHIN = 1.5
BASELINE = "a72614b"  # the planner before this benchmark existed


@dataclass(frozen=True)
class Run:
    id: str
    what: str
    source: str
    gpu: str
    gpus: int
    args: tuple[str, ...]
    metric: str
    published: float
    derived: str = ""
    assumed: str = ""


def load(path: Path = DATA) -> list[Run]:
    with path.open("rb") as f:
        doc = tomllib.load(f)
    return [Run(**{**r, "args": tuple(r["args"])}) for r in doc["runs"]]


def figure(run: Run, doc: dict[str, Any]) -> float | None:
    """The planned figure for ``run`` from a ``gpuwatch.plan/1`` document (None: the plan
    has no fitting configuration of that GPU and count)."""
    match = [c for c in doc["configs"] if c["gpu"] == run.gpu and c["gpus"] == run.gpus
             and c["fits"]]
    if not match:
        return None
    c = match[0]
    step = c["step"]
    if run.metric == "tokens_per_s_per_gpu":
        return c["tokens_per_s_per_gpu"]
    if run.metric == "images_per_s_per_gpu":
        return c["samples_per_s_per_gpu"]
    if run.metric == "time_to_first_token_s":
        return step["prefill_s"] or None
    if run.metric == "generation_tokens_per_s":
        seq = int(run.args[run.args.index("--seq") + 1])
        out = int(run.args[run.args.index("--context") + 1]) - seq
        batch = doc["global_batch"]
        seconds = c.get("generation_s")  # older revisions: the step at the full context
        return batch * out / (seconds or step["prefill_s"] + out * step["total_s"])
    raise ValueError(f"unknown metric {run.metric!r}")


def plan_now(run: Run) -> dict[str, Any] | None:
    """This checkout's plan for ``run``, in process."""
    import contextlib
    import io

    from gpuwatch.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(["plan", *run.args, "--gpu", run.gpu, "--no-prices", "--json"])
        except SystemExit as e:
            code = int(e.code or 0)
    return json.loads(out.getvalue()) if code == 0 else None


def extract(ref: str, into: Path) -> None:
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "gpuwatch", "resources"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")


def plan_then(run: Run, tree: Path) -> dict[str, Any] | None:
    """The baseline revision's plan for ``run`` (options it lacks left out)."""
    args = list(run.args)
    if "--gpus" in args:
        i = args.index("--gpus")
        del args[i:i + 2]
    args = [str(ROOT / a) if a.startswith("tests/") else a for a in args]
    proc = subprocess.run([sys.executable, "-m", "gpuwatch", "plan", *args, "--gpu", run.gpu,
                           "--no-prices", "--json"], cwd=tree, capture_output=True, text=True,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, timeout=600)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def ratio(planned: float | None, published: float) -> float | None:
    return None if planned is None or not planned > 0 else planned / published


def within(r: float | None) -> bool:
    return r is not None and 1 / WITHIN <= r <= WITHIN


def shown(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def main(argv: list[str]) -> None:
    baseline = argv[argv.index("--baseline") + 1] if "--baseline" in argv else BASELINE
    runs = load()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        try:
            extract(baseline, tree)
        except subprocess.CalledProcessError:
            tree = None  # type: ignore[assignment]
        for run in runs:
            now = plan_now(run)
            after = ratio(None if now is None else figure(run, now), run.published)
            before = None
            if tree is not None:
                then = plan_then(run, tree)
                before = ratio(None if then is None else figure(run, then), run.published)
            rows.append((run, before, after))
            print(f"{run.id:<28} published {shown(run.published):>10}  before "
                  f"{(f'{before:.2f}×' if before else 'unpredicted'):>11}  after "
                  f"{(f'{after:.2f}×' if after else 'unpredicted'):>11}", flush=True)
    n = len(rows)
    for name, i in (("before", 1), ("after", 2)):
        hits = sum(within(r[i]) for r in rows)
        none = sum(r[i] is None for r in rows)
        ratios = [r[i] for r in rows if r[i]]
        gmean = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else 0
        print(f"{name:<7} ({baseline if i == 1 else 'this checkout'}): {hits} of {n} within "
              f"{WITHIN}×, {none} unpredicted, geometric mean planned/published {gmean:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
