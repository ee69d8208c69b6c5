"""Recording a session off the caller's thread, committed at least once a second.

Callers (the sampler's callback, the GUI) only put items on a queue; one writer thread
turns them into rows and commits when a second has passed since the last commit, or
when the queue runs dry. A ``kill -9`` therefore loses at most about a second, and
the file stays readable (SQLite's WAL keeps every commit whole).

The queue is bounded (:data:`QUEUE_LIMIT` items): a sampler that outruns the writer (a
replay at ``--time-scale max``) waits for room instead of piling snapshots up in memory
(back-pressure). At 1 Hz the writer keeps up by orders of magnitude and never makes a
caller wait. Once the writer has stopped (closed, or failed), items are dropped, never
waited on.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuwatch.core.hints import HintEvent
from gpuwatch.core.snapshot import Snapshot
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.writer import SessionWriter

_STOP = object()
# Items waiting for the writer. A snapshot of 8 GPUs x 64 processes is ~100 KB of
# Python objects, so this bounds the queue near 25 MB; the writer takes ~2 ms for one.
QUEUE_LIMIT = 256
_PUT_WAIT_S = 0.5


class Recorder:
    def __init__(self, path: str | Path, interval_s: float | None = None,
                 commit_every_s: float = 1.0,
                 on_error: Callable[[Exception], None] | None = None,
                 free_name: bool = False, queue_limit: int = QUEUE_LIMIT):
        # raises SessionFileError at once; with ``free_name`` a taken name moves on to
        # the next free one (see SessionWriter), so ``path`` is the one really written
        self._writer = SessionWriter(Path(path), free_name=free_name)
        self.path = self._writer.path
        self._interval_s = interval_s
        self._commit_every_s = commit_every_s
        self._on_error = on_error
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_limit))
        self._paused = False
        self.error: Exception | None = None
        self._saved_after_failure: int | None = None
        self._thread = threading.Thread(target=self._run, name="gpuwatch-recorder",
                                        daemon=True)
        self._thread.start()

    @property
    def samples(self) -> int:
        return self._writer.samples

    @property
    def saved_samples(self) -> int:
        """Samples the file holds for sure: those committed, or after a failure those
        a reader finds in it (a failed write can roll back more than its own rows)."""
        if self._saved_after_failure is not None:
            return self._saved_after_failure
        return self._writer.committed_samples

    @property
    def paused(self) -> bool:
        return self._paused

    def add_snapshot(self, snapshot: Snapshot) -> None:
        if not self._paused:
            self._put(("snapshot", snapshot))

    def add_hint_event(self, event: HintEvent) -> None:
        self._put(("hint", event))

    def add_budget_link(self, gpu: int, pid: int, label: str, estimate_json: dict,
                        timestamp_s: float) -> None:
        self._put(("link", (gpu, pid, label, estimate_json, timestamp_s)))

    def pause(self, timestamp_s: float) -> None:
        if not self._paused:
            self._paused = True
            self._put(("event", ("recording-paused", timestamp_s)))

    def resume(self, timestamp_s: float) -> None:
        if self._paused:
            self._paused = False
            self._put(("event", ("recording-resumed", timestamp_s)))

    def close(self, ended_at_s: float | None = None, timeout_s: float = 30.0) -> None:
        """Write what is queued, mark the end and close the file."""
        self._put((_STOP, ended_at_s))
        self._thread.join(timeout_s)

    def _put(self, item: tuple) -> None:
        """Queue ``item``, waiting for room while the writer works (back-pressure); an
        item for a writer that has stopped is dropped."""
        while self._thread.is_alive():
            try:
                self._queue.put(item, timeout=_PUT_WAIT_S)
                return
            except queue.Full:
                continue

    def _apply(self, kind: Any, payload: Any) -> None:
        w = self._writer
        if kind == "snapshot":
            if w.samples == 0:
                w.start(payload, self._interval_s)
            w.add_snapshot(payload)
        elif kind == "hint":
            w.add_hint_event(payload)
        elif kind == "link":
            w.add_budget_link(*payload)
        elif kind == "event":
            w.add_event(*payload)

    def _run(self) -> None:
        next_commit = time.monotonic() + self._commit_every_s
        pending = False
        ended_at: float | None = None
        try:
            while True:
                try:
                    timeout = max(0.0, next_commit - time.monotonic()) if pending else None
                    kind, payload = self._queue.get(timeout=timeout)
                except queue.Empty:
                    kind, payload = None, None
                if kind is _STOP:
                    ended_at = payload
                    break
                if kind is not None:
                    if not pending:       # the first row after a commit starts the clock
                        next_commit = time.monotonic() + self._commit_every_s
                    self._apply(kind, payload)
                    pending = True
                now = time.monotonic()
                if pending and now >= next_commit:
                    self._writer.commit()
                    pending = False
            self._writer.close(ended_at)
        except Exception as exc:      # any failure is reported and what was written kept
            reason = exc if isinstance(exc, (sqlite3.Error, OSError)) else (
                f"{type(exc).__name__}: {exc}")
            self.error = SessionFileError(str(self.path), f"recording stopped: {reason}")
            self._keep_what_was_written(ended_at)
            if self._on_error is not None:
                self._on_error(self.error)
            self._drain()

    def _keep_what_was_written(self, ended_at: float | None) -> None:
        """After a failure, save the rows written so far and mark the end, if the file
        still allows it; a file that refuses keeps its last commit (WAL commits are whole)."""
        with contextlib.suppress(Exception):
            self._writer.close(ended_at)
        self._saved_after_failure = _samples_in(self.path)

    def _drain(self) -> None:
        """After a write failure, keep accepting items so callers never block."""
        while True:
            kind, _ = self._queue.get()
            if kind is _STOP:
                return


def _samples_in(path: Path) -> int:
    """The samples a reader finds in ``path`` (0 when it cannot be read at all)."""
    from gpuwatch.sessions.reader import SessionReader  # numpy: only after a failure

    try:
        with SessionReader(path) as reader:
            return reader.info().samples
    except Exception:           # unreadable, or no session row: nothing to replay
        return 0
