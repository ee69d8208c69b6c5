"""How many GPUs a Prometheus source holds, and for how long after they are gone.

A server decides which series it answers with; left alone, every (target, gpu) it
ever names would be kept, with a day of history each. So the source admits at most
:data:`MAX_GPUS_PER_TARGET` GPUs per target (one scraped exporter) and
:data:`MAX_GPUS` in all, and a GPU whose series have stopped is shown unreachable for
:data:`FORGET_AFTER_S`, then no longer listed (its history is then released): an
exporter that restarts under new names, again and again, does not grow memory for ever.
"""

from __future__ import annotations

from collections import Counter

from gpuwatch.telemetry.prometheus import names as n
from gpuwatch.telemetry.prometheus.assemble import GpuKey, target_of
from gpuwatch.telemetry.prometheus.response import Series

MAX_GPUS_PER_TARGET = 64
MAX_GPUS = 1024
FORGET_AFTER_S = 3600.0


class GpuCaps:
    """Which (target, gpu) keys the source admits, and when each was last seen."""

    def __init__(self, per_target: int = MAX_GPUS_PER_TARGET, total: int = MAX_GPUS,
                 forget_after_s: float = FORGET_AFTER_S):
        self.per_target, self.total, self.forget_after_s = per_target, total, forget_after_s
        self.seen: dict[GpuKey, float] = {}
        self._per_target: Counter[str] = Counter()
        self.refused = 0               # GPUs left out of the last tick for the caps

    def admit(self, series: list[Series], now_s: float) -> list[Series]:
        kept: list[Series] = []
        refused: set[GpuKey] = set()
        for s in series:
            gpu = s.labels.get(n.GPU)
            if gpu is None:
                kept.append(s)
                continue
            key = GpuKey(target_of(s.labels), gpu)
            if key not in self.seen:
                if key in refused or len(self.seen) >= self.total \
                        or self._per_target[key.target] >= self.per_target:
                    refused.add(key)
                    continue
                self._per_target[key.target] += 1
            self.seen[key] = now_s
            kept.append(s)
        self.refused = len(refused)
        return kept

    def gone(self, now_s: float) -> list[GpuKey]:
        """Keys unseen for longer than forget_after_s, no longer admitted."""
        old = [k for k, t in self.seen.items() if now_s - t > self.forget_after_s]
        for key in old:
            del self.seen[key]
            self._per_target[key.target] -= 1
            if not self._per_target[key.target]:
                del self._per_target[key.target]
        return old
