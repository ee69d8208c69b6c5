"""Beyond one node: the fewest GPUs (whole nodes, doubling) that hold a workload, and,
when not even :data:`MAX_GPUS` do, why.

A count is first checked cheaply: do its most sharded layouts (the most tensor and
pipeline parallelism, the highest ZeRO stage, full recompute, micro-batch 1) fit? Only
the first count that passes is planned in full (:func:`gpuwatch.plan.layouts.evaluate`).
The estimates are cached across GPU types, which share them.
"""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.budget.estimator import Estimate
from gpuwatch.budget.specs import ModelSpec
from gpuwatch.core.units import format_bytes
from gpuwatch.plan.hardware import Hardware
from gpuwatch.plan.layouts import Config, Estimates, Layout, evaluate, global_batch, layouts
from gpuwatch.plan.roofline import Efficiency

MAX_GPUS = 16384  # the largest published training jobs (Llama 3 405B: 16,384 H100s)


def node_counts(hw: Hardware, above: int = 0) -> list[int]:
    """Whole nodes, doubling, up to :data:`MAX_GPUS`, above ``above`` GPUs."""
    node = hw.sheet.node
    out, n = [], node
    while n <= MAX_GPUS:
        if n > above:
            out.append(n)
        n *= 2
    return out


def _most_sharded(spec: ModelSpec, cache: Estimates, hw: Hardware, gpus: int) -> list[Layout]:
    wl = cache.workload
    train = wl.mode == "train"
    total = global_batch(wl, cache.setup)
    found = [x for x in layouts(spec, hw, gpus, train, cache.setup.offload == "params", wl.seq)
             if x.dp <= total]
    if not found:
        return []
    tp = max(x.tp for x in found)
    top: dict[tuple[int, int], Layout] = {}
    for x in found:
        if x.tp == tp:
            key = (x.pp, x.cp)
            if key not in top or x.zero > top[key].zero:
                top[key] = x
    ckpt = "full" if train else None
    return [replace(x, checkpointing=ckpt) for x in top.values()]


def smallest_estimate(spec: ModelSpec, cache: Estimates, hw: Hardware,
                      gpus: int) -> tuple[Layout, Estimate] | None:
    """The most sharded layout of ``gpus`` with the smallest peak at micro-batch 1."""
    best: tuple[Layout, Estimate] | None = None
    for layout in _most_sharded(spec, cache, hw, gpus):
        est = cache.get(layout, 1, 1)
        if est is not None and (best is None or est.total_bytes < best[1].total_bytes):
            best = (layout, est)
    return best


def fewest_gpus(spec: ModelSpec, cache: Estimates, hw: Hardware, efficiency: Efficiency,
                above: int, network: float | None = None) -> Config | None:
    """The plan at the fewest whole nodes above ``above`` GPUs that hold the workload."""
    for n in node_counts(hw, above):
        small = smallest_estimate(spec, cache, hw, n)
        if small is None or small[1].total_bytes > hw.gpu.memory_bytes:
            continue
        config = evaluate(spec, cache, hw, n, efficiency, network)
        if config.fits:
            return config
    return None


def why_not(spec: ModelSpec, cache: Estimates, hw: Hardware) -> str:
    """Why no count of ``hw`` up to :data:`MAX_GPUS` holds the workload, in a sentence:
    what the most sharded layout of the largest count that has one still needs."""
    small = None
    for n in reversed(node_counts(hw)):
        small = smallest_estimate(spec, cache, hw, n)
        if small is not None:
            break
    total = global_batch(cache.workload, cache.setup)
    if small is None or small[1].total_bytes <= hw.gpu.memory_bytes:
        return (f"a global batch of {total} leaves data-parallel replicas without a sample "
                "at the counts that would hold it: raise --batch or --grad-accum")
    layout, est = small
    b = est.breakdown
    parts = {"activations": b.activations, "weights": b.parameters,
             "optimizer states": b.optimizer_states, "gradients": b.gradients,
             "KV cache": b.kv_cache}
    worst = max(parts, key=lambda k: parts[k])
    return (f"even {layout.describe()} at micro-batch 1 needs {format_bytes(est.total_bytes)} "
            f"per GPU of {format_bytes(hw.gpu.memory_bytes)}, {worst} "
            f"{format_bytes(parts[worst])} of it")
