"""Hints as lines a person reads, and as JSON lines for programs."""

from __future__ import annotations

import json
import math

from advisor_support import GIB, T0

from gpuwatch.advisor import event_to_json, format_event, format_hint_text
from gpuwatch.core.hints import (
    HINT_EVENT_SCHEMA,
    HINT_SCHEMA,
    Hint,
    HintAction,
    HintEvent,
    HintEventKind,
    Severity,
    hint_to_json,
)

HINT = Hint(code="oom-risk", severity=Severity.WARNING, gpu_index=0, pid=None,
            title="GPU 0 memory full in ~5 min at this rate",
            evidence=("free 14.3 GiB of 40.0 GiB (36 %)", "peak climbing 4.3 GiB/min"),
            actions=(HintAction("Save a checkpoint now"),
                     HintAction("--checkpointing full (+33% compute)", int(6.8 * GIB))),
            opened_at_s=T0 + 144, updated_at_s=T0 + 150,
            values=(("time_to_full_s", 300.0), ("growth_bytes_per_s", math.nan)))


def test_severity_orders_and_prints_plainly() -> None:
    assert Severity.INFO < Severity.WARNING < Severity.CRITICAL
    assert max(Severity) is Severity.CRITICAL
    assert str(Severity.WARNING) == "warning"


def test_event_line_is_one_readable_line() -> None:
    line = format_event(HintEvent(HintEventKind.OPENED, HINT, T0 + 144), start_s=T0)
    assert "\n" not in line
    assert line.startswith("+2 min")
    assert "WARNING" in line and "oom-risk [GPU 0]" in line and "full in ~5 min" in line
    assert "free 14.3 GiB" in line
    assert "--checkpointing full (+33% compute) (saves 6.8 GiB)" in line


def test_closed_event_says_how_long_it_lasted() -> None:
    line = format_event(HintEvent(HintEventKind.CLOSED, HINT, T0 + 444), start_s=T0)
    assert "ended: oom-risk" in line and "cleared after 5 min" in line


def test_process_hints_name_the_process() -> None:
    hint = Hint("memory-leak", Severity.WARNING, 1, 90211, "leaks", process_name="python",
                opened_at_s=T0, updated_at_s=T0)
    line = format_event(HintEvent(HintEventKind.UPDATED, hint, T0))
    assert "[GPU 1 pid 90211 (python)]" in line and "update: memory-leak" in line
    title, evidence, actions = format_hint_text(hint)
    assert title == "leaks [GPU 1 pid 90211 (python)]" and evidence == actions == ""


def test_json_follows_the_schema_rules() -> None:
    doc = event_to_json(HintEvent(HintEventKind.OPENED, HINT, T0 + 144))
    json.dumps(doc, allow_nan=False)        # NaN became null
    assert doc["schema"] == HINT_EVENT_SCHEMA and doc["event"] == "opened"
    assert doc["at_s"] == T0 + 144
    h = doc["hint"]
    assert h == hint_to_json(HINT)
    assert h["schema"] == HINT_SCHEMA
    assert h["severity"] == "warning" and h["pid"] is None and h["process_name"] is None
    assert h["actions"][1] == {"text": "--checkpointing full (+33% compute)",
                               "saves_bytes": int(6.8 * GIB)}
    assert h["actions"][0]["saves_bytes"] is None
    assert h["values"] == {"time_to_full_s": 300.0, "growth_bytes_per_s": None}
    assert h["opened_at_s"] == T0 + 144 and h["updated_at_s"] == T0 + 150
    assert h["evidence"] == list(HINT.evidence)
