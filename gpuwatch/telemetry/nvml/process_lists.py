"""NVML's compute and graphics process lists of one GPU, merged per pid.

With the real binding the lists are read as (pid, used bytes) pairs straight from the
C records (:mod:`~gpuwatch.telemetry.nvml.process_records`); any other NVML module (the
simulated one) is called through its own functions, whose objects carry ``pid`` and
``usedGpuMemory``.
"""

from __future__ import annotations

from typing import Any

import pynvml

from gpuwatch.telemetry.nvml import codes
from gpuwatch.telemetry.nvml.process_records import direct_lists
from gpuwatch.telemetry.nvml.readings import Device, describe_error, gpu_lost
from gpuwatch.telemetry.nvml.translate import LOST_CODES

KINDS = ("compute", "graphics")
# NVML_VALUE_NOT_AVAILABLE (2**64 - 1) marks unknown per-process memory; nothing at or
# above 2**63 bytes is a real figure (nor storable as SQLite's signed 64-bit integer).
_UNKNOWN_MEMORY = 2**63


class ProcessLists:
    """NVML's compute and graphics process lists, merged per pid.

    The bindings call the ``_v3`` functions by default; on a driver that predates them
    they raise NVMLLibraryMismatchError, and the ``_v2`` calls are used from then on.
    A list that cannot be read is reported, never taken for an empty one.
    """

    def __init__(self, lib: Any):
        self._lib = lib
        direct = direct_lists(lib)
        # True: the calls give (pid, used bytes) pairs read straight from the C records
        self._pairs = direct is not None
        if direct is not None:
            self._calls = {kind: direct[kind, "_v3"] for kind in KINDS}
            self._v2 = {kind: direct[kind, "_v2"] for kind in KINDS}
        else:
            self._calls = {kind: getattr(lib, f"nvmlDeviceGet{kind.title()}RunningProcesses")
                           for kind in KINDS}
            self._v2 = {kind: getattr(lib, f"nvmlDeviceGet{kind.title()}RunningProcesses_v2",
                                      None) for kind in KINDS}

    def read(self, dev: Device) -> tuple[dict[int, tuple[int | None, str]], str | None]:
        """(pid -> (used bytes or None, kind), why the lists are missing or incomplete).

        Lists holding the very objects of the last read (a library that hands out the
        same unchanged objects again, as the simulated one does) give the same answer,
        the same dict: callers must not change it."""
        handle = dev.handle
        compute = self._list("compute", handle)
        graphics = self._list("graphics", handle)
        seen = dev.lists_seen
        # list == list compares items by identity first: no Python per process
        if (seen is not None and type(compute) is list and type(graphics) is list
                and compute == seen[0] and graphics == seen[1]):   # both lists, both times
            return seen[2], seen[3]
        merged = _one_list(compute, graphics, self._pairs)
        if merged is not None:
            dev.lists_seen = (compute[:], graphics[:], merged, None)   # copies: not ours
            return merged, None
        merged = {}
        failed: dict[str, pynvml.NVMLError] = {}
        for kind, listed in (("compute", compute), ("graphics", graphics)):
            if isinstance(listed, pynvml.NVMLError):
                failed[kind] = listed
                continue
            pairs = listed or () if self._pairs else (
                (p.pid, p.usedGpuMemory) for p in listed or ())
            for pid, used in pairs:
                if used is not None and used >= _UNKNOWN_MEMORY:
                    used = None
                seen = merged.get(pid)
                if seen is None:
                    merged[pid] = (used, kind)
                else:  # in both lists: the same memory, reported twice
                    known = [u for u in (seen[0], used) if u is not None]
                    merged[pid] = (max(known) if known else None, "compute+graphics")
        error = _lists_error(failed)
        dev.lists_seen = None if failed else (list(compute or ()), list(graphics or ()),
                                              merged, error)
        return merged, error

    def _list(self, kind: str, handle: Any) -> list | pynvml.NVMLError:
        """The list, or the error that kept it back. A driver without the ``_v3`` call
        (NVMLLibraryMismatchError, or FUNCTION_NOT_FOUND from older bindings) is asked
        through ``_v2`` from then on."""
        v2 = self._v2[kind]
        while True:
            call = self._calls[kind]
            try:
                return call(handle)
            except codes.LIBRARY_MISMATCH:
                error = None
            except pynvml.NVMLError as exc:
                if exc.value in LOST_CODES:
                    raise gpu_lost(exc) from None
                if exc.value != codes.FUNCTION_NOT_FOUND:
                    return exc
                error = exc
            if v2 is None or call == v2:
                return error if error is not None else pynvml.NVMLError(codes.FUNCTION_NOT_FOUND)
            self._calls[kind] = v2


def _one_list(compute: Any, graphics: Any,
              pairs: bool) -> dict[int, tuple[int | None, str]] | None:
    """The common case at C speed: both lists read, one of them empty (a compute GPU
    runs no graphics), no pid twice. None otherwise: then the general merge applies."""
    if type(compute) is not list or type(graphics) is not list or (compute and graphics):
        return None
    kind, listed = ("graphics", graphics) if graphics else ("compute", compute)
    limit = _UNKNOWN_MEMORY
    if pairs:      # from the C records: never None
        merged = {pid: (None if used >= limit else used, kind) for pid, used in listed}
    else:
        merged = {p.pid: (None if (u := p.usedGpuMemory) is not None and u >= limit else u,
                          kind) for p in listed}
    return merged if len(merged) == len(listed) else None


def _lists_error(failed: dict[str, pynvml.NVMLError]) -> str | None:
    """Why the process lists are missing or incomplete, or None when nothing is missing.

    One list unsupported while the other was read hides nothing: a GPU that cannot run
    graphics has no graphics processes to list."""
    if not failed:
        return None
    if len(failed) == 1:
        ((kind, exc),) = failed.items()
        if exc.value == codes.NOT_SUPPORTED:
            return None
        return f"{describe_error(exc)} reading the {kind} processes"
    texts = {kind: describe_error(exc) for kind, exc in failed.items()}
    if len(set(texts.values())) == 1:
        return texts["compute"]
    return "; ".join(f"{text} reading the {kind} processes" for kind, text in texts.items())
