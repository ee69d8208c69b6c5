"""The ``gpuwatch.report/1`` JSON document.

Keys are only ever added: a reader of an older report finds everything it knew.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from gpuwatch.sessions.report_commands import command_line
from gpuwatch.sessions.report_model import Report

REPORT_SCHEMA = "gpuwatch.report/1"


def iso(timestamp_s: float | None) -> str | None:
    if timestamp_s is None:
        return None
    return dt.datetime.fromtimestamp(timestamp_s, dt.UTC).isoformat(timespec="seconds")


def report_to_json(r: Report) -> dict[str, Any]:
    i = r.info
    return {
        "schema": REPORT_SCHEMA,
        "session": {
            "id": i.uuid,
            "started_at": iso(i.started_at_s),
            "ended_at": iso(i.ended_at_s),
            "duration_s": round(i.duration_s, 3),
            "samples": i.samples,
            "host": i.host,
            "backend": {"kind": i.backend_kind, "driver_version": i.driver_version,
                        "scenario": i.scenario},
        },
        "gpus": [{
            "index": g.index,
            "name": g.name,
            "total_bytes": g.total_bytes,
            "peak_used_bytes": g.peak_used_bytes,
            "mean_used_bytes": g.mean_used_bytes,
            "time_above_90pct_s": round(g.time_above_90pct_s, 3),
            "peak_fraction": None if g.peak_fraction is None else round(g.peak_fraction, 4),
            # on the memory timeline: first warning/critical hint, peak, likely-OOM deaths
            "marks": [{
                "kind": m.kind,
                "t_s": m.t_s,
                "label": m.label,
                "used_bytes": m.used_bytes,
                "code": m.code,
                "pid": m.pid,
            } for m in g.marks],
        } for g in r.gpus],
        "summary": list(r.summary),
        # the block at the top of the HTML and PDF reports, line by line
        "at_a_glance": list(r.glance),
        "ending": None if r.ending is None else {
            "state": r.ending.state,            # closed, recording, cut-short
            "ended_at": iso(r.ending.ended_at_s),
            "last_sample_s": round(r.ending.last_sample_s, 3),
            "sentence": r.ending.sentence,
        },
        "worst_hint": None if r.worst_hint is None else {
            "code": r.worst_hint.hint.code,
            "severity": r.worst_hint.severity,
            "gpu": r.worst_hint.hint.gpu,
            "pid": r.worst_hint.hint.pid,
            "title": r.worst_hint.hint.title,
            "first_seen_s": r.worst_hint.hint.first_seen_s,
            "critical_at_s": r.worst_hint.critical_at_s,
            "sentence": r.worst_hint.sentence,
        },
        "oom_exits": [{
            "gpu": x.gpu,
            "pid": x.pid,
            "exited_at_s": x.exited_at_s,
            "warned_at_s": x.warned_at_s,
            "warned_before_s": x.lead_s,
            "warning_severity": x.warning_severity,
        } for x in r.oom_exits],
        "processes": [{
            "pid": p.row.pid,
            "name": p.row.name,
            "gpu": p.row.gpu,
            "user": p.row.user,
            "cmdline": list(p.row.cmdline),
            "container": p.row.container,
            "command": command_line(p.row),
            "peak_used_bytes": p.row.peak_used_bytes,
            "first_seen_s": p.row.first_seen_s,
            "last_seen_s": p.row.last_seen_s,
        } for p in r.processes],
        "hints": [{
            "code": h.code,
            "severity": h.severity,
            "gpu": h.gpu,
            "pid": h.pid,
            "first_seen_s": h.first_seen_s,
            "last_seen_s": h.last_seen_s,
            "closed_s": h.closed_s,
            "title": h.title,
            "detail": h.detail,
            "evidence": [line for line in (h.detail or "").splitlines() if line.strip()],
            "actions": list(h.actions),
        } for h in r.hints],
        "budgets": [{
            "gpu": b.gpu,
            "pid": b.pid,
            "label": b.label,
            "predicted_bytes": b.predicted_bytes,
            "measured_peak_bytes": b.measured_peak_bytes,
            "unexplained_bytes": b.unexplained_bytes,
        } for b in r.budgets],
        "events": [{"t_s": e.t_s, "kind": e.kind, "gpu": e.gpu, "pid": e.pid,
                    "detail": e.detail} for e in r.events],
    }
