"""Largest batch and longest sequence that fit a capacity, solved in closed form.

Under a fixed sequence, the peak is ``max(fixed + b·per_sample, step)``: affine in
the batch, so the largest batch is one division. Under a fixed batch, activations
are a quadratic in the sequence (the a·s² scores without flash attention, linear
with it): we read its three coefficients from the estimator and take the root.

Neither searches, so both end after a fixed number of steps (the sequence solver runs
the estimator three times), and their answers are capped at the largest batch and
sequence gpuwatch accepts (2**20 and 2**24): a 1 EiB capacity for a tiny model says
"at least 1,048,576", not a number no machine could run.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpuwatch.budget.bounds import MAX_BATCH, MAX_SEQ
from gpuwatch.budget.estimator import Estimate, estimate
from gpuwatch.budget.specs import ModelSpec, TransformerSpec


def max_batch_size(est: Estimate, capacity_bytes: int) -> int:
    """The largest micro-batch per GPU whose peak stays within ``capacity_bytes`` (0: none).

    Capped at :data:`MAX_BATCH`.
    """
    d = est.detail
    if d.step_bytes > capacity_bytes or d.fixed_bytes > capacity_bytes:
        return 0
    if not d.per_sample_bytes > 0:
        return 0
    room = (capacity_bytes - d.fixed_bytes) / d.per_sample_bytes
    return MAX_BATCH if room >= MAX_BATCH else int(room)


def _per_sample_at(spec: ModelSpec, est: Estimate, seq: int) -> float:
    wl = est.workload
    wl = replace(wl, seq=seq, context=(seq if wl.context is None else wl.context))
    return estimate(spec, wl, est.setup).detail.per_sample_bytes


def max_sequence_length(spec: ModelSpec, est: Estimate, capacity_bytes: int) -> int | None:
    """The longest sequence for the estimate's batch that fits (None: not a token model).

    Capped at :data:`MAX_SEQ`.
    """
    if not isinstance(spec, TransformerSpec) or spec.arch == "vit":
        return None
    d = est.detail
    if d.step_bytes > capacity_bytes or d.fixed_bytes > capacity_bytes:
        return 0
    # per_sample(s) = c0 + c1·s + c2·s², exactly; three points give the coefficients
    y1, y2, y3 = (_per_sample_at(spec, est, s) for s in (1024, 2048, 3072))
    c2 = (y3 - 2 * y2 + y1) / (2 * 1024**2)
    c1 = (y2 - y1) / 1024 - c2 * (2048 + 1024)
    c0 = y1 - c1 * 1024 - c2 * 1024**2
    budget = (capacity_bytes - d.fixed_bytes) / est.workload.batch - c0
    if budget <= 0:
        return 0
    if c2 > 1e-9 * max(c1, 1.0):
        s = (-c1 + math.sqrt(c1 * c1 + 4 * c2 * budget)) / (2 * c2)
    elif c1 > 0:
        s = budget / c1
    else:
        return None
    if not s >= 0:  # NaN from a degenerate fit
        return 0
    return MAX_SEQ if s >= MAX_SEQ else int(s)
