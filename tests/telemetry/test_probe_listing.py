"""The probe folder costs one listing a tick, however many pids the GPUs list, and the
listing takes only files named exactly ``<pid>.json`` for a listed pid."""

from __future__ import annotations

import json
import os
import time

import pytest

from gpuwatch.core.probe_format import PROBE_SCHEMA
from gpuwatch.telemetry.probes import ProbeDirectory

FILE_CALLS = ("open", "stat", "lstat", "fstat", "scandir", "listdir", "access")


def doc(pid: int) -> dict:
    return {"schema": PROBE_SCHEMA, "pid": pid, "published_at_s": time.time(),
            "allocator": {"allocated_bytes": 100, "reserved_bytes": 400,
                          "inactive_split_bytes": 50, "num_alloc_retries": 2}}


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "probes"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def file_calls(monkeypatch):
    """Counts the file-system calls made through the os module."""
    calls = {"n": 0}
    for name in FILE_CALLS:
        original = getattr(os, name)

        def counting(*a, _original=original, **kw):
            calls["n"] += 1
            return _original(*a, **kw)

        monkeypatch.setattr(os, name, counting)
    return calls


def _calls_for(reader: ProbeDirectory, pids, file_calls) -> int:
    before = file_calls["n"]
    reader.read(pids)
    return file_calls["n"] - before


@pytest.mark.parametrize("exists", [True, False])
def test_a_tick_costs_the_same_for_one_pid_or_a_thousand(folder, file_calls, exists):
    (folder / "7.json").write_text(json.dumps(doc(7)))
    path = folder if exists else folder / "missing"
    reader = ProbeDirectory(path)
    reader.read([7])                             # the report is parsed once, then cached
    one = _calls_for(reader, [7], file_calls)
    many = _calls_for(reader, [7, *range(10_000, 11_000)], file_calls)
    assert many == one
    assert (7 in reader.read([7])) is exists


def test_only_exact_pid_names_of_listed_pids_are_read(folder):
    for name in ("100.json", "0100.json", "١٠١.json", "102.json.tmp", ".103.json.tmp",
                 "104.JSON", "105"):
        pid = 100
        (folder / name).write_text(json.dumps(doc(pid)))
    (folder / "101.json").write_text(json.dumps(doc(101)))
    reader = ProbeDirectory(folder)
    got = reader.read([100, 101, 102, 103, 104, 105])
    assert set(got) == {100, 101}
    assert reader.read([101]).keys() == {101}        # 100 is not asked for this tick
    assert reader.rejected == {}


def test_a_fifo_named_like_a_report_is_refused_without_waiting(folder):
    os.mkfifo(folder / "200.json")
    reader = ProbeDirectory(folder)
    assert reader.read([200]) == {}
    assert reader.rejected[200] == "not a regular file"


def test_a_folder_reached_through_a_symlink_is_not_read(folder, tmp_path):
    (folder / "300.json").write_text(json.dumps(doc(300)))
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert ProbeDirectory(link).read([300]) == {}
    assert 300 in ProbeDirectory(folder).read([300])


def test_a_replaced_report_is_read_again_and_a_removed_one_forgotten(folder):
    reader = ProbeDirectory(folder)
    target = folder / "400.json"
    target.write_text(json.dumps(doc(400)))
    assert reader.read([400])[400].allocator.reserved_bytes == 400
    newer = doc(400)
    newer["allocator"]["reserved_bytes"] = 800
    tmp = folder / ".400.json.tmp"
    tmp.write_text(json.dumps(newer))
    os.replace(tmp, target)                          # as the probe publishes: a rename
    assert reader.read([400])[400].allocator.reserved_bytes == 800
    target.write_text("{broken")
    assert reader.read([400]) == {} and "unreadable" in reader.rejected[400]
    target.unlink()
    assert reader.read([400]) == {} and 400 not in reader.rejected
