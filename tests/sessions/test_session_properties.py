"""Properties of damaged session files and hostile text, over generated cases.

A real recorded session is damaged on a copy (bits flipped, cut short, cells overwritten
with values of any type, NOT NULL constraints dropped), then reported and listed: the
command always ends with 0 or 2 and never raises, the damaged file is never modified,
and nothing appears beside it. Hostile text in any text cell comes out of the CSV export
neutralised.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import shutil
import sqlite3
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from session_support import record_scenario

from gpuwatch.cli import main
from gpuwatch.core.csv_cells import FORMULA_PREFIXES, neutralise
from gpuwatch.sessions import paths

# table -> columns that a damaged file may hold anything in
COLUMNS = {
    "session": ("uuid", "host", "backend_kind", "driver_version", "scenario", "interval_s",
                "started_at_s", "ended_at_s", "gpuwatch_version"),
    "gpu": ("uuid", "name", "total_bytes"),
    "gpu_sample": ("t_s", "gpu", "state", "used_bytes", "reserved_bytes", "total_bytes",
                   "gpu_util_percent", "memory_busy_percent",
                   "estimated_bandwidth_bytes_per_s", "pcie_tx_bytes_per_s",
                   "pcie_rx_bytes_per_s", "temperature_c", "power_w"),
    "process": ("gpu", "pid", "name", "cmdline", "user", "container", "first_seen_s",
                "last_seen_s", "peak_used_bytes"),
    "process_change": ("process_id", "sample", "used_bytes", "listed"),
    "hint": ("code", "severity", "gpu", "pid", "title", "detail", "actions", "first_seen_s",
             "last_seen_s", "closed_s"),
    "event": ("t_s", "kind", "gpu", "pid", "detail"),
    "budget_link": ("gpu", "pid", "label", "estimate", "linked_at_s"),
}
# text columns whose value reaches a CSV cell as it is
CSV_TEXT = {
    "session": ("uuid", "host", "backend_kind", "driver_version", "scenario"),
    "gpu": ("uuid", "name"),
    "process": ("name", "user", "container"),
    "hint": ("code", "severity", "title", "detail"),
    "event": ("kind", "detail"),
    "gpu_sample": ("state",),
}

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
formula_text = st.builds(lambda p, rest: p + rest, st.sampled_from(FORMULA_PREFIXES), text)
values = st.one_of(
    st.none(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=True),
    text, formula_text, st.binary(max_size=40),
    st.sampled_from(["nan", "inf", "-1", "1e400", "[", "{\"total_bytes\": 1e999}",
                     "[" * 3000, "\"" + "x" * 100])
)
# (how to store it, the value): as it is, or bytes stored as TEXT (not always UTF-8)
cell_values = st.one_of(values.map(lambda v: ("value", v)),
                        st.binary(min_size=1, max_size=20).map(lambda b: ("text", b)))
cell_edits = st.lists(st.tuples(st.sampled_from(sorted(COLUMNS)), st.data()), min_size=1,
                      max_size=4)
byte_edits = st.lists(st.tuples(st.sampled_from(["flip", "truncate", "header"]),
                                st.integers(0, 2**31), st.integers(0, 255)), min_size=1,
                      max_size=3)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    path = record_scenario(tmp_path_factory.mktemp("rec") / "p.gpuwatch.sqlite", "churn",
                           until_s=16, step_s=2)
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO hint (code, severity, gpu, pid, title, detail, actions, "
                     "first_seen_s, last_seen_s) VALUES ('leak', 'critical', 0, 1, 'Leak', "
                     "'Grows.', '[\"Restart\"]', 2, 4)")
        conn.execute("INSERT INTO budget_link VALUES (0, 1, 'x', '{\"total_bytes\": 5}', 2)")
        conn.commit()
    finally:
        conn.close()
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def exit_code(argv: list[str]) -> int:
    """The exit code of ``gpuwatch argv``; any exception fails the test with its argv."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    except BaseException as exc:
        pytest.fail(f"{argv!r} raised {type(exc).__name__}: {exc}")


def overwrite_cells(path: Path, edits: list, drop_not_null: bool) -> None:
    conn = sqlite3.connect(path)
    try:
        if drop_not_null:
            conn.execute("PRAGMA writable_schema=ON")
            conn.execute("UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') "
                         "WHERE type = 'table'")
            conn.commit()
            conn.close()
            conn = sqlite3.connect(path)
        for table, data in edits:
            column = data.draw(st.sampled_from(COLUMNS[table]))
            how, value = data.draw(cell_values)
            rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
            if not rowids:
                continue
            rowid = data.draw(st.sampled_from(rowids))
            new = "CAST(? AS TEXT)" if how == "text" else "?"
            with contextlib.suppress(sqlite3.IntegrityError, OverflowError):
                conn.execute(f"UPDATE {table} SET {column} = {new} WHERE rowid = ?",
                             (value, rowid))
        conn.commit()
    finally:
        conn.close()


def damage_bytes(path: Path, edits: list) -> None:
    data = bytearray(path.read_bytes())
    for kind, where, byte in edits:
        if not data:
            break
        if kind == "flip":
            data[where % len(data)] ^= 1 << (byte % 8)
        elif kind == "truncate":
            del data[where % len(data):]
        else:                                     # the 100-byte database header
            data[where % min(100, len(data))] = byte
    path.write_bytes(bytes(data))


def check_damaged(recorded: Path, cells: list, drop_not_null: bool, raw: list,
                  fmt: str) -> None:
    folder = paths.sessions_dir()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    damaged = folder / f"damaged{paths.SUFFIX}"
    shutil.copy(recorded, damaged)
    overwrite_cells(damaged, cells, drop_not_null)
    damage_bytes(damaged, raw)
    healthy = folder / f"healthy{paths.SUFFIX}"
    shutil.copy(recorded, healthy)
    before = sha(damaged)
    with tempfile.TemporaryDirectory() as out_dir:
        out = Path(out_dir) / f"r.{'zip' if fmt == 'csv' else fmt}"
        code = exit_code(["report", str(damaged), "--format", fmt, "-o", str(out)])
        assert code in (0, 2)
        event(f"report exit {code}")
        written = sorted(p.name for p in Path(out_dir).iterdir())
        assert written == ([out.name] if code == 0 else [])
    assert exit_code(["sessions"]) == 0
    assert exit_code(["report", "latest", "--format", "json", "-o", "-"]) in (0, 2)
    assert sha(damaged) == before
    assert sorted(p.name for p in folder.iterdir()) == [damaged.name, healthy.name]


formats = st.sampled_from(["html", "json", "csv"])


@given(cells=cell_edits, drop_not_null=st.booleans(), fmt=formats)
def test_cells_of_any_type_are_reported_or_refused_never_a_crash(recorded, cells,
                                                                 drop_not_null, fmt):
    check_damaged(recorded, cells, drop_not_null, [], fmt)


@given(raw=byte_edits, fmt=formats)
def test_flipped_or_cut_bytes_are_reported_or_refused_never_a_crash(recorded, raw, fmt):
    check_damaged(recorded, [], False, raw, fmt)


def _csv_cells(zip_path: Path) -> dict[str, list[dict[str, str]]]:
    with zipfile.ZipFile(zip_path) as z:
        out = {}
        for name in z.namelist():
            rows = list(csv.reader(io.StringIO(z.read(name).decode("utf-8"), newline="")))
            out[name] = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
        return out


CSV_FILE = {"session": ("session.csv", {"backend_kind": "backend", "uuid": "id"}),
            "gpu": ("gpus.csv", {}), "process": ("processes.csv", {}),
            "hint": ("hints.csv", {}), "event": ("events.csv", {}),
            "gpu_sample": ("gpu_samples.csv", {})}


@given(table=st.sampled_from(sorted(CSV_TEXT)), data=st.data(),
       hostile=st.one_of(formula_text, text))
def test_hostile_text_comes_out_of_the_csv_neutralised(recorded, table, data, hostile):
    column = data.draw(st.sampled_from(CSV_TEXT[table]))
    with tempfile.TemporaryDirectory() as work:
        session = Path(work) / "s.gpuwatch.sqlite"
        shutil.copy(recorded, session)
        conn = sqlite3.connect(session)
        try:
            conn.execute(f"UPDATE {table} SET {column} = ?", (hostile,))
            conn.commit()
        finally:
            conn.close()
        out = Path(work) / "r.zip"
        assert exit_code(["report", str(session), "-o", str(out)]) == 0
        tables = _csv_cells(out)
    name, renamed = CSV_FILE[table]
    header = renamed.get(column, column)
    cells = [row[header] for row in tables[name]]
    assert cells and all(cell == neutralise(hostile) for cell in cells)
    for rows in tables.values():
        for row in rows:
            for cell in row.values():
                if cell.startswith(FORMULA_PREFIXES):
                    float(cell)             # only numbers may begin like a formula
