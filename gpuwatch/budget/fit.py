"""Which catalog GPUs hold a setup, with what headroom, and how many under ZeRO-3."""

from __future__ import annotations

import math
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
    spec: ModelSpec, est: Estimate, capacity_bytes: int, limit: int = 4096
) -> int | None:
    """The fewest data-parallel GPUs that fit under ZeRO-3, solved from the sharded terms.

    Per GPU: ``unsharded + sharded / N``; both terms come from two evaluations.
    """
    if est.workload.mode != "train":
        setup = replace(est.setup, dp=1, zero=0)
        return 1 if estimate(spec, est.workload, setup).total_bytes <= capacity_bytes else None
    one = estimate(spec, est.workload, replace(est.setup, dp=1, zero=3)).total_bytes
    two = estimate(spec, est.workload, replace(est.setup, dp=2, zero=3)).total_bytes
    sharded = 2 * (one - two)
    unsharded = one - sharded
    if unsharded >= capacity_bytes:
        return None
    n = max(1, math.ceil(sharded / (capacity_bytes - unsharded)))
    while n <= limit:  # integer rounding in the estimate can need one more
        if (
            estimate(spec, est.workload, replace(est.setup, dp=n, zero=3)).total_bytes
            <= capacity_bytes
        ):
            return n
        n += 1
    return None


def fit_table(spec: ModelSpec, est: Estimate) -> tuple[GpuFit, ...]:
    from gpuwatch.budget.solver import max_batch_size

    rows = []
    for gpu in GPUS:
        rows.append(
            GpuFit(
                gpu,
                est.total_bytes <= gpu.memory_bytes,
                gpu.memory_bytes - est.total_bytes,
                max_batch_size(est, gpu.memory_bytes),
                min_gpus_zero3(spec, est, gpu.memory_bytes),
            )
        )
    return tuple(rows)
