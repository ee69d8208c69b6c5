"""`gpuwatch record`'s one line per GPU (what a GPU that cannot be read says), and
`gpuwatch snapshot` on simulated GPUs taken exactly at its time."""

from __future__ import annotations

import json

from cli_support import run

from gpuwatch.commands.snapshot_text import format_tick
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    Snapshot,
)

UNKNOWN = MemoryInfo(None, None, None, None)


def _tick(*gpus: GpuSample) -> list[str]:
    return format_tick(Snapshot(0.0, BackendInfo(BackendKind.PROMETHEUS), gpus), 5.0)


def test_an_unreadable_gpu_says_why_instead_of_unknown_figures():
    gone = GpuSample(3, None, "node-b/0", GpuState.ERROR, UNKNOWN,
                     error="host node-b unreachable: its scrape fails (up is 0)")
    lost = GpuSample(4, None, "g", GpuState.LOST, UNKNOWN)
    quiet = GpuSample(5, None, "g", GpuState.ERROR, UNKNOWN)
    lines = _tick(gone, lost, quiet)
    assert lines[0].endswith("GPU 3  host node-b unreachable: its scrape fails (up is 0)")
    assert lines[1].endswith("GPU 4  GPU lost") and lines[2].endswith("GPU 5  could not be read")


def test_a_gpu_in_error_with_known_memory_still_shows_it():
    partial = GpuSample(0, None, "g", GpuState.ERROR, MemoryInfo(80 * 2**30, 2**30, None, None),
                        error="utilisation could not be read")
    assert "1.0 GiB / 80.0 GiB" in _tick(partial)[0]


def test_a_simulated_snapshot_is_taken_exactly_at_its_time(capsys):
    outs = []
    for _ in range(3):                 # the sawtooth moves within milliseconds
        code, out, _ = run(capsys, "snapshot", "--demo", "--at", "600", "--json")
        assert code == 0
        outs.append([g["memory"] for g in json.loads(out)["gpus"]])
    assert outs[0] == outs[1] == outs[2]
