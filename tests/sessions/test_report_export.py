"""Reports from recorded sessions: every format, every scenario, and bad files refused."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sqlite3
import subprocess
import zipfile

import pytest
from cli_support import run as run_cli
from session_support import record_scenario

from gpuwatch.sessions.export import export
from gpuwatch.sessions.schema import SCHEMA_VERSION
from gpuwatch.telemetry.sim.catalog import builtin_names

GiB = 1024**3


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("name", builtin_names())
def test_every_scenario_round_trips_to_json_html_and_csv(tmp_path, name):
    session = record_scenario(tmp_path / f"{name}.sqlite", name, until_s=240, step_s=2)
    before = sha(session)
    doc = json.loads(export(session, "json", tmp_path / "r.json").read_text())
    assert doc["schema"] == "gpuwatch.report/1"
    assert set(doc["session"]) >= {"id", "started_at", "ended_at", "host", "backend"}
    assert doc["session"]["backend"]["scenario"] == name
    for g in doc["gpus"]:
        assert set(g) >= {"index", "name", "total_bytes", "peak_used_bytes", "mean_used_bytes",
                          "time_above_90pct_s"}
        if g["peak_used_bytes"] is not None:
            assert 0 < g["mean_used_bytes"] <= g["peak_used_bytes"] <= g["total_bytes"]
    for p in doc["processes"]:
        assert set(p) >= {"pid", "name", "gpu", "peak_used_bytes"}
    page = export(session, "html", tmp_path / "r.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    with zipfile.ZipFile(export(session, "csv", tmp_path / "r.zip")) as z:
        assert {"gpus.csv", "gpu_samples.csv", "processes.csv", "hints.csv"} <= set(z.namelist())
        header = z.read("gpu_samples.csv").decode().splitlines()[0]
        assert header.startswith("time_s,gpu,used_bytes")
    assert sha(session) == before                    # reports only ever read


def test_figures_match_the_scenario(tmp_path):
    session = record_scenario(tmp_path / "oom.sqlite", "oom-ramp", until_s=600)
    doc = json.loads(export(session, "json", tmp_path / "r.json").read_text())
    (gpu,) = doc["gpus"]
    assert gpu["total_bytes"] == 40960 * 1024**2
    assert gpu["peak_used_bytes"] == pytest.approx(39.55 * GiB + 250 * 1024**2, rel=0.01)
    # 90 % of 40 GiB is crossed at ~373 s (33.1 -> 38.2 GiB over 300-420 s) until the crash
    assert 115 <= gpu["time_above_90pct_s"] <= 122
    (proc,) = doc["processes"]
    assert proc["pid"] == 71310 and proc["name"] == "python"


def test_pdf_has_real_pages(tmp_path):
    session = record_scenario(tmp_path / "w.sqlite", "workstation", until_s=120)
    pdf = export(session, "pdf", tmp_path / "r.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"/Type /Page" in data
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True,
                              text=True).stdout
        assert "GPU memory session" in text and "NVIDIA GeForce RTX 4090" in text


def test_hostile_strings_are_escaped_in_html(tmp_path):
    scenario = tmp_path / "hostile.toml"
    scenario.write_text('''
schema = "gpuwatch.scenario/1"
name = "hostile"
duration_s = 10
[[gpus]]
name = "GPU <b>bold</b>"
memory_total = "8GiB"
[[processes]]
pid = 66
gpu = 0
name = "<script>alert(1)</script>"
cmdline = ["python", "--x=<img src=x onerror=alert(2)>", "'\\"&"]
user = "\\"><svg onload=alert(3)>"
container = "docker:<iframe>"
memory = "1GiB"
''')
    session = record_scenario(tmp_path / "h.sqlite", str(scenario), until_s=5)
    page = export(session, "html", tmp_path / "r.html").read_text()
    for raw in ("<script>", "<img src=x", "<svg onload", "<iframe>", "<b>bold"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # the command line is cut into pieces (spans) where it may wrap: its text, escaped
    text = re.sub(r"<[^>]*>", "", page)
    assert "&lt;img src=x onerror=alert(2)&gt;" in text


def _bad_files(tmp_path, good):
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE notes (x TEXT)")
    newer = tmp_path / "newer.sqlite"
    shutil.copy(good, newer)
    with sqlite3.connect(newer) as c:
        c.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    corrupted = tmp_path / "corrupted.sqlite"
    data = bytearray(good.read_bytes())
    data[4096:12288] = b"\xde\xad" * 4096
    corrupted.write_bytes(bytes(data))
    text = tmp_path / "notes.txt"
    text.write_text("not a session at all\n" * 100)
    return {
        foreign: "not a gpuwatch session",
        newer: "newer gpuwatch",
        truncated: "",
        corrupted: "",
        text: "not a gpuwatch session",
        tmp_path / "missing.sqlite": "no such session file",
    }


def test_bad_session_files_exit_2_and_are_never_modified(tmp_path, capsys):
    good = record_scenario(tmp_path / "good.sqlite", "leak", until_s=300)
    for path, words in _bad_files(tmp_path, good).items():
        before = sha(path) if path.exists() else None
        for fmt in ("json", "html"):
            code, _, err = run_cli(capsys, "report", str(path), "--format", fmt,
                                   "-o", str(tmp_path / f"out.{fmt}"))
            assert code == 2, (path.name, err)
            assert str(path) in err and words in err and "Traceback" not in err
            assert not (tmp_path / f"out.{fmt}").exists()
        if before is not None:
            assert sha(path) == before, f"{path.name} was modified"


def test_unwritable_output_is_an_error_that_loses_nothing(tmp_path, capsys):
    good = record_scenario(tmp_path / "good.sqlite", "leak", until_s=60)
    before = sha(good)
    for target in (str(tmp_path / "no" / "such" / "dir" / "r.html"),
                   str(tmp_path / "missing") + "/"):
        code, _, err = run_cli(capsys, "report", str(good), "-o", target)
        assert code == 2 and target.rstrip("/") in err and "does not exist" in err
        assert "Traceback" not in err
    assert sha(good) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.sqlite"]


def test_record_then_report_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "cli.sqlite"
    code, text, _ = run_cli(capsys, "record", "--demo", "fragmentation", "--time-scale",
                            "max", "--duration", "60", "--out", str(out))
    assert code == 0 and f"Session saved to {out}" in text
    code, text, _ = run_cli(capsys, "report", str(out), "--format", "json", "-o", "-")
    assert code == 0 and json.loads(text)["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    code, text, _ = run_cli(capsys, "report", str(out))
    assert code == 0 and (tmp_path / "cli-report.html").is_file()
    code, _, err = run_cli(capsys, "record", "--demo", "--time-scale", "max", "--duration",
                           "2", "--out", str(out))
    assert code == 2 and "already exists" in err


def test_latest_and_the_session_list(tmp_path, capsys):
    code, text, _ = run_cli(capsys, "sessions")
    assert code == 0 and "No sessions" in text
    run_cli(capsys, "record", "--demo", "leak", "--time-scale", "max", "--duration", "30")
    code, text, _ = run_cli(capsys, "sessions")
    assert code == 0 and "simulated leak" in text and "peak" in text
    code, text, _ = run_cli(capsys, "report", "latest", "--format", "json", "-o", "-")
    assert json.loads(text)["session"]["backend"]["scenario"] == "leak"
