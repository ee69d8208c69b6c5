"""Hands snapshots from the sampler thread to the GUI thread, coalescing bursts.

The sampler calls :meth:`SnapshotBridge.push` from its own thread. Snapshots queue in
a deque; a queued signal wakes the GUI only when the queue was empty, and the GUI
takes everything queued at once. So a fast virtual clock never floods the event loop,
and no sample is lost to the history.

When the GUI falls behind (``--time-scale max``, or a very slow machine), ``push``
waits once ``max_pending`` samples are queued: the sampler slows to the window's pace
instead of the queue — and each drained burst — growing without bound.
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
        self._closed = False
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    # called from the sampler thread ----------------------------------------------------
    def push(self, snapshot: Snapshot) -> None:
        with self._lock:
            while len(self._pending) >= self._max_pending and not self._closed:
                self._room.wait(0.5)         # the GUI is behind: wait for it to drain
            was_empty = not self._pending
            self._pending.append(snapshot)
        if was_empty:
            self._wake.emit()

    def error(self, exc: Exception) -> None:
        self.failed.emit(str(exc) or type(exc).__name__)

    def done(self) -> None:
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
