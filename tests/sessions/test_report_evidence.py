"""A hint's evidence is kept one sentence a line, from the session file to every report
(HTML, PDF, JSON): a report never runs the sentences together."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.core.hints import Hint, HintAction, HintEvent, HintEventKind, Severity
from gpuwatch.sessions.export import export
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.recorder import Recorder
from gpuwatch.telemetry.source import SourceOptions, open_backend

EVIDENCE = ("Peak memory rises 4.1 GiB/min over the last 3 min.",
            "At this rate GPU 0 is full in ~3 min.",
            "The process holds 61.2 GiB of it.")

# an evidence sentence: printable text on one line, not blank
sentences = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
                    min_size=1, max_size=40).filter(str.strip)


def _session(path: Path, evidence: tuple[str, ...]) -> Path:
    backend = open_backend(SourceOptions(demo="oom-ramp", time_scale="max"))
    snap = backend.sample()
    backend.close()
    rec = Recorder(path)
    rec.add_snapshot(snap)
    hint = Hint("oom-risk", Severity.CRITICAL, 0, 71310, "GPU 0 full in ~3 min", evidence,
                (HintAction("Enable gradient checkpointing", 6 * 1024**3),),
                opened_at_s=snap.timestamp_s, updated_at_s=snap.timestamp_s)
    rec.add_hint_event(HintEvent(HintEventKind.OPENED, hint, snap.timestamp_s))
    rec.close()
    return path


def _hint_paragraph(page: str) -> str:
    """The paragraph after the hint's title line in an HTML report."""
    block = page[page.index("<div class='hint'>"):]
    return block.split("</p>")[1].removeprefix("<p>")


@settings(max_examples=15, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=4).map(tuple))
def test_each_evidence_sentence_is_its_own_line_in_html_and_json(tmp_path_factory, evidence):
    tmp = tmp_path_factory.mktemp("ev")
    session = _session(tmp / "s.sqlite", evidence)
    with SessionReader(session) as r:
        (h,) = r.hints()
    assert h.detail is not None and h.detail.splitlines() == list(evidence)
    page = export(session, "html", tmp / "r.html").read_text()
    html_lines = _hint_paragraph(page).split("<br>")
    assert [html.unescape(line) for line in html_lines] == [s for s in evidence]
    doc = json.loads(export(session, "json", tmp / "r.json").read_text())
    assert doc["hints"][0]["evidence"] == list(evidence)


def test_the_pdf_prints_each_evidence_sentence_on_its_own_line(tmp_path):
    session = _session(tmp_path / "s.sqlite", EVIDENCE)
    pdf = export(session, "pdf", tmp_path / "r.pdf")
    assert pdf.read_bytes().startswith(b"%PDF-")
    if shutil.which("pdftotext") is None:
        return
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    for sentence in EVIDENCE:
        assert sentence in lines      # a line of its own, not run into the next one
