"""Small SVG line charts for reports: self-contained, no scripts, no network.

Long series are reduced with peak-preserving decimation (the min and max of each
bucket are both kept), so a spike that nearly caused an OOM never disappears.

A memory chart can carry marks (:class:`ChartMark`): vertical lines (the first warning,
the first critical hint) labelled at the top, and points (the peak, a process death)
labelled beside them. Labels sit on a pale backing and never on one another: each takes
the first free spot among a few around its mark, in lanes.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from gpuwatch.core.units import format_bytes, format_duration

# process colours: none of them red, orange or amber, which the report keeps for warning
# and critical marks (a process is not a danger)
PALETTE = ("#2563eb", "#0f766e", "#16a34a", "#9333ea", "#4d7c0f", "#0891b2", "#64748b",
           "#db2777")


def decimate(t: np.ndarray, y: np.ndarray, buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """At most 2 x ``buckets`` points keeping each bucket's minimum and maximum in order."""
    n = t.size
    if n <= 2 * buckets:
        return t, y
    edges = np.linspace(0, n, buckets + 1).astype(int)
    out_t: list[float] = []
    out_y: list[float] = []
    for a, b in itertools.pairwise(edges):
        seg = y[a:b]
        if np.all(np.isnan(seg)):
            out_t.append(float(t[a]))
            out_y.append(np.nan)
            continue
        lo, hi = int(np.nanargmin(seg)), int(np.nanargmax(seg))
        for k in sorted({lo, hi}):
            out_t.append(float(t[a + k]))
            out_y.append(float(seg[k]))
    return np.array(out_t), np.array(out_y)


_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
               43200, 86400, 172800, 604800)


def _nice_step(span: float, ticks: int = 4) -> float:
    raw = span / ticks if span > 0 else 1.0
    magnitude = 10 ** np.floor(np.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * magnitude:
            return float(m * magnitude)
    return float(10 * magnitude)


class ChartMark(Protocol):
    """What :func:`memory_chart` needs of a mark (``report_model.TimelineMark`` has it)."""

    kind: str                  # "warning", "critical" (lines); "peak", "likely-oom" (points)
    t_s: float
    label: str
    used_bytes: int | None     # a point's height; a point without one is drawn as a line


MARK_COLORS = {"warning": "#b45309", "critical": "#b91c1c", "peak": "#111827",
               "likely-oom": "#b91c1c"}
_LINE_KINDS = ("warning", "critical")
_FONT_PX = 10
_CHAR_PX = 6.3           # DejaVu Sans at 10 px, a little over its average advance
_LANE_PX = 14            # one label row


def _label_width(text: str) -> float:
    return len(text) * _CHAR_PX + 6


class _Labels:
    """Places labels inside the plot area so that none overlaps another (or a mark)."""

    def __init__(self, left: float, top: float, right: float, bottom: float):
        self.area = (left, top, right, bottom)
        self.taken: list[tuple[float, float, float, float]] = []

    def block(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.taken.append((x0, y0, x1, y1))

    def place(self, text: str, candidates: list[tuple[float, float, str]]) -> tuple[float, float,
                                                                                    str]:
        """The first (x, baseline, anchor) among ``candidates`` whose box fits the area
        and is free; else the first candidate that fits, else the first."""
        w = _label_width(text)
        left, top, right, bottom = self.area
        fitting = []
        for x, y, anchor in candidates:
            box = self._box(x, y, anchor, w)
            if box[0] < left or box[2] > right or box[1] < top or box[3] > bottom:
                continue
            fitting.append((x, y, anchor))
            if not any(_overlap(box, t) for t in self.taken):
                self.taken.append(box)
                return x, y, anchor
        x, y, anchor = (fitting or candidates)[0]
        self.taken.append(self._box(x, y, anchor, w))
        return x, y, anchor

    @staticmethod
    def _box(x: float, y: float, anchor: str, w: float) -> tuple[float, float, float, float]:
        x0 = x - 3 if anchor == "start" else x - w + 3
        return (x0, y - _FONT_PX - 1, x0 + w, y + 3)


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _label(x: float, y: float, anchor: str, text: str, colour: str) -> str:
    w = _label_width(text)
    x0 = x - 3 if anchor == "start" else x - w + 3
    return (f'<rect x="{x0:.1f}" y="{y - _FONT_PX - 1:.1f}" width="{w:.1f}" '
            f'height="{_FONT_PX + 4}" fill="#ffffff" fill-opacity="0.85"/>'
            f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{_FONT_PX}" '
            f'fill="{colour}">{html.escape(text)}</text>')


def _draw_marks(marks: Sequence[ChartMark], x, y, left: float, top: float, pw: float,
                ph: float, t0: float, t1: float) -> tuple[list[str], list[str]]:
    """(shapes drawn under the labels, labels drawn last) for ``marks``."""
    shapes: list[str] = []
    labels: list[str] = []
    lanes = _Labels(left + 2, top + 2, left + pw - 2, top + ph - 2)
    lines = [m for m in marks if m.kind in _LINE_KINDS or m.used_bytes is None]
    points = [m for m in marks if m not in lines]
    for m in marks:                          # the points' symbols are not to be covered
        if m in points and t0 <= m.t_s <= t1:
            px, py = x(m.t_s), y(m.used_bytes)
            lanes.block(px - 5, py - 5, px + 5, py + 5)
    for m in lines:
        if not t0 <= m.t_s <= t1:
            continue
        px = x(m.t_s)
        colour = MARK_COLORS.get(m.kind, "#374151")
        shapes.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" '
                      f'stroke="{colour}" stroke-width="1.2" stroke-dasharray="3,3">'
                      f'<title>{html.escape(m.label)}</title></line>')
        candidates = []
        for k in range(6):                   # right of the line, else left, lane by lane
            lane = top + 13 + k * _LANE_PX
            candidates += [(px + 4, lane, "start"), (px - 4, lane, "end")]
        labels.append(_label(*lanes.place(m.label, candidates), m.label, colour))
    for m in points:
        if not t0 <= m.t_s <= t1:
            continue
        px, py = x(m.t_s), y(m.used_bytes)
        colour = MARK_COLORS.get(m.kind, "#374151")
        if m.kind == "likely-oom":
            shapes.append(f'<path d="M{px - 4:.1f},{py - 4:.1f} L{px + 4:.1f},{py + 4:.1f} '
                          f'M{px - 4:.1f},{py + 4:.1f} L{px + 4:.1f},{py - 4:.1f}" '
                          f'stroke="{colour}" stroke-width="2"><title>'
                          f'{html.escape(m.label)}</title></path>')
        else:
            shapes.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{colour}" '
                          f'stroke="#ffffff" stroke-width="1"><title>'
                          f'{html.escape(m.label)}</title></circle>')
        candidates = []
        for k in range(8):                   # above first, then below, further each time
            for dy in (-8 - k * _LANE_PX, 17 + k * _LANE_PX):
                candidates += [(px + 7, py + dy, "start"), (px - 7, py + dy, "end")]
        labels.append(_label(*lanes.place(m.label, candidates), m.label, colour))
    return shapes, labels


_TITLE_CHAR_PX = 7.6     # DejaVu Sans Bold at 12 px
_TEXT_CHAR_PX = 6.9      # DejaVu Sans at 11 px
_LEGEND_ROW_PX = 16


def _fit(text: str, px: float, char_px: float) -> str:
    """``text`` cut with an ellipsis to about ``px`` wide."""
    room = max(4, int(px / char_px))
    return text if len(text) <= room else text[: room - 1].rstrip() + "…"


def _legend_rows(labels: list[str], width: float) -> list[list[tuple[float, str]]]:
    """Legend entries (x offset, label) in rows that fit ``width``."""
    rows: list[list[tuple[float, str]]] = [[]]
    x = 0.0
    for label in labels:
        label = _fit(label, width - 24, _TEXT_CHAR_PX)
        w = 22 + len(label) * _TEXT_CHAR_PX + 14
        if rows[-1] and x + w > width:
            rows.append([])
            x = 0.0
        rows[-1].append((x, label))
        x += w
    return rows


def memory_chart(series: list[tuple[str, np.ndarray, np.ndarray]], capacity: float | None,
                 width: int = 720, height: int = 220, title: str = "",
                 marks: Sequence[ChartMark] = (), legend: bool = False) -> str:
    """An SVG of memory over time: one line per series, the capacity as a dashed line,
    and ``marks`` (first alerts as vertical lines, the peak and deaths as points).
    With ``legend``, the series' colours are named in rows under the chart (which
    grows by a row each). The title is cut short of the capacity label."""
    left, right, top, bottom = 64, 12, 26, 30
    pw, ph = width - left - right, height - top - bottom
    rows = _legend_rows([label for label, _, _ in series], pw) if legend and series else []
    height += len(rows) * _LEGEND_ROW_PX + (4 if rows else 0)
    all_t = np.concatenate([s[1] for s in series]) if series else np.array([0.0])
    all_y = np.concatenate([s[2] for s in series]) if series else np.array([0.0])
    t0 = float(np.nanmin(all_t)) if all_t.size else 0.0
    t1 = float(np.nanmax(all_t)) if all_t.size else 1.0
    t1 = t1 if t1 > t0 else t0 + 1.0
    finite = all_y[~np.isnan(all_y)]
    y_max = max(float(finite.max()) if finite.size else 0.0, capacity or 0.0) * 1.08 or 1.0
    if marks and (series and series[0][1].size):   # room above the curve for the labels
        y_max *= 1.12
    gib = 1024**3
    step = _nice_step(y_max / gib) * gib

    def x(v: float) -> float:
        return left + (v - t0) / (t1 - t0) * pw

    def y(v: float) -> float:
        return top + ph - v / y_max * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Arial, sans-serif" '
             f'font-size="11" role="img">']
    if title:
        room = pw - (len(f"capacity {format_bytes(capacity)}") * _TEXT_CHAR_PX + 16
                     if capacity else 0)
        parts.append(f'<text x="{left}" y="14" font-size="12" font-weight="bold" '
                     f'fill="#111">{html.escape(_fit(title, room, _TITLE_CHAR_PX))}</text>')
    tick = 0.0
    while tick <= y_max:
        yy = y(tick)
        parts.append(f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" '
                     'stroke="#e5e7eb"/>')
        parts.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" fill="#555">'
                     f'{html.escape(format_bytes(tick, digits=0 if tick >= 10 * gib else 1))}'
                     '</text>')
        tick += step
    # beyond a few weeks a round number of seconds: at most about six ticks on any span
    t_step = next((s for s in _TIME_STEPS if (t1 - t0) / s <= 6), None) or \
        _nice_step(t1 - t0, 6)
    tv = np.ceil(t0 / t_step) * t_step
    while tv <= t1:
        px = x(tv)
        anchor = "start" if px - left < 30 else "end" if left + pw - px < 30 else "middle"
        parts.append(f'<line x1="{x(tv):.1f}" y1="{top + ph}" x2="{x(tv):.1f}" '
                     f'y2="{top + ph + 4}" stroke="#9ca3af"/>')
        parts.append(f'<text x="{x(tv):.1f}" y="{top + ph + 20}" text-anchor="{anchor}" '
                     f'fill="#555">{html.escape(format_duration(tv))}</text>')
        tv += t_step
    if capacity:
        parts.append(f'<line x1="{left}" y1="{y(capacity):.1f}" x2="{left + pw}" '
                     f'y2="{y(capacity):.1f}" stroke="#991b1b" stroke-dasharray="5,4"/>')
        # the label sits above the plot, right-aligned, where no curve can run over it
        parts.append(f'<text x="{left + pw}" y="{top - 6}" text-anchor="end" '
                     f'fill="#991b1b">capacity {html.escape(format_bytes(capacity))}</text>')
    shapes, labels = _draw_marks(marks, x, y, left, top, pw, ph, t0, t1) if marks else ([], [])
    parts += [s for s in shapes if s.startswith("<line")]
    for k, (label, t, v) in enumerate(series):
        td, vd = decimate(t, v, pw // 2)
        colour = PALETTE[k % len(PALETTE)]
        runs: list[list[str]] = [[]]
        for a, b in zip(td, vd, strict=True):
            if np.isnan(b):            # a gap (GPU lost): break the line
                runs.append([])
            else:
                runs[-1].append(f"{x(a):.1f},{y(b):.1f}")
        for run in runs:
            if len(run) > 1:
                parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
                             f'points="{" ".join(run)}"><title>{html.escape(label)}</title>'
                             '</polyline>')
    parts += [s for s in shapes if not s.startswith("<line")]
    parts += labels
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
                 'stroke="#9ca3af"/>')
    k = 0
    for r, row in enumerate(rows):
        base = top + ph + bottom + 12 + r * _LEGEND_ROW_PX
        for dx, label in row:
            colour = PALETTE[k % len(PALETTE)]
            k += 1
            parts.append(f'<line x1="{left + dx:.1f}" y1="{base - 4}" x2="{left + dx + 16:.1f}" '
                         f'y2="{base - 4}" stroke="{colour}" stroke-width="2.5"/>'
                         f'<text x="{left + dx + 22:.1f}" y="{base}" fill="#333">'
                         f'{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
