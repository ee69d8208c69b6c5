"""Small SVG line charts for reports: self-contained, no scripts, no network.

Long series are reduced with peak-preserving decimation (the min and max of each
bucket are both kept), so a spike that nearly caused an OOM never disappears.
"""

from __future__ import annotations

import html
import itertools

import numpy as np

from gpuwatch.core.units import format_bytes, format_duration

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
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


def memory_chart(series: list[tuple[str, np.ndarray, np.ndarray]], capacity: float | None,
                 width: int = 720, height: int = 220, title: str = "") -> str:
    """An SVG of memory over time: one line per series, and the capacity as a dashed line."""
    left, right, top, bottom = 64, 12, 26, 30
    pw, ph = width - left - right, height - top - bottom
    all_t = np.concatenate([s[1] for s in series]) if series else np.array([0.0])
    all_y = np.concatenate([s[2] for s in series]) if series else np.array([0.0])
    t0 = float(np.nanmin(all_t)) if all_t.size else 0.0
    t1 = float(np.nanmax(all_t)) if all_t.size else 1.0
    t1 = t1 if t1 > t0 else t0 + 1.0
    finite = all_y[~np.isnan(all_y)]
    y_max = max(float(finite.max()) if finite.size else 0.0, capacity or 0.0) * 1.08 or 1.0
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
        parts.append(f'<text x="{left}" y="14" font-size="12" font-weight="bold" '
                     f'fill="#111">{html.escape(title)}</text>')
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
        parts.append(f'<text x="{x(tv):.1f}" y="{height - 10}" text-anchor="{anchor}" '
                     f'fill="#555">{html.escape(format_duration(tv))}</text>')
        tv += t_step
    if capacity:
        parts.append(f'<line x1="{left}" y1="{y(capacity):.1f}" x2="{left + pw}" '
                     f'y2="{y(capacity):.1f}" stroke="#991b1b" stroke-dasharray="5,4"/>')
        # the label sits above the plot, right-aligned, where no curve can run over it
        parts.append(f'<text x="{left + pw}" y="{top - 6}" text-anchor="end" '
                     f'fill="#991b1b">capacity {html.escape(format_bytes(capacity))}</text>')
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
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
                 'stroke="#9ca3af"/>')
    parts.append("</svg>")
    return "".join(parts)
