"""Ending a recording by signal, and a recorder that fails: nothing lost, nothing silent."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from session_support import record_scenario

from gpuwatch.cli import main
from gpuwatch.sessions import writer as writer_module
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend


def _wait_for(predicate, what: str, limit_s: float = 60.0) -> None:
    """Polls until ``predicate()``; the limit only stops a broken run from hanging."""
    end = time.monotonic() + limit_s
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.1)


def _samples(path: Path) -> int:
    if not path.exists():
        return 0
    conn = None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        return conn.execute("SELECT COUNT(*) FROM gpu_sample").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        if conn is not None:
            conn.close()     # an open reader would keep the WAL from being folded in


def _assert_finished(path: Path) -> None:
    """Closed as a recording should be: an end time, and one file (the WAL folded in)."""
    assert not Path(f"{path}-wal").exists(), "the WAL was left beside the session"
    with SessionReader(path) as reader:
        info = reader.info()
    assert info.ended_at_s is not None and info.samples > 0


def _gpuwatch(*argv: str, env_extra: dict | None = None) -> subprocess.Popen:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-m", "gpuwatch", *argv], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_record_finishes_its_session_on_a_stop_signal(tmp_path, sig):
    out = tmp_path / "run.gpuwatch.sqlite"
    proc = _gpuwatch("record", "--demo", "oom-ramp", "--interval", "0.1", "--time-scale", "10",
                     "--out", str(out))
    try:
        _wait_for(lambda: _samples(out) >= 3, "the first committed samples")
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "Recorded" in stdout and f"Session saved to {out}" in stdout
    _assert_finished(out)


def test_the_window_finishes_its_session_on_sigterm(tmp_path):
    data = tmp_path / "data"
    proc = _gpuwatch("gui", "--demo", "oom-ramp", "--interval", "0.1", "--time-scale", "10",
                     env_extra={"GPUWATCH_DATA_DIR": str(data),
                                # the window saves its settings: never into the user's
                                "XDG_CONFIG_HOME": str(tmp_path / "config")})
    sessions = data / "sessions"

    def session() -> Path | None:
        found = sorted(sessions.glob("*.gpuwatch.sqlite")) if sessions.is_dir() else []
        return found[0] if found else None

    try:
        _wait_for(lambda: session() is not None and _samples(session()) >= 3,
                  "the window's first committed samples")
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    _assert_finished(session())


def test_a_failing_recorder_is_loud_and_keeps_what_it_saved(capsys, tmp_path, monkeypatch):
    out = tmp_path / "failing.gpuwatch.sqlite"
    original = writer_module.SessionWriter.add_snapshot
    calls = {"n": 0}

    def fail_after_some(self, snapshot):
        calls["n"] += 1
        if calls["n"] > 20:
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        original(self, snapshot)

    monkeypatch.setattr(writer_module.SessionWriter, "add_snapshot", fail_after_some)
    code = main(["record", "--demo", "oom-ramp", "--time-scale", "max", "--interval", "1",
                 "--out", str(out)])
    _out, err = capsys.readouterr()
    assert code == 1
    assert "recording stopped" in err and "OverflowError" in err
    assert "Session saved" not in _out
    with SessionReader(out) as reader:
        assert reader.info().samples == 20      # every sample before the failure is kept


def test_integers_sqlite_cannot_hold_are_stored_as_unknown(tmp_path):
    """A byte count of 2**63 or more is no real figure: it is kept as unknown (NULL) and
    the recording goes on."""
    backend = open_backend(SourceOptions(demo="workstation", time_scale="max"))
    snap = backend.sample()
    backend.close()
    gpu = snap.gpus[0]
    proc = gpu.processes[0]
    huge = proc._replace(used_bytes=2**64 - 2)      # ProcessSample is a NamedTuple
    snap = dataclasses.replace(snap, gpus=(dataclasses.replace(
        gpu, processes=(huge, *gpu.processes[1:])), *snap.gpus[1:]))
    path = tmp_path / "huge.gpuwatch.sqlite"
    recorder = Recorder(path, 1.0)
    recorder.add_snapshot(snap)
    recorder.close(snap.timestamp_s)
    assert recorder.error is None
    with SessionReader(path) as reader:
        (row,) = [p for p in reader.processes() if p.pid == huge.pid]
        assert row.peak_used_bytes is None


def test_recorded_scenarios_still_round_trip(tmp_path):
    path = record_scenario(tmp_path / "s.gpuwatch.sqlite", "oom-ramp", until_s=30)
    _assert_finished(path)
