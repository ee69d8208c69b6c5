"""Session files from elsewhere: only real tables of the expected schema are read, the
work of every query is bounded, and text from a file never reaches a terminal raw."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from session_support import record_scenario

from gpuwatch.sessions import read_only, schema
from gpuwatch.sessions.errors import SessionFileError
from gpuwatch.sessions.reader import SessionReader

ROOT = Path(__file__).resolve().parents[2]
TABLES = sorted(schema.EXPECTED_TABLES[2])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record_scenario(tmp_path_factory.mktemp("rec") / "f.gpuwatch.sqlite", "churn",
                           until_s=20, step_s=2)


def endless_view(table: str) -> str:
    """A view with the table's columns whose rows never end (a recursive query)."""
    cols = ", ".join(f"n AS {c}" for c in schema.EXPECTED_TABLES[2][table])
    return (f"CREATE VIEW {table} AS WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL "
            f"SELECT n + 1 FROM c) SELECT {cols} FROM c")


def rewrite(path: Path, table: str, how: str) -> None:
    conn = sqlite3.connect(path)
    try:
        columns = schema.EXPECTED_TABLES[2][table]
        if how == "view":
            conn.executescript(f"DROP TABLE {table}; {endless_view(table)};")
        elif how == "virtual":
            conn.executescript(f"DROP TABLE {table}; CREATE VIRTUAL TABLE {table} USING "
                               f"fts4({', '.join(columns)});")
        elif how == "trigger":
            conn.execute(f"CREATE TRIGGER t_{table} AFTER INSERT ON {table} BEGIN "
                         "SELECT 1; END")
        elif how == "generated":
            conn.executescript(f"DROP TABLE {table}; CREATE TABLE {table} "
                               f"({', '.join(columns[:-1])}, {columns[-1]} AS "
                               "(length(zeroblob(1000000))));")
        elif how == "missing-column":
            conn.executescript(f"DROP TABLE {table}; CREATE TABLE {table} "
                               f"({', '.join(columns[:-1])});")
        elif how == "missing-table":
            conn.execute(f"DROP TABLE {table}")
        conn.commit()
    finally:
        conn.close()


def run_cli(*argv: str, data_dir: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, GPUWATCH_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "gpuwatch", *argv], env=env, text=True,
                          capture_output=True, timeout=timeout)


HOW = ["view", "virtual", "trigger", "generated", "missing-column", "missing-table"]


@settings(max_examples=24, deadline=None)
@given(table=st.sampled_from(TABLES), how=st.sampled_from(HOW))
def test_only_real_tables_of_the_schema_are_read(recorded, tmp_path_factory, table, how):
    path = tmp_path_factory.mktemp("foreign") / "f.gpuwatch.sqlite"
    shutil.copyfile(recorded, path)
    rewrite(path, table, how)
    before = path.read_bytes()
    with pytest.raises(SessionFileError) as caught:
        SessionReader(path)
    reason = caught.value.reason
    expected = {"view": "view", "virtual": "virtual table", "trigger": "trigger",
                "generated": "generated column", "missing-column": "has no",
                "missing-table": f"no {table} table"}[how]
    assert expected in reason
    assert path.read_bytes() == before


def test_a_view_with_an_endless_query_does_not_hang_report_or_sessions(recorded, tmp_path):
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    path = sessions / "loop.gpuwatch.sqlite"
    shutil.copyfile(recorded, path)
    rewrite(path, "gpu_sample", "view")
    report = run_cli("report", str(path), "-o", str(tmp_path / "r.html"),
                     data_dir=tmp_path / "data")
    assert report.returncode == 2, report.stderr
    assert "view" in report.stderr and "Traceback" not in report.stderr
    assert not (tmp_path / "r.html").exists()
    listing = run_cli("sessions", data_dir=tmp_path / "data")
    assert listing.returncode == 0, listing.stderr
    assert "loop.gpuwatch.sqlite  (unreadable:" in listing.stdout


def test_every_query_has_a_bounded_amount_of_work(recorded, monkeypatch):
    """A query that would never end (here a recursive one, as a damaged or crafted file
    could cause) is stopped by the progress handler and named, not waited on."""
    monkeypatch.setattr(read_only, "WORK_BASE_STEPS", 1_000_000)
    monkeypatch.setattr(read_only, "WORK_STEPS_PER_BYTE", 1)
    endless = ("WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
               "SELECT count(*) FROM c")
    with SessionReader(recorded) as reader:
        with pytest.raises(SessionFileError) as caught, reader._query() as conn:
            conn.execute(endless).fetchall()
        assert "steps" in caught.value.reason
        reader.info()                      # the next query gets the whole budget again
        assert reader.gpus()


ESCAPES = st.text(st.sampled_from("\x1b]0;\x07\x9b\r\n\u202e\x00ab"), min_size=1, max_size=12)


@settings(max_examples=10, deadline=None)
@given(scenario=ESCAPES, backend=ESCAPES)
def test_the_sessions_listing_shows_text_from_a_file_escaped(recorded, tmp_path_factory,
                                                             scenario, backend):
    data = tmp_path_factory.mktemp("data")
    (data / "sessions").mkdir()
    path = data / "sessions" / "x\x1b[2Jy.gpuwatch.sqlite"
    shutil.copyfile(recorded, path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE session SET scenario = ?, backend_kind = ?", (scenario, backend))
    conn.commit()
    conn.close()
    broken = data / "sessions" / "z\x1b]0;t\x07.gpuwatch.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + b"\x1b" * 200)
    out = run_cli("sessions", data_dir=data)
    assert out.returncode == 0, out.stderr
    for raw in ("\x1b", "\x07", "\x9b", "\r", "\u202e", "\x00"):
        assert raw not in out.stdout + out.stderr
    assert "x\\x1b[2Jy.gpuwatch.sqlite" in out.stdout
    assert out.stdout.count("\n") == 2          # one line per session, no fake lines
