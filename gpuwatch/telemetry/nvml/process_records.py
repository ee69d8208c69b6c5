"""NVML's process lists read straight from the C library, as (pid, used bytes) pairs.

The ``nvidia-ml-py`` binding turns every C process record into a Python object, one
``getattr`` per field through its printable-structure wrapper: about 4 µs a process,
most of what a process list costs. This makes the same two C calls the binding makes
(ask the count, then fill an array with room to spare) through the binding's own
function pointers and structure type, and reads the filled array in one pass.

Errors are the binding's: the same ``NVMLError`` for a failing call, and
``FUNCTION_NOT_FOUND`` from its function lookup when the driver lacks the call.
Used only with the real binding (the module ``pynvml`` itself); a stand-in such as the
simulated NVML is called through its own functions.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import pynvml

ProcessPairs = list[tuple[int, int]]


def direct_lists(lib: Any) -> dict[tuple[str, str], Callable[[Any], ProcessPairs]] | None:
    """The compute and graphics list calls, by (kind, ``"_v3"`` or ``"_v2"``), reading pairs;
    None when ``lib`` is not the real binding or its process record is not laid out as
    expected (a pid as a C unsigned int, the memory as an unsigned long long)."""
    if lib is not pynvml:
        return None
    records = {}
    for version in ("_v3", "_v2"):
        record = getattr(lib, f"c_nvmlProcessInfo{version}_t", None)
        layout = _layout(record) if record is not None else None
        if layout is None:
            return None
        records[version] = (record, layout)
    return {(kind, version): _reader(lib, f"nvmlDeviceGet{kind.title()}RunningProcesses{version}",
                                     record, layout)
            for kind in ("compute", "graphics") for version, (record, layout) in records.items()}


def _layout(record: type) -> struct.Struct | None:
    """A ``struct`` format picking the pid and the memory out of one record."""
    fields = dict(record._fields_)
    if fields.get("pid") is not ctypes.c_uint or fields.get("usedGpuMemory") not in (
            ctypes.c_ulonglong, ctypes.c_uint64):
        return None
    pid, used, size = record.pid.offset, record.usedGpuMemory.offset, ctypes.sizeof(record)
    if pid + 4 > used:       # the pid first, then the memory, as in nvml.h
        return None
    return struct.Struct(f"={pid}xI{used - pid - 4}xQ{size - used - 8}x")


def _reader(lib: Any, name: str, record: type, layout: struct.Struct,
            ) -> Callable[[Any], ProcessPairs]:
    ok, too_small = lib.NVML_SUCCESS, lib.NVML_ERROR_INSUFFICIENT_SIZE
    pointer = lib._nvmlGetFunctionPointer
    error = lib.NVMLError
    byref, c_uint, string_at = ctypes.byref, ctypes.c_uint, ctypes.string_at
    size = ctypes.sizeof(record)
    unpack = layout.iter_unpack

    def read(handle: Any) -> ProcessPairs:
        fn = pointer(name)            # raises FUNCTION_NOT_FOUND where the driver lacks it
        count = c_uint(0)
        ret = fn(handle, byref(count), None)
        if ret == ok:
            return []                 # no processes
        if ret != too_small:
            raise error(ret)
        count.value = count.value * 2 + 5    # room for processes started in between
        array = (record * count.value)()
        ret = fn(handle, byref(count), array)
        if ret != ok:
            raise error(ret)
        return list(unpack(string_at(array, count.value * size)))

    read.__name__ = name
    return read
