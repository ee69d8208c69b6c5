"""Byte sizes and rates: parsing user input and formatting for people.

Sizes are integers of bytes everywhere inside gpuwatch; these helpers are the only
place where units appear as text. IEC units (KiB, MiB, GiB) are the default for
display because that is what GPU memory and every allocator are sized in.
"""

from __future__ import annotations

import math
import re
import reprlib
from typing import Literal

UnitSystem = Literal["iec", "si"]

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}

SIZE_UNIT_NAMES = "B, KiB, MiB, GiB, TiB, KB, MB, GB, TB"

# The largest size gpuwatch reads: 1 EiB. The biggest GPUs hold a few hundred GiB and
# the biggest hosts a few dozen TiB, so anything larger is a typo; the bound also keeps
# every size far below 2**63 - 1, the largest integer SQLite stores.
MAX_SIZE_BYTES = 2**60
MAX_SIZE_TEXT = "1 EiB (2**60 bytes)"

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")
_ZERO_RE = re.compile(r"^\s*0*\.?0*\s*$")
_SHOWN_CHARS = 40


class UnitError(ValueError):
    """A size or rate string that cannot be read."""


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 2 * _SHOWN_CHARS, 2 * _SHOWN_CHARS


def shown(value: object, limit: int = _SHOWN_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, so a message stays one short line.

    Safe on any input: long strings, integers of thousands of digits, deeply nested
    lists and tables.
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        digits = int(abs(value).bit_length() * 0.30103) + 1
        return f"a {'negative ' if value < 0 else ''}number of about {digits} digits"
    if isinstance(value, str):
        text = repr(value[: 2 * limit])
    elif isinstance(value, list | tuple | dict | set | frozenset):
        text = _REPR.repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_size(value: int | float | str) -> int:
    """Read a size as integer bytes: ``123``, ``"80GiB"``, ``"1.5 GB"``, ``"512MiB"``.

    Numbers (TOML or JSON integers and floats) are bytes. Text must carry its unit,
    case-insensitive (``gib`` = ``GiB``, ``24B`` for bytes): a bare ``"24"`` is refused,
    because people mean 24 GiB far more often than 24 bytes; only ``"0"`` needs no unit.
    Sizes above :data:`MAX_SIZE_BYTES` are refused. Raises :class:`UnitError` with the
    reason for negative, non-finite, unitless, too large or unknown input.
    """
    if isinstance(value, bool):
        raise UnitError(f"expected a size, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise UnitError(f"size {shown(value)} must be at least 0")
        if value > MAX_SIZE_BYTES:
            raise UnitError(f"size {shown(value)} is more than {MAX_SIZE_TEXT}, "
                            "the largest size gpuwatch accepts")
        return value
    if isinstance(value, float):
        number, unit = value, "B"
    elif isinstance(value, str):
        match = _SIZE_RE.match(value)
        if not match and re.match(r"\s*-\s*\.?[0-9]", value):
            raise UnitError(f"size {shown(value)} must be at least 0")
        if not match:
            raise UnitError(
                f"{shown(value)} is not a size; write a number with a unit such as "
                "'512MiB' or '80GiB'"
            )
        if not match.group(2):
            if _ZERO_RE.match(value):
                return 0
            n = match.group(1) if len(match.group(1)) <= 12 else "24"
            raise UnitError(f"{shown(value)} has no unit: write {n}GiB or {n}GB ({n}B for bytes)")
        number, unit = float(match.group(1)), match.group(2).upper()
    else:
        raise UnitError(f"expected a size, got {type(value).__name__}")
    if unit not in SIZE_UNITS:
        raise UnitError(f"unknown unit in {shown(value)}; use one of {SIZE_UNIT_NAMES}")
    if math.isnan(number) or number < 0:
        raise UnitError(f"size {shown(value)} must be a finite number of at least 0")
    if number * SIZE_UNITS[unit] > MAX_SIZE_BYTES:   # inf included
        raise UnitError(f"size {shown(value)} is more than {MAX_SIZE_TEXT}, "
                        "the largest size gpuwatch accepts")
    return round(number * SIZE_UNITS[unit])


_IEC_STEPS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_SI_STEPS = (("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2), ("kB", 1000))


def format_bytes(
    n: int | float | None, units: UnitSystem = "iec", digits: int = 1, unknown: str = "n/a"
) -> str:
    """``3.7 GiB`` / ``4.0 GB`` / ``812 MiB``; ``unknown`` for None. Always carries a unit."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return unknown
    steps = _IEC_STEPS if units == "iec" else _SI_STEPS
    sign = "-" if n < 0 else ""
    magnitude = abs(n)
    for name, size in steps:
        if magnitude >= size:
            value = magnitude / size
            shown = 0 if value >= 100 else digits   # "812 MiB", not "812.0 MiB"
            return f"{sign}{value:.{shown}f} {name}"
    return f"{sign}{int(magnitude)} B"


def format_rate(
    bytes_per_s: int | float | None, units: UnitSystem = "si", digits: int = 1, unknown: str = "n/a"
) -> str:
    """Bandwidths are quoted in SI (GB/s) like every vendor data sheet, unless asked otherwise."""
    if bytes_per_s is None or (isinstance(bytes_per_s, float) and math.isnan(bytes_per_s)):
        return unknown
    return format_bytes(bytes_per_s, units, digits) + "/s"


def format_percent(value: float | None, unknown: str = "n/a") -> str:
    if value is None or math.isnan(value):
        return unknown
    return f"{value:.0f} %"


def format_duration(seconds: float | None, unknown: str = "n/a") -> str:
    """``45 s``, ``12 min 05 s``, ``3 h 07 min``, ``2 d 04 h``."""
    if seconds is None or math.isnan(seconds):
        return unknown
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" if s % 60 == 0 else f"{s // 60} min {s % 60:02d} s"
    if s < 86400:
        return f"{s // 3600} h" if s % 3600 == 0 else f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 86400} d {s % 86400 // 3600:02d} h"
