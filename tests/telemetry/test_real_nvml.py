"""The backend on a real NVIDIA driver. Skipped where there is none."""

from __future__ import annotations

import os

import pytest

from gpuwatch.core.snapshot import BackendKind, GpuState
from gpuwatch.telemetry.errors import NvmlUnavailableError
from gpuwatch.telemetry.nvml import NvmlBackend


@pytest.fixture
def real_backend():
    try:
        backend = NvmlBackend(pcie_thread=False).open()
    except NvmlUnavailableError as exc:
        pytest.skip(f"no usable NVIDIA driver here: {exc.reason}")
    yield backend
    backend.close()


@pytest.mark.gpu
def test_real_gpus_are_read(real_backend):
    snap = real_backend.sample()
    assert snap.backend.kind is BackendKind.NVML and snap.backend.driver_version
    assert snap.gpus
    for g in snap.gpus:
        assert g.state is GpuState.OK
        m = g.memory
        if m.total_bytes is not None:     # an idle GPU reads 0 used (v2: reserved apart)
            assert 0 <= m.used_bytes <= m.total_bytes
            assert m.free_bytes <= m.total_bytes
            assert m.used_bytes + m.free_bytes + (m.reserved_bytes or 0) <= m.total_bytes
        assert g.peak_bandwidth_bytes_per_s is None or g.peak_bandwidth_bytes_per_s > 1e11


@pytest.mark.gpu
def test_a_cuda_process_of_ours_is_listed_with_its_memory(real_backend):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    block = torch.empty(512 * 1024**2, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    snap = real_backend.sample()
    mine = [p for p in snap.processes if p.pid == os.getpid()]
    if not mine and snap.warnings:
        pytest.skip(snap.warnings[0])             # a container hiding host pids
    assert mine, "our own CUDA process should be in NVML's list"
    assert mine[0].used_bytes is None or mine[0].used_bytes >= 512 * 1024**2
    assert mine[0].name and mine[0].cmdline
    del block
