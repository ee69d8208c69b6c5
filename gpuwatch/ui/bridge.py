"""Hands snapshots from the sampler thread to the GUI thread, coalescing bursts.

The sampler calls :meth:`SnapshotBridge.push` from its own thread. Snapshots queue in
a deque; a queued signal wakes the GUI only when the queue was empty, and the GUI
takes everything queued at once. So a fast virtual clock never floods the event loop,
and no sample is lost to the history.
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

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._pending: deque[Snapshot] = deque()
        self._lock = threading.Lock()
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    # called from the sampler thread ----------------------------------------------------
    def push(self, snapshot: Snapshot) -> None:
        with self._lock:
            was_empty = not self._pending
            self._pending.append(snapshot)
        if was_empty:
            self._wake.emit()

    def error(self, exc: Exception) -> None:
        self.failed.emit(str(exc) or type(exc).__name__)

    def done(self) -> None:
        self.finished.emit()

    # GUI thread -----------------------------------------------------------------------
    @Slot()
    def _drain(self) -> None:
        with self._lock:
            batch = list(self._pending)
            self._pending.clear()
        if batch:
            self.snapshots.emit(batch)
