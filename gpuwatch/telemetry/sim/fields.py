"""Typed readers for scenario fields, and the safe reading of the file; each error names
the source and the field's path.

Every number a scenario gives is bounded to what a real machine can show, so a typo
cannot make the simulation divide by zero, overflow, allocate without end or hand an
impossible value (a negative pid, a 10**30-byte process) to the layers above. The
bounds are listed in ``docs/scenarios.md``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuwatch.core.small_files import SmallFileError, path_text, read_small_file
from gpuwatch.core.units import (
    MAX_SIZE_BYTES,
    MAX_SIZE_TEXT,
    UnitError,
    parse_size,
    shown,
)
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.signals import GENERATORS, Constant, Points, Signal, SignalError

MAX_FILE_BYTES = 1 << 20     # a scenario file; the largest built-in is under 10 KiB
MAX_TIME_S = 1e9            # virtual seconds: about 31 years
MAX_POINTS = 100_000        # [seconds, value] points in one scenario, all lists together
MAX_STRING_CHARS = 4096     # one name, user, command-line argument…
MAX_LIST_ITEMS = 1024       # command-line arguments of one process

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def key_path(path: str, key: Any) -> str:
    """``path.key``; a key that is not a plain word is quoted and cut short."""
    name = key if isinstance(key, str) and _PLAIN_KEY.match(key) else shown(key)
    return f"{path}.{name}" if path else name


class FieldReader:
    def __init__(self, source: str):
        self.source = source
        self.points = 0     # points read so far, against MAX_POINTS

    def fail(self, path: str, reason: str) -> ScenarioError:
        return ScenarioError(self.source, path, reason)

    def table(self, raw: Any, path: str, allowed: set[str], required: set[str]) -> dict:
        if not isinstance(raw, Mapping):
            raise self.fail(path, f"expected a table, got {_kind(raw)}")
        for key in raw:
            if key not in allowed:
                raise self.fail(key_path(path, key),
                                f"unknown key; expected one of {', '.join(sorted(allowed))}")
        for key in sorted(required):
            if key not in raw:
                raise self.fail(key_path(path, key), "is required")
        return dict(raw)

    def string(self, raw: Any, path: str) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise self.fail(path, f"expected a non-empty string, got {_kind(raw)}")
        if len(raw) > MAX_STRING_CHARS:
            raise self.fail(path, f"is {len(raw)} characters long; at most "
                                  f"{MAX_STRING_CHARS} are allowed")
        return raw

    def strings(self, raw: Any, path: str) -> tuple[str, ...]:
        if not isinstance(raw, list):
            raise self.fail(path, f"expected a list of strings, got {_kind(raw)}")
        if len(raw) > MAX_LIST_ITEMS:
            raise self.fail(path, f"has {len(raw)} items; at most {MAX_LIST_ITEMS} are allowed")
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                raise self.fail(f"{path}[{i}]", f"expected a string, got {_kind(item)}")
            if len(item) > MAX_STRING_CHARS:
                raise self.fail(f"{path}[{i}]", f"is {len(item)} characters long; at most "
                                                f"{MAX_STRING_CHARS} are allowed")
        return tuple(raw)

    def boolean(self, raw: Any, path: str) -> bool:
        if not isinstance(raw, bool):
            raise self.fail(path, f"expected true or false, got {shown(raw)}")
        return raw

    def integer(self, raw: Any, path: str, minimum: int = 0,
                maximum: int | float = 2**31 - 1) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise self.fail(path, f"expected an integer, got {shown(raw)}")
        if raw < minimum:
            raise self.fail(path, f"must be at least {minimum}, got {shown(raw)}")
        if raw > maximum:
            raise self.fail(path, f"must be between {minimum} and {maximum}, got {shown(raw)}")
        return raw

    def number(self, raw: Any, path: str, minimum: float = 0.0,
               maximum: float = math.inf) -> float:
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise self.fail(path, f"expected a number, got {shown(raw)}")
        # compare before converting: a 400-digit TOML integer does not fit a float
        if isinstance(raw, float) and not math.isfinite(raw):
            raise self.fail(path, f"must be a finite number, got {shown(raw)}")
        if raw < minimum:
            raise self.fail(path, f"must be at least {minimum:g}, got {shown(raw)}")
        if raw > maximum:
            raise self.fail(path, f"must be between {minimum:g} and {maximum:g}, got {shown(raw)}")
        return float(raw)

    def time(self, raw: Any, path: str, minimum: float = 0.0) -> float:
        """Virtual seconds: finite, at least ``minimum``, at most :data:`MAX_TIME_S`."""
        return self.number(raw, path, minimum, MAX_TIME_S)

    def size(self, raw: Any, path: str, maximum: int = MAX_SIZE_BYTES,
             maximum_is: str = MAX_SIZE_TEXT) -> int:
        try:
            value = parse_size(raw)
        except UnitError as exc:
            raise self.fail(path, str(exc)) from None
        if value > maximum:
            raise self.fail(path, f"{shown(raw)} is more than {maximum_is}")
        return value

    def percent(self, raw: Any, path: str) -> float:
        return self.number(raw, path, 0.0, 100.0)

    def signal(self, raw: Any, path: str, value: Callable[[Any, str], float],
               until_s: float = MAX_TIME_S, ceiling: float = math.inf,
               ceiling_is: str = "", show: Callable[[float], str] = "{:g}".format) -> Signal:
        """A plain value, a list of [seconds, value] points, or a generator table.

        Its value must stay within ``[0, ceiling]`` over ``[0, until_s]``.
        """
        sig = self._signal(raw, path, value)
        low, high = sig.floor(until_s), sig.peak(until_s)
        if not low >= 0:
            raise self.fail(path, f"would go below 0 (down to {show(low)})")
        if not high <= ceiling:
            raise self.fail(path, f"would reach {show(high)}, more than "
                                  f"{ceiling_is or show(ceiling)}")
        return sig

    def _signal(self, raw: Any, path: str, value: Callable[[Any, str], float]) -> Signal:
        if isinstance(raw, list):
            if not raw:
                raise self.fail(path, "a point list needs at least one [seconds, value] point")
            self.points += len(raw)
            if self.points > MAX_POINTS:
                raise self.fail(path, f"the scenario has more than {MAX_POINTS} "
                                      "[seconds, value] points in all; use a generator "
                                      "or fewer points")
            times: list[float] = []
            values: list[float] = []
            for i, point in enumerate(raw):
                where = f"{path}[{i}]"
                if not isinstance(point, list) or len(point) != 2:
                    raise self.fail(where, f"expected a [seconds, value] pair, got {shown(point)}")
                t = self.time(point[0], f"{where}[0]")
                if times and t <= times[-1]:
                    raise self.fail(where, f"times must increase (got {t:g} after {times[-1]:g})")
                times.append(t)
                values.append(value(point[1], f"{where}[1]"))
            return Points(tuple(times), tuple(values))
        if isinstance(raw, Mapping):
            name = raw.get("generator")
            if not isinstance(name, str) or name not in GENERATORS:
                raise self.fail(f"{path}.generator",
                                f"expected one of {', '.join(GENERATORS)}, got {shown(name)}")
            fields, valued, factory = GENERATORS[name]
            table = self.table(raw, path, {"generator", *fields}, set(fields))
            parsed = {
                key: value(table[key], f"{path}.{key}") if key in valued
                else self.time(table[key], f"{path}.{key}", minimum=1e-3)
                for key in fields
            }
            try:
                return factory(parsed)
            except SignalError as exc:
                raise self.fail(f"{path}.{exc.key}", exc.reason) from None
        return Constant(value(raw, path))


def _kind(raw: Any) -> str:
    """What a value is, for "expected X, got Y": a type name with a short sample."""
    if isinstance(raw, Mapping):
        return "a table"
    if isinstance(raw, list):
        return "a list"
    return f"{type(raw).__name__} {shown(raw)}"


# -- the file itself ------------------------------------------------------------------

def source_name(path: Path) -> str:
    """The path as a message may show it: one printable line, cut short."""
    return path_text(path)


def read_scenario_bytes(path: Path, source: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or a ScenarioError.

    A FIFO must not hang the command nor ``/dev/zero`` fill memory: see
    :func:`gpuwatch.core.small_files.read_small_file`.
    """
    try:
        return read_small_file(path, limit)
    except SmallFileError as exc:
        reason = {"missing": "no such file",
                  "folder": "is a folder, not a scenario file",
                  "special": f"{exc.reason}; give a .toml file"}.get(exc.kind, exc.reason)
        raise ScenarioError(source, None, reason) from None


def decode_scenario_text(data: bytes, source: str) -> str:
    """UTF-8 text (a leading byte-order mark is allowed), or a ScenarioError saying why not."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ScenarioError(source, None, "is UTF-16 text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ScenarioError(source, None, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} "
                                          f"at offset {exc.start}); save it as UTF-8") from None
