"""Time-varying values for scenarios: constants, point lists and named generators.

Every signal is a function of scenario seconds (seconds since its process started,
for process signals). Point lists interpolate linearly and hold their end values.

Generators check their own parameters when built: periods must be finite and greater
than zero and levels finite, so a signal can never divide by zero or return NaN.
A :class:`SignalError` names the offending parameter by its scenario-file key.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

# A span over which a signal holds one value: (from, to), both included, in the
# signal's own seconds; ±inf where it holds for ever.
Span = tuple[float, float]
ALWAYS: Span = (-math.inf, math.inf)


class SignalError(ValueError):
    """A generator parameter that cannot work; ``key`` is its name in a scenario file."""

    def __init__(self, key: str, reason: str):
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def _finite(key: str, value: float) -> None:
    if not math.isfinite(value):
        raise SignalError(key, f"must be a finite number, got {value!r}")


def _period(key: str, value: float) -> None:
    _finite(key, value)
    if value <= 0:
        raise SignalError(key, f"must be greater than 0, got {value:g}")


class Signal:
    def at(self, t: float) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def peak(self, until_s: float) -> float:
        """An upper bound of the value over [0, until_s] (used for sanity checks and docs)."""
        raise NotImplementedError  # pragma: no cover - interface

    def floor(self, until_s: float) -> float:
        """A lower bound of the value over [0, until_s]."""
        raise NotImplementedError  # pragma: no cover - interface

    def flat_span(self, t: float) -> Span | None:
        """A span holding ``t`` over which :meth:`at` returns exactly ``at(t)``, or None
        when the value may change right after ``t``. Lets the simulation reuse a value
        while time moves within the span; None is always a correct answer."""
        return None


@dataclass(frozen=True)
class Constant(Signal):
    value: float

    def at(self, t: float) -> float:
        return self.value

    def flat_span(self, t: float) -> Span | None:
        return ALWAYS

    def peak(self, until_s: float) -> float:
        return self.value

    def floor(self, until_s: float) -> float:
        return self.value


@dataclass(frozen=True)
class Points(Signal):
    times: tuple[float, ...]
    values: tuple[float, ...]

    def at(self, t: float) -> float:
        times, values = self.times, self.values
        i = bisect.bisect_right(times, t)
        if i == 0:
            return values[0]
        if i == len(times):
            return values[-1]
        t0, t1 = times[i - 1], times[i]
        v0, v1 = values[i - 1], values[i]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.values):
            raise SignalError("points", "needs as many times as values, at least one")

    def segment(self, t: float) -> tuple[float, float, float, float, float, float]:
        """The straight piece holding ``t``: ``(from, until, v0, rise, t0, run)``, such
        that for every ``x`` in ``[from, until)``, ``at(x)`` is ``v0 + rise * (x - t0) /
        run``: the same operations on the same numbers (before the first point and
        after the last, ``v0 + 0.0``). Lets a caller step along a piece without a search."""
        times, values = self.times, self.values
        i = bisect.bisect_right(times, t)
        if i == 0:
            return -math.inf, times[0], values[0], 0.0, 0.0, 1.0
        if i == len(times):
            return times[-1], math.inf, values[-1], 0.0, 0.0, 1.0
        t0, t1 = times[i - 1], times[i]
        v0, v1 = values[i - 1], values[i]
        return t0, t1, v0, v1 - v0, t0, t1 - t0

    @cached_property
    def _runs(self) -> tuple[tuple[int, int], ...]:
        """For each point, the first and last index of the run of equal values it is in."""
        values, n = self.values, len(self.values)
        runs: list[tuple[int, int]] = []
        first = 0
        for i in range(1, n + 1):
            if i == n or values[i] != values[first]:
                runs += [(first, i - 1)] * (i - first)
                first = i
        return tuple(runs)

    def flat_span(self, t: float) -> Span | None:
        # Between two equal points the interpolation adds exactly 0, and at a point
        # it adds 0 too: the value is the run's value from its first to its last point.
        times, values = self.times, self.values
        n = len(times)
        i = bisect.bisect_right(times, t)
        if 0 < i < n and values[i - 1] != values[i]:
            return None
        first, last = self._runs[max(i - 1, 0)]
        return (-math.inf if first == 0 else times[first],
                math.inf if last == n - 1 else times[last])

    def peak(self, until_s: float) -> float:
        return max(self.values)

    def floor(self, until_s: float) -> float:
        return min(self.values)


@dataclass(frozen=True)
class Sawtooth(Signal):
    """Training steps: memory climbs from ``low`` to ``high`` and drops, every ``period_s``.

    ``leak_per_s`` raises the floor steadily (a leak under the sawtooth).
    """

    low: float
    high: float
    period_s: float
    leak_per_s: float = 0.0

    def __post_init__(self) -> None:
        _finite("low", self.low)
        _finite("high", self.high)
        _period("period_s", self.period_s)
        _finite("leak_per_min", self.leak_per_s)

    def at(self, t: float) -> float:
        phase = (t % self.period_s) / self.period_s
        return self.low + (self.high - self.low) * phase + self.leak_per_s * t

    def flat_span(self, t: float) -> Span | None:
        return ALWAYS if self.low == self.high and self.leak_per_s == 0 else None

    def peak(self, until_s: float) -> float:
        return max(self.low, self.high) + max(0.0, self.leak_per_s * until_s)

    def floor(self, until_s: float) -> float:
        return min(self.low, self.high) + min(0.0, self.leak_per_s * until_s)


@dataclass(frozen=True)
class Spikes(Signal):
    """``base`` with a ``peak`` lasting ``width_s`` at the start of every ``every_s``."""

    base: float
    peak_value: float
    every_s: float
    width_s: float

    def __post_init__(self) -> None:
        _finite("base", self.base)
        _finite("peak", self.peak_value)
        _period("every_s", self.every_s)
        _period("width_s", self.width_s)
        if self.width_s > self.every_s:
            raise SignalError("width_s", f"must not be longer than every_s ({self.every_s:g}), "
                              f"got {self.width_s:g}")

    def at(self, t: float) -> float:
        return self.peak_value if (t % self.every_s) < self.width_s else self.base

    def flat_span(self, t: float) -> Span | None:
        return ALWAYS if self.peak_value == self.base else None

    def peak(self, until_s: float) -> float:
        return max(self.base, self.peak_value)

    def floor(self, until_s: float) -> float:
        return min(self.base, self.peak_value)


@dataclass(frozen=True)
class Wave(Signal):
    """A smooth oscillation around ``mean`` (utilisation that breathes)."""

    mean: float
    amplitude: float
    period_s: float

    def __post_init__(self) -> None:
        _finite("mean", self.mean)
        _finite("amplitude", self.amplitude)
        _period("period_s", self.period_s)

    def at(self, t: float) -> float:
        return self.mean + self.amplitude * math.sin(2 * math.pi * t / self.period_s)

    def flat_span(self, t: float) -> Span | None:
        return ALWAYS if self.amplitude == 0 else None

    def peak(self, until_s: float) -> float:
        return self.mean + abs(self.amplitude)

    def floor(self, until_s: float) -> float:
        return self.mean - abs(self.amplitude)


GeneratorFactory = Callable[[dict[str, float]], Signal]

# generator name -> (its fields, of which the sizes/values parsed with the signal's unit, factory)
GENERATORS: dict[str, tuple[Sequence[str], Sequence[str], GeneratorFactory]] = {
    "sawtooth": (
        ("low", "high", "period_s"),
        ("low", "high"),
        lambda f: Sawtooth(f["low"], f["high"], f["period_s"]),
    ),
    "leak": (
        ("low", "high", "period_s", "leak_per_min"),
        ("low", "high", "leak_per_min"),
        lambda f: Sawtooth(f["low"], f["high"], f["period_s"], f["leak_per_min"] / 60.0),
    ),
    "spikes": (
        ("base", "peak", "every_s", "width_s"),
        ("base", "peak"),
        lambda f: Spikes(f["base"], f["peak"], f["every_s"], f["width_s"]),
    ),
    "wave": (
        ("mean", "amplitude", "period_s"),
        ("mean", "amplitude"),
        lambda f: Wave(f["mean"], f["amplitude"], f["period_s"]),
    ),
}
