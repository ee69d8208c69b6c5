"""Which catalog GPUs hold a setup, with what headroom, and how many under ZeRO-3."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.gpus import GPUS, GpuInfo
from gpuwatch.budget.specs import ModelSpec


@dataclass(frozen=True)
class GpuFit:
    gpu: GpuInfo
    fits: bool
    headroom_bytes: int
    max_batch_size: int
    min_gpus_zero3: int | None  # None: does not fit even when sharded


def min_gpus_zero3(
    spec: ModelSpec,
    est: Estimate,
    capacity_bytes: int,
    limit: int = 4096,
    totals: dict[int, int] | None = None,
) -> int | None:
    """The fewest data-parallel GPUs that fit under ZeRO-3 (None: not even ``limit``).

    The per-GPU peak falls monotonically with N (the sharded terms shrink, the rest
    stays), so a bisection over N needs about log2(limit) estimates (never more than
    ``limit.bit_length()`` steps); ``totals`` caches them across GPUs.
    """
    if est.workload.mode != "train":
        setup = replace(est.setup, dp=1, zero=0)
        return 1 if estimate(spec, est.workload, setup).total_bytes <= capacity_bytes else None
    cache = {} if totals is None else totals

    def total(n: int) -> int:
        if n not in cache:
            setup = replace(est.setup, dp=n, zero=3)
            cache[n] = estimate(spec, est.workload, setup).total_bytes
        return cache[n]

    if total(limit) > capacity_bytes:
        return None
    lo, hi = 1, limit  # invariant: total(hi) fits
    if total(lo) <= capacity_bytes:
        return lo
    for _ in range(limit.bit_length()):
        if hi - lo <= 1:
            break
        mid = (lo + hi) // 2
        if total(mid) <= capacity_bytes:
            hi = mid
        else:
            lo = mid
    return hi


def fit_table(spec: ModelSpec, est: Estimate) -> tuple[GpuFit, ...]:
    from gpuwatch.budget.solver import max_batch_size

    rows = []
    totals: dict[int, int] = {}
    for gpu in GPUS:
        rows.append(
            GpuFit(
                gpu,
                est.total_bytes <= gpu.memory_bytes,
                gpu.memory_bytes - est.total_bytes,
                max_batch_size(est, gpu.memory_bytes),
                min_gpus_zero3(spec, est, gpu.memory_bytes, totals=totals),
            )
        )
    return tuple(rows)
