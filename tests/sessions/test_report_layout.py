"""How the HTML and PDF reports read: the summary block at the top (peak against
capacity per GPU, time above 90 %, the worst hint, how the session ended), command
lines that wrap only at a space, ``/`` or ``=`` and are cut with an ellipsis into
"Commands in full", and PDF pages that never hold the footer alone."""

from __future__ import annotations

import dataclasses
import html
import json
import re
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from session_support import record_scenario

from gpuwatch.core.units import format_duration
from gpuwatch.sessions import liveness
from gpuwatch.sessions.export import export
from gpuwatch.sessions.reader import SessionReader
from gpuwatch.sessions.report_commands import ELLIPSIS, cut_command, wrap_command
from gpuwatch.sessions.report_html import render_html
from gpuwatch.sessions.report_json import report_to_json
from gpuwatch.sessions.report_model import (
    CLOSED,
    CUT_SHORT,
    RECORDING,
    Report,
    build_report,
    clock,
    peak_of_capacity,
    worst_hint,
)
from gpuwatch.sessions.session_rows import EventRow, HintRow

GiB = 1024**3
LONG_COMMAND = [
    "/opt/conda/envs/train/bin/python", "-m", "torch.distributed.run", "--nproc_per_node=8",
    "--rdzv_endpoint=node-17.cluster.internal:29500", "train.py", "--model",
    "meta-llama/Llama-3.1-70B-Instruct", "--dataset",
    "/mnt/datasets/pretraining/shards/part-000001-of-004096.arrow",
    "--output_dir=/mnt/checkpoints/llama-3.1-70b/run-2026-12-01",
    "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "16", "--bf16",
    "--deepspeed", "configs/zero3_offload.json"]
FULL = " ".join(LONG_COMMAND)                     # shlex.join quotes none of these
SHORT = "python eval.py --model llama-3.1-8b"
HEADINGS = ("GPUs", "Top processes by peak memory", "Hints", "Events", "Commands in full",
            "Budget versus measured")

needs_pdftotext = pytest.mark.skipif(shutil.which("pdftotext") is None,
                                     reason="pdftotext (poppler-utils) is not installed")


def _report(path: Path) -> Report:
    with SessionReader(path) as reader:
        return build_report(reader)


def _text(html_page: str) -> str:
    """What a browser shows of ``html_page``, its whitespace folded (cells, lines and
    paragraphs apart; inline tags, such as a command's pieces, run together)."""
    spaced = re.sub(r"<(br|/t[dh]|/p|/tr|/h\d)\b[^>]*>", " ", html_page)
    return " ".join(html.unescape(re.sub(r"<[^>]*>", "", spaced)).split())


def _pdf_pages(pdf: Path) -> list[str]:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True,
                          check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    return [subprocess.run(["pdftotext", "-f", str(n), "-l", str(n), str(pdf), "-"],
                           capture_output=True, text=True, check=True).stdout
            for n in range(1, pages + 1)]


def _without_foot(page: str) -> str:
    """A page's text without the footer and the running line under every page (or a
    bare page number)."""
    flat = " ".join(line for line in page.split("\n") if not line.strip().isdigit())
    flat = " ".join(flat.split())
    flat = re.sub(r"Made by gpuwatch .*?of a GPU's memory in use\.", "", flat)
    flat = re.sub(r"gpuwatch session [0-9a-f]{8}( on \S+)?", "", flat)
    return re.sub(r"page \d+ of \d+", "", flat).strip()


@pytest.fixture(scope="module")
def long_session(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("long")
    scenario = folder / "long.toml"
    scenario.write_text(f'''
schema = "gpuwatch.scenario/1"
name = "long-commands"
duration_s = 60
[[gpus]]
name = "NVIDIA A100-SXM4-40GB"
memory_total = "40GiB"
[[processes]]
pid = 4242
gpu = 0
name = "python"
cmdline = {json.dumps(LONG_COMMAND)}
user = "alice"
memory = "30GiB"
[[processes]]
pid = 4243
gpu = 0
name = "python"
cmdline = {json.dumps(SHORT.split())}
user = "bob"
memory = "2GiB"
''')
    return record_scenario(folder / "long.sqlite", str(scenario), until_s=30)


# --- command lines ---------------------------------------------------------------------

def _breaks_only_at_separators(lines: list[str], command: str) -> bool:
    """``lines`` put back together give ``command``, each break after a space (dropped
    at the break), a ``/`` or a ``=``."""
    rebuilt = lines[0]
    for line in lines[1:]:
        rebuilt += line if rebuilt[-1] in "/=" else " " + line
    return rebuilt == command


@pytest.mark.parametrize("columns", [8, 20, 37, 60, 96])
def test_a_command_wraps_only_after_a_space_a_slash_or_an_equals_sign(columns) -> None:
    lines = wrap_command(FULL, columns)
    assert all(len(line) <= columns for line in lines)
    if columns >= max(len(p) for p in re.split(r"(?<=[ /=])", FULL)):
        assert _breaks_only_at_separators(lines, FULL)
    assert "".join(lines).replace(" ", "") == FULL.replace(" ", "")


def test_a_piece_longer_than_a_line_is_the_only_thing_split() -> None:
    word = "x" * 50
    assert wrap_command(f"run {word} --fast", 20) == ["run", "x" * 20, "x" * 20,
                                                      "x" * 10 + " --fast"]


def test_a_long_command_is_cut_at_a_separator_with_an_ellipsis() -> None:
    assert cut_command(SHORT, 96, 2) == SHORT                  # fits: whole
    cut = cut_command(FULL, 96, 2)
    assert cut.endswith(" " + ELLIPSIS) and len(wrap_command(cut, 96)) == 2
    kept = cut.removesuffix(" " + ELLIPSIS)
    assert FULL.startswith(kept) and FULL[len(kept)] in " /="   # cut between pieces
    assert cut_command("y" * 500, 40, 2).endswith(ELLIPSIS)


def test_the_html_command_wraps_only_at_separators_and_the_appendix_has_it_all(
        long_session, tmp_path) -> None:
    page = export(long_session, "html", tmp_path / "r.html").read_text()
    assert "span.w { white-space: nowrap; }" in page         # the rule the spans rely on
    cells = re.findall(r"<td class='cmd' colspan='6'><code>(.*?)</code></td>", page)
    assert len(cells) == 2
    for cell in cells:
        for piece in re.findall(r"<span class='w'>(.*?)</span>", cell):
            # a piece breaks nowhere inside: a name, its leading and trailing / or =
            assert re.fullmatch(r"[/=]*[^ /=]+[/=]?|[/=]+", html.unescape(piece)), piece
        assert "</span><span" not in cell                   # between pieces: a space or <wbr>
    long_cell, short_cell = cells
    assert _text(short_cell) == SHORT
    shown = _text(long_cell)
    assert shown.endswith(ELLIPSIS) and FULL.startswith(shown.removesuffix(ELLIPSIS).rstrip())
    assert "<wbr>" in long_cell and "#command-" in long_cell   # the … links to the appendix
    text = _text(page)
    appendix = text[text.index("Commands in full pid 4242"):]
    assert FULL in appendix and SHORT not in appendix        # only what was cut
    assert "Commands cut short (…) are in full under Commands in full" in text


def _command_lines(text: str, command: str) -> list[str]:
    """The PDF's lines that spell ``command`` (or its cut start), from its first line."""
    lines = [line.strip() for line in text.splitlines()]
    start = next(n for n, line in enumerate(lines) if line and command.startswith(line[:30])
                 and line[:30] == command[:30])
    out: list[str] = []
    for line in lines[start:]:
        if not line:
            break
        out.append(line)
        if line.endswith(ELLIPSIS) or len(" ".join(out)) >= len(command):
            break
    return out


@needs_pdftotext
def test_the_pdf_command_never_splits_a_word_and_the_appendix_has_it_all(
        long_session, tmp_path) -> None:
    pdf = export(long_session, "pdf", tmp_path / "r.pdf")
    text = "\n".join(_pdf_pages(pdf))
    body, appendix = text.split("Commands in full\n", 1)[0], text.rsplit("Commands in full", 1)[1]
    table = _command_lines(body, FULL)
    assert len(table) == 2 and table[-1].endswith(ELLIPSIS)
    cut = [*table[:-1], table[-1].removesuffix(ELLIPSIS).rstrip()]
    start = cut[0]
    for line in cut[1:]:
        start += line if start[-1] in "/=" else " " + line
    assert FULL.startswith(start) and FULL[len(start)] in " /=", table   # whole pieces
    assert _breaks_only_at_separators(cut, start)
    whole = _command_lines(appendix, FULL)
    assert _breaks_only_at_separators(whole, FULL), whole     # the whole command, unbroken
    assert "pid 4242 · python · GPU 0" in appendix and SHORT not in appendix
    assert SHORT in body.splitlines() or f"{SHORT}" in " ".join(body.split())


@needs_pdftotext
def test_a_command_that_fits_is_one_unbroken_line_in_the_pdf(oom_session, tmp_path) -> None:
    # the process table used to squeeze this into a narrow column: "llama-3.1-8" / "b"
    pdf = export(oom_session, "pdf", tmp_path / "r.pdf")
    lines = [line.strip() for line in "\n".join(_pdf_pages(pdf)).splitlines()]
    command = "python finetune.py --model llama-3.1-8b --lora 16 --batch 4 --pack-sequences"
    assert command in lines
    assert "Commands in full" not in lines                  # nothing was cut


# --- pages -----------------------------------------------------------------------------

def _render(report: Report, path: Path) -> list[str]:
    """``report`` as a PDF at ``path``: the text of each page."""
    from gpuwatch.sessions.pdf import render_pdf

    path.write_bytes(render_pdf(report))
    return _pdf_pages(path)


@needs_pdftotext
def test_no_pdf_page_is_the_footer_alone_or_ends_with_a_heading(
        oom_session, long_session, tmp_path) -> None:
    """The long-commands report with 0..59 rows in its events table: what follows (the
    "Commands in full" heading, the appendix, the footer) falls at every height of a
    page, a row (about 20 px) at a time. The footer used to get a page of its own at
    some of them, and the heading to end a page."""
    r = _report(long_session)
    (event,) = [ev for ev in _report(oom_session).events if ev.kind == "hint-critical"]
    seen_pages = set()
    for copies in range(60):
        pages = _render(dataclasses.replace(r, events=(event,) * copies), tmp_path / "r.pdf")
        seen_pages.add(len(pages))
        for n, page in enumerate(pages, 1):
            assert _without_foot(page), \
                f"with {copies} events, page {n} of {len(pages)} holds only the footer"
        assert "Made by gpuwatch" in pages[-1]               # on the last page, once
        assert sum("Made by gpuwatch" in page for page in pages) == 1
        for n, page in enumerate(pages, 1):
            where = f"with {copies} events, page {n} of {len(pages)}"
            lines = [line.strip() for line in page.splitlines() if line.strip()]
            assert f"page {n} of {len(pages)}" in lines, where
            body = [line for line in lines
                    if not re.match(r"(gpuwatch session|page \d+ of)", line)
                    and "Made by gpuwatch" not in line and "GPU's memory in use" not in line]
            assert body[-1] not in HEADINGS, f"{where} ends with the heading {body[-1]!r}"
    assert len(seen_pages) >= 2                              # the sweep crossed a page


@needs_pdftotext
def test_the_pdf_that_used_to_end_in_a_footer_page(tmp_path) -> None:
    # the whole bandwidth scenario: its hint used to fill page 1, the footer page 2
    session = record_scenario(tmp_path / "b.sqlite", "bandwidth")
    pages = _pdf_pages(export(session, "pdf", tmp_path / "r.pdf"))
    assert all(_without_foot(page) for page in pages)


# --- the summary block -----------------------------------------------------------------

def _glance(page: str) -> str:
    return page[page.index("<table class='glance'"):page.index("</table>",
                                                               page.index("class='glance'"))]


def test_the_summary_block_answers_at_a_glance(oom_session, tmp_path) -> None:
    r = _report(oom_session)
    (g,) = r.gpus
    assert g.peak_text == f"peak {peak_of_capacity(g.peak_used_bytes, g.total_bytes)}"
    assert g.peak_text == "peak 39.6 / 40.0 GiB (99 %)"
    page = export(oom_session, "html", tmp_path / "r.html").read_text()
    block = _glance(page)
    assert page.index("class='glance'") < page.index("<svg")      # before any chart
    text = _text(block)
    above = format_duration(g.time_above_90pct_s)
    assert f"GPU 0 NVIDIA A100-SXM4-40GB: peak 39.6 / 40.0 GiB (99 %), above 90 % for {above}" \
        in text
    w = r.worst_hint
    assert (w.severity, w.hint.code) == ("critical", "oom-risk")
    assert f"CRITICAL {w.hint.title} — oom-risk on GPU 0, opened at 2 min 39 s, critical at " \
           f"5 min 07 s · 1 more hint below" in text
    assert f"<p class='summary'>{r.summary[0]}</p>" in block   # the out-of-memory sentence
    assert f"Closed normally at {clock(r.info.ended_at_s)}, after 10 min." in text
    doc = report_to_json(r)
    assert doc["at_a_glance"] == [
        f"GPU 0 NVIDIA A100-SXM4-40GB: peak 39.6 / 40.0 GiB (99 %), above 90 % for {above}",
        f"Worst hint: {w.sentence}", r.summary[0], r.ending.sentence]
    assert doc["ending"]["state"] == CLOSED and doc["worst_hint"]["critical_at_s"] == \
        w.critical_at_s
    assert doc["gpus"][0]["peak_fraction"] == pytest.approx(g.peak_used_bytes / g.total_bytes,
                                                            abs=1e-4)


@needs_pdftotext
def test_the_pdf_opens_with_the_summary_block(oom_session, tmp_path) -> None:
    r = _report(oom_session)
    first = " ".join(_pdf_pages(export(oom_session, "pdf", tmp_path / "r.pdf"))[0].split())
    for words in ("peak 39.6 / 40.0 GiB (99 %)", "above 90 % for 1 min",
                  "CRITICAL GPU 0 memory full now", "opened at 2 min 39 s",
                  r.summary[0], "Closed normally at"):
        assert words in first
    assert first.index("Closed normally at") < first.index("Marked: warning")   # before charts


def test_every_gpu_has_its_line(tmp_path) -> None:
    session = record_scenario(tmp_path / "ddp.sqlite", "multi-gpu-ddp", until_s=60, step_s=2)
    r = _report(session)
    text = _text(_glance(render_html(r)))
    assert len(r.gpus) == 8
    for g in r.gpus:
        peak = peak_of_capacity(g.peak_used_bytes, g.total_bytes)
        assert f"GPU {g.index} NVIDIA H100 80GB HBM3: peak {peak}, never above 90 %" in text
        assert re.fullmatch(r"\d+\.\d / 79\.6 GiB \(\d+ %\)", peak)
    assert "Worst hint None: no hints fired during this session." in text


def _without_end(session: Path, copy: Path) -> Path:
    shutil.copy(session, copy)
    with sqlite3.connect(copy) as c:
        c.execute("UPDATE session SET ended_at_s = NULL")
    c.close()
    return copy


def test_a_session_without_an_end_time_was_cut_short(oom_session, tmp_path) -> None:
    session = _without_end(oom_session, tmp_path / "killed.sqlite")
    r = _report(session)
    assert r.ending.state == CUT_SHORT
    last = clock(r.info.started_at_s + r.info.duration_s)
    sentence = ("Cut short: no end time — a crash or kill stopped the recorder; the last "
                f"sample is 10 min in, at {last}.")
    assert r.ending.sentence == sentence
    page = render_html(r)
    assert f"<b>{html.escape(sentence)}</b>" in _glance(page)
    assert "ended no end time (cut short)" in _text(page)
    doc = report_to_json(r)
    assert doc["ending"] == {"state": "cut-short", "ended_at": None, "last_sample_s": 600.0,
                             "sentence": sentence}
    assert doc["at_a_glance"][-1] == sentence


def test_a_session_still_being_recorded_says_so(oom_session, tmp_path) -> None:
    session = _without_end(oom_session, tmp_path / "live.sqlite")
    with liveness.hold_live_lock(session):
        r = _report(session)
    assert r.ending.state == RECORDING
    assert r.ending.sentence.startswith("Still being recorded: this report covers the first "
                                        "10 min, to ")
    assert "not yet (still being recorded)" in _text(render_html(r))
    assert report_to_json(r)["ending"]["state"] == "recording"


@needs_pdftotext
@pytest.mark.parametrize("ended", [True, False])
def test_the_pdf_says_how_the_session_ended(oom_session, tmp_path, ended) -> None:
    session = oom_session if ended else _without_end(oom_session, tmp_path / "k.sqlite")
    first = " ".join(_pdf_pages(export(session, "pdf", tmp_path / "r.pdf"))[0].split())
    assert ("Closed normally at" in first) is ended
    assert ("Cut short: no end time — a crash or kill" in first) is not ended


# --- the parts -------------------------------------------------------------------------

@pytest.mark.parametrize(("peak", "total", "expected"), [
    (int(39.57 * GiB), 40 * GiB, "39.6 / 40.0 GiB (99 %)"),
    (int(39.99 * GiB), 40 * GiB, "40.0 / 40.0 GiB (99 %)"),       # only a full GPU is 100 %
    (40 * GiB, 40 * GiB, "40.0 / 40.0 GiB (100 %)"),
    (512 * 1024**2, 80 * GiB, "0.5 / 80.0 GiB (1 %)"),
    (0, 24 * GiB, "0.0 / 24.0 GiB (0 %)"),
    (300 * 1024**2, 1024**3 - 1, "300.0 / 1024.0 MiB (29 %)"),
])
def test_peak_against_capacity(peak, total, expected) -> None:
    assert peak_of_capacity(peak, total) == expected


def _hint(code: str, severity: str, first: float, gpu: int | None = 0,
          pid: int | None = None) -> HintRow:
    return HintRow(code, severity, gpu, pid, f"{code} title", None, (), first, first + 100,
                   None)


def test_the_worst_hint_is_the_most_severe_then_the_first() -> None:
    hints = [_hint("underused", "info", 1), _hint("leak", "warning", 5, pid=3),
             _hint("oom-risk", "warning", 10), _hint("gpu-lost", "critical", 50, gpu=1)]
    assert worst_hint([]) is None
    assert worst_hint(hints[:2]).hint.code == "leak"
    w = worst_hint(hints)
    assert (w.hint.code, w.severity, w.critical_at_s, w.others) == ("gpu-lost", "critical",
                                                                    None, 3)
    assert w.sentence == "CRITICAL gpu-lost title — gpu-lost on GPU 1, opened at 50 s."
    # a warning that turned critical (its row keeps its last severity) before 50 s wins
    turned = [EventRow(30.0, "hint-critical", 0, None, "oom-risk")]
    w = worst_hint(hints, turned)
    assert (w.hint.code, w.severity, w.critical_at_s) == ("oom-risk", "critical", 30.0)
    assert w.when == "opened at 10 s, critical at 30 s"


def test_a_process_chart_names_its_lines_under_it_and_its_title_clears_the_capacity() -> None:
    import numpy as np

    from gpuwatch.sessions.charts_svg import memory_chart

    t = np.arange(0.0, 60.0)
    series = [(f"{120000 + k} python", t, np.full(60, float(k * GiB))) for k in range(7)]
    title = "GPU 0: top processes " + ", ".join(label for label, _, _ in series)
    svg = memory_chart(series, 45 * GiB, title=title, legend=True)
    shown = re.search(r'font-weight="bold" fill="#111">(.*?)</text>', svg).group(1)
    assert shown.endswith("…") and len(shown) * 7.6 < 720 - 64 - 12 - 17 * 6.9
    for label, _, _ in series:                                  # each line named, in rows
        assert f">{label}</text>" in svg
    height = int(re.search(r'<svg [^>]*height="(\d+)"', svg).group(1))
    assert height > 220                                         # grown by the legend's rows
    plain = memory_chart(series[:1], 45 * GiB, title="GPU 0")
    assert ">120000 python</text>" not in plain and 'height="220"' in plain
