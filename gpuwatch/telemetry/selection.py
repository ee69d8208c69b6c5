"""A backend that shows only the GPUs chosen with ``-i/--id``."""

from __future__ import annotations

from typing import Any

from gpuwatch.core.gpu_selection import GpuSelection
from gpuwatch.core.snapshot import Snapshot
from gpuwatch.telemetry.nvml import NvmlBackend


class SelectedGpus:
    """Wraps an opened NVML backend (real or simulated): its samples keep only the chosen
    GPUs and their processes; everything else is the backend's own. Every id is checked
    against the GPUs NVML opened, so a wrong one is refused before the first sample."""

    def __init__(self, backend: NvmlBackend, selection: GpuSelection) -> None:
        try:
            selection.check(backend.gpu_identities())
        except Exception:
            backend.close()
            raise
        self._backend = backend
        self.selection = selection

    def sample(self) -> Snapshot:
        return self.selection.apply(self._backend.sample())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def __enter__(self) -> SelectedGpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self._backend.close()
