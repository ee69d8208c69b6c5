"""A micro-batch that adapts during training: smaller after an out-of-memory error,
larger again when memory shows steady headroom, the effective batch unchanged.

```python
from gpuwatch import probe

probe.attach(model, optimizer)
adaptive = probe.AdaptiveBatch(effective_batch=64, micro_batch=64)

def train_step(micro_batch: int, grad_accum: int) -> float:
    optimizer.zero_grad(set_to_none=True)      # a retried step starts clean
    for chunk in next_batch(64).split(micro_batch):
        loss = model(chunk).mean() / grad_accum
        loss.backward()
    optimizer.step()
    return loss.item()

for _ in range(steps):
    adaptive.run(train_step)
```

``run`` calls the step with the current micro-batch and accumulation. An
out-of-memory error inside it is caught, the caches freed, the micro-batch lowered to
the next divisor of the effective batch at most half its size (accumulation raised to
match) and the step retried. After ``grow_after`` steps in a row whose memory (CUDA:
what the caching allocator holds after the step), scaled to the next larger
micro-batch, stays below ``headroom`` of the capacity, the micro-batch goes up one
divisor; a size that failed is not tried again for ``cooldown`` steps. Every change is
logged (logger ``gpuwatch.probe.adaptive``) and reported to gpuwatch in the probe
document of the attached probe (``adaptive_batch``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from gpuwatch.probe.batch_search import _release, is_out_of_memory

T = TypeVar("T")
LOG = logging.getLogger("gpuwatch.probe.adaptive")

# () -> (bytes the last steps needed, capacity bytes), or None when unknown
MemorySource = Callable[[], tuple[int, int] | None]
Reporter = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class BatchChange:
    step: int  # steps completed when the change was made
    old_micro_batch: int
    micro_batch: int
    grad_accum: int
    reason: str  # "out-of-memory" or "headroom"
    at_s: float  # wall-clock time (time.time())


def cuda_memory() -> tuple[int, int] | None:
    """What PyTorch's caching allocator holds after the step, and the device's memory.

    The cache keeps the segments a step needed until they are emptied (as they are
    after each out-of-memory error), so the reserved figure is the recent steps' working
    set. Peak counters are left alone: the probe publishes them, and resetting them
    here would rewrite what gpuwatch shows.
    """
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    device = torch.cuda.current_device()
    reserved = int(torch.cuda.memory_reserved(device))
    total = int(torch.cuda.get_device_properties(device).total_memory)
    return reserved, total


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def probe_reporter(state: dict[str, Any]) -> None:
    """Publish ``state`` as the ``adaptive_batch`` section of the attached probe's
    document (nothing when no probe is attached)."""
    from gpuwatch import probe

    current = probe.current()
    if current is None:
        return
    current.sections["adaptive_batch"] = state      # kept in every later publish too
    current.publish()


class AdaptiveBatch:
    """Keeps ``micro_batch × grad_accum == effective_batch`` while memory allows."""

    def __init__(self, effective_batch: int, micro_batch: int | None = None, *,
                 min_micro_batch: int = 1, grow_after: int = 50, headroom: float = 0.85,
                 cooldown: int = 200, max_retries: int = 16,
                 memory: MemorySource | None = cuda_memory,
                 report: Reporter | None = probe_reporter,
                 release: Callable[[], None] = _release):
        if effective_batch < 1:
            raise ValueError("effective_batch must be at least 1")
        micro = effective_batch if micro_batch is None else micro_batch
        if micro < 1 or effective_batch % micro:
            raise ValueError("micro_batch must divide effective_batch")
        if not 0 < headroom <= 1:
            raise ValueError("headroom must be a fraction in (0, 1]")
        if grow_after < 1 or cooldown < 0 or max_retries < 1 or min_micro_batch < 1:
            raise ValueError("grow_after, max_retries and min_micro_batch must be at least 1")
        self.effective_batch = effective_batch
        self.micro_batch = micro
        self.min_micro_batch = min_micro_batch
        self.grow_after = grow_after
        self.headroom = headroom
        self.cooldown = cooldown
        self.max_retries = max_retries
        self._memory = memory
        self._report = report
        self._release = release
        self.steps = 0
        self.changes: list[BatchChange] = []
        self._calm_steps = 0
        self._failed_at: dict[int, int] = {}  # micro-batch -> step of its last failure

    @property
    def grad_accum(self) -> int:
        return self.effective_batch // self.micro_batch

    def run(self, step_fn: Callable[[int, int], T]) -> T:
        """One training step, ``step_fn(micro_batch, grad_accum)``, retried smaller after
        each out-of-memory error (at most ``max_retries`` times; then the error is
        raised, as it is when the smallest micro-batch runs out of memory)."""
        for _ in range(self.max_retries + 1):
            try:
                result = step_fn(self.micro_batch, self.grad_accum)
            except BaseException as exc:
                if not is_out_of_memory(exc) or not self._shrink():
                    raise
                del exc
                self._release()
                continue
            self.steps += 1
            self._after_success()
            return result
        raise RuntimeError(f"the step ran out of memory {self.max_retries + 1} times")

    def _smaller(self) -> int | None:
        options = [d for d in divisors(self.effective_batch)
                   if self.min_micro_batch <= d <= self.micro_batch // 2]
        return max(options) if options else None

    def _larger(self) -> int | None:
        options = [d for d in divisors(self.effective_batch) if d > self.micro_batch]
        return min(options) if options else None

    def _shrink(self) -> bool:
        smaller = self._smaller()
        self._failed_at[self.micro_batch] = self.steps
        if smaller is None:
            return False
        self._change(smaller, "out-of-memory")
        return True

    def _after_success(self) -> None:
        figures = self._memory() if self._memory is not None else None
        larger = self._larger()
        if figures is None or larger is None:
            self._calm_steps = 0
            return
        peak, capacity = figures
        failed = self._failed_at.get(larger)
        if failed is not None and self.steps - failed < self.cooldown:
            self._calm_steps = 0
            return
        if capacity > 0 and peak * larger / self.micro_batch <= self.headroom * capacity:
            self._calm_steps += 1
        else:
            self._calm_steps = 0
        if self._calm_steps >= self.grow_after:
            self._change(larger, "headroom")

    def _change(self, micro: int, reason: str) -> None:
        old = self.micro_batch
        self.micro_batch = micro
        self._calm_steps = 0
        change = BatchChange(self.steps, old, micro, self.grad_accum, reason, time.time())
        self.changes.append(change)
        LOG.warning("gpuwatch: micro-batch %d -> %d, gradient accumulation %d (%s; "
                    "effective batch %d)", old, micro, self.grad_accum, reason,
                    self.effective_batch)
        if self._report is not None:
            try:
                self._report(self.state())
            except Exception as exc:  # reporting must never stop training
                LOG.debug("gpuwatch: could not report the batch change: %s", exc)

    def state(self) -> dict[str, Any]:
        """What gpuwatch is told: the current sizes and the latest change."""
        return {"effective_batch": self.effective_batch, "micro_batch": self.micro_batch,
                "grad_accum": self.grad_accum, "steps": self.steps,
                "changes": len(self.changes),
                "last_change": asdict(self.changes[-1]) if self.changes else None}
