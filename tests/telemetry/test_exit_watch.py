"""Exits seen through pidfds: the watch itself, and the host resting on it while nobody
looks (real child processes, the real /proc)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from gpuwatch.telemetry.exit_watch import ExitWatch
from gpuwatch.telemetry.host import PsutilHost

needs_pidfd = pytest.mark.skipif(not ExitWatch(1).available,
                                 reason="no pidfd_open on this system")


def wait_until_exited(watch: ExitWatch, pid: int) -> set[int]:
    """The kernel marks the pidfd readable as the process exits: a moment after kill."""
    for _ in range(500):
        exited = watch.exited()
        if pid in exited:
            return exited
        time.sleep(0.01)
    return watch.exited()


@needs_pidfd
def test_an_exit_is_seen_unreaped_and_after_reaping(children):
    a, b = children(2)
    watch = ExitWatch(8)
    assert watch.watch(a.pid) and watch.watch(b.pid) and len(watch) == 2
    assert watch.exited() == set()
    os.kill(a.pid, signal.SIGKILL)          # a zombie until waited for
    assert wait_until_exited(watch, a.pid) == {a.pid}
    a.wait()                                # reaped: its pid may now go to anyone
    assert watch.exited() == {a.pid}        # still the exited process, not the pid
    watch.forget(a.pid)
    assert not watch.watching(a.pid) and watch.exited() == set()
    watch.keep_only(set())
    assert len(watch) == 0


@needs_pidfd
def test_the_limit_and_a_pid_that_is_gone(children):
    a, b = children(2)
    watch = ExitWatch(1)
    assert watch.watch(a.pid)
    assert not watch.watch(b.pid)           # past the limit: the caller reads instead
    b.kill()
    b.wait()
    watch.close()
    assert not ExitWatch(4).watch(b.pid)    # no such process
    assert not ExitWatch(0).watch(a.pid)


@needs_pidfd
def test_resting_reads_each_process_every_tenth_tick_and_sees_an_exit_at_once(
        children, monkeypatch):
    a, b = children(2)
    host = PsutilHost(pid_namespace_isolated=False)
    reads: list[int] = []
    read = host._files.read
    monkeypatch.setattr(host._files, "read",
                        lambda pid, name: reads.append(pid) or read(pid, name))
    first = host.lookup([a.pid, b.pid])
    assert set(first) == {a.pid, b.pid}
    host.set_detail(False)
    reads.clear()
    seen = [host.lookup([a.pid, b.pid]) for _ in range(10)]
    # the first tick at rest reads each stat once more as it starts watching (a pidfd
    # opened before that read is of the process read); then one tick in ten reads
    assert len(reads) == 2 + 2 * 2
    # the facts and last readings stand between: ticks 2-9 show what the first read;
    # tick 10 reads anew (a child just past exec may still have been mapping its
    # libraries at the first reading) and tick 11 shows that again
    for tick in seen:
        assert tick[a.pid].name == first[a.pid].name == "sleep"
    assert {tick[a.pid].rss_bytes for tick in seen[:8]} == {first[a.pid].rss_bytes}
    assert seen[9][a.pid].rss_bytes == seen[8][a.pid].rss_bytes
    os.kill(a.pid, signal.SIGKILL)
    for _ in range(500):                    # not a reading tick, yet a is noticed
        now = host.lookup([a.pid, b.pid])
        if a.pid not in now:
            break
        time.sleep(0.01)
    assert set(now) == {b.pid}
    host.set_detail(True)                   # someone looks: every tick read again
    reads.clear()
    host.lookup([b.pid])
    assert reads == [b.pid, b.pid]
    host.close()


def test_without_pidfds_resting_still_reads_the_state_every_tick(children, monkeypatch):
    (child,) = children(1)
    host = PsutilHost(pid_namespace_isolated=False)
    host._watch.available = False           # as where pidfd_open is refused
    host.lookup([child.pid])
    host.set_detail(False)
    reads: list[str] = []
    read = host._files.read
    monkeypatch.setattr(host._files, "read",
                        lambda pid, name: reads.append(name) or read(pid, name))
    for _ in range(10):
        host.lookup([child.pid])
    assert reads.count("stat") == 10 and reads.count("statm") == 1
    host.close()
