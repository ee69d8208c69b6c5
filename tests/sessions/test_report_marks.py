"""Reports mark each GPU's memory timeline (first warning, first critical, the peak, a
likely-OOM death) and say how long before the death the warning came: in the model, the
JSON, the HTML (SVG labels) and the PDF (its text). Absent facts make no marks."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from session_support import record_scenario

from gpuwatch.core.units import format_duration
from gpuwatch.sessions.charts_svg import memory_chart
from gpuwatch.sessions.export import export
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_json import report_to_json
from gpuwatch.sessions.report_model import (
    CRITICAL_MARK,
    OOM_MARK,
    PEAK_MARK,
    WARNING_MARK,
    Report,
    TimelineMark,
    build_report,
    oom_exits,
)
from gpuwatch.sessions.session_rows import HintRow

GiB = 1024**3
OOM_PID = 71310
OOM_LABEL = f"pid {OOM_PID} exited — likely OOM"


def _report(path: Path) -> Report:
    with SessionReader(path) as reader:
        return build_report(reader)


@pytest.fixture(scope="module")
def quiet_session(tmp_path_factory) -> Path:
    return record_scenario(tmp_path_factory.mktemp("quiet") / "ws.sqlite", "workstation",
                           240, step_s=2, advisor=True)


def test_the_oom_timeline_is_marked_and_the_lead_time_said(oom_session) -> None:
    r = _report(oom_session)
    (risk,) = [h for h in r.hints if h.code == "oom-risk"]
    (death,) = [h for h in r.hints if h.code == "likely-oom"]
    assert risk.severity == "critical" and death.pid == OOM_PID
    (gpu,) = r.gpus
    marks = {m.kind: m for m in gpu.marks}
    assert [m.kind for m in gpu.marks] == [WARNING_MARK, CRITICAL_MARK, PEAK_MARK, OOM_MARK]
    assert marks[WARNING_MARK].t_s == risk.first_seen_s
    # it turned critical later, as the session's hint-critical event records
    assert 290 < marks[CRITICAL_MARK].t_s < 330 and marks[CRITICAL_MARK].code == "oom-risk"
    assert marks[WARNING_MARK].code == "oom-risk" and marks[WARNING_MARK].label == "warning"
    assert 120 < risk.first_seen_s < 200                   # minutes before the death
    peak = marks[PEAK_MARK]
    assert peak.used_bytes == gpu.peak_used_bytes and peak.label == "peak 39.6 GiB"
    assert 470 <= peak.t_s < 492 and gpu.used_bytes[gpu.t_s == peak.t_s][0] == peak.used_bytes
    oom = marks[OOM_MARK]
    assert (oom.t_s, oom.pid, oom.label) == (death.first_seen_s, OOM_PID, OOM_LABEL)
    assert 491 <= oom.t_s <= 493 and oom.used_bytes > 39 * GiB   # where the GPU stood
    lead = death.first_seen_s - risk.first_seen_s
    assert r.summary == (f"Warned {format_duration(lead)} before the out-of-memory exit of "
                         f"pid {OOM_PID} on GPU 0.",)
    assert 300 < lead < 400
    (exit_,) = r.oom_exits
    assert (exit_.gpu, exit_.pid, exit_.lead_s) == (0, OOM_PID, lead)


def test_the_json_report_has_the_same_facts(oom_session) -> None:
    r = _report(oom_session)
    doc = json.loads(json.dumps(report_to_json(r)))
    (gpu,) = doc["gpus"]
    assert [m["kind"] for m in gpu["marks"]] == ["warning", "critical", "peak", "likely-oom"]
    assert gpu["marks"][3] == {"kind": "likely-oom", "t_s": r.gpus[0].marks[3].t_s,
                               "label": OOM_LABEL, "used_bytes": r.gpus[0].marks[3].used_bytes,
                               "code": "likely-oom", "pid": OOM_PID}
    assert gpu["marks"][2]["used_bytes"] == gpu["peak_used_bytes"]
    assert doc["summary"] == list(r.summary)
    (x,) = doc["oom_exits"]
    assert x["pid"] == OOM_PID and x["warned_before_s"] == x["exited_at_s"] - x["warned_at_s"]
    assert x["warning_severity"] == "critical"


def _label_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    return [(float(x), float(y), float(x) + float(w), float(y) + float(h)) for x, y, w, h in
            re.findall(r'<rect x="([\d.-]+)" y="([\d.-]+)" width="([\d.]+)" height="([\d.]+)" '
                       r'fill="#ffffff" fill-opacity="0.85"/>', svg)]


def _disjoint(boxes: list[tuple[float, float, float, float]]) -> bool:
    return not any(a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
                   for a, b in itertools.combinations(boxes, 2))


def test_the_html_draws_and_names_the_marks(oom_session, tmp_path) -> None:
    page = export(oom_session, "html", tmp_path / "r.html").read_text()
    chart = page[page.index("<svg"):page.index("</svg>")]
    for label in ("warning", "critical", "peak 39.6 GiB", OOM_LABEL):
        assert f">{label}</text>" in chart
    assert chart.count('stroke-dasharray="3,3"') == 2          # the two alert lines
    assert "<circle" in chart and "<path" in chart            # the peak, the death
    boxes = _label_boxes(chart)
    assert len(boxes) == 4 and _disjoint(boxes)               # same time, no overlap
    r = _report(oom_session)
    assert f"<p class='summary'>{r.summary[0]}</p>" in page
    assert "Marked: warning at" in page and f"{OOM_LABEL} at 8 min 1" in page


def test_the_pdf_says_the_marks_and_the_sentence(oom_session, tmp_path) -> None:
    if not shutil.which("pdftotext"):
        pytest.skip("pdftotext (poppler-utils) is not installed")
    pdf = export(oom_session, "pdf", tmp_path / "r.pdf")
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = " ".join(text.split())
    lead = format_duration(_report(oom_session).oom_exits[0].lead_s)
    assert f"Warned {lead} before the out-of-memory exit of pid {OOM_PID} on GPU 0." in flat
    for words in ("Marked: warning at 2 min", "critical at 5 min", "peak 39.6 GiB at",
                  f"{OOM_LABEL} at 8 min"):
        assert words in flat


def test_no_facts_no_marks(quiet_session, tmp_path) -> None:
    r = _report(quiet_session)
    assert not [h for h in r.hints if h.severity in ("warning", "critical")]
    assert r.summary == () and r.oom_exits == ()
    for g in r.gpus:                                          # only the peak, always true
        assert [m.kind for m in g.marks] == [PEAK_MARK]
    page = render_html(r)
    assert "likely OOM" not in page and ">warning</text>" not in page
    assert "class='summary'" not in page and "Warned" not in page
    doc = report_to_json(r)
    assert doc["summary"] == [] and doc["oom_exits"] == []


def test_a_gpu_without_readings_has_no_peak() -> None:
    from gpuwatch.sessions.report_model import timeline_marks

    t = np.arange(5.0)
    assert timeline_marks(0, t, np.full(5, np.nan), []) == ()


def _hint(code: str, severity: str, first: float, closed: float | None = None,
          gpu: int = 0, pid: int | None = None) -> HintRow:
    return HintRow(code, severity, gpu, pid, "t", None, (), first, closed or first, closed)


@pytest.mark.parametrize(("hints", "expected"), [
    # a death with no warning before it: said so
    ([_hint("likely-oom", "warning", 100, pid=7)],
     ["pid 7 on GPU 0 exited, likely out of memory, with no out-of-memory warning before it."]),
    # the warning still open as it died wins over an older, closed one
    ([_hint("oom-risk", "warning", 10, closed=40), _hint("oom-risk", "critical", 60),
      _hint("likely-oom", "warning", 100, pid=7)],
     ["Warned 40 s before the out-of-memory exit of pid 7 on GPU 0."]),
    # a warning on another GPU, or opened after the death, does not count
    ([_hint("oom-risk", "warning", 10, gpu=1), _hint("oom-risk", "warning", 120),
      _hint("likely-oom", "warning", 100, pid=7)],
     ["pid 7 on GPU 0 exited, likely out of memory, with no out-of-memory warning before it."]),
    # with only closed warnings before it, the latest
    ([_hint("oom-risk", "warning", 10, closed=20), _hint("oom-risk", "warning", 30, closed=50),
      _hint("likely-oom", "warning", 100, pid=7)],
     ["Warned 1 min 10 s before the out-of-memory exit of pid 7 on GPU 0."]),
    # no death, no sentence
    ([_hint("oom-risk", "critical", 10)], []),
])
def test_the_lead_time_sentence(hints, expected) -> None:
    assert [x.sentence for x in oom_exits(hints)] == expected


def test_only_alerts_make_the_alert_lines() -> None:
    from gpuwatch.sessions.report_model import timeline_marks

    t = np.arange(0.0, 100.0)
    used = np.full(100, float(GiB))
    hints = [_hint("underused", "info", 5), _hint("leak", "warning", 30, pid=3),
             _hint("gpu-lost", "critical", 50, gpu=1), _hint("oom-risk", "critical", 70)]
    marks = timeline_marks(0, t, used, hints)
    assert [(m.kind, m.t_s, m.code) for m in marks if m.is_line] == [
        ("warning", 30.0, "leak"), ("critical", 70.0, "oom-risk")]


def test_crowded_labels_stay_apart_and_inside_the_plot() -> None:
    t = np.arange(0.0, 600.0)
    used = np.minimum(40 * GiB, t / 590 * 40 * GiB)
    marks = [TimelineMark("warning", 580, "warning"), TimelineMark("critical", 585, "critical"),
             TimelineMark("peak", 589, "peak 40.0 GiB", used_bytes=40 * GiB),
             TimelineMark("likely-oom", 590, "pid 1 exited — likely OOM", used_bytes=40 * GiB),
             TimelineMark("likely-oom", 591, "pid 2 exited — likely OOM", used_bytes=40 * GiB),
             TimelineMark("warning", 0, "warning"), TimelineMark("peak", 0, "peak", used_bytes=0)]
    svg = memory_chart([("GPU 0", t, used)], 40 * GiB, marks=marks)
    boxes = _label_boxes(svg)
    assert len(boxes) == len(marks) and _disjoint(boxes)
    left, top, right, bottom = 64, 26, 720 - 12, 220 - 30         # the plot area
    assert all(left <= b[0] and b[2] <= right and top <= b[1] and b[3] <= bottom
               for b in boxes)
    plain = memory_chart([("GPU 0", t, used)], 40 * GiB)
    assert "fill-opacity" not in plain and "<circle" not in plain    # no marks, none drawn
