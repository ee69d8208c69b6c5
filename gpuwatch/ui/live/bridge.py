"""Hands snapshots from the sampler thread to the GUI thread, coalescing bursts.

The sampler calls :meth:`SnapshotBridge.push` from its own thread. Snapshots queue in
a deque; a queued signal wakes the GUI only when the queue was empty, and the GUI
takes everything queued at once. So a fast virtual clock never floods the event loop,
and no sample is lost to the history.

When the GUI falls behind (``--time-scale max``, or a very slow machine), ``push``
waits once ``max_pending`` samples are queued: the sampler slows to the window's pace
instead of the queue — and each drained burst — growing without bound.

A window out of sight takes its samples in batches (:meth:`SnapshotBridge.set_batch`):
woken once for two samples, the GUI thread appends and judges the second while its
data and code are still in the caches, and the work of a sample costs about a third
less. Every sample is still appended and judged; a hint reaches the tray up to one
interval later.
"""

from __future__ import annotations

import threading
from collections import deque

from PySide6.QtCore import QObject, Qt, Signal, Slot

from gpuwatch.core.snapshot import Snapshot


class SnapshotBridge(QObject):
    snapshots = Signal(object)     # list[Snapshot], in the GUI thread
    failed = Signal(str)
    finished = Signal()
    _wake = Signal()

    def __init__(self, parent: QObject | None = None, max_pending: int = 64):
        super().__init__(parent)
        self._pending: deque[Snapshot] = deque()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._max_pending = max_pending
        self._batch = 1               # samples queued before the GUI is woken
        self._closed = False
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    # called from the sampler thread ----------------------------------------------------
    def push(self, snapshot: Snapshot) -> None:
        with self._lock:
            while len(self._pending) >= self._max_pending and not self._closed:
                self._room.wait(0.5)         # the GUI is behind: wait for it to drain
            self._pending.append(snapshot)
            due = len(self._pending) == self._batch   # once, as the queue fills to it
        if due:
            self._wake.emit()

    @property
    def batch(self) -> int:
        return self._batch

    def set_batch(self, count: int) -> None:
        """Wake the GUI once ``count`` samples are queued (1: for every sample). Samples
        already waiting are delivered at once when they make a batch now."""
        with self._lock:
            self._batch = min(max(1, count), self._max_pending)
            due = len(self._pending) >= self._batch
        if due:
            self._wake.emit()

    def error(self, exc: Exception) -> None:
        self.failed.emit(str(exc) or type(exc).__name__)

    def done(self) -> None:
        """The sampler stopped: what waits for a batch is delivered."""
        with self._lock:
            waiting = bool(self._pending)
        if waiting:
            self._wake.emit()
        self.finished.emit()

    def close(self) -> None:
        """Release a sampler waiting in ``push`` (it is being stopped)."""
        with self._lock:
            self._closed = True
            self._room.notify_all()

    def reopen(self) -> None:
        with self._lock:
            self._closed = False

    # GUI thread -----------------------------------------------------------------------
    @Slot()
    def _drain(self) -> None:
        with self._lock:
            batch = list(self._pending)
            self._pending.clear()
            self._room.notify_all()
        if batch:
            self.snapshots.emit(batch)
