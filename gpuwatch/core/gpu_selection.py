"""Choosing GPUs by index or UUID, as ``nvidia-smi -i`` and ``gpustat --id`` take them.

``-i 0,2`` keeps GPUs 0 and 2; ``-i GPU-5d3c…`` keeps the GPU with that UUID, written
whole or as a prefix that only one GPU has (as ``CUDA_VISIBLE_DEVICES`` takes it). The
text is parsed when the command line is read; whether each id names a GPU of this
machine is checked once the GPUs are known (:meth:`GpuSelection.check`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from gpuwatch.core.snapshot import GpuSample, Snapshot

MAX_IDS = 64                 # NVML counts at most 64 GPUs on a machine
MAX_INDEX = 1023
_UUID = re.compile(r"(?:gpu|mig)-[0-9a-f][0-9a-f-]{3,63}\Z")   # lower-cased; 4 or more


class GpuSelectionError(ValueError):
    """An ``-i/--id`` value that is malformed or names no GPU; the CLI exits with 2."""


@dataclass(frozen=True)
class GpuSelection:
    """The GPUs a command shows: by index, by UUID (or a unique UUID prefix), or both."""

    indices: frozenset[int] = frozenset()
    uuids: tuple[str, ...] = ()           # lower case, "gpu-…" or "mig-…"
    text: str = ""                        # as the user wrote it, for messages

    @classmethod
    def parse(cls, text: str) -> GpuSelection:
        """``"0,2"``, ``"GPU-5d3c"``, or both kinds mixed. Raises GpuSelectionError."""
        items = [item.strip() for item in text.split(",")]
        if not text.strip() or any(not item for item in items):
            raise GpuSelectionError(
                f"{text!r} is not a list of GPUs: give indices or UUIDs separated by "
                "commas, e.g. 0,2 or GPU-5d3c")
        if len(items) > MAX_IDS:
            raise GpuSelectionError(f"at most {MAX_IDS} GPUs can be chosen, got {len(items)}")
        indices: set[int] = set()
        uuids: list[str] = []
        for item in items:
            if item.isascii() and item.isdigit():
                if len(item) > 4 or int(item) > MAX_INDEX:
                    raise GpuSelectionError(f"GPU index {item[:12]} is out of range "
                                            f"(0 to {MAX_INDEX})")
                indices.add(int(item))
            elif item.isascii() and _UUID.match(item.lower()):
                if item.lower() not in uuids:
                    uuids.append(item.lower())
            else:
                shown = item if len(item) <= 40 else item[:40] + "…"
                raise GpuSelectionError(
                    f"{shown!r} is neither a GPU index (0, 1, …) nor a GPU UUID "
                    "(GPU-… as `nvidia-smi -L` prints it, whole or its first characters)")
        return cls(frozenset(indices), tuple(uuids), text.strip())

    def matches(self, gpu: GpuSample) -> bool:
        if gpu.index in self.indices:
            return True
        uuid = (gpu.uuid or "").lower()
        return bool(uuid) and any(uuid.startswith(u) for u in self.uuids)

    def check(self, gpus: Sequence[tuple[int, str | None]]) -> None:
        """Raise GpuSelectionError unless every id names exactly one of ``gpus``, the
        machine's (index, UUID) pairs."""
        known = sorted(index for index, _ in gpus)
        listed = _index_list(known)
        for index in sorted(self.indices):
            if index not in known:
                raise GpuSelectionError(f"-i {self.text}: there is no GPU {index} here "
                                        f"({listed})")
        for prefix in self.uuids:
            hits = [index for index, uuid in gpus if (uuid or "").lower().startswith(prefix)]
            if not hits:
                raise GpuSelectionError(f"-i {self.text}: no GPU here has a UUID starting "
                                        f"with {prefix!r} ({listed})")
            if len(hits) > 1:
                raise GpuSelectionError(
                    f"-i {self.text}: {prefix!r} is the start of the UUIDs of GPUs "
                    f"{_joined(hits)}; give more of the UUID")

    def apply(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot with only the chosen GPUs (and so only their processes)."""
        gpus = tuple(g for g in snapshot.gpus if self.matches(g))
        if len(gpus) == len(snapshot.gpus):
            return snapshot
        pids = {p.pid for g in gpus for p in g.processes}
        return replace(snapshot, gpus=gpus,
                       probes=tuple(r for r in snapshot.probes if r.pid in pids))


def _joined(indices: Iterable[int]) -> str:
    return ", ".join(str(i) for i in indices)


def _index_list(known: list[int]) -> str:
    if not known:
        return "no GPUs are listed"
    return f"GPU {known[0]}" if len(known) == 1 else f"GPUs {_joined(known)}"
