"""The recorder's queue is bounded: a sampler faster than the writer waits for room
(nothing is dropped, memory does not grow); a writer that has stopped never makes a
caller wait."""

from __future__ import annotations

import threading
import time

from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend


def _snapshots(n: int) -> list:
    backend = open_backend(SourceOptions(demo="churn", time_scale="max"))
    try:
        out = []
        for t in range(n):
            backend.clock.set_elapsed(float(t))
            out.append(backend.sample())
        return out
    finally:
        backend.close()


def test_a_fast_sampler_waits_for_a_slow_writer_and_nothing_is_lost(tmp_path):
    snaps = _snapshots(60)
    rec = Recorder(tmp_path / "b.gpuwatch.sqlite", 1.0, queue_limit=4)
    slow = rec._writer.add_snapshot

    def add_slowly(snapshot):
        time.sleep(0.01)
        slow(snapshot)

    rec._writer.add_snapshot = add_slowly            # a writer 10 ms behind each sample
    deepest = 0
    started = time.monotonic()
    for snap in snaps:
        rec.add_snapshot(snap)
        deepest = max(deepest, rec._queue.qsize())
    queued_for = time.monotonic() - started
    rec.close()
    assert rec.error is None
    assert deepest <= 4
    assert queued_for >= 0.01 * (len(snaps) - 5)      # the sampler was held back
    with SessionReader(rec.path) as r:
        assert r.info().samples == len(snaps)


def test_a_failed_writer_never_blocks_the_sampler(tmp_path):
    snaps = _snapshots(3)
    rec = Recorder(tmp_path / "f.gpuwatch.sqlite", 1.0, queue_limit=2)

    def broken(snapshot):
        raise OSError(28, "No space left on device")

    rec._writer.add_snapshot = broken
    done = threading.Event()

    def sample_a_lot():
        for _ in range(200):
            rec.add_snapshot(snaps[0])
        done.set()

    threading.Thread(target=sample_a_lot, daemon=True).start()
    assert done.wait(30)
    rec.close()
    assert rec.error is not None and "No space left" in str(rec.error)
    assert rec.saved_samples == 0
    rec.add_snapshot(snaps[1])                         # after close: dropped at once
