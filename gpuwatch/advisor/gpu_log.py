"""Which GPUs are lost, since when, and which came back: fed one snapshot at a time."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuwatch.core.snapshot import GpuState, Snapshot


@dataclass
class GpuLog:
    lost_since: dict[int, float] = field(default_factory=dict)
    errors: dict[int, str | None] = field(default_factory=dict)
    recovered: dict[int, tuple[float, float]] = field(default_factory=dict)  # (lost at, back at)
    names: dict[int, str | None] = field(default_factory=dict)   # every GPU seen so far

    def observe(self, snapshot: Snapshot) -> None:
        """Record state changes. A GPU seen before and missing from the snapshot is lost."""
        t = snapshot.timestamp_s
        present = set()
        for g in snapshot.gpus:
            present.add(g.index)
            if g.name or g.index not in self.names:
                self.names[g.index] = g.name
            if g.state == GpuState.LOST:
                self.lost_since.setdefault(g.index, t)
                self.errors[g.index] = g.error
            elif g.index in self.lost_since:
                self.recovered[g.index] = (self.lost_since.pop(g.index), t)
                self.errors.pop(g.index, None)
        for index in self.names.keys() - present:
            self.lost_since.setdefault(index, t)
            self.errors.setdefault(index, "no longer listed by the driver")
