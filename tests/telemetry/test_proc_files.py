"""The /proc files read each tick through kept descriptors, on real processes: read again
fresh, closed when the process goes or is no longer listed, bounded in number; and the
host's lighter ticks while nobody looks at resident sets."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from test_host_ticks import PAGE, FakeProc, Timer

from gpuwatch.telemetry.host import PsutilHost
from gpuwatch.telemetry.proc_files import ProcFiles


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_kept_descriptor_reads_the_file_afresh():
    script = "import sys\nprint('ready', flush=True)\nx = 0\nwhile True: x += 1"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        files = ProcFiles()
        first = files.read(child.pid, "stat")
        assert files.open_count == 1
        for _ in range(2000):       # it spins: its CPU time moves within a few ticks
            later = files.read(child.pid, "stat")
            if later != first:
                break
            time.sleep(0.005)
        assert later != first
        with open(f"/proc/{child.pid}/stat", "rb") as f:
            assert f.read().split()[:3] == later.split()[:3]
        assert files.open_count == 1
        files.close()
        assert files.open_count == 0
    finally:
        child.kill()
        child.wait()


def test_a_reaped_process_is_gone_and_its_descriptor_closed(children):
    (child,) = children(1)
    files = ProcFiles()
    before = _open_fds()
    files.read(child.pid, "stat")
    files.read(child.pid, "statm")
    assert _open_fds() == before + 2
    child.kill()
    child.wait()
    with pytest.raises((ProcessLookupError, FileNotFoundError)):
        files.read(child.pid, "stat")
    files.forget(child.pid)
    assert files.open_count == 0 and _open_fds() == before


def test_no_more_than_max_open_are_kept_and_the_rest_read_by_path(children):
    procs = children(3)
    files = ProcFiles(max_open=2)
    for child in procs:
        assert files.read(child.pid, "stat").startswith(f"{child.pid} (".encode())
    assert files.open_count == 2
    for child in procs:       # the third is read by path, every time
        assert files.read(child.pid, "stat").startswith(f"{child.pid} (".encode())
    assert files.open_count == 2


def test_the_host_keeps_two_descriptors_per_listed_process_and_closes_them(children):
    procs = children(4)
    pids = [c.pid for c in procs]
    host = PsutilHost(pid_namespace_isolated=False)
    before = _open_fds()
    for _ in range(3):
        assert host.lookup(pids).keys() == set(pids)
    assert _open_fds() == before + 2 * len(pids)
    host.lookup(pids[:2])                         # two no longer listed
    assert _open_fds() == before + 4
    procs[0].kill()
    procs[0].wait()
    assert host.lookup(pids[:2]).keys() == {pids[1]}
    assert _open_fds() == before + 2
    host.close()
    assert _open_fds() == before


def test_resident_sets_are_read_every_tenth_tick_when_nobody_looks(tmp_path, children):
    (child,) = children(1)
    proc = FakeProc(tmp_path, child.pid)
    host = PsutilHost(pid_namespace_isolated=False, proc_root=str(tmp_path), timer=Timer())
    assert host.lookup([child.pid])[child.pid].rss_bytes == 500 * PAGE
    host.set_detail(False)
    proc.write(statm_rss=700)
    seen = [host.lookup([child.pid])[child.pid].rss_bytes for _ in range(10)]
    fresh = seen.index(700 * PAGE)               # read again within ten ticks
    assert 1 <= fresh <= 9
    assert set(seen[:fresh]) == {500 * PAGE}     # the last reading stands meanwhile
    assert set(seen[fresh:]) == {700 * PAGE}
    host.set_detail(True)
    proc.write(statm_rss=900)
    assert host.lookup([child.pid])[child.pid].rss_bytes == 900 * PAGE   # at once


def test_a_recycled_pid_gets_its_own_resident_set_at_once_even_when_nobody_looks(
        tmp_path, children):
    (child,) = children(1)
    proc = FakeProc(tmp_path, child.pid)
    host = PsutilHost(pid_namespace_isolated=False, proc_root=str(tmp_path), timer=Timer())
    host.lookup([child.pid])
    host.set_detail(False)
    host.lookup([child.pid])
    proc.write(start=9000, statm_rss=1234)        # another process with the same pid
    assert host.lookup([child.pid])[child.pid].rss_bytes == 1234 * PAGE
