"""NVML return codes by name, whichever release of the bindings is installed.

Older ``nvidia-ml-py`` releases lack constants that newer drivers return
(``NVML_ERROR_GPU_NOT_FOUND`` arrived after 12.535, ``NVML_ERROR_RESET_TYPE_NOT_SUPPORTED``
after 12.575) and lack ``NVMLLibraryMismatchError``. The codes are fixed by ``nvml.h``,
so a missing constant is read from the table below instead of failing at import.
"""

from __future__ import annotations

import pynvml

# nvmlReturn_t, as nvml.h numbers it.
NVML_H_CODES: dict[str, int] = {
    "UNINITIALIZED": 1, "INVALID_ARGUMENT": 2, "NOT_SUPPORTED": 3, "NO_PERMISSION": 4,
    "ALREADY_INITIALIZED": 5, "NOT_FOUND": 6, "INSUFFICIENT_SIZE": 7,
    "INSUFFICIENT_POWER": 8, "DRIVER_NOT_LOADED": 9, "TIMEOUT": 10, "IRQ_ISSUE": 11,
    "LIBRARY_NOT_FOUND": 12, "FUNCTION_NOT_FOUND": 13, "CORRUPTED_INFOROM": 14,
    "GPU_IS_LOST": 15, "RESET_REQUIRED": 16, "OPERATING_SYSTEM": 17,
    "LIB_RM_VERSION_MISMATCH": 18, "IN_USE": 19, "MEMORY": 20, "NO_DATA": 21,
    "VGPU_ECC_NOT_SUPPORTED": 22, "INSUFFICIENT_RESOURCES": 23, "FREQ_NOT_SUPPORTED": 24,
    "ARGUMENT_VERSION_MISMATCH": 25, "DEPRECATED": 26, "NOT_READY": 27, "GPU_NOT_FOUND": 28,
    "INVALID_STATE": 29, "RESET_TYPE_NOT_SUPPORTED": 30, "UNKNOWN": 999,
}
_PREFIX = "NVML_ERROR_"


def all_codes() -> dict[str, int]:
    """Every known error name (without ``NVML_ERROR_``) and its code: nvml.h's, plus any
    newer ones the installed bindings define."""
    names = dict(NVML_H_CODES)
    for attr in dir(pynvml):
        value = getattr(pynvml, attr)
        if attr.startswith(_PREFIX) and isinstance(value, int):
            names[attr[len(_PREFIX):]] = value
    return names


def code(name: str) -> int:
    """The code of ``NVML_ERROR_<name>``; KeyError for a name nobody defines."""
    value = getattr(pynvml, _PREFIX + name, None)
    return value if isinstance(value, int) else NVML_H_CODES[name]


# pynvml raises this (a plain Exception subclass) when a versioned function is missing
# from an old driver; bindings without it never raise it, so an empty tuple catches nothing.
LIBRARY_MISMATCH: tuple[type[Exception], ...] = tuple(
    c for c in (getattr(pynvml, "NVMLLibraryMismatchError", None),) if isinstance(c, type))

NOT_SUPPORTED = code("NOT_SUPPORTED")
FUNCTION_NOT_FOUND = code("FUNCTION_NOT_FOUND")
ARGUMENT_VERSION_MISMATCH = code("ARGUMENT_VERSION_MISMATCH")
GPU_IS_LOST = code("GPU_IS_LOST")
GPU_NOT_FOUND = code("GPU_NOT_FOUND")
RESET_REQUIRED = code("RESET_REQUIRED")
LIBRARY_NOT_FOUND = code("LIBRARY_NOT_FOUND")
DRIVER_NOT_LOADED = code("DRIVER_NOT_LOADED")
LIB_RM_VERSION_MISMATCH = code("LIB_RM_VERSION_MISMATCH")
NO_PERMISSION = code("NO_PERMISSION")
UNINITIALIZED = code("UNINITIALIZED")
INVALID_ARGUMENT = code("INVALID_ARGUMENT")
