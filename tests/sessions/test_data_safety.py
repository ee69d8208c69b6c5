"""Data safety: live sessions are never pruned, bad limits and outputs are refused,
damaged files are read or refused without a crash, CSV cells cannot run as formulas."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
import types
import zipfile
from contextlib import nullcontext
from pathlib import Path

import pytest
from cli_support import run
from session_support import record_scenario

from gpuwatch.core.csv_cells import FORMULA_PREFIXES, neutralise
from gpuwatch.core.output_paths import OutputPathError, check_output_file
from gpuwatch.sessions import liveness, paths
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend

DAY = 86400


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One small closed session with a hint and a budget link, copied by the tests."""
    path = record_scenario(tmp_path_factory.mktemp("rec") / "w.gpuwatch.sqlite",
                           "workstation", until_s=20, step_s=2)
    add_hint_and_link(path)
    return path


def add_hint_and_link(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO hint (code, severity, gpu, pid, title, detail, actions, "
                     "first_seen_s, last_seen_s) VALUES ('oom-risk', 'warning', 0, 48211, "
                     "'GPU 0 fills up', 'Peak memory rises.', '[\"Lower the batch\"]', 4, 8)")
        conn.execute("INSERT INTO budget_link VALUES (0, 48211, 'llama', "
                     "'{\"total_bytes\": 1000}', 6)")
        conn.commit()
    finally:
        conn.close()


def copy_session(recorded: Path, target: Path, age_days: float = 0.0) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(recorded, target)
    if age_days:
        old = time.time() - age_days * DAY
        os.utime(target, (old, old))
    return target


def wait_until(predicate, tries: int = 400) -> None:
    for _ in range(tries):
        if predicate():
            return
        time.sleep(0.025)
    raise AssertionError("the condition never came true")


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# -- 1. a session being recorded is never pruned -------------------------------------------

def _start_recording(path: Path) -> tuple[Recorder, object]:
    backend = open_backend(SourceOptions(demo="leak", time_scale="max"))
    rec = Recorder(path, 1.0, commit_every_s=0.05)
    for t in range(3):
        backend.clock.set_elapsed(t)
        rec.add_snapshot(backend.sample())

    def committed() -> bool:
        try:
            with SessionReader(path) as r:
                return r.info().samples == 3
        except SessionFileError:
            return False

    wait_until(committed)
    return rec, backend


@pytest.mark.parametrize("limit", [("--prune-days", "0"), ("--prune-size", "0B")])
def test_a_session_being_recorded_here_is_kept_by_prune(recorded, capsys, limit):
    folder = paths.sessions_dir()
    old = copy_session(recorded, folder / f"old{paths.SUFFIX}", age_days=40)
    live = folder / f"live{paths.SUFFIX}"
    rec, backend = _start_recording(live)
    try:
        old_time = time.time() - 40 * DAY           # the main file's mtime says nothing
        os.utime(live, (old_time, old_time))
        assert liveness.lock_state(live) is True      # the recorder holds the live lock
        assert liveness.is_live(live)
        code, out, _ = run(capsys, "sessions", *limit)
        assert code == 0
        assert f"kept 1 session still being recorded: {live.name}" in out
        assert "Removed 1 session," in out
        assert live.exists() and not old.exists()
        code, out, _ = run(capsys, "sessions")
        assert code == 0 and f"{live.name}" in out and "(recording)" in out
    finally:
        rec.close()
        backend.close()
    assert not liveness.is_live(live)               # closed: one plain file again
    code, out, _ = run(capsys, "sessions", *limit)
    assert code == 0 and "Removed 1 session," in out and "kept" not in out
    assert not live.exists()


def test_the_live_lock_works_across_processes_and_dies_with_its_holder(recorded, capsys):
    folder = paths.sessions_dir()
    session = copy_session(recorded, folder / f"held{paths.SUFFIX}", age_days=40)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom gpuwatch.sessions.liveness import "
         "hold_live_lock\nlock = hold_live_lock(sys.argv[1])\nprint('held', flush=True)\n"
         "sys.stdin.read()\n", str(session)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        sidecar = liveness.lock_path(session)
        assert sidecar.exists() and liveness.is_live(session)
        assert liveness.lock_state(session) is True
        code, out, _ = run(capsys, "sessions", "--prune-days", "0")
        assert code == 0 and f"kept 1 session still being recorded: {session.name}" in out
        assert session.exists() and sidecar.exists()
        assert liveness.remove_stale_lock(session) is False     # held: left alone
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert sidecar.exists() and liveness.lock_state(session) is False   # stale now
    assert not liveness.is_live(session)
    code, out, _ = run(capsys, "sessions", "--prune-days", "0")
    assert code == 0 and "Removed 1 session," in out
    assert names(folder) == []                                # the stale sidecar went too


def test_hold_live_lock_is_exclusive_and_cleans_up(tmp_path, monkeypatch):
    session = tmp_path / "s.gpuwatch.sqlite"
    lock = liveness.hold_live_lock(session)
    assert lock.held and liveness.is_live(session)
    monkeypatch.setattr(liveness, "ACQUIRE_TRIES", 2)
    with pytest.raises(liveness.SessionBusyError, match="another gpuwatch process"):
        liveness.hold_live_lock(session)
    lock.release()
    lock.release()                                   # twice is harmless
    assert names(tmp_path) == [] and not liveness.is_live(session)
    with liveness.hold_live_lock(session) as again:
        assert again.held and liveness.is_live(session)
    assert names(tmp_path) == []


def test_checking_liveness_creates_nothing(recorded, tmp_path):
    session = copy_session(recorded, tmp_path / "s.gpuwatch.sqlite")
    assert not liveness.is_live(session) and liveness.lock_state(session) is None
    assert names(tmp_path) == ["s.gpuwatch.sqlite"]


def test_a_stale_sidecar_beside_a_kept_session_is_removed(recorded):
    folder = paths.sessions_dir()
    session = copy_session(recorded, folder / f"new{paths.SUFFIX}")
    liveness.lock_path(session).write_text("")
    result = paths.prune(max_age_days=30)
    assert result.removed == () and result.kept_live == ()
    assert names(folder) == [session.name]


def test_age_is_the_newest_of_the_file_and_its_wal(tmp_path):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    now = time.time()
    session = folder / f"s{paths.SUFFIX}"
    session.write_bytes(b"x" * 100)
    wal = Path(f"{session}-wal")
    wal.write_bytes(b"y" * 50)
    os.utime(session, (now - 40 * DAY, now - 40 * DAY))
    os.utime(wal, (now - 2 * DAY, now - 2 * DAY))     # too old to look live
    assert paths.prune(max_age_days=30, now_s=now).removed == ()
    result = paths.prune(max_age_days=1, now_s=now)
    assert result.removed == (session,) and result.freed_bytes == 150
    assert names(folder) == []


def test_a_recent_wal_of_an_unclosed_session_counts_as_live_without_a_lock(tmp_path):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    session = folder / f"s{paths.SUFFIX}"
    session.write_bytes(b"not readable")
    Path(f"{session}-wal").write_bytes(b"moving")
    result = paths.prune(max_age_days=0, now_s=time.time() + 60)
    assert result.kept_live == (session,) and session.exists()
    result = paths.prune(max_age_days=0, now_s=time.time() + 2 * liveness.WAL_RECENT_S)
    assert result.removed == (session,) and names(folder) == []


def test_prune_leaves_folders_and_links_targets_alone(recorded, tmp_path, capsys):
    folder = paths.sessions_dir()
    folder.mkdir(parents=True)
    (folder / f"dir{paths.SUFFIX}").mkdir()
    outside = copy_session(recorded, tmp_path / "outside.gpuwatch.sqlite")
    (folder / f"link{paths.SUFFIX}").symlink_to(outside)
    code, out, _ = run(capsys, "sessions", "--prune-days", "0")
    assert code == 0 and "Removed 1 session," in out
    assert names(folder) == [f"dir{paths.SUFFIX}"] and outside.exists()


# -- 2. bad prune limits -------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--prune-days", "-3"], ["--prune-days", "nan"], ["--prune-days", "inf"],
    ["--prune-days", "-inf"], ["--prune-days", "soon"], ["--prune-days", ""],
    ["--prune-size=-1GiB"], ["--prune-size", "nanGiB"], ["--prune-size", "1e999GiB"],
    ["--prune-size", "lots"], ["--prune-size", "5XB"], ["--prune-size", ""],
])
def test_bad_prune_limits_are_refused_and_nothing_is_deleted(recorded, capsys, argv):
    folder = paths.sessions_dir()
    session = copy_session(recorded, folder / f"s{paths.SUFFIX}", age_days=40)
    code, out, err = run(capsys, "sessions", *argv)
    assert code == 2 and "Traceback" not in err
    assert ("--prune-days" in err) or ("--prune-size" in err)
    assert session.exists() and out == ""


def test_prune_refuses_impossible_limits_when_called_directly():
    for kw in ({"max_age_days": -3}, {"max_age_days": float("nan")},
               {"max_total_bytes": -1}):
        with pytest.raises(ValueError):
            paths.prune(**kw)
    assert paths.prune(max_age_days=float("inf")).removed == ()    # no limit


# -- 3. and 5. where a report may be written ------------------------------------------------

@pytest.fixture
def session(recorded, tmp_path) -> Path:
    return copy_session(recorded, tmp_path / "in" / "run.gpuwatch.sqlite")


def test_a_fifo_a_socket_and_bad_links_are_never_replaced(session, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "pipe.html"
    os.mkfifo(fifo)
    sock_path = out / "sock.html"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    dangling = out / "dangling.html"
    dangling.symlink_to(out / "nothing-here.html")
    loop = out / "loop.html"
    loop.symlink_to(loop)
    to_device = out / "null.html"
    to_device.symlink_to("/dev/null")
    try:
        for target, words in ((fifo, "named pipe"), (sock_path, "socket"),
                              (dangling, "link to nothing"), (loop, "loop"),
                              (to_device, "device")):
            code, _, err = run(capsys, "report", str(session), "-o", str(target))
            assert code == 2 and str(target) in err and words in err, err
            assert "Traceback" not in err
    finally:
        server.close()
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and stat.S_ISSOCK(sock_path.lstat().st_mode)
    assert dangling.is_symlink() and loop.is_symlink() and to_device.is_symlink()
    assert os.readlink(to_device) == "/dev/null"
    assert names(out) == ["dangling.html", "loop.html", "null.html", "pipe.html", "sock.html"]


def test_a_device_path_is_refused_before_anything_is_written():
    with pytest.raises(OutputPathError, match="device"):
        check_output_file("/dev/null", "report")
    with pytest.raises(OutputPathError, match="folder"):
        check_output_file("/dev", "report")


def test_a_regular_file_is_replaced_and_a_link_is_written_through(session, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    existing = out / "old.json"
    existing.write_text("old")
    existing.chmod(0o600)
    code, _, _ = run(capsys, "report", str(session), "-o", str(existing))
    assert code == 0 and json.loads(existing.read_text())["schema"] == "gpuwatch.report/1"
    assert stat.S_IMODE(existing.stat().st_mode) == 0o600       # its permissions stay
    target = out / "real.html"
    target.write_text("old")
    link = out / "link.html"
    link.symlink_to(target.name)
    code, text, _ = run(capsys, "report", str(session), "-o", str(link))
    assert code == 0 and str(target) in text
    assert link.is_symlink() and os.readlink(link) == "real.html"
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert names(out) == ["link.html", "old.json", "real.html"]


def test_a_folder_receives_the_default_name(session, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    code, _, _ = run(capsys, "report", str(session), "-o", str(out))
    assert code == 0 and names(out) == ["run-report.html"]
    code, _, _ = run(capsys, "report", str(session), "--format", "json", "-o", f"{out}/")
    assert code == 0 and names(out) == ["run-report.html", "run-report.json"]
    os.mkfifo(out / "run-report.zip")
    code, _, err = run(capsys, "report", str(session), "--format", "csv", "-o", str(out))
    assert code == 2 and "named pipe" in err


def test_missing_folders_are_never_created(session, tmp_path, capsys):
    missing = tmp_path / "nope"
    for target in (f"{missing}/", f"{missing}/deeper/r.html", f"{missing}/r.html"):
        code, _, err = run(capsys, "report", str(session), "-o", target)
        assert code == 2 and "does not exist" in err and "Traceback" not in err
        assert str(missing) in err
    assert not missing.exists() and not (tmp_path / "nope").exists()
    with pytest.raises(OutputPathError, match=f"the folder {missing} does not exist"):
        check_output_file(missing / "s.gpuwatch.sqlite", "session file")
    file_parent = tmp_path / "plain"
    file_parent.write_text("")
    with pytest.raises(OutputPathError, match="not a folder"):
        check_output_file(file_parent / "r.html", "report")


def test_check_output_file_answers(tmp_path):
    new = tmp_path / "new.png"
    assert check_output_file(new, "screenshot") == new
    assert check_output_file(str(new), "screenshot") == new
    regular = tmp_path / "r.png"
    regular.write_text("")
    assert check_output_file(regular) == regular
    link = tmp_path / "l.png"
    link.symlink_to(regular)
    assert check_output_file(link) == regular.resolve()
    folder_link = tmp_path / "fl"
    folder_link.symlink_to(tmp_path)
    assert check_output_file(folder_link, default_name="x.html") == tmp_path.resolve() / "x.html"
    for bad in ("", tmp_path, f"{tmp_path}/", folder_link):
        with pytest.raises(OutputPathError):
            check_output_file(bad, "screenshot")
    assert issubclass(OutputPathError, ValueError)
    assert names(tmp_path) == ["fl", "l.png", "r.png"]


def test_gui_screenshot_path_is_checked_before_qt_starts(tmp_path, capsys, monkeypatch):
    fake_ui = types.ModuleType("gpuwatch.ui")

    def launch(options):
        raise AssertionError("the window was launched")

    fake_ui.launch, fake_ui.LaunchOptions = launch, lambda **kw: kw
    monkeypatch.setitem(sys.modules, "gpuwatch.ui", fake_ui)
    target = tmp_path / "nope" / "shot.png"
    code, _, err = run(capsys, "gui", "--demo", "--screenshot", str(target))
    assert code == 2 and f"the folder {target.parent} does not exist" in err
    assert not target.parent.exists()
    os.mkfifo(tmp_path / "pipe.png")
    code, _, err = run(capsys, "gui", "--demo", "--screenshot", str(tmp_path / "pipe.png"))
    assert code == 2 and "named pipe" in err


# -- 4. the format follows the output's extension --------------------------------------------

def test_the_extension_chooses_the_format(session, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for name, check in (
            ("r.pdf", lambda b: b.startswith(b"%PDF-")),
            ("r.json", lambda b: json.loads(b)["schema"] == "gpuwatch.report/1"),
            ("r.zip", lambda b: b.startswith(b"PK")),
            ("r.htm", lambda b: b.startswith(b"<!DOCTYPE html>")),
            ("R.HTML", lambda b: b.startswith(b"<!DOCTYPE html>"))):
        code, _, err = run(capsys, "report", str(session), "-o", str(out / name))
        assert code == 0, err
        assert check((out / name).read_bytes()), name


def test_an_unknown_extension_or_a_contradiction_is_refused(session, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    code, _, err = run(capsys, "report", str(session), "-o", str(out / "r.txt"))
    assert code == 2 and "--format" in err and ".pdf" in err and "Traceback" not in err
    code, _, err = run(capsys, "report", str(session), "-o", str(out / "noext"))
    assert code == 2 and "(none)" in err
    code, _, err = run(capsys, "report", str(session), "--format", "html", "-o",
                       str(out / "x.pdf"))
    assert code == 2 and ".pdf" in err and "html" in err
    assert names(out) == []
    code, _, _ = run(capsys, "report", str(session), "--format", "html", "-o",
                     str(out / "r.txt"))
    assert code == 0 and (out / "r.txt").read_text().startswith("<!DOCTYPE html>")
    code, _, err = run(capsys, "report", str(session), "--format", "html", "-o", "-")
    assert code == 2 and "standard output" in err


def test_the_help_states_the_default_format_rule(capsys):
    code, out, _ = run(capsys, "report", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "extension of -o" in flat and ".pdf pdf" in flat and "html when -o is not" in flat


# -- 6. damaged files -----------------------------------------------------------------------

def _set(path: Path, sql: str, *params) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def _drop_not_null(path: Path) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') "
                     "WHERE type = 'table'")
        conn.commit()
    finally:
        conn.close()


def test_text_that_is_not_utf8_still_reports(session, tmp_path, capsys):
    _set(session, "UPDATE process SET name = CAST(X'70798079C328' AS TEXT)")
    _set(session, "UPDATE hint SET title = CAST(X'FF' AS TEXT)")
    _set(session, "UPDATE session SET host = CAST(X'68C3' AS TEXT)")
    before = sha(session)
    out = tmp_path / "r.html"
    code, _, err = run(capsys, "report", str(session), "-o", str(out))
    assert code == 0, err
    assert "py\ufffdy\ufffd(" in out.read_text()
    copy_session(session, paths.sessions_dir() / f"bad{paths.SUFFIX}")
    code, text, _ = run(capsys, "sessions")
    assert code == 0 and f"bad{paths.SUFFIX}" in text and "peak" in text
    assert sha(session) == before


@pytest.mark.parametrize("damage, words", [
    ("UPDATE gpu_sample SET used_bytes = 'lots' WHERE rowid = 3",
     "gpu_sample.used_bytes in row 3 holds str 'lots' where a number belongs"),
    ("UPDATE gpu_sample SET t_s = X'0102' WHERE rowid = 2", "gpu_sample.t_s in row 2"),
    ("UPDATE session SET started_at_s = 'yesterday'", "session.started_at_s"),
    ("UPDATE process SET first_seen_s = 9e999", "impossible number"),
    ("UPDATE process SET pid = 1.5", "whole number"),
    ("UPDATE gpu SET total_bytes = 'big'", "gpu.total_bytes"),
    ("UPDATE process_change SET used_bytes = 'x' WHERE rowid = 1", "process_change.used_bytes"),
    ("UPDATE process_change SET sample = 'x' WHERE rowid = 1", "process_change.sample in row 1"),
    ("UPDATE process_change SET sample = -4 WHERE rowid = 1",
     "process_change.sample in row 1 is not a sample number"),
    ("UPDATE process_change SET listed = X'00' WHERE rowid = 1", "process_change.listed"),
])
def test_wrong_typed_cells_are_refused_naming_the_cell(session, tmp_path, capsys, damage,
                                                       words):
    _set(session, damage)
    before = sha(session)
    for fmt in ("json", "html", "csv"):
        code, _, err = run(capsys, "report", str(session), "--format", fmt, "-o",
                           str(tmp_path / ("r.zip" if fmt == "csv" else f"r.{fmt}")))
        assert code == 2 and str(session) in err and "is damaged" in err, err
        assert words in err and "Traceback" not in err
    assert sha(session) == before and names(session.parent) == [session.name]
    assert not list(tmp_path.glob("r.*"))


@pytest.fixture
def dense_session(tmp_path) -> Path:
    """A session in the first layout (a row per process and sample), as gpuwatch wrote
    them before process rows were kept only where they change."""
    from dense_layout import DenseSessionWriter

    backend = open_backend(SourceOptions(demo="workstation", time_scale="max"))
    (tmp_path / "in").mkdir()
    writer = DenseSessionWriter(tmp_path / "in" / "old.gpuwatch.sqlite")
    for t in range(0, 40, 4):
        backend.clock.set_elapsed(t)
        writer.add_snapshot(backend.sample())
    backend.close()
    writer.close(None)
    return writer.path


def test_a_damaged_cell_of_the_first_layout_is_refused_naming_it(dense_session, tmp_path,
                                                                   capsys):
    code, _, err = run(capsys, "report", str(dense_session), "--format", "csv", "-o",
                       str(tmp_path / "ok.zip"))
    assert code == 0, err
    _set(dense_session, "UPDATE process_sample SET used_bytes = 'x' WHERE rowid = 1")
    code, _, err = run(capsys, "report", str(dense_session), "--format", "csv", "-o",
                       str(tmp_path / "r.zip"))
    assert code == 2 and "process_sample.used_bytes in row 1" in err, err


def test_null_in_a_required_column_is_refused(session, tmp_path, capsys):
    _drop_not_null(session)
    _set(session, "UPDATE hint SET title = NULL")
    code, _, err = run(capsys, "report", str(session), "-o", str(tmp_path / "r.html"))
    assert code == 2 and "hint.title in row 1 is empty" in err


def test_a_damaged_table_definition_is_refused(session, tmp_path, capsys):
    conn = sqlite3.connect(session)
    try:
        conn.execute("PRAGMA writable_schema=ON")      # SQLite's error quotes "CR\xc5ATE"
        conn.execute("UPDATE sqlite_master SET sql = CAST(? AS TEXT) WHERE name = 'event'",
                     (b"CR\xc5ATE TABLE event (t_s REAL)",))
        conn.commit()
    finally:
        conn.close()
    code, _, err = run(capsys, "report", str(session), "-o", str(tmp_path / "r.json"))
    assert code == 2 and str(session) in err and "Traceback" not in err
    copy_session(session, paths.sessions_dir() / f"schema{paths.SUFFIX}")
    code, text, _ = run(capsys, "sessions")
    assert code == 0 and "(unreadable:" in text


def test_the_listing_goes_on_past_bad_entries(recorded, tmp_path, capsys):
    folder = paths.sessions_dir()
    good = copy_session(recorded, folder / f"good{paths.SUFFIX}", age_days=1)
    typed = copy_session(recorded, folder / f"typed{paths.SUFFIX}")
    _set(typed, "UPDATE gpu_sample SET used_bytes = 'x'")
    (folder / f"dangling{paths.SUFFIX}").symlink_to(folder / "gone")
    (folder / f"loop{paths.SUFFIX}").symlink_to(folder / f"loop{paths.SUFFIX}")
    (folder / f"dir{paths.SUFFIX}").mkdir()
    (folder / f"empty{paths.SUFFIX}").write_bytes(b"")
    (folder / f"text{paths.SUFFIX}").write_text("hello\n" * 100)
    code, text, err = run(capsys, "sessions")
    assert code == 0 and err == ""
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert "peak" in lines[good.name]
    for name, words in (("typed", "is damaged"), ("dangling", "link to nothing"),
                        ("loop", "loop"), ("dir", "folder"), ("empty", "empty"),
                        ("text", "not a gpuwatch session")):
        assert words in lines[f"{name}{paths.SUFFIX}"] and "(unreadable:" in \
            lines[f"{name}{paths.SUFFIX}"]


def test_latest_is_the_newest_regular_file_and_says_when_it_is_unreadable(recorded, capsys):
    folder = paths.sessions_dir()
    good = copy_session(recorded, folder / f"good{paths.SUFFIX}", age_days=2)
    newest_link = folder / f"zz{paths.SUFFIX}"
    newest_link.symlink_to(folder / "gone")                 # newest, but not a file
    code, text, err = run(capsys, "report", "latest", "--format", "json", "-o", "-")
    assert code == 0, err
    assert json.loads(text)["session"]["backend"]["scenario"] == "workstation"
    bad = folder / f"bad{paths.SUFFIX}"
    bad.write_bytes(good.read_bytes()[:3000])
    old = time.time() - DAY
    os.utime(good, (old - DAY, old - DAY))
    code, _, err = run(capsys, "report", "latest", "--format", "json", "-o", "-")
    assert code == 2 and str(bad) in err and "Traceback" not in err


def test_an_empty_session_name_is_bad_input(capsys):
    code, _, err = run(capsys, "report", "")
    assert code == 2 and "''" in err and "latest" in err and "Traceback" not in err


def _wal_header(data: bytes) -> bytes:
    out = bytearray(data)
    out[18] = out[19] = 2                  # "this database is in WAL mode"
    return bytes(out)


def test_reading_creates_nothing_beside_any_file(recorded, tmp_path, capsys):
    folder = tmp_path / "files"
    folder.mkdir()
    healthy = copy_session(recorded, folder / "healthy.gpuwatch.sqlite")
    wal_mode = folder / "walmode.gpuwatch.sqlite"
    wal_mode.write_bytes(_wal_header(recorded.read_bytes()))
    corrupt = folder / "corrupt.gpuwatch.sqlite"
    data = bytearray(_wal_header(recorded.read_bytes()))
    data[4096:8192] = b"\xde\xad" * 2048
    corrupt.write_bytes(bytes(data))
    before = {p.name: sha(p) for p in folder.iterdir()}
    for path in (healthy, wal_mode, corrupt):
        run(capsys, "report", str(path), "--format", "json", "-o", "-")
        expect = pytest.raises(SessionFileError) if path is corrupt else nullcontext()
        with expect, SessionReader(path) as r:
            r.info()
            r.gpu_series(0)
    assert {p.name: sha(p) for p in folder.iterdir()} == before
    folder.chmod(0o555)                   # a read-only folder (root may still write)
    try:
        with SessionReader(healthy) as r:
            assert r.info().scenario == "workstation"
        code, out, _ = run(capsys, "report", str(wal_mode), "--format", "json", "-o", "-")
        assert code == 0 and json.loads(out)["gpus"]
    finally:
        folder.chmod(0o755)
    assert {p.name: sha(p) for p in folder.iterdir()} == before


def test_a_wal_without_its_shm_is_read_whole_without_side_files(recorded, tmp_path):
    source = copy_session(recorded, tmp_path / "src" / "s.gpuwatch.sqlite")
    writer = sqlite3.connect(source)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("UPDATE session SET host = 'from-the-wal'")
        writer.commit()
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy(source, copy / "s.gpuwatch.sqlite")
        shutil.copy(f"{source}-wal", copy / "s.gpuwatch.sqlite-wal")
    finally:
        writer.close()
    before = {p.name: sha(p) for p in copy.iterdir()}
    with SessionReader(copy / "s.gpuwatch.sqlite") as r:
        assert r.info().host == "from-the-wal"
    assert {p.name: sha(p) for p in copy.iterdir()} == before


# -- 7. CSV ----------------------------------------------------------------------------------

def read_zip(path: Path) -> dict[str, list[list[str]]]:
    with zipfile.ZipFile(path) as z:
        return {name: list(csv.reader(io.StringIO(z.read(name).decode("utf-8"), newline="")))
                for name in z.namelist()}


def test_formula_cells_are_neutralised_and_numbers_stay_numbers(session, tmp_path, capsys):
    _set(session, "UPDATE process SET name = '=HYPERLINK(\"http://x\",\"y\")', "
                  "user = '+1+1', container = '@SUM(A1)'")
    _set(session, "UPDATE event SET detail = '-2+3', gpu = -1 WHERE rowid = 1")
    _set(session, "UPDATE hint SET title = char(9) || 'tab', detail = char(13) || 'cr'")
    _set(session, "UPDATE gpu SET name = '\uff1dfullwidth'")
    out = tmp_path / "r.zip"
    code, _, err = run(capsys, "report", str(session), "-o", str(out))
    assert code == 0, err
    tables = read_zip(out)
    procs = tables["processes.csv"]
    header = procs[0]
    row = dict(zip(header, procs[1], strict=True))
    assert row["name"] == "'=HYPERLINK(\"http://x\",\"y\")"
    assert row["user"] == "'+1+1" and row["container"] == "'@SUM(A1)"
    event = dict(zip(tables["events.csv"][0], tables["events.csv"][1], strict=True))
    assert event["detail"] == "'-2+3" and event["gpu"] == "-1"
    hint = dict(zip(tables["hints.csv"][0], tables["hints.csv"][1], strict=True))
    assert hint["title"] == "'\ttab" and hint["detail"] == "'\rcr"
    assert tables["gpus.csv"][1][2] == "'\uff1dfullwidth"
    for table in tables.values():
        for cells in table[1:]:
            for cell in cells:
                if cell.startswith(FORMULA_PREFIXES):
                    float(cell)                 # only a number may start so


def test_neutralise_leaves_numbers_alone():
    assert neutralise(-1) == -1 and neutralise(-2.5) == -2.5 and neutralise(None) is None
    assert neutralise("-1") == "'-1" and neutralise("a=b") == "a=b" and neutralise("") == ""


def test_gpu_samples_csv_has_every_recorded_figure(session, tmp_path, capsys):
    code, _, _ = run(capsys, "report", str(session), "-o", str(tmp_path / "r.zip"))
    assert code == 0
    rows = read_zip(tmp_path / "r.zip")["gpu_samples.csv"]
    header = rows[0]
    assert header[:3] == ["time_s", "gpu", "used_bytes"]
    assert header[-6:] == ["state", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s",
                           "temperature_c", "power_w", "measured_bandwidth_bytes_per_s"]
    assert "estimated_bandwidth_bytes_per_s" in header     # the two told apart by name
    with sqlite3.connect(session) as c:
        stored = c.execute("SELECT state, pcie_tx_bytes_per_s, pcie_rx_bytes_per_s, "
                           "temperature_c, power_w FROM gpu_sample "
                           "ORDER BY t_s, gpu").fetchall()
    assert len(rows) - 1 == len(stored)
    for row, (state, tx, rx, temp, power) in zip(rows[1:], stored, strict=True):
        cells = dict(zip(header, row, strict=True))
        assert cells["state"] == state
        for name, value in (("pcie_tx_bytes_per_s", tx), ("pcie_rx_bytes_per_s", rx),
                            ("temperature_c", temp), ("power_w", power)):
            assert (cells[name] == "") if value is None else \
                float(cells[name]) == pytest.approx(value, abs=1e-3)
    assert any(float(r[header.index("temperature_c")]) > 0 for r in rows[1:]
               if r[header.index("temperature_c")])


# -- 5. a recording goes only where a folder exists -------------------------------------------

def test_a_session_file_is_made_only_in_an_existing_folder_or_the_sessions_folder(tmp_path):
    with pytest.raises(SessionFileError, match=f"the folder {tmp_path / 'nope'} does not exist"):
        Recorder(tmp_path / "nope" / "s.gpuwatch.sqlite")
    assert names(tmp_path) == []
    (tmp_path / "dangling.gpuwatch.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(SessionFileError, match="already exists"):
        Recorder(tmp_path / "dangling.gpuwatch.sqlite")
    assert names(tmp_path) == ["dangling.gpuwatch.sqlite"]
    assert not paths.sessions_dir().exists()
    rec = Recorder(paths.new_session_path())        # our own data folder may be created
    rec.close()
    assert rec.error is None and len(paths.list_sessions()) == 1
