"""A GPU's day-long ring takes its memory when it is made, not row by row.

A buffer left as it comes (``np.empty``) gets its pages from the kernel only as rows are
written, so the resident set of a window sampling a GPU rose by 5 MB over its first day,
steadily, like a leak. These tests read which pages are resident with ``mincore``
(Linux), so they fail when a ring is left unfilled.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys

import numpy as np
import pytest

from gpuwatch.core.history import DAY_AT_1HZ, GPU_COLUMNS, History
from gpuwatch.core.ring import Ring
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    Snapshot,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads page residency with Linux's mincore")

PAGE = mmap.PAGESIZE


def resident_pages(arrays: list[np.ndarray]) -> tuple[int, int]:
    """(resident, all) pages under the arrays' buffers."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    resident = total = 0
    for arr in arrays:
        address = arr.__array_interface__["data"][0]
        first = address - address % PAGE
        count = (address + arr.nbytes - first + PAGE - 1) // PAGE
        vec = ctypes.create_string_buffer(count)
        assert libc.mincore(first, count * PAGE, vec) == 0, ctypes.get_errno()
        resident += sum(flag & 1 for flag in vec.raw)
        total += count
    return resident, total


def gpu_snapshot(t: float) -> Snapshot:
    gpu = GpuSample(0, "u", "g", GpuState.OK, MemoryInfo(100, 10, None, None))
    return Snapshot(t, BackendInfo(BackendKind.SIMULATED, scenario="t"), (gpu,))


def test_a_gpus_day_is_resident_from_its_first_sample():
    history = History()
    history.append(gpu_snapshot(0.0))
    arrays = history.gpus[0]._arrays
    assert sum(a.nbytes for a in arrays) == History.bytes_per_gpu() > 4 << 20
    resident, total = resident_pages(arrays)
    assert resident == total


def test_writing_rows_adds_no_resident_pages():
    ring = Ring(DAY_AT_1HZ, GPU_COLUMNS)
    before = resident_pages(ring._arrays)
    for i in range(20_000):                     # a fifth of the day: ~1 MB of rows
        ring.append_values([float(i)] * len(GPU_COLUMNS))
    assert resident_pages(ring._arrays) == before


def test_rows_not_yet_written_read_as_unknown():
    ring = Ring(1000, {"t": np.float64, "n": np.int64})
    assert np.isnan(ring._arrays[0]).all()
    assert not ring._arrays[1].any()
    ring.append_values([1.0, 2])
    assert ring.column("t").tolist() == [1.0]
    assert ring.column("n").tolist() == [2]
