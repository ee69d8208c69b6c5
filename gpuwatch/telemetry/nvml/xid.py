"""XID errors: the driver's error reports, which NVML gives only as events.

One event set watches every GPU for ``nvmlEventTypeXidCriticalError``; each tick drains
what arrived without waiting (``nvmlEventSetWait_v2`` with a 0 ms timeout answers
TIMEOUT at once when nothing did) and keeps each GPU's last XID, as DCGM's
``DCGM_FI_DEV_XID_ERRORS`` does ("value of the last XID error encountered"). XIDs that
happened before gpuwatch started are not reported: NVML keeps no history of them.

A driver, binding or simulated NVML without events, or a GPU that cannot be
registered, simply has no XID figure (None), never 0.
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

import pynvml

from gpuwatch.telemetry.nvml import codes

XID_EVENT = getattr(pynvml, "nvmlEventTypeXidCriticalError", 0x8)
MAX_EVENTS_A_TICK = 256       # a storm of XIDs is drained over a few ticks, never forever


def handle_key(handle: Any) -> Any:
    """What identifies a device handle: a C pointer's address, or the object itself (a
    simulated NVML's handles are plain values)."""
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return handle


class XidWatch:
    """The last XID of each GPU since gpuwatch started watching."""

    def __init__(self, lib: Any):
        self._lib = lib
        self._set: Any = None
        self._gpus: dict[Any, int] = {}        # handle key -> GPU index
        self.last: dict[int, int] = {}         # GPU index -> its last XID
        try:
            self._set = lib.nvmlEventSetCreate()
        except (pynvml.NVMLError, AttributeError, *codes.LIBRARY_MISMATCH):
            self._set = None

    def watch(self, index: int, handle: Any) -> bool:
        """Register a GPU (again, after it was re-attached); False if it cannot be."""
        if self._set is None:
            return False
        try:
            self._lib.nvmlDeviceRegisterEvents(handle, XID_EVENT, self._set)
        except (pynvml.NVMLError, AttributeError, *codes.LIBRARY_MISMATCH):
            return False
        self._gpus[handle_key(handle)] = index
        return True

    def poll(self) -> None:
        """Take the events that arrived since the last tick, without waiting."""
        if self._set is None or not self._gpus:
            return
        wait = self._lib.nvmlEventSetWait_v2
        for _ in range(MAX_EVENTS_A_TICK):
            try:
                event = wait(self._set, 0)
            except pynvml.NVMLError:      # TIMEOUT: none left; anything else: next tick
                return
            if event.eventType & XID_EVENT:
                index = self._gpus.get(handle_key(event.device))
                if index is not None:
                    self.last[index] = int(event.eventData)

    def close(self) -> None:
        if self._set is not None:
            with contextlib.suppress(pynvml.NVMLError):
                self._lib.nvmlEventSetFree(self._set)
            self._set = None
