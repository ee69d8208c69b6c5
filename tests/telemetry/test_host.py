"""Host details from psutil and /proc: real processes, vanished ones, containers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest
from sim_support import make_scenario, sim_backend

from gpuwatch.core.snapshot import HostStatus
from gpuwatch.telemetry.host import PsutilHost, in_child_pid_namespace, read_container
from gpuwatch.telemetry.hostinfo import container_from_cgroup

HEX = "3f2a1b9c4d5e" + "0" * 52


@pytest.mark.parametrize(("cgroup", "expected"), [
    ("0::/user.slice/user-1000.slice/session-2.scope\n", None),
    (f"12:memory:/docker/{HEX}\n", "docker:3f2a1b9c4d5e"),
    (f"0::/system.slice/docker-{HEX}.scope\n", "docker:3f2a1b9c4d5e"),
    (f"0::/system.slice/containerd.service/cri-containerd-{HEX}.scope\n",
     "containerd:3f2a1b9c4d5e"),
    (f"11:cpu:/kubepods/burstable/pod1b2c3d4e-aaaa-bbbb-cccc-111122223333/{HEX}\n",
     "k8s:3f2a1b9c4d5e"),
    (f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c.slice/"
     f"cri-containerd-{HEX}.scope\n", "k8s:3f2a1b9c4d5e"),
    (f"0::/machine.slice/libpod-{HEX}.scope\n", "podman:3f2a1b9c4d5e"),
])
def test_container_from_cgroup(cgroup, expected):
    assert container_from_cgroup(cgroup) == expected


def test_read_container_from_a_proc_tree(tmp_path):
    (tmp_path / "77").mkdir()
    (tmp_path / "77" / "cgroup").write_text(f"0::/system.slice/docker-{HEX}.scope\n")
    assert read_container(77, str(tmp_path)) == "docker:3f2a1b9c4d5e"
    assert read_container(78, str(tmp_path)) is None


def test_pid_namespace_check_reads_the_namespace_inode(tmp_path):
    assert in_child_pid_namespace(str(tmp_path)) is False      # unreadable: assume the host
    assert isinstance(in_child_pid_namespace(), bool)


def test_own_process_is_resolved_and_cpu_needs_two_readings():
    host = PsutilHost()
    me = os.getpid()
    first = host.lookup([me])[me]
    assert first.name and first.cmdline and first.user
    assert first.rss_bytes > 0
    assert first.cpu_percent is None            # no interval yet: unknown, not 0
    second = host.lookup([me])[me]
    assert second.cpu_percent is not None and second.cpu_percent >= 0


def _exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_vanished_process_is_dropped_quietly():
    host = PsutilHost()
    pid = _exited_pid()
    assert host.lookup([pid, os.getpid()]).keys() == {os.getpid()}


def test_backend_keeps_a_process_the_host_no_longer_has_while_the_driver_lists_it(open_sim):
    gone = _exited_pid()
    s = make_scenario(processes=[
        {"pid": gone, "gpu": 0, "name": "gone", "memory": "22GiB"},
        {"pid": os.getpid(), "gpu": 0, "name": "me", "memory": "2GiB"},
    ])
    snap = open_sim(s, host=PsutilHost(pid_namespace_isolated=False)).sample()
    exited, me = snap.gpus[0].processes            # the larger first
    assert me.pid == os.getpid() and me.resolved and me.found_on_host
    assert me.name != "me"                       # the host's answer, not the scenario's
    assert (exited.pid, exited.used_bytes) == (gone, 22 * 1024**3)
    assert exited.host_status is HostStatus.EXITED and not exited.found_on_host
    assert not exited.resolved
    assert (exited.name, exited.cmdline, exited.user, exited.started_at_s) == (None, (), None,
                                                                              None)
    assert sum(p.used_bytes for p in snap.processes) == 24 * 1024**3
    assert snap.warnings == ()


@pytest.fixture
def zombie():
    """A child that has exited and is not reaped yet: a zombie until the fixture ends."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for _ in range(500):                     # wait for the exit, without reaping
            if psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the child never exited")
        yield child.pid
    finally:
        child.wait()


def test_a_zombie_is_not_found_on_the_host(zombie):
    host = PsutilHost(pid_namespace_isolated=False)
    assert host.lookup([zombie]) == {}


def test_a_process_that_becomes_a_zombie_is_no_longer_found():
    host = PsutilHost(pid_namespace_isolated=False)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        assert child.pid in host.lookup([child.pid])        # running: found, and cached
        child.stdin.close()
        for _ in range(500):
            if psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE:
                break
            time.sleep(0.01)
        assert host.lookup([child.pid]) == {}
    finally:
        child.wait()


def test_backend_lists_a_zombie_holding_memory_as_exited(open_sim, zombie):
    s = make_scenario(processes=[{"pid": zombie, "gpu": 0, "name": "x", "memory": "22GiB"}])
    snap = open_sim(s, host=PsutilHost(pid_namespace_isolated=False)).sample()
    (p,) = snap.gpus[0].processes
    assert (p.pid, p.used_bytes, p.host_status) == (zombie, 22 * 1024**3, HostStatus.EXITED)


def test_pids_hidden_by_a_pid_namespace_are_kept_and_explained():
    hidden = 4_194_301                           # above any pid this host hands out
    s = make_scenario(processes=[{"pid": hidden, "gpu": 0, "name": "x", "memory": "1GiB"}])
    backend = sim_backend(s, host=PsutilHost(pid_namespace_isolated=True)).open()
    try:
        snap = backend.sample()
    finally:
        backend.close()
    (p,) = snap.gpus[0].processes
    assert (p.pid, p.resolved, p.name, p.used_bytes) == (hidden, False, None, 1024**3)
    assert p.host_status is HostStatus.HIDDEN
    assert any("--pid=host" in w for w in snap.warnings)
