"""The planner against published runs, and how long a plan takes.

``python benchmarks/plan.py`` plans each run of tests/plan/data/published.toml at the
defaults and prints planned / published per run, before (the planner as it was before
FP8, multi-node layouts and overlap; ``--baseline REF`` picks another revision) and
after, and how many land within 1.5× (:mod:`benchmarks.plan_published`).

``python benchmarks/plan.py --speed``: time of a plan (every catalog GPU × 1/2/4/8,
layouts, cloud fit, levers) per preset,
against one budget estimate of the same setup (the baseline, measured in the same run),
and what caching the estimates across GPUs saves.

The plan's estimates depend on the layout and the batch, not on the GPU, so they are
computed once per (layout, batch) and shared by all fifteen GPUs; "no cache" builds a
fresh cache per GPU, as a per-GPU loop would. The Plan tab runs the plan on a worker
thread; this says how long the user waits for it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from gpuwatch.budget.catalog import lookup_model
from gpuwatch.budget.estimator import estimate
from gpuwatch.budget.specs import ModelSpec
from gpuwatch.budget.workload import Setup, Workload
from gpuwatch.plan.hardware import catalog
from gpuwatch.plan.layouts import GPU_COUNTS, Estimates, evaluate
from gpuwatch.plan.planner import PlanInput, make_plan
from gpuwatch.plan.presets import PRESETS
from gpuwatch.plan.prices import PriceBook, read_prices
from gpuwatch.plan.roofline import Efficiency

EXTRA = {
    "llama-3.1-70b full fine-tune": ("llama-3.1-70b", Workload("train", 1, 4096),
                                     Setup(precision="mixed-bf16")),
    "llama-3.1-70b decoding": ("llama-3.1-70b", Workload("infer", 32, 1024, context=8192),
                               Setup(precision="bf16")),
}


def timed(fn: Callable[[], Any], runs: int) -> float:
    fn()  # warm
    t0 = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - t0) / runs * 1000


def main(argv: list[str]) -> None:
    if "--speed" not in argv:
        from benchmarks.plan_published import main as published

        published(argv)
        return
    book = read_prices()
    cases = {name: (p.model, p.workload, p.setup) for name, p in PRESETS.items()} | EXTRA
    print(f"{'case':<30}{'estimate':>10}{'plan':>10}{'ratio':>8}{'estimates':>11}"
          f"{'no cache':>10}{'saved':>7}")
    for name, (model, wl, setup) in cases.items():
        print(row(name, lookup_model(model, wl.image), wl, setup, book))


def uncached(spec: ModelSpec, wl: Workload, setup: Setup) -> None:
    """The configurations with a fresh estimate cache per GPU."""
    for hw in catalog():
        fresh = Estimates(spec, wl, setup)
        for n in GPU_COUNTS:
            evaluate(spec, fresh, hw, n, Efficiency())


def row(name: str, spec: ModelSpec, wl: Workload, setup: Setup, book: PriceBook) -> str:
    one = timed(partial(estimate, spec, wl, setup), 20)
    plan_ms = timed(partial(make_plan, PlanInput(spec, wl, setup), book), 5)
    cache = Estimates(spec, wl, setup)
    for hw in catalog():
        for n in GPU_COUNTS:
            evaluate(spec, cache, hw, n, Efficiency())
    count = len(cache._cache)
    naive = timed(partial(uncached, spec, wl, setup), 2)
    return (f"{name:<30}{one:>8.2f}ms{plan_ms:>8.1f}ms{plan_ms / one:>7.0f}×{count:>11}"
            f"{naive:>8.0f}ms{naive / plan_ms:>6.1f}×")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main(sys.argv[1:])
