"""The probe's daemon thread: publish every interval, and once more at exit."""

from __future__ import annotations

import atexit
import threading
import time
from pathlib import Path
from typing import Any

from gpuwatch.core.probe_format import default_probe_dir
from gpuwatch.probe import facts, transport


class Probe:
    """Publishes this process's facts for gpuwatch; see :func:`gpuwatch.probe.attach`."""

    def __init__(self, model: Any = None, optimizer: Any = None, *, interval_s: float = 1.0,
                 directory: str | Path | None = None,
                 stats: facts.StatsSource = facts.cuda_stats):
        if interval_s <= 0:
            raise ValueError("interval_s must be above 0")
        self.model = model
        self.optimizer = optimizer
        self.interval_s = interval_s
        self.directory = transport.private_dir(directory or default_probe_dir())
        self._stats = stats
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.publishes = 0
        self.last_publish_s: float | None = None     # how long the last publish took
        self.last_error: Exception | None = None
        self._steps = 0
        # extra top-level sections merged into every document (AdaptiveBatch keeps its
        # state under "adaptive_batch"), so a periodic publish never drops them
        self.sections: dict[str, Any] = {}
        self._thread = threading.Thread(target=self._run, name="gpuwatch-probe", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def step(self) -> None:
        """Optional: count training steps where the optimizer keeps no step counter."""
        self._steps += 1

    def publish(self) -> dict[str, Any]:
        """Publish now (the thread also does this every interval). Returns the document."""
        with self._lock:
            start = time.perf_counter()
            doc = facts.collect(self.model, self.optimizer, self._stats,
                                self._steps or None)
            for name, section in self.sections.items():
                doc.setdefault(name, section)
            transport.publish(doc, self.directory)
            self.last_publish_s = time.perf_counter() - start
            self.publishes += 1
            return doc

    def _run(self) -> None:
        while not self._stop.wait(0 if self.publishes == 0 else self.interval_s):
            try:
                self.publish()
                self.last_error = None
            except Exception as exc:      # never take the training run down with us
                self.last_error = exc

    def close(self, withdraw: bool = False) -> None:
        """Stop publishing; a final document stays behind unless ``withdraw``."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(2.0)
        try:
            if withdraw:
                import os

                transport.withdraw(os.getpid(), self.directory)
            else:
                self.publish()
        except Exception as exc:
            self.last_error = exc
