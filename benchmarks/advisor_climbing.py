"""What the advisor costs while memory climbs: ``Advisor.update`` per sample on GPUs whose
envelope makes new highs, where the cheap tests pass and the shape tests run (buckets,
Theil–Sen lines, holds, steps, the climb before a step).

Three fixed runs of ``tests/advisor/generated_shapes.py``, each sampled every second
into a ``History`` and fed to a fresh ``Advisor``:

* leak: 8 GPUs of DDP ranks under a 5 s ±10 % sawtooth; GPU 0's level climbs from
  400 s, filling the card in 30 min;
* drift: 8 GPUs under a 30 s ±6 % sawtooth with an evaluation every 10 min; GPU 0's
  step tops climb from the start, filling the card in an hour;
* ramp beside others: one GPU, the trainer and two co-tenants at their own periods; a
  ramp from 420 s fills the card in 10 min.

CPU time of this thread per ``Advisor.update``, over the samples from the climb's start
to the card full: median, mean, p95, max. ``--baseline DIR`` runs the same in a
subprocess with ``gpuwatch`` imported from DIR (an older checkout) and prints the ratio.

Usage: ``python benchmarks/advisor_climbing.py [--baseline DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "advisor"))

from advisor_support import GIB
from generated_shapes import Failure, RunSpec, Shape, snapshots

from gpuwatch.advisor import Advisor
from gpuwatch.core.history import History

HERE = Path(__file__).resolve()


def _trainer(period_s: float, amplitude: float, level: float, phase_s: float = 0.0,
             start_s: float = 0.0, eval_every_s: float | None = None) -> Shape:
    return Shape(start_s=start_s, end_s=None, context=0.02, level=level, warmup="linear",
                 warmup_s=120.0, steps=3, period_s=period_s, amplitude=amplitude,
                 phase_s=phase_s, eval_every_s=eval_every_s, eval_height=0.05,
                 eval_s=60.0)


def runs() -> dict[str, RunSpec]:
    total = 80 * GIB
    leak = RunSpec(total, 0, 0.01, [[_trainer(5.0, 0.10, 0.45, phase_s=g)] for g in range(8)],
                   4000, Failure("leak", 400.0, 1800.0), "leak")
    drift = RunSpec(total, 0, 0.01,
                    [[_trainer(30.0, 0.06, 0.40, phase_s=3 * g, eval_every_s=600.0)]
                     for g in range(8)],
                    6000, Failure("drift", 0.0, 3600.0), "drift")
    ramp = RunSpec(total, 0, 0.01,
                   [[_trainer(7.0, 0.08, 0.30), _trainer(11.0, 0.06, 0.12, start_s=30.0),
                     _trainer(3.0, 0.04, 0.10, start_s=60.0)]],
                   2000, Failure("ramp", 420.0, 600.0), "ramp beside others")
    return {"leak": leak, "drift": drift, "ramp": ramp}


def measure(spec: RunSpec) -> dict[str, float]:
    """Per-sample CPU time of ``Advisor.update`` (ms) from the climb's start to full."""
    advisor, history = Advisor(), History()
    start = spec.failure.start_s if spec.failure is not None else 0.0
    costs = []
    for t, full, snap in snapshots(spec):
        history.append(snap)
        c0 = time.thread_time()
        advisor.update(history)
        c1 = time.thread_time()
        if t >= start and (full is None or t <= full):
            costs.append((c1 - c0) * 1e3)
    arr = np.array(costs)
    return {"samples": float(arr.size), "median": float(np.median(arr)),
            "mean": float(arr.mean()), "p95": float(np.percentile(arr, 95)),
            "max": float(arr.max())}


def _figures() -> dict[str, dict[str, float]]:
    return {name: measure(spec) for name, spec in runs().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="an older checkout to compare with")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(_figures()))
        return
    ours = _figures()
    base = None
    if args.baseline is not None:
        env = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
        out = subprocess.run([sys.executable, str(HERE), "--json"], env=env, check=True,
                             capture_output=True, text=True).stdout
        base = json.loads(out.strip().splitlines()[-1])
    print("Advisor.update while memory climbs, CPU ms a sample (climb's start to full)\n")
    print(f"{'run':<20} {'samples':>7} {'median':>8} {'mean':>8} {'p95':>8} {'max':>8}"
          + ("   baseline median / mean / p95      ratio (mean)" if base else ""))
    for name, f in ours.items():
        line = (f"{name:<20} {f['samples']:>7.0f} {f['median']:>8.3f} {f['mean']:>8.3f} "
                f"{f['p95']:>8.3f} {f['max']:>8.2f}")
        if base is not None:
            b = base[name]
            line += (f"   {b['median']:>6.3f} / {b['mean']:>6.3f} / {b['p95']:>6.3f}"
                     f"      {f['mean'] / b['mean']:>5.2f}×")
        print(line)
    if base is not None:
        print(f"\nmean of the means: {statistics.mean(f['mean'] for f in ours.values()):.3f} "
              f"ms against {statistics.mean(b['mean'] for b in base.values()):.3f} ms")


if __name__ == "__main__":
    main()
