"""The HTML report: one self-contained file, charts inline as SVG, printable.

Every string that came from the system (process names, command lines, users,
container ids, hint text) goes through ``html.escape``: a process named
``<script>`` shows as text.
"""

from __future__ import annotations

import html
import shlex
import time
from collections.abc import Callable

from gpuwatch import __version__
from gpuwatch.core.units import format_bytes, format_duration
from gpuwatch.core.wording import plural
from gpuwatch.sessions.charts_svg import memory_chart
from gpuwatch.sessions.report_json import iso
from gpuwatch.sessions.report_model import GpuSummary, Report

# Qt's rich text needs the width as an attribute, and cell padding as CSS longhands.
_TABLE = "<table width='100%' cellspacing='0'>"

# (svg markup, a name for it) -> what to put in the page; PDF rendering swaps in images
ChartPlacer = Callable[[str, str], str]

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
code { font-family: "DejaVu Sans Mono", monospace; font-size: 8.5pt; }
.hint { margin: 8pt 0 12pt 0; }
.summary { font-weight: bold; }
.marks { color: #444; font-size: 8.5pt; }
.hint p { margin: 2pt 0; }
footer { margin-top: 24pt; color: #666; font-size: 8.5pt; }
@media print { body { margin: 0; } h2 { break-after: avoid; } svg { break-inside: avoid; } }
"""


def e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _inline(svg: str, name: str) -> str:
    return svg


def marks_caption(g: GpuSummary) -> str:
    """The chart's marks in words (also the only way they reach the PDF's text):
    "Marked: warning at 2 min 25 s · peak 39.6 GiB at 8 min 11 s · …"."""
    return "Marked: " + " · ".join(
        f"{m.label} at {format_duration(m.t_s)}"
        + (f" ({m.code})" if m.is_line and m.code else "") for m in g.marks) + "."


def render_html(r: Report, place_chart: ChartPlacer = _inline) -> str:
    i = r.info
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
           f"<title>gpuwatch session {e(i.uuid[:8])} on {e(i.host)}</title>"
           f"<style>{STYLE}</style></head><body>"]
    backend = "simulated GPUs" if i.backend_kind == "simulated" else "NVML"
    if i.scenario:
        backend += f" (scenario {i.scenario})"
    if i.driver_version:
        backend += f", driver {i.driver_version}"
    ended = iso(i.ended_at_s) or "not closed (the recorder was stopped abruptly)"
    out.append("<h1>GPU memory session</h1>")
    out.append(f"<p class='meta'>Host <b>{e(i.host)}</b> · {e(backend)}<br>"
               f"Started {e(iso(i.started_at_s))} · ended {e(ended)} · "
               f"{e(format_duration(i.duration_s))} · {plural(i.samples, 'sample')} · "
               f"session {e(i.uuid)}</p>")
    for sentence in r.summary:
        out.append(f"<p class='summary'>{e(sentence)}</p>")

    out.append("<h2>GPUs</h2>" + _TABLE
               + "<tr><th>GPU</th><th>Name</th><th class='num'>Capacity</th>"
               "<th class='num'>Peak</th><th class='num'>Mean</th>"
               "<th class='num'>Above 90 %</th></tr>")
    for g in r.gpus:
        out.append(f"<tr><td>{g.index}</td><td class='nowrap'>{e(g.name)}</td>"
                   f"<td class='num'>{e(format_bytes(g.total_bytes))}</td>"
                   f"<td class='num'>{e(format_bytes(g.peak_used_bytes))}</td>"
                   f"<td class='num'>{e(format_bytes(g.mean_used_bytes))}</td>"
                   f"<td class='num'>{e(format_duration(g.time_above_90pct_s))}</td></tr>")
    out.append("</table>")
    for g in r.gpus:
        svg = memory_chart([(f"GPU {g.index} used", g.t_s, g.used_bytes)], g.total_bytes,
                           title=f"GPU {g.index} · {g.name or ''}: memory used", marks=g.marks)
        out.append(place_chart(svg, f"gpu-{g.index}"))
        if g.marks:
            out.append(f"<p class='marks'>{e(marks_caption(g))}</p>")

    out.append(f"<h2>Top processes by peak memory</h2><p class='meta'>{len(r.processes)} of "
               f"{plural(r.process_count, 'process', 'processes')} seen.</p>")
    if r.processes:
        out.append(_TABLE + "<tr><th class='num'>PID</th><th>GPU</th><th>User</th><th>Name</th>"
                   "<th>Command</th><th class='num'>Peak</th><th class='num'>Seen</th></tr>")
        for p in r.processes:
            row = p.row
            command = shlex.join(row.cmdline) if row.cmdline else ""
            if row.container:
                command = f"[{row.container}] {command}"
            seen = f"{format_duration(row.first_seen_s)} – {format_duration(row.last_seen_s)}"
            out.append(f"<tr><td class='num'>{row.pid}</td><td>{row.gpu}</td>"
                       f"<td class='nowrap'>{e(row.user)}</td>"
                       f"<td class='nowrap'>{e(row.name)}</td>"
                       f"<td><code>{e(command)}</code></td>"
                       f"<td class='num'>{e(format_bytes(row.peak_used_bytes))}</td>"
                       f"<td class='num'>{e(seen)}</td></tr>")
        out.append("</table>")
        for gpu in sorted({p.row.gpu for p in r.processes}):
            series = [(f"{p.row.pid} {p.row.name}", p.t_s, p.used_bytes)
                      for p in r.processes if p.row.gpu == gpu]
            total = next((g.total_bytes for g in r.gpus if g.index == gpu), None)
            legend = ", ".join(f"{pid_name}" for pid_name, _, _ in series)
            svg = memory_chart(series, total, title=f"GPU {gpu}: top processes ({legend})"[:110])
            out.append(place_chart(svg, f"procs-{gpu}"))
    else:
        out.append("<p>No GPU processes were seen.</p>")

    out.append("<h2>Hints</h2>")
    if r.hints:
        for h in r.hints:
            where = f"GPU {h.gpu}" if h.gpu is not None else ""
            if h.pid is not None:
                where += f", pid {h.pid}"
            span = format_duration(h.first_seen_s)
            span += f" – {format_duration(h.closed_s)}" if h.closed_s is not None else " – end"
            actions = "".join(f"<li>{e(a)}</li>" for a in h.actions)
            out.append(f"<div class='hint'><p><span class='sev-{e(h.severity)}'>"
                       f"{e(h.severity.upper())}</span> <b>{e(h.title)}</b><br>"
                       f"<span class='meta'><code>{e(h.code)}</code> · {e(where)} · "
                       f"{e(span)} from the start</span></p>"
                       f"<p>{e(h.detail)}</p>{'<ul>' + actions + '</ul>' if actions else ''}"
                       "</div>")
    else:
        out.append("<p>No hints fired during this session.</p>")

    if r.budgets:
        out.append("<h2>Budget versus measured</h2>" + _TABLE
                   + "<tr><th>GPU</th><th class='num'>PID"
                   "</th><th>Budget</th><th class='num'>Predicted peak</th>"
                   "<th class='num'>Measured peak</th><th class='num'>Unexplained</th></tr>")
        for b in r.budgets:
            out.append(f"<tr><td>{b.gpu}</td><td class='num'>{b.pid}</td><td>{e(b.label)}</td>"
                       f"<td class='num'>{e(format_bytes(b.predicted_bytes))}</td>"
                       f"<td class='num'>{e(format_bytes(b.measured_peak_bytes))}</td>"
                       f"<td class='num'>{e(format_bytes(b.unexplained_bytes))}</td></tr>")
        out.append("</table>")

    notable = [ev for ev in r.events if not ev.kind.startswith("process-")]
    if notable:
        out.append("<h2>Events</h2>" + _TABLE + "<tr><th class='num'>At</th><th>Event</th>"
                   "<th>GPU</th><th>Detail</th></tr>")
        for ev in notable:
            out.append(f"<tr><td class='num'>{e(format_duration(ev.t_s))}</td>"
                       f"<td>{e(ev.kind)}</td><td>{e(ev.gpu)}</td><td>{e(ev.detail)}</td></tr>")
        out.append("</table>")
    out.append(f"<footer>Made by gpuwatch {e(__version__)} on "
               f"{e(time.strftime('%Y-%m-%d %H:%M'))}. Times are from the session start. "
               "Sizes in IEC units (1 GiB = 1024³ bytes). <i>Above 90 %</i>: time with at least "
               "90 % of a GPU's memory in use.</footer></body></html>")
    return "\n".join(out)
