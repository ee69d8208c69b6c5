"""A report never writes over its input or any session, and CSV exports stream."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import time
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_support import record_scenario

from gpuwatch.cli import main
from gpuwatch.sessions import reader as reader_module
from gpuwatch.sessions.export import export
from gpuwatch.sessions.protected import overwrite_problem
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.sessions.report_csv import GPU_SAMPLES_HEADER, write_csv_zip

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record_scenario(tmp_path_factory.mktemp("rec") / "g.gpuwatch.sqlite", "churn",
                           until_s=30, step_s=2)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def alias(kind: str, session: Path, where: Path) -> Path:
    """Another name for ``session``."""
    if kind == "same":
        return session
    if kind == "dotted":
        return session.parent / "." / session.name
    if kind == "symlink":
        link = where / "link"
        link.symlink_to(session)
        return link
    if kind == "link-to-link":
        first = where / "first"
        first.symlink_to(session)
        (where / "second").symlink_to(first)
        return where / "second"
    hard = where / "hard"
    os.link(session, hard)
    return hard


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["same", "dotted", "symlink", "link-to-link", "hardlink"]),
       fmt=st.sampled_from(["html", "json", "csv", "pdf"]))
def test_a_report_never_replaces_its_input(recorded, tmp_path_factory, capsys, kind, fmt):
    where = tmp_path_factory.mktemp("alias")
    session = where / "s.gpuwatch.sqlite"
    shutil.copyfile(recorded, session)
    before = session.read_bytes()
    target = alias(kind, session, where)
    code, out, err = run(capsys, "report", str(session), "--format", fmt, "-o", str(target))
    assert code == 2, (out, err)
    assert "never replaces" in err and "Traceback" not in err
    assert session.read_bytes() == before
    assert not [p for p in where.iterdir() if p.name.startswith(".")]   # no temporary left


def test_a_report_never_replaces_another_session_or_its_side_files(recorded, tmp_path,
                                                                    capsys):
    other = tmp_path / "other.gpuwatch.sqlite"
    shutil.copyfile(recorded, other)
    kept = other.read_bytes()
    for target in (other, Path(f"{other}-wal"), Path(f"{other}-live.lock")):
        if target != other:
            target.write_bytes(b"x")
        code, _, err = run(capsys, "report", str(recorded), "--format", "html", "-o",
                           str(target))
        assert code == 2 and ("session" in err), err
    assert other.read_bytes() == kept
    renamed = tmp_path / "renamed.html"            # a session whatever its name
    shutil.copyfile(recorded, renamed)
    code, _, err = run(capsys, "report", str(recorded), "-o", str(renamed))
    assert code == 2 and "is a gpuwatch session" in err


def test_a_session_being_recorded_by_another_process_is_never_a_report_target(
        recorded, tmp_path, capsys):
    live = tmp_path / "live.gpuwatch.sqlite"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "gpuwatch", "record", "--demo", "leak",
                             "--interval", "0.2", "--out", str(live)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{live}-wal").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        for target in (live, Path(f"{live}-wal")):
            code, _, err = run(capsys, "report", str(recorded), "--format", "json", "-o",
                               str(target))
            assert code == 2 and "session" in err, err
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    with SessionReader(live) as r:
        assert r.info().samples > 0 and r.info().ended_at_s is not None


def test_a_live_session_named_anything_is_protected(tmp_path):
    path = tmp_path / "odd-name.bin"
    rec = Recorder(path, 1.0)
    try:
        assert "session" in (overwrite_problem(path, "screenshot") or "")
    finally:
        rec.close()


def _table(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


@pytest.mark.parametrize("argv", [["-o", "r.csv"], ["--format", "csv", "-o", "r.csv"],
                                  ["-o", "R.CSV"]])
def test_a_csv_name_gets_a_plain_csv_of_the_gpu_samples(recorded, tmp_path, capsys, argv):
    argv = [a if not a.lower().endswith(".csv") else str(tmp_path / a) for a in argv]
    code, _, err = run(capsys, "report", str(recorded), *argv)
    assert code == 0, err
    plain = Path(argv[-1]).read_bytes()
    assert not plain.startswith(b"PK")               # not a zip
    export(recorded, "csv", tmp_path / "all.zip")
    with zipfile.ZipFile(tmp_path / "all.zip") as z:
        zipped = z.read("gpu_samples.csv")
    assert plain == zipped
    rows = _table(plain)
    assert tuple(rows[0]) == GPU_SAMPLES_HEADER
    with SessionReader(recorded) as r:
        assert len(rows) - 1 == r.info().samples * len(r.gpus())


def _export_peak(path: Path) -> int:
    tracemalloc.start()
    try:
        with SessionReader(path) as r:
            write_csv_zip(r, io.BytesIO())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_csv_export_streams_rows(tmp_path, monkeypatch):
    """Four times the samples does not take four times the memory: rows are written
    as they are read (the zip is kept in memory here, so it is measured out)."""
    monkeypatch.setattr(reader_module, "BLOCK_ROWS", 256)
    short = record_scenario(tmp_path / "short.gpuwatch.sqlite", "churn", until_s=600)
    long = record_scenario(tmp_path / "long.gpuwatch.sqlite", "churn", until_s=2400)
    sizes = []
    for path in (short, long):
        out = io.BytesIO()
        with SessionReader(path) as r:
            write_csv_zip(r, out)
        sizes.append(len(out.getvalue()))
    peaks = [_export_peak(p) - size for p, size in zip((short, long), sizes, strict=True)]
    assert peaks[1] < 2 * peaks[0] + 1_000_000, peaks


def _screenshot(target: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen",
               GPUWATCH_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "gpuwatch", "gui", "--demo", "leak",
                           "--screenshot-after", "30", "--screenshot", str(target)],
                          env=env, capture_output=True, text=True, timeout=120)


def test_a_screenshot_never_empties_a_file_or_replaces_a_session(recorded, tmp_path):
    """An extension Qt cannot encode, and a session under an image's name, are refused
    before the file is touched; a good name is written whole."""
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    session = tmp_path / "looks-like.png"
    shutil.copyfile(recorded, session)
    for target in (mine, session):
        before = target.read_bytes()
        done = _screenshot(target, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and str(target) in done.stderr
        assert target.read_bytes() == before
    picture = tmp_path / "ok.png"
    picture.write_text("old")
    done = _screenshot(picture, tmp_path)
    assert done.returncode == 0, done.stderr
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


steps = st.lists(st.tuples(st.integers(1, 30), st.one_of(st.just(float("nan")),
                                                         st.integers(0, 3).map(float))),
                 min_size=1, max_size=20)


@given(runs=steps)
def test_a_replayed_timeline_keeps_every_value_in_fewer_points(runs):
    from gpuwatch.sessions.replay import run_ends

    used = np.concatenate([np.full(n, v) for n, v in runs])
    t = np.arange(len(used), dtype=np.float64) * 1.5
    kept_t, kept = run_ends(t, used)
    assert kept_t[0] == t[0] and kept_t[-1] == t[-1]
    at = np.searchsorted(kept_t, t, side="right") - 1        # the last point at or before
    np.testing.assert_array_equal(kept[at], used)
    assert len(kept) <= min(len(used), 2 * len(runs))


def test_replay_holds_a_flat_process_in_two_points(recorded):
    from gpuwatch.sessions.replay import load_replay

    data = load_replay(recorded)
    with SessionReader(recorded) as r:
        samples = {p.id: len(r.process_series(p.id)[0]) for p in r.processes()}
    points = sum(len(ring) for ring in data.history.processes.values())
    assert 0 < points < sum(samples.values())
