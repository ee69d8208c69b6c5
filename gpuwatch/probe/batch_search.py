"""Finding the largest batch that runs, without crashing the process.

Growing from a start until a step fails with an out-of-memory error, then bisecting
between the last success and the first failure. From 1 the batch doubles; from a seed
(the analytic estimate, e.g. ``gpuwatch.budget.max_batch_size``) it grows by a quarter,
since the answer is expected near it. Each OOM is caught, the allocator's cache is
emptied, and the search goes on.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BatchSearch:
    batch_size: int                  # 0 when even the smallest batch ran out of memory
    trials: int
    tried: tuple[tuple[int, bool], ...] = field(default=())   # (batch, fitted) in order
    limit_reached: bool = False      # the largest batch allowed ran: the true max may be higher


def is_out_of_memory(exc: BaseException) -> bool:
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    return isinstance(exc, RuntimeError | MemoryError) and "out of memory" in str(exc).lower()


def _release() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def find_max_batch(step_fn: Callable[[int], Any], start: int = 1,
                   limit: int | None = None, growth: float | None = None) -> BatchSearch:
    """The largest ``batch`` for which ``step_fn(batch)`` runs without running out of memory.

    ``start`` is the first batch tried (seed it with the analytic estimate: fewer
    trials); ``limit`` caps the search; ``growth`` is the step up while batches fit
    (default 2 from 1, 1.25 from a seed). Errors other than out-of-memory propagate.
    """
    factor = growth if growth is not None else (2.0 if start == 1 else 1.25)
    if factor <= 1:
        raise ValueError("growth must be above 1")
    if start < 1:
        raise ValueError("start must be at least 1")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    tried: list[tuple[int, bool]] = []

    def fits(batch: int) -> bool:
        try:
            step_fn(batch)
        except BaseException as exc:
            if not is_out_of_memory(exc):
                raise
            del exc
            _release()
            tried.append((batch, False))
            return False
        tried.append((batch, True))
        return True

    low, high = 0, None                  # largest known fit, smallest known failure
    batch = min(start, limit) if limit else start
    if fits(batch):
        low = batch
        while high is None:
            if limit is not None and low >= limit:
                return BatchSearch(low, len(tried), tuple(tried), limit_reached=True)
            grown = max(low + 1, int(low * factor))
            nxt = grown if limit is None else min(grown, limit)
            if fits(nxt):
                low = nxt
            else:
                high = nxt
    else:
        high = batch
        while high > 1 and low == 0:     # halve down until something fits
            nxt = high // 2
            if fits(nxt):
                low = nxt
            else:
                high = nxt
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
    return BatchSearch(low, len(tried), tuple(tried))
