"""One GPU's sample and process tuple from what a tick read, reusing last tick's when
nothing changed (most ticks: training holds its memory flat)."""

from __future__ import annotations

import operator
from typing import Any

from gpuwatch.core.snapshot import GpuSample, HostStatus, ProcessSample
from gpuwatch.telemetry.hostinfo import HostProcess
from gpuwatch.telemetry.nvml.readings import Device

_new_tuple = tuple.__new__
_USED_BYTES = operator.itemgetter(2)     # ProcessSample.used_bytes


def gpu_processes(dev: Device, procs: dict[int, tuple], host: dict[int, HostProcess],
                   isolated: bool) -> tuple[tuple[ProcessSample, ...], int]:
    """(The GPU's processes, most memory first; how many are hidden by a PID namespace).

    The same lists and host answers as last tick (the same objects: neither changes
    them) give the same tuple."""
    seen = dev.processes_seen
    if seen is not None and seen[0] is procs and seen[1] is host and seen[2] == isolated:
        return seen[3], seen[4]
    index, found = dev.index, HostStatus.FOUND
    processes = []
    hidden = 0
    unknown = False      # a process whose memory the driver does not give
    for pid, (used, kind) in procs.items():
        if used is None:
            unknown = True
        d = host.get(pid)
        if d is not None:
            # Built as a plain tuple: this runs for every process on every tick.
            processes.append(_new_tuple(ProcessSample, (
                pid, index, used, kind, d.name, d.cmdline, d.user, d.container,
                d.cpu_percent, d.rss_bytes, d.started_at_s, True, found)))
        elif isolated:   # NVML's host pid is invisible from this PID namespace
            hidden += 1
            processes.append(ProcessSample(pid, index, used, kind, resolved=False,
                                           host_status=HostStatus.HIDDEN))
        else:   # gone from the host (ended, or a zombie), yet the driver lists it
            processes.append(ProcessSample(pid, index, used, kind, resolved=False,
                                           host_status=HostStatus.EXITED))
    # Most memory first, ties in NVML's order (both sorts are stable, reverse too).
    if unknown:
        processes.sort(key=_most_memory_first)
    else:
        processes.sort(key=_USED_BYTES, reverse=True)
    result = tuple(processes)
    dev.processes_seen = (procs, host, isolated, result, hidden)
    return result, hidden


def _most_memory_first(p: ProcessSample) -> int:
    return -(p[2] or 0)


def gpu_sample(dev: Device, fields: dict[str, Any], processes: tuple,
                processes_error: str | None) -> GpuSample:
    """The GpuSample of these readings: the last one again when nothing changed (a
    GpuSample is immutable, and making one costs more than comparing the readings)."""
    seen = dev.sample_seen
    if (seen is not None and seen[1] is processes and seen[2] == processes_error
            and seen[0] == fields):
        return seen[3]
    sample = GpuSample(**fields, processes=processes, processes_error=processes_error)
    dev.sample_seen = (fields, processes, processes_error, sample)
    return sample
