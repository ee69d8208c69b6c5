"""NVML error codes turned into what the rest of gpuwatch understands."""

from __future__ import annotations

from typing import Any

import pynvml

from gpuwatch.core.snapshot import MemoryInfo
from gpuwatch.telemetry.nvml import codes

LOST_CODES = frozenset({codes.GPU_IS_LOST, codes.GPU_NOT_FOUND, codes.RESET_REQUIRED})
INIT_FAILURES = {
    codes.LIBRARY_NOT_FOUND:
        "No NVIDIA driver found: the NVML library (libnvidia-ml.so.1) is not installed.",
    codes.DRIVER_NOT_LOADED: "The NVIDIA kernel driver is not loaded.",
    codes.LIB_RM_VERSION_MISMATCH:
        "The NVIDIA driver and its NVML library are different versions "
        "(reboot after a driver update).",
    codes.NO_PERMISSION: "No permission to use NVML (check /dev/nvidia* access).",
}
EMPTY_MEMORY = MemoryInfo(None, None, None, None)


class GpuLost(Exception):
    """A GPU stopped answering (fell off the bus, needs a reset); carries NVML's words."""


def optional(fn: Any, *args: Any) -> Any:
    """The call's result; None when unsupported or failing; raises GpuLost if lost."""
    try:
        return fn(*args)
    except pynvml.NVMLError as exc:
        if exc.value in LOST_CODES:
            raise GpuLost(str(exc)) from None
        return None
    except codes.LIBRARY_MISMATCH:
        return None


def text(value: Any) -> str:
    """Old bindings return bytes for strings."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
