"""Clocks that drive sampling: the wall clock, and virtual clocks for simulated GPUs.

A simulated scenario runs on virtual time: scaled from real time (``--time-scale 10``
runs ten virtual seconds per real second) or stepped without sleeping
(``--time-scale max``). The sampler only ever asks a clock for the time and to wait.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_s(self) -> float:
        """Unix time of 'now' on this clock (virtual for simulated clocks)."""
        ...

    def elapsed_s(self) -> float:
        """Seconds since the clock started."""
        ...

    def sleep_until(self, elapsed_s: float, stop: threading.Event) -> bool:
        """Wait until ``elapsed_s``; False when ``stop`` was set first."""
        ...


class WallClock:
    def __init__(self) -> None:
        self._m0 = time.monotonic()

    def now_s(self) -> float:
        return time.time()

    def elapsed_s(self) -> float:
        return time.monotonic() - self._m0

    def sleep_until(self, elapsed_s: float, stop: threading.Event) -> bool:
        return not stop.wait(max(0.0, elapsed_s - self.elapsed_s()))


class ScaledClock:
    """Virtual time running ``scale`` times faster than real time."""

    def __init__(self, scale: float = 1.0, start_elapsed_s: float = 0.0):
        if not scale > 0:
            raise ValueError("time scale must be greater than 0")
        self.scale = scale
        self.epoch_s = time.time() - start_elapsed_s   # virtual 'now' starts at real now
        self._start = start_elapsed_s
        self._m0 = time.monotonic()

    def now_s(self) -> float:
        return self.epoch_s + self.elapsed_s()

    def elapsed_s(self) -> float:
        return self._start + (time.monotonic() - self._m0) * self.scale

    def sleep_until(self, elapsed_s: float, stop: threading.Event) -> bool:
        return not stop.wait(max(0.0, (elapsed_s - self.elapsed_s()) / self.scale))


class SteppedClock:
    """Virtual time that jumps to each deadline at once: a day of scenario in seconds."""

    def __init__(self, start_elapsed_s: float = 0.0):
        self.epoch_s = time.time() - start_elapsed_s
        self._elapsed = start_elapsed_s
        self._lock = threading.Lock()

    def now_s(self) -> float:
        return self.epoch_s + self._elapsed

    def elapsed_s(self) -> float:
        return self._elapsed

    def set_elapsed(self, elapsed_s: float) -> None:
        with self._lock:
            self._elapsed = elapsed_s

    def sleep_until(self, elapsed_s: float, stop: threading.Event) -> bool:
        with self._lock:
            self._elapsed = max(self._elapsed, elapsed_s)
        return not stop.is_set()
