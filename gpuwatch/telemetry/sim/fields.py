"""Typed readers for scenario fields; each error names the source and the field's path."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from gpuwatch.core.units import UnitError, parse_size
from gpuwatch.telemetry.errors import ScenarioError
from gpuwatch.telemetry.sim.signals import GENERATORS, Constant, Points, Signal


class FieldReader:
    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, reason: str) -> ScenarioError:
        return ScenarioError(self.source, path, reason)

    def table(self, raw: Any, path: str, allowed: set[str], required: set[str]) -> dict:
        if not isinstance(raw, Mapping):
            raise self.fail(path, f"expected a table, got {type(raw).__name__}")
        for key in raw:
            if key not in allowed:
                raise self.fail(f"{path}.{key}" if path else key,
                                f"unknown key; expected one of {', '.join(sorted(allowed))}")
        for key in sorted(required):
            if key not in raw:
                raise self.fail(f"{path}.{key}" if path else key, "is required")
        return dict(raw)

    def string(self, raw: Any, path: str) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise self.fail(path, "expected a non-empty string")
        return raw

    def integer(self, raw: Any, path: str, minimum: int = 0) -> int:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise self.fail(path, f"expected an integer, got {raw!r}")
        if raw < minimum:
            raise self.fail(path, f"must be at least {minimum}, got {raw}")
        return raw

    def number(self, raw: Any, path: str, minimum: float = 0.0,
               maximum: float = math.inf) -> float:
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise self.fail(path, f"expected a number, got {raw!r}")
        if not minimum <= raw <= maximum:
            bound = f"between {minimum:g} and {maximum:g}" if maximum < math.inf \
                else f"at least {minimum:g}"
            raise self.fail(path, f"must be {bound}, got {raw:g}")
        return float(raw)

    def size(self, raw: Any, path: str) -> int:
        try:
            return parse_size(raw)
        except UnitError as exc:
            raise self.fail(path, str(exc)) from None

    def percent(self, raw: Any, path: str) -> float:
        return self.number(raw, path, 0.0, 100.0)

    def signal(self, raw: Any, path: str, value: Callable[[Any, str], float]) -> Signal:
        """A plain value, a list of [seconds, value] points, or a generator table."""
        if isinstance(raw, list):
            if not raw:
                raise self.fail(path, "a point list needs at least one [seconds, value] point")
            times: list[float] = []
            values: list[float] = []
            for i, point in enumerate(raw):
                where = f"{path}[{i}]"
                if not isinstance(point, list) or len(point) != 2:
                    raise self.fail(where, f"expected a [seconds, value] pair, got {point!r}")
                t = self.number(point[0], f"{where}[0]")
                if times and t <= times[-1]:
                    raise self.fail(where, f"times must increase (got {t:g} after {times[-1]:g})")
                times.append(t)
                values.append(value(point[1], f"{where}[1]"))
            return Points(tuple(times), tuple(values))
        if isinstance(raw, Mapping):
            name = raw.get("generator")
            if name not in GENERATORS:
                raise self.fail(f"{path}.generator",
                                f"expected one of {', '.join(GENERATORS)}, got {name!r}")
            fields, valued, factory = GENERATORS[name]
            table = self.table(raw, path, {"generator", *fields}, set(fields))
            parsed = {
                key: value(table[key], f"{path}.{key}") if key in valued
                else self.number(table[key], f"{path}.{key}", minimum=1e-9)
                for key in fields
            }
            return factory(parsed)
        return Constant(value(raw, path))
