"""The conventions people bring from nvidia-smi and gpustat: -i/--id, --format csv,
--color and NO_COLOR, and a subcommand's own usage on its own bad flags."""

from __future__ import annotations

import csv
import functools
import io
import json
import re
from dataclasses import fields

import pytest
from cli_support import run, run_captured
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.advisor.settings import AdvisorSettings
from gpuwatch.commands import term_colour
from gpuwatch.core.gpu_selection import GpuSelection, GpuSelectionError
from gpuwatch.core.snapshot_csv import COLUMNS

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CLOCK = re.compile(r"\d\d:\d\d:\d\d")   # the header's time of day: two runs may straddle a second
EIGHT = ["--demo", "multi-gpu-ddp", "--at", "120"]


def _json(argv: list[str]) -> dict:
    code, out, err = run_captured(["snapshot", *argv, "--json"])
    assert code == 0, err
    return json.loads(out)


@functools.cache
def _every() -> dict:
    return _json(EIGHT)


# -- -i/--id ---------------------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(st.sets(st.integers(0, 7), min_size=1, max_size=8))
def test_any_set_of_indices_shows_exactly_those_gpus_and_their_processes(chosen):
    doc = _json([*EIGHT, "-i", ",".join(map(str, sorted(chosen)))])
    assert [g["index"] for g in doc["gpus"]] == sorted(chosen)
    every = {g["index"]: g for g in _every()["gpus"]}
    for gpu in doc["gpus"]:
        same = every[gpu["index"]]
        assert gpu["memory"] == same["memory"] and gpu["uuid"] == same["uuid"]
        assert ([(p["pid"], p["used_bytes"]) for p in gpu["processes"]]
                == [(p["pid"], p["used_bytes"]) for p in same["processes"]])
    chosen_pids = {p["pid"] for g in doc["gpus"] for p in g["processes"]}
    assert {r["pid"] for r in doc["probes"]} <= chosen_pids


def test_a_uuid_or_its_unique_start_chooses_one_gpu():
    uuid = _every()["gpus"][3]["uuid"]
    assert [g["index"] for g in _json([*EIGHT, "-i", uuid])["gpus"]] == [3]
    assert [g["index"] for g in _json([*EIGHT, "-i", uuid[:-1].upper()])["gpus"]] == [3]
    assert [g["index"] for g in _json([*EIGHT, "-i", f"5,{uuid}"])["gpus"]] == [3, 5]


@pytest.mark.parametrize(("ids", "says"), [
    ("9", "there is no GPU 9 here (GPUs 0, 1, 2, 3, 4, 5, 6, 7)"),
    ("GPU-5111a7ed", "give more of the UUID"),           # every simulated UUID starts so
    ("GPU-ffff", "no GPU here has a UUID starting with 'gpu-ffff'"),
])
def test_an_id_that_names_no_single_gpu_is_refused_before_sampling(capsys, ids, says):
    code, out, err = run(capsys, "snapshot", *EIGHT, "-i", ids)
    assert code == 2 and out == ""
    assert says in err and "Traceback" not in err


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_id_text_parses_or_is_refused_with_a_reason(text):
    try:
        selection = GpuSelection.parse(text)
    except GpuSelectionError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert selection.indices or selection.uuids


@given(st.lists(st.integers(0, 1023), min_size=1, max_size=64))
def test_index_lists_round_trip(indices):
    assert GpuSelection.parse(" , ".join(map(str, indices))).indices == frozenset(indices)


def test_non_ascii_digits_are_not_indices():
    with pytest.raises(GpuSelectionError):
        GpuSelection.parse("\u0663")          # ARABIC-INDIC DIGIT THREE passes isdigit()


def test_id_with_prometheus_points_to_match(capsys):
    code, _, err = run(capsys, "snapshot", "--prometheus", "http://127.0.0.1:9", "-i", "0")
    assert code == 2 and "--match" in err


# -- --format csv ----------------------------------------------------------------------

def test_snapshot_csv_has_a_row_per_chosen_gpu_agreeing_with_the_json():
    code, out, err = run_captured(["snapshot", *EIGHT, "-i", "1,6", "--format", "csv"])
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS and [r["gpu"] for r in rows] == ["1", "6"]
    doc = _json([*EIGHT, "-i", "1,6"])
    for row, gpu in zip(rows, doc["gpus"], strict=True):
        assert int(row["used_bytes"]) == gpu["memory"]["used_bytes"]
        assert int(row["total_bytes"]) == gpu["memory"]["total_bytes"]
        assert int(row["processes"]) == len(gpu["processes"])
        assert row["uuid"] == gpu["uuid"]


def test_csv_text_cells_cannot_run_as_formulas(tmp_path):
    scenario = tmp_path / "hostile.toml"
    scenario.write_text('schema = "gpuwatch.scenario/1"\nname = "hostile"\n'
                        'description = "x"\nduration_s = 60\n'
                        '[[gpus]]\nname = "=HYPERLINK(\\"http://x\\")"\n'
                        'memory_total = "24GiB"\n')
    code, out, err = run_captured(["snapshot", "--demo", str(scenario), "--format", "csv"])
    assert code == 0, err
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["name"] == "'=HYPERLINK(\"http://x\")"


def test_record_csv_is_one_header_then_rows_while_hints_go_to_stderr():
    code, out, err = run_captured(["record", "--demo", "oom-ramp", "--time-scale", "max",
                                   "--no-save", "--format", "csv"])
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == list(COLUMNS) and all(row != list(COLUMNS) for row in rows[1:])
    assert len(rows) > 500 and {len(r) for r in rows} == {len(COLUMNS)}
    assert "hint " in err and "oom-risk" in err and "Recorded" in err


def test_json_and_another_format_are_refused_together(capsys):
    code, _, err = run(capsys, "snapshot", "--demo", "--json", "--format", "csv")
    assert code == 2 and "give one" in err


# -- colour ----------------------------------------------------------------------------

LATE = ["snapshot", "--demo", "oom-ramp", "--at", "480"]      # memory almost full


def test_colour_marks_memory_almost_full_only_when_asked(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    _, coloured, _ = run(capsys, *LATE, "--color", "always")
    assert term_colour.RED in coloured
    _, plain, _ = run(capsys, *LATE, "--color", "never")
    assert CLOCK.sub("", ANSI.sub("", coloured)) == CLOCK.sub("", plain)
    assert "\x1b" not in plain
    _, auto, _ = run(capsys, *LATE)                # captured output is not a terminal
    assert "\x1b" not in auto


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("choice", "no_color", "term", "tty", "expected"), [
    ("auto", None, "xterm", True, True),
    ("auto", "1", "xterm", True, False),
    ("auto", "", "xterm", True, True),          # NO_COLOR set but empty: ignored
    ("auto", None, "dumb", True, False),
    ("auto", None, "xterm", False, False),
    ("always", "1", "dumb", False, True),
    ("never", None, "xterm", True, False),
])
def test_when_colour_is_wanted(monkeypatch, choice, no_color, term, tty, expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    monkeypatch.setenv("TERM", term)
    stream = _Tty() if tty else io.StringIO()
    assert term_colour.wanted(choice, stream) is expected


def test_colour_thresholds_are_the_advisors():
    defaults = {f.name: f.default for f in fields(AdvisorSettings)}
    assert defaults["free_critical_fraction"] == term_colour.FREE_CRITICAL_FRACTION
    assert defaults["free_warning_fraction"] == term_colour.FREE_WARNING_FRACTION


def test_record_colours_hints_by_severity(capsys):
    code, out, _ = run(capsys, "record", "--demo", "oom-ramp", "--time-scale", "max",
                       "--no-save", "--color", "always")
    assert code == 0
    hints = [line for line in out.splitlines() if line.startswith("  hint ")]
    assert any(term_colour.RED in h and "CRITICAL" in h for h in hints)
    assert any(term_colour.YELLOW in h and "WARNING" in h for h in hints)


# -- a subcommand's own usage on its bad flags -----------------------------------------

SUBCOMMANDS = ("snapshot", "record", "report", "sessions", "estimate", "plan", "serve",
               "scenarios")


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SUBCOMMANDS),
       st.from_regex(r"--zz[a-z]{1,12}", fullmatch=True))
def test_an_unknown_flag_gets_the_subcommands_usage(command, flag):
    positional = ["latest"] if command == "report" else []     # its required SESSION
    code, out, err = run_captured([command, *positional, flag])
    assert code == 2 and out == ""
    assert f"usage: gpuwatch {command}" in err
    assert f"gpuwatch {command}: error: unrecognized arguments: {flag}" in err


def test_a_near_miss_is_named(capsys):
    code, _, err = run(capsys, "estimate", "--model", "llama-3.1-8b", "--gpuu", "H100")
    assert code == 2 and "(did you mean --gpu?)" in err
    _, _, err = run(capsys, "snapshot", "--zzzz")
    assert "did you mean" not in err


def test_the_snapshot_text_says_measured_where_the_gpu_measures_its_bandwidth():
    from gpuwatch.commands.snapshot_text import _activity_line
    from gpuwatch.core.snapshot import GpuSample, GpuState, MemoryInfo

    base = dict(memory_busy_percent=50.0, peak_bandwidth_bytes_per_s=3e12,
                estimated_bandwidth_bytes_per_s=1.5e12)
    estimated = GpuSample(0, None, "H100", GpuState.OK, MemoryInfo(1, 0, 1, 0), **base)
    measured = GpuSample(0, None, "H100", GpuState.OK, MemoryInfo(1, 0, 1, 0), **base,
                         measured_bandwidth_bytes_per_s=1.2e12)
    assert "(estimate)" in _activity_line(estimated)
    assert "1.2 TB/s of 3.0 TB/s peak (measured)" in _activity_line(measured)
    assert "(estimate)" not in _activity_line(measured)
