"""The HTML report: one self-contained file, charts inline as SVG, printable.

Every string that came from the system (process names, command lines, users,
container ids, hint text) goes through ``html.escape``: a process named
``<script>`` shows as text.

The page opens with a summary block (each GPU's peak against its capacity and its
time above 90 %, the worst hint, the out-of-memory sentences, how the session ended),
then the GPUs and their charts, the processes, the hints, the events, and — when a
command line was too long for the process table — "Commands in full".

A command line wraps only after a space, ``/`` or ``=``: in a browser each piece
between those is a ``white-space: nowrap`` span, and for the PDF (``paged``) the lines
are broken here, in a monospace font whose width is known, and never re-wrapped.

For the PDF the same page is written for Qt's paged text engine (:class:`Paged`):
each process is its own small table whose header row is the process, so that Qt
never leaves a process at the foot of a page without its command line; blocks that
must stay with the next one (a heading, a hint's title) carry the anchor
:data:`KEEP_WITH_NEXT`, a chart's caption :data:`KEEP_WITH_PREVIOUS`, a command line
:data:`KEEP_WHOLE`, which the PDF writer honours; and the footer is left to the PDF
writer, which prints it at the foot of the last page.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from gpuwatch import __version__
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.core.wording import plural
from gpuwatch.sessions.charts_svg import memory_chart
from gpuwatch.sessions.report_commands import (
    COMMAND_COLUMNS,
    COMMAND_LINES,
    ELLIPSIS,
    command_line,
    command_pieces,
    cut_command,
    wrap_command,
)
from gpuwatch.sessions.report_model import (
    CLOSED,
    RECORDING,
    GpuSummary,
    ProcessSummary,
    Report,
    clock,
)

# Qt's rich text needs the width as an attribute, and cell padding as CSS longhands.
_TABLE = "<table width='100%' cellspacing='0'>"
KEEP_WITH_NEXT, KEEP_WITH_PREVIOUS = "keep-with-next", "keep-with-previous"
KEEP_WHOLE = "keep-whole"          # a block of several lines that no page may split
APPENDIX_TITLE = "Commands in full"
_LONG_PIECE = 40        # a piece longer than this may break anywhere (in a browser)

# (svg markup, a name for it) -> what to put in the page; PDF rendering swaps in images
ChartPlacer = Callable[[str, str], str]


@dataclass(frozen=True)
class Paged:
    """How the PDF lays the page out: ``width_px`` of text (device pixels),
    ``code_columns`` characters of the monospace font in a full-width table cell, and
    how many device pixels Qt gives to a pixel in the page's markup."""

    width_px: float
    code_columns: int
    px_per_html_px: float = 1.0


STYLE = """
body { font-family: "DejaVu Sans", Arial, sans-serif; color: #111; margin: 18pt auto;
       max-width: 960px; font-size: 10pt; }
h1 { font-size: 17pt; margin-bottom: 3pt; }
h2 { font-size: 12.5pt; margin-top: 20pt; border-bottom: 0.75pt solid #ccc; padding-bottom: 2pt; }
table { border-collapse: collapse; width: 100%; margin: 6pt 0; }
th, td { text-align: left; padding-left: 6px; padding-right: 6px; padding-top: 3px;
         padding-bottom: 3px; border-bottom: 0.75pt solid #e5e7eb;
         vertical-align: top; }
th { background: #f3f4f6; white-space: nowrap; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.nowrap { white-space: nowrap; }
.meta { color: #444; }
.sev-critical { color: #b91c1c; font-weight: bold; }
.sev-warning { color: #b45309; font-weight: bold; }
.sev-info { color: #1d4ed8; }
code, .cmdlines { font-family: "DejaVu Sans Mono", monospace; font-size: 8.5pt; }
table.glance { margin-top: 10pt; margin-bottom: 6pt; background-color: #f9fafb; }
table.glance th { width: 16%; color: #374151; }
table.glance td { padding-top: 4px; padding-bottom: 4px; }
table.glance p { margin: 0; }
.hint { margin: 8pt 0 12pt 0; }
.summary { font-weight: bold; }
.marks { color: #444; font-size: 8.5pt; }
.hint p { margin: 2pt 0; }
tr.proc td { border-bottom-style: none; padding-bottom: 0; }
td.cmd { padding-left: 18px; padding-top: 1px; color: #374151; }
td.cmd code, .cmdfull code { white-space: normal; overflow-wrap: anywhere; }
span.w { white-space: nowrap; }
p.cmdlines { margin: 0; }
.cmdfull { margin: 2pt 0 8pt 18px; }
table.proc { margin: 0; }
footer { margin-top: 24pt; color: #666; font-size: 8.5pt; }
@media print { body { margin: 0; } h2 { break-after: avoid; } svg { break-inside: avoid; }
               tbody.proc, table.glance { break-inside: avoid; } }
"""


# for Qt's text engine, whose pages have their own margins (it would give every block
# the body's margin)
PAGED_STYLE = """
body { margin: 0; }
p.gap { margin: 0; font-size: 6pt; }
"""


def e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _evidence(detail: str | None) -> str:
    """A hint's evidence, one sentence a line (stored one a line; files that joined them
    with spaces show one line)."""
    lines = [line for line in (detail or "").splitlines() if line.strip()]
    return f"<p>{'<br>'.join(map(e, lines))}</p>" if lines else ""


def _inline(svg: str, name: str) -> str:
    return svg


def marks_caption(g: GpuSummary) -> str:
    """The chart's marks in words (also the only way they reach the PDF's text):
    "Marked: warning at 2 min 25 s · peak 39.6 GiB at 8 min 11 s · …"."""
    return "Marked: " + " · ".join(
        f"{m.label} at {format_duration(m.t_s)}"
        + (f" ({m.code})" if m.is_line and m.code else "") for m in g.marks) + "."


def footer_html() -> str:
    """What the report says at its end: who made it, and how to read its figures."""
    return (f"Made by gpuwatch {e(__version__)} on {e(time.strftime('%Y-%m-%d %H:%M'))}. "
            "Times are from the session start. Sizes in IEC units (1 GiB = 1024³ bytes). "
            "<i>Above 90 %</i>: time with at least 90 % of a GPU's memory in use.")


def command_html(command: str) -> str:
    """``command`` for a browser: it may wrap only after a space, ``/`` or ``=``."""
    out = []
    for piece in command_pieces(command):
        if piece.isspace():
            out.append(" ")
        elif len(piece) > _LONG_PIECE:          # longer than a narrow window's line
            out.append(e(piece))
        else:
            out.append(f"<span class='w'>{e(piece)}</span>")
            if piece[-1] in "/=":
                out.append("<wbr>")
    return "".join(out)


def command_lines_html(command: str, columns: int) -> str:
    """``command`` for the PDF: broken here into lines of ``columns`` characters, only
    after a space, ``/`` or ``=``, in a paragraph Qt does not wrap again."""
    return f"<p class='cmdlines'><a name='{KEEP_WHOLE}'></a>" + "<br>".join(
        e(line) for line in wrap_command(command, columns)) + "</p>"


class _Page:
    def __init__(self, report: Report, place_chart: ChartPlacer, paged: Paged | None):
        self.r = report
        self.place_chart = place_chart
        self.paged = paged
        self.out: list[str] = []
        self.cut: list[tuple[ProcessSummary, str]] = []   # (process, full command)

    # blocks that the PDF keeps on one page with the next (or the previous) one
    def keep_next(self) -> str:
        return f"<a name='{KEEP_WITH_NEXT}'></a>" if self.paged else ""

    def keep_previous(self) -> str:
        return f"<a name='{KEEP_WITH_PREVIOUS}'></a>" if self.paged else ""

    def h2(self, title: str, anchor: str = "") -> None:
        ident = f" id='{anchor}'" if anchor and not self.paged else ""
        if self.paged and self.out and self.out[-1].endswith("</table>"):
            self.out.append("<p class='gap'>&nbsp;</p>")   # Qt drops the margin after a table
        self.out.append(f"<h2{ident}>{self.keep_next()}{e(title)}</h2>")

    def render(self) -> str:
        r, i = self.r, self.r.info
        self.out.append(f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                        f"<title>gpuwatch session {e(i.uuid[:8])} on {e(i.host)}</title>"
                        f"<style>{STYLE}{PAGED_STYLE if self.paged else ''}</style>"
                        "</head><body>")
        backend = {"simulated": "simulated GPUs",
                   "prometheus": f"Prometheus at {i.host}"}.get(i.backend_kind, "NVML")
        if i.scenario:
            backend += f" (scenario {i.scenario})"
        if i.driver_version:
            backend += f", driver {i.driver_version}"
        if i.ended_at_s is not None:
            ended = clock(i.ended_at_s)
        elif r.ending is not None and r.ending.state == RECORDING:
            ended = "not yet (still being recorded)"
        else:
            ended = "no end time (cut short)"
        self.out.append("<h1>GPU memory session</h1>")
        self.out.append(f"<p class='meta'>Host <b>{e(i.host)}</b> · {e(backend)}<br>"
                        f"Started {e(clock(i.started_at_s))} · ended {e(ended)} · "
                        f"{e(format_duration(i.duration_s))} · "
                        f"{plural(i.samples, 'sample')} · session {e(i.uuid)}</p>")
        self.glance()
        self.gpus()
        self.processes()
        self.hints()
        self.budgets()
        self.events()
        self.appendix()
        if not self.paged:
            self.out.append(f"<footer>{footer_html()}</footer>")
        self.out.append("</body></html>")
        return "\n".join(self.out)

    def glance(self) -> None:
        """The summary block: what a reader wants before any chart."""
        r = self.r
        rows = []
        memory = "<br>".join(
            f"<b>GPU {g.index}</b>{' ' + e(g.name) if g.name else ''}: "
            f"<b>{e(g.peak_text)}</b>, {e(g.high_use_text)}" for g in r.gpus)
        rows.append(("Memory", memory or "No GPUs were recorded."))
        w = r.worst_hint
        if w is None:
            rows.append(("Worst hint", "None: no hints fired during this session."))
        else:
            where = f" on {e(w.where)}" if w.where else ""
            more = (f" · {plural(w.others, 'more hint')} below" if w.others else "")
            rows.append(("Worst hint",
                         f"<span class='sev-{e(w.severity)}'>{e(w.severity.upper())}</span> "
                         f"<b>{e(w.hint.title)}</b> — <code>{e(w.hint.code)}</code>{where}, "
                         f"{e(w.when)}{more}"))
        if r.summary:
            rows.append(("Out of memory", "".join(f"<p class='summary'>{e(s)}</p>"
                                                  for s in r.summary)))
        if r.ending is not None:
            state = e(r.ending.sentence)       # bold unless it closed normally
            rows.append(("Recording", state if r.ending.state == CLOSED else f"<b>{state}</b>"))
        self.out.append("<table class='glance' width='100%' cellspacing='0'>" + "".join(
            f"<tr><th>{e(label)}</th><td>{value}</td></tr>" for label, value in rows)
            + "</table>")

    def gpus(self) -> None:
        r = self.r
        self.h2("GPUs")
        self.out.append(_TABLE + "<tr><th>GPU</th><th>Name</th><th class='num'>Capacity</th>"
                        "<th class='num'>Peak</th><th class='num'>Mean</th>"
                        "<th class='num'>Above 90 %</th></tr>")
        for g in r.gpus:
            self.out.append(
                f"<tr><td>{g.index}</td><td class='nowrap'>{e(g.name)}</td>"
                f"<td class='num'>{e(format_bytes(g.total_bytes))}</td>"
                f"<td class='num'>{e(format_bytes(g.peak_used_bytes))}</td>"
                f"<td class='num'>{e(format_bytes(g.mean_used_bytes))}</td>"
                f"<td class='num'>{e(format_duration(g.time_above_90pct_s))}</td></tr>")
        self.out.append("</table>")
        for g in r.gpus:
            svg = memory_chart([(f"GPU {g.index} used", g.t_s, g.used_bytes)], g.total_bytes,
                               title=f"GPU {g.index} · {g.name or ''}: memory used",
                               marks=g.marks)
            self.out.append(self.place_chart(svg, f"gpu-{g.index}"))
            if g.marks:
                self.out.append(f"<p class='marks'>{self.keep_previous()}"
                                f"{e(marks_caption(g))}</p>")

    def processes(self) -> None:
        r = self.r
        columns = self.paged.code_columns if self.paged else COMMAND_COLUMNS
        shown = []
        for p in r.processes:
            full = command_line(p.row)
            short = cut_command(full, columns, COMMAND_LINES)
            if short != full:
                self.cut.append((p, full))
            shown.append((p, short))
        self.h2("Top processes by peak memory")
        note = (f" Commands cut short ({ELLIPSIS}) are in full under <i>{APPENDIX_TITLE}</i> "
                "at the end." if self.cut else "")
        self.out.append(f"<p class='meta'>{self.keep_next()}{len(r.processes)} of "
                        f"{plural(r.process_count, 'process', 'processes')} seen, each with "
                        f"its command line under it.{note}</p>")
        if not r.processes:
            self.out.append("<p>No GPU processes were seen.</p>")
            return
        heads = ("<th class='num'>PID</th>", "<th>GPU</th>", "<th>User</th>", "<th>Name</th>",
                 "<th class='num'>Peak</th>", "<th class='num'>Seen</th>")
        cells = [self._process_cells(p) for p, _ in shown]
        if self.paged:
            # columns as wide as their texts, then an empty one: the command under them
            # spans the page
            widths = self._widths(cells)
            heads = (*(h.replace("<th", f"<th width='{w}'", 1)
                       for h, w in zip(heads, widths, strict=True)), "<th></th>")
            for k, ((_, short), row) in enumerate(zip(shown, cells, strict=True)):
                # the process is the table's header: Qt moves it to the next page with
                # its command line rather than leave it alone at the foot of a page
                head = f"<tr>{''.join(heads)}</tr>" if k == 0 else ""
                tds = "".join(c.replace("<td", f"<td width='{w}'", 1)
                              for c, w in zip(row, widths, strict=True)) + "<td></td>"
                self.out.append(
                    "<table class='proc' width='100%' cellspacing='0'><thead>" + head
                    + f"<tr class='proc'>{tds}</tr></thead><tr><td class='cmd' colspan='7'>"
                    + command_lines_html(short, self.paged.code_columns) + "</td></tr></table>")
        else:
            self.out.append("<table width='100%' cellspacing='0'><thead><tr>" + "".join(heads)
                            + "</tr></thead>")
            for (p, short), row in zip(shown, cells, strict=True):
                if short != command_line(p.row):      # the ellipsis leads to it in full
                    command = command_html(short.removesuffix(ELLIPSIS)) + \
                        f"<a href='#{_command_id(p)}' title='the full command'>{ELLIPSIS}</a>"
                else:
                    command = command_html(short)
                self.out.append(f"<tbody class='proc'><tr class='proc'>{''.join(row)}</tr>"
                                f"<tr><td class='cmd' colspan='6'><code>{command}</code></td>"
                                "</tr></tbody>")
            self.out.append("</table>")
        for gpu in sorted({p.row.gpu for p in r.processes}):
            series = [(f"{p.row.pid} {p.row.name}", p.t_s, p.used_bytes)
                      for p in r.processes if p.row.gpu == gpu]
            total = next((g.total_bytes for g in r.gpus if g.index == gpu), None)
            svg = memory_chart(series, total, title=f"GPU {gpu}: top processes", legend=True)
            self.out.append(self.place_chart(svg, f"procs-{gpu}"))

    @staticmethod
    def _process_cells(p: ProcessSummary) -> list[str]:
        row = p.row
        seen = f"{format_duration(row.first_seen_s)} – {format_duration(row.last_seen_s)}"
        return [f"<td class='num'>{row.pid}</td>", f"<td>{row.gpu}</td>",
                f"<td class='nowrap'>{e(row.user)}</td>",
                f"<td class='nowrap'>{e(row.name)}</td>",
                f"<td class='num'>{e(format_bytes(row.peak_used_bytes))}</td>",
                f"<td class='num'>{e(seen)}</td>"]

    def _widths(self, cells: list[list[str]]) -> list[int]:
        """Each column as wide as its longest text (an estimate in the report's font), in
        the markup's pixels: the same in every process's table."""
        assert self.paged is not None
        texts = [["PID", "GPU", "User", "Name", "Peak", "Seen"]]
        texts += [[html.unescape(c[c.index(">") + 1: c.rindex("<")]) for c in row]
                  for row in cells]
        device = [min(max(len(t[col]) for t in texts), 28) * 8 + 20 for col in range(6)]
        return [math.ceil(w / self.paged.px_per_html_px) for w in device]

    def hints(self) -> None:
        r = self.r
        self.h2("Hints")
        if not r.hints:
            self.out.append("<p>No hints fired during this session.</p>")
            return
        for h in r.hints:
            where = f"GPU {h.gpu}" if h.gpu is not None else ""
            if h.pid is not None:
                where += f", pid {h.pid}"
            span = format_duration(h.first_seen_s)
            span += f" – {format_duration(h.closed_s)}" if h.closed_s is not None else " – end"
            actions = "".join(f"<li>{e(a)}</li>" for a in h.actions)
            self.out.append(f"<div class='hint'><p>{self.keep_next()}"
                            f"<span class='sev-{e(h.severity)}'>"
                            f"{e(h.severity.upper())}</span> <b>{e(h.title)}</b><br>"
                            f"<span class='meta'><code>{e(h.code)}</code> · {e(where)} · "
                            f"{e(span)} from the start</span></p>"
                            f"{_evidence(h.detail)}"
                            f"{'<ul>' + actions + '</ul>' if actions else ''}</div>")

    def budgets(self) -> None:
        r = self.r
        if not r.budgets:
            return
        self.h2("Budget versus measured")
        self.out.append(_TABLE + "<tr><th>GPU</th><th class='num'>PID"
                        "</th><th>Budget</th><th class='num'>Predicted peak</th>"
                        "<th class='num'>Measured peak</th><th class='num'>Unexplained</th></tr>")
        for b in r.budgets:
            self.out.append(
                f"<tr><td>{b.gpu}</td><td class='num'>{b.pid}</td><td>{e(b.label)}</td>"
                f"<td class='num'>{e(format_bytes(b.predicted_bytes))}</td>"
                f"<td class='num'>{e(format_bytes(b.measured_peak_bytes))}</td>"
                f"<td class='num'>{e(format_bytes(b.unexplained_bytes))}</td></tr>")
        self.out.append("</table>")

    def events(self) -> None:
        notable = [ev for ev in self.r.events if not ev.kind.startswith("process-")]
        if not notable:
            return
        self.h2("Events")
        self.out.append(_TABLE + "<tr><th class='num'>At</th><th>Event</th>"
                        "<th>GPU</th><th>Detail</th></tr>")
        for ev in notable:
            self.out.append(f"<tr><td class='num'>{e(format_duration(ev.t_s))}</td>"
                            f"<td>{e(ev.kind)}</td><td>{e(ev.gpu)}</td><td>{e(ev.detail)}</td>"
                            "</tr>")
        self.out.append("</table>")

    def appendix(self) -> None:
        """The command lines that the process table cut short, whole."""
        if not self.cut:
            return
        self.h2(APPENDIX_TITLE, "commands")
        for p, full in self.cut:
            row = p.row
            who = f"pid {row.pid} · {row.name or 'unnamed'} · GPU {row.gpu}"
            if self.paged:
                self.out.append(f"<p class='meta'>{self.keep_next()}{e(who)}</p>"
                                f"<div class='cmdfull'>"
                                f"{command_lines_html(full, self.paged.code_columns - 2)}"
                                "</div>")
            else:
                self.out.append(f"<p class='meta' id='{_command_id(p)}'>{e(who)}</p>"
                                f"<p class='cmdfull'><code>{command_html(full)}</code></p>")


def _command_id(p: ProcessSummary) -> str:
    return f"command-{p.row.id}"


def render_html(r: Report, place_chart: ChartPlacer = _inline,
                paged: Paged | None = None) -> str:
    """The report as an HTML page; ``paged`` writes it for the PDF (see the module)."""
    return _Page(r, place_chart, paged).render()
