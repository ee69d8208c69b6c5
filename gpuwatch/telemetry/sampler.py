"""The sampler thread: owns a backend and hands out immutable snapshots at an interval.

Deadlines are kept on the backend's clock (k x interval), so sampling does not drift
and a slow tick is followed by the next deadline rather than a burst. With a stepped
virtual clock (``--time-scale max``) the thread never sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gpuwatch.core.snapshot import Snapshot
from gpuwatch.telemetry.nvml import NvmlBackend

MIN_INTERVAL_S = 0.1


class Sampler:
    def __init__(self, backend: NvmlBackend, interval_s: float,
                 on_snapshot: Callable[[Snapshot], None],
                 on_error: Callable[[Exception], None] | None = None,
                 until_elapsed_s: float | None = None,
                 on_finished: Callable[[], None] | None = None,
                 start_elapsed_s: float | None = None):
        if interval_s < MIN_INTERVAL_S:
            raise ValueError(f"the sampling interval must be at least {MIN_INTERVAL_S} s")
        self.backend = backend
        self.interval_s = interval_s
        self._on_snapshot = on_snapshot
        self._on_error = on_error
        self._on_finished = on_finished
        self._until = until_elapsed_s
        # the time ticks are counted from (the caller's start): ticks fall at start + k x
        # interval, so a run of D seconds takes D / interval + 1 samples however long the
        # thread took to start (else the last tick falls a moment past the end)
        self._start = start_elapsed_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpuwatch-sampler", daemon=True)
        self.samples = 0

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        clock = self.backend.clock
        deadline = clock.elapsed_s() if self._start is None else self._start
        try:
            while not self._stop.is_set():
                try:
                    snapshot = self.backend.sample()
                except Exception as exc:  # a bug or a dying driver must not kill the thread
                    if self._on_error is not None:
                        self._on_error(exc)
                else:
                    self.samples += 1
                    self._on_snapshot(snapshot)
                deadline += self.interval_s
                now = clock.elapsed_s()
                if now > deadline:   # fell behind: skip the missed ticks
                    missed = int((now - deadline) / self.interval_s) + 1
                    deadline += missed * self.interval_s
                if self._until is not None and deadline > self._until + 1e-9:
                    break
                if not clock.sleep_until(deadline, self._stop):
                    break
        finally:
            if self._on_finished is not None:
                self._on_finished()
