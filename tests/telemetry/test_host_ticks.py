"""What PsutilHost does each tick: static facts once per process, a recycled pid noticed,
CPU % from the change in CPU time, hostile names kept as data, partial answers when a
process may not be read. Both ways of reading are covered: /proc, and psutil alone (as
where there is no /proc)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from gpuwatch.telemetry import host as host_module
from gpuwatch.telemetry.host import PsutilHost

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _zombie_of(child: subprocess.Popen) -> int:
    for _ in range(1000):
        if psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE:
            return child.pid
        time.sleep(0.01)
    pytest.fail("the child never exited")


class FakeProc:
    """A /proc tree with one process's stat, statm and cgroup, written by the test."""

    def __init__(self, root, pid: int):
        self.root, self.pid = root, pid
        (root / str(pid)).mkdir()
        (root / str(pid) / "cgroup").write_text("0::/user.slice\n")
        (root / "self").mkdir()
        (root / "self" / "stat").write_text("")
        self.write()

    def write(self, *, name: str = "sleep", state: str = "S", utime: int = 0,
              stime: int = 0, start: int = 5000, rss_pages: int = 400,
              statm_rss: int = 500) -> None:
        after = [state, "1", "1", "1", "0", "-1", "4194304", "0", "0", "0", "0",
                 str(utime), str(stime), "0", "0", "20", "0", "1", "0", str(start),
                 "2000000", str(rss_pages), "18446744073709551615"] + ["0"] * 29
        stat = f"{self.pid} ({name}) " + " ".join(after) + "\n"
        (self.root / str(self.pid) / "stat").write_bytes(stat.encode("utf-8", "surrogateescape"))
        (self.root / str(self.pid) / "statm").write_text(f"1000 {statm_rss} 300 10 0 200 0\n")


class Timer:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake(tmp_path, sleeper):
    """(a host reading a fake /proc for a real pid, the fake tree, its timer)"""
    proc = FakeProc(tmp_path, sleeper)
    timer = Timer()
    host = PsutilHost(pid_namespace_isolated=False, proc_root=str(tmp_path), timer=timer)
    return host, proc, timer


@pytest.fixture
def counted(monkeypatch):
    """Counts psutil's static-fact reads and process objects made, by name."""
    counts: dict[str, int] = {}

    def wrap(name):
        original = getattr(psutil.Process, name)

        def counting(self, *a, **kw):
            counts[name] = counts.get(name, 0) + 1
            return original(self, *a, **kw)

        monkeypatch.setattr(psutil.Process, name, counting)

    for name in ("__init__", "name", "cmdline", "username"):
        wrap(name)
    return counts


def test_static_facts_are_read_once_per_process_not_per_tick(counted, spawn):
    pids = [spawn(["sleep", str(900 + k)]).pid for k in range(3)]
    host = PsutilHost(pid_namespace_isolated=False)
    first = host.lookup(pids)
    learnt = dict(counted)
    assert learnt["cmdline"] == learnt["username"] == 3
    for _ in range(5):
        again = host.lookup(pids)
    assert counted == learnt                 # no process object, no fact read again
    for pid in pids:
        assert again[pid].cmdline == first[pid].cmdline
        assert again[pid].rss_bytes > 0 and again[pid].cpu_percent >= 0


def test_cpu_percent_is_the_change_in_cpu_time_over_the_interval(fake):
    host, proc, timer = fake
    proc.write(utime=100, stime=50)
    first = host.lookup([proc.pid])[proc.pid]
    assert first.cpu_percent is None             # one reading: no rate yet
    assert first.rss_bytes == 500 * PAGE         # statm's resident set, not stat's field
    timer.now += 2.0
    proc.write(utime=100 + HZ // 2, stime=50 + HZ // 4)     # 0.75 s of CPU in 2 s
    assert host.lookup([proc.pid])[proc.pid].cpu_percent == pytest.approx(
        (HZ // 2 + HZ // 4) / HZ / 2.0 * 100)
    timer.now += 1.0
    proc.write(utime=100 + HZ // 2 + 2 * HZ, stime=50 + HZ // 4)   # two threads busy
    assert host.lookup([proc.pid])[proc.pid].cpu_percent == pytest.approx(200.0)
    timer.now += 1.0
    assert host.lookup([proc.pid])[proc.pid].cpu_percent == 0.0


def test_a_recycled_pid_is_learnt_anew_and_its_rate_starts_again(fake, counted):
    host, proc, timer = fake
    host.lookup([proc.pid])
    timer.now += 1.0
    proc.write(utime=HZ)
    assert host.lookup([proc.pid])[proc.pid].cpu_percent == pytest.approx(100.0)
    assert counted["cmdline"] == 1
    timer.now += 1.0
    proc.write(utime=3, start=9999)             # the same pid, another process
    recycled = host.lookup([proc.pid])[proc.pid]
    assert counted["cmdline"] == 2               # its facts are read again
    assert recycled.cpu_percent is None          # no rate across two processes


@pytest.mark.parametrize("name", [") Z 1 (", "a) X (b", "x)\n)Z", "(", ")", "  ", "\udcff"])
def test_a_hostile_name_in_stat_does_not_shift_the_fields(fake, name):
    host, proc, timer = fake
    proc.write(name=name, utime=7)
    found = host.lookup([proc.pid])[proc.pid]
    timer.now += 1.0
    proc.write(name=name, utime=7 + HZ)
    assert host.lookup([proc.pid])[proc.pid].cpu_percent == pytest.approx(100.0)
    assert found.rss_bytes == 500 * PAGE


@pytest.mark.parametrize("state", ["Z", "X"])
def test_a_zombie_or_dead_state_is_exited(fake, state):
    host, proc, _ = fake
    assert proc.pid in host.lookup([proc.pid])
    proc.write(state=state)
    assert host.lookup([proc.pid]) == {}


def test_a_process_that_may_not_be_read_is_found_with_what_could_be_read(
        fake, monkeypatch):
    host, proc, _ = fake

    def denied(pid, name):
        raise host_module._Denied

    def refused(self):
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(host._files, "read", denied)
    monkeypatch.setattr(psutil.Process, "cmdline", refused)
    found = host.lookup([proc.pid])[proc.pid]
    assert found.name == "sleep" and found.user      # what psutil could read
    assert found.cmdline == ()                       # refused: empty, not a guess
    assert (found.cpu_percent, found.rss_bytes) == (None, None)


@pytest.mark.parametrize("garbage", [b"", b"1234", b"1 (x) S 1 2", b"1 (x) S " + b"y " * 30])
def test_a_stat_that_is_not_the_kernels_reads_nothing_and_does_not_fail(fake, garbage):
    host, proc, _ = fake
    (proc.root / str(proc.pid) / "stat").write_bytes(garbage)
    found = host.lookup([proc.pid])[proc.pid]
    assert found.name == "sleep" and (found.cpu_percent, found.rss_bytes) == (None, None)


def test_a_pid_gone_from_proc_is_not_found(fake):
    host, proc, _ = fake
    assert proc.pid in host.lookup([proc.pid])
    for name in ("stat", "statm", "cgroup"):
        (proc.root / str(proc.pid) / name).unlink()
    assert host.lookup([proc.pid]) == {}


@pytest.mark.parametrize("use_proc", [True, False], ids=["proc", "psutil"])
def test_a_real_process_is_found_with_rates_from_the_second_reading(use_proc):
    script = "print('ready', flush=True)\nwhile True: pass"
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        host = PsutilHost(pid_namespace_isolated=False, use_proc=use_proc)
        first = host.lookup([child.pid])[child.pid]
        assert first.cpu_percent is None and first.rss_bytes > 0
        assert first.cmdline == (sys.executable, "-c", script)
        assert first.started_at_s == pytest.approx(psutil.Process(child.pid).create_time())
        for _ in range(200):                     # until it has run a clock tick or two
            time.sleep(0.02)
            second = host.lookup([child.pid])[child.pid]
            if second.cpu_percent:
                break
        assert second.cpu_percent > 0
        assert second.rss_bytes == psutil.Process(child.pid).memory_info().rss
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("use_proc", [True, False], ids=["proc", "psutil"])
def test_zombies_and_reaped_pids_are_not_found(use_proc, sleeper):
    host = PsutilHost(pid_namespace_isolated=False, use_proc=use_proc)
    zombie = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
    reaped = subprocess.Popen(["true"])
    reaped.wait()
    try:
        assert zombie.pid in host.lookup([zombie.pid, sleeper])
        zombie.kill()
        _zombie_of(zombie)
        assert host.lookup([zombie.pid, reaped.pid, sleeper]).keys() == {sleeper}
    finally:
        zombie.wait()


def test_a_process_no_longer_listed_is_forgotten(fake):
    host, proc, timer = fake
    host.lookup([proc.pid])
    timer.now += 1.0
    host.lookup([])                              # not on any GPU this tick
    timer.now += 1.0
    proc.write(utime=HZ)
    assert host.lookup([proc.pid])[proc.pid].cpu_percent is None   # a new first reading


def test_a_process_caught_inside_exec_is_looked_at_again(fake, monkeypatch, counted):
    """Between exec's start and the new program's arguments there is a moment when the
    command line reads empty: the facts are read again on the next ticks, not kept."""
    host, proc, timer = fake
    real_cmdline = psutil.Process.cmdline
    answers = [[], []]

    def cmdline(self):
        return answers.pop(0) if answers else real_cmdline(self)

    monkeypatch.setattr(psutil.Process, "cmdline", cmdline)
    assert host.lookup([proc.pid])[proc.pid].cmdline == ()
    timer.now += 1.0
    proc.write(utime=HZ)
    second = host.lookup([proc.pid])[proc.pid]
    assert second.cmdline == ()
    assert second.cpu_percent == pytest.approx(100.0)     # the same process: rate goes on
    timer.now += 1.0
    assert host.lookup([proc.pid])[proc.pid].cmdline == ("sleep", "1000")
    learnt = counted["username"]
    for _ in range(3):
        timer.now += 1.0
        host.lookup([proc.pid])
    assert counted["username"] == learnt                 # complete now: read no more


def test_a_command_line_that_stays_empty_is_read_a_few_times_only(fake, monkeypatch,
                                                                   counted):
    host, proc, timer = fake
    monkeypatch.setattr(psutil.Process, "cmdline", lambda self: [])
    for _ in range(10):
        assert host.lookup([proc.pid])[proc.pid].cmdline == ()
        timer.now += 1.0
    assert counted["username"] == 4                      # the first look and 3 more
