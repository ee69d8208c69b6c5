"""Recording: what is stored, how often it is committed, and what a crash loses."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from session_support import record_scenario

from gpuwatch.core.hints import Hint, HintAction, HintEvent, HintEventKind, Severity
from gpuwatch.sessions import paths
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.sessions.schema import SCHEMA_VERSION
from gpuwatch.telemetry.source import SourceOptions, open_backend


def test_a_recorded_scenario_reads_back(tmp_path):
    path = record_scenario(tmp_path / "s.sqlite", "workstation", until_s=120)
    with SessionReader(path) as r:
        info = r.info()
        assert info.samples == 121 and info.duration_s == pytest.approx(120, abs=0.5)
        assert info.backend_kind == "simulated" and info.scenario == "workstation"
        assert info.ended_at_s is not None
        assert [g.name for g in r.gpus()] == ["NVIDIA GeForce RTX 4090",
                                              "NVIDIA GeForce RTX 3090"]
        series = r.gpu_series(0)
        assert series["t_s"][0] == 0 and series["t_s"][-1] == 120
        training = next(p for p in r.processes() if p.pid == 48211)
        assert training.cmdline[:2] == ("python3", "train.py")
        assert training.first_seen_s == 20 and training.peak_used_bytes > 15 * 1024**3
        t, used = r.process_series(training.id)
        assert t.size == 101 and used.max() == training.peak_used_bytes
    with sqlite3.connect(path) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"   # one file to share


def test_gpu_lost_and_back_and_process_churn_are_events(tmp_path):
    path = record_scenario(tmp_path / "f.sqlite", "faults", until_s=120)
    with SessionReader(path) as r:
        kinds = [(e.kind, e.gpu) for e in r.events() if e.kind.startswith("gpu-")]
        assert ("gpu-lost", 1) in kinds and ("gpu-recovered", 1) in kinds
        lost = next(e.t_s for e in r.events() if e.kind == "gpu-lost")
        assert lost == 30
    path = record_scenario(tmp_path / "c.sqlite", "churn", until_s=100)
    with SessionReader(path) as r:
        kinds = [e.kind for e in r.events()]
        assert kinds.count("process-started") >= 10 and kinds.count("process-ended") >= 10


def test_hints_and_budget_links_are_stored(tmp_path):
    backend = open_backend(SourceOptions(demo="oom-ramp", time_scale="max"))
    snap = backend.sample()
    backend.close()
    rec = Recorder(tmp_path / "h.sqlite")
    rec.add_snapshot(snap)
    hint = Hint("oom-risk", Severity.CRITICAL, 0, 71310, "GPU 0 full in ~3 min",
                ("Peak memory rises 4.1 GiB/min.",),
                (HintAction("Enable gradient checkpointing", 6 * 1024**3),),
                opened_at_s=snap.timestamp_s, updated_at_s=snap.timestamp_s)
    rec.add_hint_event(HintEvent(HintEventKind.OPENED, hint, snap.timestamp_s))
    rec.add_hint_event(HintEvent(HintEventKind.CLOSED, hint, snap.timestamp_s + 40))
    rec.add_budget_link(0, 71310, "llama-3.1-8b lora", {"total_bytes": 20 * 1024**3},
                        snap.timestamp_s)
    rec.close()
    with SessionReader(tmp_path / "h.sqlite") as r:
        (h,) = r.hints()
        assert (h.code, h.severity, h.gpu, h.pid, h.closed_s) == ("oom-risk", "critical", 0,
                                                                  71310, 40)
        assert h.actions == ("Enable gradient checkpointing (saves 6.0 GiB)",)
        (link,) = r.budget_links()
        assert link.estimate["total_bytes"] == 20 * 1024**3


def test_commits_reach_the_file_within_a_second_while_recording(tmp_path):
    path = tmp_path / "live.sqlite"
    backend = open_backend(SourceOptions(demo="leak", time_scale="max"))
    rec = Recorder(path, commit_every_s=0.2)
    for t in range(5):
        backend.clock.set_elapsed(t)
        rec.add_snapshot(backend.sample())
    deadline = time.monotonic() + 10
    seen = 0
    while time.monotonic() < deadline and seen < 5:
        time.sleep(0.05)
        with SessionReader(path) as r:
            seen = r.info().samples if r._conn.execute(
                "SELECT COUNT(*) FROM session").fetchone()[0] else 0
    rec.close()
    backend.close()
    assert seen == 5


def test_pause_and_resume_skip_samples_and_leave_events(tmp_path):
    backend = open_backend(SourceOptions(demo="leak", time_scale="max"))
    rec = Recorder(tmp_path / "p.sqlite")
    for t in range(10):
        backend.clock.set_elapsed(t)
        snap = backend.sample()
        if t == 3:
            rec.pause(snap.timestamp_s)
        if t == 6:
            rec.resume(snap.timestamp_s)
        rec.add_snapshot(snap)
    rec.close()
    backend.close()
    with SessionReader(tmp_path / "p.sqlite") as r:
        assert r.gpu_series(0)["t_s"].tolist() == [0, 1, 2, 6, 7, 8, 9]
        kinds = [e.kind for e in r.events()]
        assert "recording-paused" in kinds and "recording-resumed" in kinds


def test_an_existing_file_is_never_overwritten(tmp_path):
    from gpuwatch.sessions.errors import SessionFileError

    path = tmp_path / "taken.sqlite"
    path.write_text("precious")
    with pytest.raises(SessionFileError, match="already exists"):
        Recorder(path)
    assert path.read_text() == "precious"


def test_kill_9_loses_at_most_the_last_second(tmp_path):
    path = tmp_path / "killed.sqlite"
    proc = subprocess.Popen(
        # an inference server holding the same memory from the first sample on
        [sys.executable, "-m", "gpuwatch", "record", "--demo", "bandwidth", "--interval",
         "0.1", "--out", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.readline()                       # "Recording ..."
    lines = 0
    while lines < 30:                            # 3 s of samples
        assert proc.stdout.readline()
        lines += 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    printed = lines + len(proc.stdout.read().splitlines())   # ticks it had printed
    with SessionReader(path) as r:
        info = r.info()
        assert info.ended_at_s is None           # not closed: the recorder was killed
        stored = info.samples
        gpu_t = r.gpu_series(0)["t_s"]
        assert gpu_t.size == stored
        # the server's memory is stored only when it changes: it still reads at every
        # committed sample, up to the last one, which is its last-seen time (in real
        # time the simulated start time may wobble in its last digit, which makes a
        # new process row; together the rows cover each sample once)
        rows = r.processes()
        times = sorted(x for p in rows for x in r.process_series(p.id)[0].tolist())
        assert times == gpu_t.tolist()
        latest = max(rows, key=lambda p: p.last_seen_s)
        t, used = r.process_series(latest.id)
        assert latest.last_seen_s == t[-1] == gpu_t[-1]
        assert used.min() == used.max() == latest.peak_used_bytes
    # printed ticks are at most one commit interval (1 s = 10 samples) ahead of the file,
    # plus a little for the writer thread's scheduling
    assert printed - 15 <= stored <= printed


def test_prune_by_age_and_by_size(tmp_path):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    now = time.time()
    files = []
    for k, age_days in enumerate((40, 20, 1)):
        p = folder / f"s{k}{paths.SUFFIX}"
        p.write_bytes(b"x" * 1000)
        os.utime(p, (now - age_days * 86400, now - age_days * 86400))
        files.append(p)
    result = paths.prune(max_age_days=30, now_s=now)
    assert result.removed == (files[0],) and result.freed_bytes == 1000
    result = paths.prune(max_total_bytes=1500, now_s=now)
    assert result.removed == (files[1],)
    assert paths.list_sessions() == [files[2]]


def test_the_moment_a_hint_turns_critical_is_kept(tmp_path):
    """The hint row keeps its last severity; when it became critical is an event."""
    from gpuwatch.sessions.reader import SessionReader

    path = record_scenario(tmp_path / "s.gpuwatch.sqlite", "oom-ramp", 400, advisor=True)
    with SessionReader(path) as reader:
        (risk,) = [h for h in reader.hints() if h.code == "oom-risk"]
        turned = [e for e in reader.events() if e.kind == "hint-critical"]
    assert risk.severity == "critical"
    assert [(e.gpu, e.detail) for e in turned] == [(0, "oom-risk")]
    assert turned[0].t_s > risk.first_seen_s + 60     # it opened as a warning
